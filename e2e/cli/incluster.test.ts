/**
 * `kubectl ipam` on the in-cluster provider's pools beside a Metal3 IPPool, through the real API server, with a
 * controller of every namespace allocating: an InClusterIPPool, a GlobalInClusterIPPool whose addresses two
 * namespaces share (one claim too many fails), and an IPPool of the same name as the in-cluster one. Then the same
 * tools on a cluster without the provider's CRDs.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { dump } from "js-yaml";
import { isNotFound } from "../../src/kube/errors.js";
import { LocalPlane } from "../../hack/testkit/plane.js";
import { freshNamespace, OUR_CRDS, repoRoot, sharedCluster, usingExistingCluster } from "../../hack/testkit/cluster.js";
import { claim, clients, pool, startController, type Clients } from "../../hack/testkit/ipam.js";
import { poll, eventually } from "../../hack/testkit/wait.js";
import { runCli, type CliRun } from "../../hack/testkit/cli.js";
import {
  addressClaim,
  GLOBAL,
  IN,
  inClusterClients,
  inClusterPool,
  ref,
  type InClusterClients,
} from "../../hack/testkit/incluster.js";
import { expectGolden, normalise } from "./support.js";

describe("kubectl ipam on in-cluster pools, namespaced and global (real API server)", function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let kubeconfigPath: string;
  let c: Clients;
  let k: InClusterClients;
  let ns: string;
  let other: string;
  let globalName: string;
  let stop: (() => Promise<void>) | undefined;
  const cli = (...args: string[]): Promise<CliRun> => runCli(args, { KUBECONFIG: kubeconfigPath });
  const tmp = mkdtempSync(join(tmpdir(), "cli-incluster-"));
  /** Cluster-scoped objects a test made, removed in after(). */
  const cleanups: (() => Promise<unknown>)[] = [];
  const RBAC = "rbac.authorization.k8s.io";
  /** Both test namespaces replaced, so golden files stay fixed. */
  const fixed = (text: string): string => normalise(text.split(other).join("<other>"), ns);

  before(async () => {
    const cluster = await sharedCluster();
    ({ kubeConfig: kc, kubeconfigPath } = cluster);
    c = clients(kc);
    k = inClusterClients(kc);
    ns = await freshNamespace(kc, "cli-ic");
    other = await freshNamespace(kc, "cli-ic-other");
    globalName = `${ns}-g`;
    // Global pools are served by a controller of every namespace.
    ({ stop } = await startController(kc, ""));
    await c.pools.create(ns, pool(ns, "nodes", { pools: [{ start: "10.80.0.1", end: "10.80.0.10" }] }));
    await c.claims.create(ns, claim(ns, "m-1", "nodes"));
    const spec = { addresses: ["10.81.0.0/29"], prefix: 24, gateway: "10.81.0.1" };
    await k.pools.create(ns, inClusterPool(ns, "nodes", spec));
    await k.globals.create(
      "",
      inClusterPool(undefined, globalName, { addresses: ["10.82.0.1-10.82.0.3"], prefix: 24 }),
    );
    // One at a time, so that each gets the address the test expects (the lowest free).
    const inOrder: [string, string, string, string][] = [
      [ns, "ic-1", IN, "nodes"],
      [ns, "ic-2", IN, "nodes"],
      [ns, "g-1", GLOBAL, globalName],
      [other, "g-2", GLOBAL, globalName],
      [other, "g-3", GLOBAL, globalName],
    ];
    for (const [where, name, kind, poolName] of inOrder) {
      await k.claims.create(where, addressClaim(where, name, ref(kind, poolName)));
      await eventually(
        `${where}/${name} bound`,
        async () => (await k.claims.get(where, name)).status?.addressRef?.name,
        30_000,
        100,
      );
    }
    // The fourth claim of a three-address global pool fails (PoolExhausted).
    await k.claims.create(ns, addressClaim(ns, "g-4", ref(GLOBAL, globalName)));
    await eventually(
      "g-4 to fail",
      async () => (await k.claims.get(ns, "g-4")).status?.conditions?.some((x) => x.reason === "PoolExhausted"),
      30_000,
      100,
    );
    await eventually("m-1 bound", async () => (await c.claims.get(ns, "m-1")).status?.address?.name, 30_000, 100);
  });

  after(async function () {
    this.timeout(90_000);
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
    if (!k) return;
    const ignoreGone = (err: unknown): void => {
      if (!isNotFound(err)) throw err;
    };
    for (const where of [ns, other])
      for (const x of (await k.claims.list(where)).items)
        await k.claims.delete(where, x.metadata.name ?? "").catch(ignoreGone);
    await k.globals.delete("", globalName).catch(ignoreGone);
    await poll(async () => !(await k.globals.list("")).items.some((p) => p.metadata.name === globalName), 30_000, 250);
    await stop?.();
    await k.globals.patch("", globalName, { metadata: { finalizers: null } }).catch(ignoreGone);
  });

  it("pools: a KIND column, the global pool in the namespace's view, counted from every namespace", async () => {
    const text = await cli("pools", "-n", ns);
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stderr).to.equal("");
    // Other suites' global pools may be listed too (and widen the columns): no golden file, a pattern per line.
    const lines = text.stdout.split("\n");
    expect(lines[0]).to.match(/^KIND +NAME +CLUSTER +STRATEGY +USED\/TOTAL +% +PENDING +FAILED$/);
    const hasLine = (pattern: RegExp): void => {
      expect(
        lines.some((l) => pattern.test(l)),
        `a line ${pattern} in\n${text.stdout}`,
      ).to.equal(true);
    };
    hasLine(new RegExp(`^GlobalInClusterIPPool +${globalName} +- +sequential +3/3 +100\\.0% +0 +1 \\(1 capi\\)$`));
    hasLine(/^IPPool +nodes +- +sequential +1\/10 +10\.0% +0 +0$/);
    hasLine(/^InClusterIPPool +nodes +- +sequential +2\/6 +33\.3% +0 +0$/);
    const json = await cli("pools", "-n", ns, "-o", "json");
    const parsed = JSON.parse(json.stdout) as { pools: Record<string, unknown>[] };
    const mine = parsed.pools.filter((p) => p.name === "nodes" || p.name === globalName);
    expect(mine.map((p) => [p.kind, p.namespace, p.name, p.used, p.total])).to.deep.equal([
      [GLOBAL, null, globalName, 3, 3],
      [undefined, ns, "nodes", 1, 10],
      [IN, ns, "nodes", 2, 6],
    ]);
    expect(mine[0]!.failed).to.deep.equal({ ipClaims: 0, ipAddressClaims: 1 });
    const all = await cli("pools", "-A");
    expect(all.code, all.stderr).to.equal(0);
    expect(all.stdout.split("\n")[0]).to.match(/^NAMESPACE +KIND +NAME +CLUSTER/);
    expect(all.stdout).to.match(new RegExp(`^- +GlobalInClusterIPPool +${globalName} +- +sequential +3/3 `, "m"));
    expect(all.stdout).to.match(new RegExp(`^${ns} +InClusterIPPool +nodes +- +sequential +2/6 `, "m"));
  });

  it("free: inclusterippool/NAME and globalinclusterippool/NAME; a bare NAME stays Metal3's IPPool", async () => {
    const local = await cli("free", "inclusterippool/nodes", "-n", ns);
    expect(local.code, local.stderr).to.equal(0);
    expectGolden("incluster-free-local.txt", fixed(local.stdout));
    const global = await cli("free", `globalinclusterippool/${globalName}`, "-n", other, "-o", "json");
    expect(global.code, global.stderr).to.equal(0);
    expectGolden("incluster-free-global.json", fixed(global.stdout));
    const metal3 = await cli("free", "nodes", "-n", ns);
    expect(metal3.stdout.split("\n")[0]).to.equal(`pool ${ns}/nodes (sequential): 9 free of 10, 1 used`);
  });

  it("who: a holder on an InClusterIPPool, and on the global pool in another namespace", async () => {
    const local = await cli("who", "10.81.0.3", "-n", ns);
    expect(local.code, local.stderr).to.equal(0);
    expectGolden("incluster-who-local.txt", fixed(local.stdout));
    const elsewhere = await cli("who", "10.82.0.2", "-n", ns);
    expect(elsewhere.code, elsewhere.stderr).to.equal(0);
    expectGolden("incluster-who-global.txt", fixed(elsewhere.stdout));
    const free = await cli("who", "10.81.0.5", "-n", ns);
    expect(free.stdout).to.equal(`10.81.0.5 is free: nobody holds it (in the ranges of InClusterIPPool ${ns}/nodes)\n`);
    const byClaim = await cli("who", "ipaddressclaim/g-4", "-n", ns, "-o", "json");
    const holder = (JSON.parse(byClaim.stdout) as { holders: Record<string, unknown>[] }).holders[0];
    expect(holder).to.deep.include({ address: null, pool: globalName, poolKind: GLOBAL });
    expect(holder!.claim).to.deep.equal({ kind: "IPAddressClaim", name: "g-4", state: "failed" });
  });

  it("leaves out, with a warning, what RBAC does not let a user list: global pools, or their other namespaces", async () => {
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const reader = `reader-${process.pid}`;
    // Metal3's kinds, Cluster API's claims and addresses, and InClusterIPPools: in this namespace only.
    const rules = [
      { apiGroups: ["ipam.metal3.io"], resources: ["ippools", "ipclaims", "ipaddresses"], verbs: ["get", "list"] },
      {
        apiGroups: ["ipam.cluster.x-k8s.io"],
        resources: ["ipaddressclaims", "ipaddresses", "inclusterippools"],
        verbs: ["get", "list"],
      },
    ];
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: reader }, rules } });
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: reader } } });
    const subjects = [{ kind: "ServiceAccount", name: reader, namespace: ns }];
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: { metadata: { name: reader }, roleRef: { apiGroup: RBAC, kind: "Role", name: reader }, subjects },
    });
    const token = await core.createNamespacedServiceAccountToken({
      name: reader,
      namespace: ns,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const cluster = kc.getCurrentCluster()!;
    const file = join(tmp, "reader");
    writeFileSync(
      file,
      dump({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "sa",
        clusters: [{ name: "c", cluster: { server: cluster.server, "certificate-authority-data": cluster.caData } }],
        users: [{ name: reader, user: { token: token.status!.token } }],
        contexts: [{ name: "sa", context: { cluster: "c", user: reader, namespace: ns } }],
      }),
    );
    const asReader = (): Promise<CliRun> => runCli(["pools"], { KUBECONFIG: file });
    const local = await asReader();
    expect(local.code, local.stderr).to.equal(0);
    // The NetBox pool kinds (their CRDs are ours, always installed) are left out the same way; the reads run at once,
    // so the lines come in any order.
    expect(local.stderr.split("\n").sort()).to.deep.equal([
      "",
      "warning: not allowed to list globalinclusterippools.ipam.cluster.x-k8s.io in all namespaces; they are left out",
      "warning: not allowed to list globalnetboxippools.netbox.ipam.cluster.x-k8s.io in all namespaces; they are left out",
      `warning: not allowed to list netboxippools.netbox.ipam.cluster.x-k8s.io in namespace "${ns}"; they are left out`,
    ]);
    expect(local.stdout).to.match(/^InClusterIPPool +nodes +- +sequential +2\/6 /m);
    expect(local.stdout).to.not.include(globalName);
    // Global pools may be listed, but not the claims and addresses of every namespace: this namespace's count.
    const clusterRole = `${reader}-${ns}`;
    await rbac.createClusterRole({
      body: {
        metadata: { name: clusterRole },
        rules: [{ apiGroups: ["ipam.cluster.x-k8s.io"], resources: ["globalinclusterippools"], verbs: ["list"] }],
      },
    });
    cleanups.push(() => rbac.deleteClusterRole({ name: clusterRole }));
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: clusterRole },
        roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: clusterRole },
        subjects,
      },
    });
    cleanups.push(() => rbac.deleteClusterRoleBinding({ name: clusterRole }));
    const global = await eventually(
      "the ClusterRole to apply",
      async () => {
        const r = await asReader();
        return r.stdout.includes(globalName) ? r : undefined;
      },
      30_000,
      250,
    );
    expect(global.code, global.stderr).to.equal(0);
    expect(global.stderr.split("\n")).to.include(
      "warning: not allowed to list IPAddressClaims and IPAddresses in all namespaces; GlobalInClusterIPPools count " +
        `those in namespace "${ns}" alone`,
    );
    // g-1 of this namespace; g-2 and g-3 of the other namespace are not seen.
    expect(global.stdout).to.match(new RegExp(`^GlobalInClusterIPPool +${globalName} +- +sequential +1/3 `, "m"));
  });

  it("pools --watch redraws when an in-cluster pool allocates, and counts the global pool's other namespaces", async () => {
    const child = spawn(process.execPath, [join(repoRoot, "bin", "kubectl-ipam.mjs"), "pools", "-n", ns, "--watch"], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    const line = (kind: string, name: string, used: string): RegExp =>
      new RegExp(`^${kind} +${name} +- +sequential +${used} `, "m");
    try {
      await eventually("the first table", () => line(IN, "nodes", "2/6").test(out), 30_000, 100);
      expect(out).to.match(line(GLOBAL, globalName, "3/3"));
      await k.claims.create(ns, addressClaim(ns, "ic-3", ref(IN, "nodes")));
      await eventually("a redraw with the new allocation", () => line(IN, "nodes", "3/6").test(out), 30_000, 100);
      // The failed claim goes (else it would take the address released next), then a claim of another namespace
      // releases a global address: this namespace's view sees it through its watch across namespaces.
      await k.claims.delete(ns, "g-4");
      await eventually(
        "the failed claim gone",
        () => /^GlobalInClusterIPPool .* 3\/3 .* 0 +0$/m.test(out),
        30_000,
        100,
      );
      await k.claims.delete(other, "g-3");
      await eventually("the global pool's release", () => line(GLOBAL, globalName, "2/3").test(out), 30_000, 100);
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).to.equal(0);
  });

  it("errors: an unknown in-cluster pool (3) lists that kind's pools; an unknown kind is a usage error (2)", async () => {
    const unknown = await cli("free", "inclusterippool/nope", "-n", ns);
    expect(unknown.code).to.equal(3);
    expect(unknown.stderr).to.equal(
      `error: InClusterIPPool "nope" not found in namespace "${ns}" (pools there: nodes)\n`,
    );
    const kind = await cli("free", "pod/nodes", "-n", ns);
    expect(kind.code).to.equal(2);
    expect(kind.stderr).to.match(/^error: unknown pool kind in "pod\/nodes"/);
  });

  it("works for Metal3 pools, with no error, on a cluster without the in-cluster provider's CRDs", async function () {
    if (usingExistingCluster()) this.skip();
    const bare = await LocalPlane.start({ crdDirs: [OUR_CRDS] });
    try {
      await clients(bare.kubeConfig).pools.create(
        "default",
        pool("default", "solo", { pools: [{ subnet: "10.90.0.0/30" }] }),
      );
      const run = (...args: string[]): Promise<CliRun> => runCli(args, { KUBECONFIG: bare.kubeconfigPath });
      const pools = await run("pools");
      expect([pools.code, pools.stderr]).to.deep.equal([0, ""]);
      expect(pools.stdout.split("\n")[0]).to.match(/^NAME +CLUSTER +STRATEGY/);
      expect(pools.stdout).to.match(/^solo +- +sequential +0\/3 /m);
      const all = await run("pools", "-A", "-o", "json");
      expect([all.code, all.stderr]).to.deep.equal([0, ""]);
      const free = await run("free", "solo");
      expect([free.code, free.stderr]).to.deep.equal([0, ""]);
      const who = await run("who", "10.90.0.1");
      expect([who.code, who.stderr]).to.deep.equal([0, ""]);
      const missing = await run("free", "globalinclusterippool/any");
      expect(missing.code).to.equal(3);
      expect(missing.stderr).to.match(
        /^error: the cluster does not serve globalinclusterippools\.ipam\.cluster\.x-k8s\.io /,
      );
    } finally {
      await bare.stop();
    }
  });
});
