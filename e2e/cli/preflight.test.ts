/**
 * `kubectl ipam preflight-move` and `who` on the pivot suite's fixtures (Cluster → Machine → PivotMachine →
 * PivotData → claims), on the shared plane with Cluster API's CRDs labelled for clusterctl as `clusterctl init`
 * leaves them. What preflight reports as left behind is what the pivot suite shows staying in the source: a pool
 * without clusterName with every IPAddress of both kinds (e2e/pivot/pivot.test.ts checks the same against a real
 * `clusterctl move`).
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { API_VERSION, IPADDRESS_KIND } from "../../api/v1alpha1/types.js";
import { CAPI_CRDS, sharedCluster } from "../../hack/testkit/cluster.js";
import { capiClients, globalPool, startController, withController } from "../../hack/testkit/ipam.js";
import { freshNamespace } from "../../hack/testkit/cluster.js";
import { apiVersionOf, INCLUSTER_IPPOOL, resourceType } from "../../api/registry.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import { ResourceClient } from "../../src/kube/resource.js";
import {
  claimCount,
  createTopology,
  kinds,
  loosePoolTopology,
  METAL3DATA_FINALIZER,
  settledPicture,
  smallTopology,
  startMidDeletions,
  type Kinds,
  type Topology,
} from "../pivot/fixtures.js";
import { ensureCrds, PIVOT_CRDS } from "../pivot/harness.js";
import { eventually } from "../../hack/testkit/wait.js";
import { expectGolden, normalise } from "./support.js";
import { runCli, type CliRun } from "../../hack/testkit/cli.js";

interface PreflightJson {
  ok: boolean;
  leftBehind: string[];
  findings: { severity: string; kind: string; name: string; problem: string; fix: string }[];
}

/** Only IPClaims, so the output is the same whether or not Cluster API claims get shadow objects. */
function looseIPClaimsOnly(): Topology {
  return {
    pools: {
      loose: { namePrefix: "loose", pools: [{ start: "10.50.0.10", end: "10.50.0.20" }], prefix: 24 },
      kept: { namePrefix: "kept", clusterName: "cl", pools: [{ start: "10.51.0.10", end: "10.51.0.20" }], prefix: 24 },
    },
    clusters: [
      {
        name: "cl",
        machines: 2,
        claims: [
          { suffix: "prov", kind: "IPClaim", pool: "loose" },
          { suffix: "bm", kind: "IPClaim", pool: "kept" },
        ],
        unlabelled: true,
      },
    ],
  };
}

describe("kubectl ipam preflight-move on the pivot fixtures (real API server)", function () {
  this.timeout(240_000);
  let kc: KubeConfig;
  let kubeconfigPath: string;
  let k: Kinds;
  const cli = (...args: string[]): Promise<CliRun> => runCli(args, { KUBECONFIG: kubeconfigPath });

  before(async () => {
    ({ kubeConfig: kc, kubeconfigPath } = await sharedCluster());
    // clusterctl only sees labelled CRDs; `clusterctl init` labels Cluster API's, and the pivot stand-ins carry it.
    await ensureCrds(kc, [CAPI_CRDS, PIVOT_CRDS]);
    k = kinds(kc);
  });

  it("names a pool without clusterName, its addresses and a person-made reservation; exit 1 (golden)", async () => {
    await withController(kc, "pre-loose", async (ns) => {
      const t = looseIPClaimsOnly();
      await createTopology(k, ns, t);
      await settledPicture(k, ns, claimCount(t));
      await eventually(
        "pool kept owned by its Cluster",
        async () => ((await k.pools.get(ns, "kept")).metadata.ownerReferences ?? []).length > 0,
      );
      // A reservation made by hand in a pool that moves: nothing ties it to the move.
      await k.addresses.create(ns, {
        apiVersion: API_VERSION,
        kind: IPADDRESS_KIND,
        metadata: { name: "kept-10-51-0-20", namespace: ns },
        spec: { address: "10.51.0.20", pool: { name: "kept" }, claim: { name: "outside-dhcp" } },
      });
      const text = await cli("preflight-move", "-n", ns);
      expect(text.code, text.stderr).to.equal(1);
      expectGolden("preflight-loose.txt", normalise(text.stdout, ns).replace(/uid [0-9a-f-]{36}/g, "uid <uid>"));
      const json = await cli("preflight-move", "-n", ns, "-o", "json");
      expect(json.code).to.equal(1);
      expectGolden("preflight-loose.json", normalise(json.stdout, ns).replace(/uid [0-9a-f-]{36}/g, "uid <uid>"));
    });
  });

  it("reports exactly what the pivot suite's loose cluster leaves behind: the pool and every IPAddress of both kinds", async () => {
    await withController(kc, "pre-loose2", async (ns) => {
      const t = loosePoolTopology();
      await createTopology(k, ns, t);
      await settledPicture(k, ns, claimCount(t));
      const r = await cli("preflight-move", "-n", ns, "-o", "json");
      expect(r.code, r.stderr).to.equal(1);
      const report = JSON.parse(r.stdout) as PreflightJson;
      const m3 = (await k.addresses.list(ns)).items.map((a) => `IPAddress.ipam.metal3.io/${a.metadata.name ?? ""}`);
      const capi = (await k.capiAddresses.list(ns)).items.map(
        (a) => `IPAddress.ipam.cluster.x-k8s.io/${a.metadata.name ?? ""}`,
      );
      expect(capi).to.have.length(2);
      expect([...report.leftBehind].sort()).to.deep.equal(["IPPool/loose", ...m3, ...capi].sort());
      expect(report.findings.find((f) => f.name === "loose")!.fix).to.equal(
        `kubectl -n ${ns} patch ippool loose --type merge -p '{"spec":{"clusterName":"cl"}}'`,
      );
    });
  });

  it("passes a cluster that moves whole (exit 0) and warns about claims deleting under a foreign finalizer", async () => {
    await withController(kc, "pre-ok", async (ns) => {
      const t: Topology = {
        ...smallTopology("ok"),
        clusters: smallTopology("ok").clusters.map((c) => ({ ...c, midDeletion: true })),
      };
      await createTopology(k, ns, t);
      await settledPicture(k, ns, claimCount(t));
      const deleting = await startMidDeletions(k, ns, t);
      expect(deleting).to.have.length(2);
      const r = await cli("preflight-move", "-n", ns, "-o", "json");
      expect(r.code, r.stdout).to.equal(0);
      const report = JSON.parse(r.stdout) as PreflightJson;
      expect(report.leftBehind).to.deep.equal([]);
      expect(report.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal(
        deleting.sort().map((n) => `warning IPClaim/${n}`),
      );
      expect(report.findings[0]!.problem).to.include(METAL3DATA_FINALIZER);
    });
  });

  it("blocks on a paused Cluster (clusterctl refuses), exit 1", async () => {
    await withController(kc, "pre-paused", async (ns) => {
      const t = smallTopology("cp");
      await createTopology(k, ns, t);
      await settledPicture(k, ns, claimCount(t));
      await k.clusters.patch(ns, "cp", { spec: { paused: true } });
      const r = await cli("preflight-move", "-n", ns);
      expect(r.code).to.equal(1);
      expect(normalise(r.stdout, ns).trimEnd().split("\n")).to.deep.equal([
        "BLOCKER  Cluster cp is paused (spec.paused): clusterctl move refuses to start",
        `  fix: kubectl -n <ns> patch cluster cp --type merge -p '{"spec":{"paused":false}}'`,
        "clusterctl move -n <ns> would be refused or incomplete: 1 blocker(s), 0 object(s) left behind, 0 warning(s)",
      ]);
    });
  });

  it("in-cluster pools: the namespaced one moves, a global one shared with a namespace that stays blocks (exit 1)", async () => {
    const capi = capiClients(kc);
    const local = new ResourceClient<InClusterIPPool>(kc, resourceType(INCLUSTER_IPPOOL));
    const suffix = Math.random().toString(36).slice(2, 7);
    const [shared, own] = [`pre-shared-${suffix}`, `pre-own-${suffix}`];
    const ns = await freshNamespace(kc, "pre-ic");
    const stay = await freshNamespace(kc, "pre-icstay");
    // Global pools are served only by a controller of every namespace.
    const ctl = await startController(kc, "");
    try {
      await capi.globalPools.create("", globalPool(shared, { addresses: ["10.80.0.10-10.80.0.40"], prefix: 24 }));
      await capi.globalPools.create("", globalPool(own, { addresses: ["10.81.0.10-10.81.0.40"], prefix: 24 }));
      await local.create(ns, {
        apiVersion: apiVersionOf(INCLUSTER_IPPOOL),
        kind: INCLUSTER_IPPOOL.kind,
        metadata: { name: "local", namespace: ns },
        spec: { addresses: ["10.82.0.0/28"], prefix: 28 },
      });
      const onGlobal = (cluster: string, pool: string, machines = 2): Topology => ({
        pools: {},
        clusters: [
          {
            name: cluster,
            machines,
            claims: [{ suffix: "g", kind: "IPAddressClaim", pool, poolKind: "GlobalInClusterIPPool" }],
          },
        ],
      });
      const moving: Topology = {
        pools: {},
        clusters: [
          {
            name: "ic",
            machines: 2,
            claims: [
              { suffix: "ns", kind: "IPAddressClaim", pool: "local", poolKind: "InClusterIPPool" },
              { suffix: "g", kind: "IPAddressClaim", pool: shared, poolKind: "GlobalInClusterIPPool" },
              { suffix: "own", kind: "IPAddressClaim", pool: own, poolKind: "GlobalInClusterIPPool" },
            ],
          },
        ],
      };
      await createTopology(k, stay, onGlobal("st", shared));
      await createTopology(k, ns, moving);
      await settledPicture(k, stay, 2);
      await settledPicture(k, ns, claimCount(moving));
      const r = await cli("preflight-move", "-n", ns, "-o", "json");
      expect(r.code, r.stderr).to.equal(1);
      const report = JSON.parse(r.stdout) as PreflightJson;
      // Every IPAddress moves, those of the namespaced pool with it and those of the global pools with their copy.
      expect(report.leftBehind).to.deep.equal([]);
      expect(report.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal([
        `blocker GlobalInClusterIPPool/${shared}`,
        `warning GlobalInClusterIPPool/${own}`,
      ]);
      expect(report.findings[0]!.problem).to.include(`shared with 2 claim(s) in namespace(s) ${stay} that stay`);
      expect(report.findings[1]!.problem).to.include("the 2 IPAddress(es) of this namespace's claims on it are copied");
      // The same cluster as the target: it has both pools with the source's range, which the shared one cannot keep.
      const toSelf = await cli("preflight-move", "-n", ns, "-o", "json", "--to-kubeconfig", kubeconfigPath);
      const findings = (JSON.parse(toSelf.stdout) as PreflightJson).findings;
      expect(findings.map((f) => f.severity)).to.deep.equal(["blocker", "warning"]);
      expect(findings[0]!.problem).to.include("the target's pool of that name (which clusterctl keeps) can hand out");
      // A claim of the namespaced pool that no Cluster reaches stays, and so does its IPAddress.
      await capi.claims.create(ns, {
        metadata: { name: "loner", namespace: ns },
        spec: { poolRef: { apiGroup: INCLUSTER_IPPOOL.group, kind: INCLUSTER_IPPOOL.kind, name: "local" } },
      });
      await eventually("loner bound", async () => (await capi.claims.get(ns, "loner")).status?.addressRef?.name);
      const loner = JSON.parse((await cli("preflight-move", "-n", ns, "-o", "json")).stdout) as PreflightJson;
      expect(loner.leftBehind).to.deep.equal(["IPAddressClaim/loner", "IPAddress.ipam.cluster.x-k8s.io/loner"]);
      expect(loner.findings.find((f) => f.name === "loner" && f.kind.startsWith("IPAddress."))!.problem).to.match(
        /^10\.82\.0\.\d+ stays with its claim loner$/,
      );
    } finally {
      // Claims first, so the controller releases their addresses and the global pools can go.
      for (const n of [ns, stay])
        for (const c of (await capi.claims.list(n)).items) await capi.claims.delete(n, c.metadata.name ?? "");
      await eventually(
        "the global pools' addresses released",
        async () => (await capi.addresses.list(ns)).items.length + (await capi.addresses.list(stay)).items.length === 0,
      ).catch(() => undefined);
      for (const name of [shared, own]) await capi.globalPools.delete("", name).catch(() => undefined);
      await ctl.stop();
    }
  });

  it("who follows a claim's owners up to its Cluster", async () => {
    await withController(kc, "pre-who", async (ns) => {
      const t = smallTopology("w");
      await createTopology(k, ns, t);
      await settledPicture(k, ns, claimCount(t));
      const byClaim = await cli("who", "ipaddressclaim/w-m01-bm", "-n", ns, "-o", "json");
      expect(byClaim.code, byClaim.stderr).to.equal(0);
      const [holder] = (
        JSON.parse(byClaim.stdout) as {
          holders: {
            address: string;
            claim: { kind: string };
            ipAddress: { apiGroup: string };
            owners: { kind: string; name: string }[];
            cluster: string;
          }[];
        }
      ).holders;
      expect(holder!.claim.kind).to.equal("IPAddressClaim");
      expect(holder!.ipAddress.apiGroup).to.equal("ipam.cluster.x-k8s.io");
      expect(holder!.owners.map((o) => `${o.kind}/${o.name}`)).to.deep.equal([
        "PivotData/w-m01",
        "PivotMachine/w-m01",
        "Machine/w-m01",
        "Cluster/w",
      ]);
      expect(holder!.cluster).to.equal("w");
      const byAddress = await cli("who", holder!.address, "-n", ns);
      expect(byAddress.stdout).to.include(
        "owners     PivotData w-m01 → PivotMachine w-m01 → Machine w-m01 → Cluster w",
      );
    });
  });
});
