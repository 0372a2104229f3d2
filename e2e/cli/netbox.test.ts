/**
 * `kubectl ipam` on NetBox pools through the real API server: a NetBoxIPPool and a GlobalNetBoxIPPool used from two
 * namespaces, written as the controller leaves them (IPAddresses, claims bound, and the pool status with NetBox's
 * utilisation), with no NetBox at all: the CLI reads only the Kubernetes API, never NetBox and never the token. Then
 * the same tools on a cluster without the NetBox CRDs.
 */
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { IPAddressClaim } from "../../api/capi/types.js";
import { GLOBAL_NETBOX_IPPOOL_KIND, NETBOX_IPPOOL_KIND, type NetBoxIPPool } from "../../api/netbox/types.js";
import { isNotFound } from "../../src/kube/errors.js";
import { LocalPlane } from "../../hack/testkit/plane.js";
import { freshNamespace, OUR_CRDS, sharedCluster, usingExistingCluster } from "../../hack/testkit/cluster.js";
import { clients, pool } from "../../hack/testkit/ipam.js";
import { runCli, type CliRun } from "../../hack/testkit/cli.js";
import { netBoxClients, netBoxRef, type NetBoxClients } from "../../hack/testkit/netboxpools.js";

const URL = "https://netbox.example.test";

/** A pool as the controller leaves it: its spec, and (when `used` is set) NetBox's utilisation in its status. */
async function writePool(
  k: NetBoxClients,
  namespace: string | undefined,
  name: string,
  cidr: string,
  status?: { total: number; used: number; display: string },
): Promise<void> {
  const client = namespace ? k.pools : k.globals;
  const body: NetBoxIPPool = {
    metadata: { name, ...(namespace ? { namespace } : {}) },
    spec: { netbox: { url: URL, credentialsRef: { name: "nb-token" } }, prefix: { cidr } },
  };
  await client.create(namespace ?? "", body);
  if (!status) return;
  const { total, used, display } = status;
  await client.patchStatus(namespace ?? "", name, {
    status: {
      ipAddresses: { total, used, free: total - used },
      netbox: { kind: "prefix", id: 7, display },
    },
  });
}

/** A claim bound to an IPAddress named after it, as the controller leaves both. */
async function writeBound(
  k: NetBoxClients,
  namespace: string,
  name: string,
  poolRef: IPAddressClaim["spec"]["poolRef"],
  address: string,
): Promise<void> {
  await k.claims.create(namespace, { metadata: { name, namespace }, spec: { poolRef } });
  await k.addresses.create(namespace, {
    metadata: { name, namespace },
    spec: { address, prefix: 24, poolRef, claimRef: { name } },
  });
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  await k.claims.patchStatus(namespace, name, {
    status: {
      addressRef: { name },
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "Allocated",
          message: `Allocated ${address}`,
          lastTransitionTime: now,
        },
      ],
    },
  });
}

describe("kubectl ipam on NetBox pools (real API server; the CLI never calls NetBox)", function () {
  this.timeout(120_000);
  let kc: KubeConfig;
  let kubeconfigPath: string;
  let k: NetBoxClients;
  let ns: string;
  let other: string;
  let globalName: string;
  const cli = (...args: string[]): Promise<CliRun> => runCli(args, { KUBECONFIG: kubeconfigPath });

  before(async () => {
    const cluster = await sharedCluster();
    ({ kubeConfig: kc, kubeconfigPath } = cluster);
    k = netBoxClients(kc);
    ns = await freshNamespace(kc, "cli-nb");
    other = await freshNamespace(kc, "cli-nb-other");
    globalName = `${ns}-g`;
    await writePool(k, ns, "nb", "10.83.0.0/26", { total: 62, used: 5, display: "prefix 10.83.0.0/26 (#7)" });
    await writePool(k, ns, "fresh", "10.83.1.0/24");
    await writePool(k, undefined, globalName, "10.84.0.0/24", {
      total: 254,
      used: 10,
      display: "prefix 10.84.0.0/24 (#8)",
    });
    await writeBound(k, ns, "m-0", netBoxRef("nb"), "10.83.0.1");
    await writeBound(k, ns, "m-1", netBoxRef("nb"), "10.83.0.2");
    await k.claims.create(ns, { metadata: { name: "m-2", namespace: ns }, spec: { poolRef: netBoxRef("nb") } });
    await writeBound(k, ns, "g-0", netBoxRef(globalName, GLOBAL_NETBOX_IPPOOL_KIND), "10.84.0.7");
    await writeBound(k, other, "g-1", netBoxRef(globalName, GLOBAL_NETBOX_IPPOOL_KIND), "10.84.0.9");
    // A Metal3 pool beside them: the tools still show it as before.
    await clients(kc).pools.create(ns, pool(ns, "m3", { pools: [{ start: "10.85.0.1", end: "10.85.0.4" }] }));
  });

  after(async () => {
    if (!k) return;
    await k.globals.delete("", globalName).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  });

  it("pools: NetBox's utilisation from the status, the claims bound here (BOUND), the global pool from every namespace", async () => {
    const text = await cli("pools", "-n", ns);
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stderr).to.equal("");
    const lines = text.stdout.split("\n");
    expect(lines[0]).to.match(/^KIND +NAME +CLUSTER +STRATEGY +USED\/TOTAL +% +BOUND +PENDING +FAILED$/);
    const hasLine = (pattern: RegExp): void => {
      expect(
        lines.some((l) => pattern.test(l)),
        `a line ${pattern} in\n${text.stdout}`,
      ).to.equal(true);
    };
    hasLine(new RegExp(`^GlobalNetBoxIPPool +${globalName} +- +netbox +10/254 +3\\.9% +2 +0 +0$`));
    hasLine(/^NetBoxIPPool +nb +- +netbox +5\/62 +8\.1% +2 +1 \(1 capi\) +0$/);
    // No status yet: NetBox's counts are not known here.
    hasLine(/^NetBoxIPPool +fresh +- +netbox +\?\/\? +- +0 +0 +0$/);
    hasLine(/^IPPool +m3 +- +sequential +0\/4 +0\.0% +0 +0 +0$/);
    const json = await cli("pools", "-n", ns, "-o", "json");
    const parsed = JSON.parse(json.stdout) as { pools: Record<string, unknown>[] };
    const pick = (name: string) => parsed.pools.find((p) => p.name === name);
    expect(pick("nb")).to.deep.include({
      kind: NETBOX_IPPOOL_KIND,
      namespace: ns,
      strategy: "netbox",
      total: 62,
      used: 5,
      free: 57,
      countedBy: "netbox",
      bound: 2,
    });
    expect(pick(globalName)).to.deep.include({ kind: GLOBAL_NETBOX_IPPOOL_KIND, namespace: null, used: 10, bound: 2 });
    expect(pick("fresh")).to.deep.include({ total: null, used: null, free: null, percent: null, bound: 0 });
    expect(pick("m3")).to.not.have.property("countedBy");
  });

  it("who: a holder on a NetBoxIPPool, and on the GlobalNetBoxIPPool in another namespace", async () => {
    const local = await cli("who", "10.83.0.2", "-n", ns);
    expect(local.code, local.stderr).to.equal(0);
    expect(local.stdout).to.match(new RegExp(`^pool +NetBoxIPPool ${ns}/nb$`, "m"));
    expect(local.stdout).to.match(/^claim +IPAddressClaim m-1 \(bound\)$/m);
    const elsewhere = await cli("who", "10.84.0.9", "-n", ns, "-o", "json");
    expect(elsewhere.code, elsewhere.stderr).to.equal(0);
    const holder = (JSON.parse(elsewhere.stdout) as { holders: Record<string, unknown>[] }).holders[0];
    expect(holder).to.deep.include({
      address: "10.84.0.9",
      namespace: other,
      pool: globalName,
      poolKind: GLOBAL_NETBOX_IPPOOL_KIND,
    });
  });

  it("free: NetBox's counts from the status, the addresses bound here, and that the CLI never asks NetBox", async () => {
    const text = await cli("free", "netboxippool/nb", "-n", ns);
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stdout).to.equal(
      [
        `pool NetBoxIPPool ${ns}/nb (NetBox prefix 10.83.0.0/26 (#7)): 57 free of 62, 5 used (NetBox's count: its records of every user)`,
        "  2 claim(s) bound here: 10.83.0.1, 10.83.0.2",
        "next claim gets: the address NetBox hands out (available-ips)",
        "note: kubectl ipam reads only the Kubernetes API (never NetBox, never the token): the counts are NetBox's as the controller last wrote them to the pool's status",
        "",
      ].join("\n"),
    );
    const global = await cli("free", `globalnetboxippool/${globalName}`, "-n", other, "-o", "json");
    expect(global.code, global.stderr).to.equal(0);
    expect(JSON.parse(global.stdout)).to.deep.include({
      kind: GLOBAL_NETBOX_IPPOOL_KIND,
      namespace: null,
      countedBy: "netbox",
      netbox: "prefix 10.84.0.0/24 (#8)",
      total: 254,
      used: 10,
      free: 244,
      bound: ["10.84.0.7", "10.84.0.9"],
      next: { strategy: "netbox", address: null },
    });
    const fresh = await cli("free", "netboxippool/fresh", "-n", ns, "-o", "json");
    expect(JSON.parse(fresh.stdout)).to.deep.include({ total: null, used: null, free: null, bound: [] });
    const unknown = await cli("free", "netboxippool/nope", "-n", ns);
    expect(unknown.code).to.equal(3);
    expect(unknown.stderr).to.equal(
      `error: NetBoxIPPool "nope" not found in namespace "${ns}" (pools there: fresh, nb)\n`,
    );
  });

  it("works as before, with no error, on a cluster without the NetBox CRDs", async function () {
    if (usingExistingCluster()) this.skip();
    // Metal3's CRDs alone.
    const crds = mkdtempSync(join(tmpdir(), "cli-nb-crds-"));
    for (const f of readdirSync(OUR_CRDS).filter((f) => f.startsWith("ipam.metal3.io_")))
      cpSync(join(OUR_CRDS, f), join(crds, f));
    const bare = await LocalPlane.start({ crdDirs: [crds] });
    try {
      await clients(bare.kubeConfig).pools.create(
        "default",
        pool("default", "solo", { pools: [{ subnet: "10.90.0.0/30" }] }),
      );
      const run = (...args: string[]): Promise<CliRun> => runCli(args, { KUBECONFIG: bare.kubeconfigPath });
      const pools = await run("pools");
      expect([pools.code, pools.stderr]).to.deep.equal([0, ""]);
      expect(pools.stdout.split("\n")[0]).to.match(/^NAME +CLUSTER +STRATEGY +USED\/TOTAL +% +PENDING +FAILED$/);
      expect(pools.stdout).to.match(/^solo +- +sequential +0\/3 /m);
      const who = await run("who", "10.90.0.1");
      expect([who.code, who.stderr]).to.deep.equal([0, ""]);
      const missing = await run("free", "netboxippool/any");
      expect(missing.code).to.equal(3);
      expect(missing.stderr).to.match(
        /^error: the cluster does not serve netboxippools\.netbox\.ipam\.cluster\.x-k8s\.io /,
      );
    } finally {
      await bare.stop();
      rmSync(crds, { recursive: true, force: true });
    }
  });
});
