/**
 * Pivot of the in-cluster provider's pools (spec §7): the real `clusterctl move` of a namespace whose
 * claims use a namespaced InClusterIPPool and a GlobalInClusterIPPool shared with a namespace that stays.
 *
 * What clusterctl does (its objectgraph and mover, both pool CRDs labelled move-hierarchy as the provider labels
 * them): the namespaced pool moves with its namespace, records and all. A cluster-scoped pool is created on the target
 * unless one of that name is already there (then the target's is kept as it is), and is never deleted from the source;
 * the records it owns are copied to the target and also stay in the source, where they keep their addresses reserved
 * for the clusters that left. On the target every claim adopts its copied record: nothing is allocated again.
 */
import { expect } from "chai";
import type { InClusterIPPool, InClusterIPPoolSpec } from "../../api/incluster/types.js";
import {
  PROTECT_ADDRESS_FINALIZER,
  PROTECT_POOL_FINALIZER,
  RELEASE_ADDRESS_FINALIZER,
} from "../../api/incluster/types.js";
import { apiVersionOf, GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL, resourceType } from "../../api/registry.js";
import { describeError } from "../../src/kube/errors.js";
import { ResourceClient } from "../../src/kube/resource.js";
import { globalPool, globalPoolRef } from "../../hack/testkit/ipam.js";
import { consistently, eventually } from "../../hack/testkit/wait.js";
import { runCli } from "../../hack/testkit/cli.js";
import {
  claimCount,
  createTopology,
  endpointsOf,
  endpointsSettle,
  ownedEndpoints,
  pictureOf,
  settledPicture,
  type Picture,
  type Topology,
} from "./fixtures.js";
import {
  clusterctlMove,
  ENDPOINT_DELETED,
  ENDPOINT_OWNED,
  ensureNamespace,
  managersOf,
  openWorld,
  outputTail,
  recordEvents,
  serveEndpointWebhooks,
  startRecordedController,
  wipeNamespace,
  type EventLog,
  type RecordedController,
  type Side,
  type World,
} from "./harness.js";

const external = process.env.E2E_EXTERNAL_CONTROLLER === "true";
const suffix = Math.random().toString(36).slice(2, 7);
/** Moved with a global pool the target does not have. */
const NS = `pivot-ic-${suffix}`;
/** Moved with a global pool created on the target beforehand. */
const NS_PRE = `pivot-icpre-${suffix}`;
/** Stays in the source, sharing both global pools. */
const NS_STAY = `pivot-icstay-${suffix}`;
/** A Cluster whose control-plane endpoint came from the global pool GLOBAL_EP, moved. */
const NS_EP = `pivot-icep-${suffix}`;
/** Stays in the source, asking the same global pool for an endpoint after the move. */
const NS_EP_STAY = `pivot-icepstay-${suffix}`;
const NAMESPACES = [NS, NS_PRE, NS_STAY, NS_EP, NS_EP_STAY];
const GLOBAL = `pivot-g-${suffix}`;
const GLOBAL_PRE = `pivot-gpre-${suffix}`;
const GLOBAL_EP = `pivot-gep-${suffix}`;
const ALLOCATED = "Allocated IPAddress";
const RELEASES = ["Released IPAddress", "Releasing IPAddress of an IPAddressClaim that is gone"];

const GLOBAL_SPEC: InClusterIPPoolSpec = { addresses: ["10.70.0.10-10.70.0.60"], prefix: 24, gateway: "10.70.0.1" };
const GLOBAL_PRE_SPEC: InClusterIPPoolSpec = { addresses: ["10.72.0.10-10.72.0.60"], prefix: 24 };
const GLOBAL_EP_SPEC: InClusterIPPoolSpec = { addresses: ["10.74.0.10-10.74.0.20"], prefix: 24 };

/** Each machine of `cluster` claims from the namespaced pool `local` (when set) and from the global pool `global`. */
function topology(cluster: string, machines: number, global: string, local?: string): Topology {
  return {
    pools: {},
    clusters: [
      {
        name: cluster,
        machines,
        claims: [
          ...(local
            ? [{ suffix: "ns", kind: "IPAddressClaim" as const, pool: local, poolKind: INCLUSTER_IPPOOL.kind }]
            : []),
          { suffix: "g", kind: "IPAddressClaim", pool: global, poolKind: GLOBAL_INCLUSTER_IPPOOL.kind },
        ],
      },
    ],
  };
}

interface PoolClients {
  local: ResourceClient<InClusterIPPool>;
  global: ResourceClient<InClusterIPPool>;
}

const poolClients = (side: Side): PoolClients => ({
  local: new ResourceClient<InClusterIPPool>(side.kubeConfig, resourceType(INCLUSTER_IPPOOL)),
  global: new ResourceClient<InClusterIPPool>(side.kubeConfig, resourceType(GLOBAL_INCLUSTER_IPPOOL)),
});

const used = (p: InClusterIPPool | undefined): number | undefined => p?.status?.ipAddresses?.used;

/** The Cluster API IPAddresses of `namespace` on `pool` (by poolRef name), as picture lines. */
const linesOf = (p: Picture, pool: string): string[] => p.capiAddresses.filter((l) => l.split(" ")[3] === pool);

/** Every ADDED name a log saw, sorted. */
const addedNames = (log: EventLog): string[] => [...log.added].sort();

describe("clusterctl move of in-cluster pools (namespaced and global)", function () {
  this.timeout(180_000);
  this.slow(60_000);
  let world: World;
  let source: Side;
  let target: Side;
  let sourcePools: PoolClients;
  let targetPools: PoolClients;
  const controllers = new Map<string, RecordedController>();
  const ctl = (side: Side): RecordedController => controllers.get(side.name)!;
  /** Stops the endpoint webhooks this process serves (local planes only). */
  const webhooks: (() => Promise<void>)[] = [];

  /** `kubectl ipam preflight-move` of `namespace` on the source, told the target (--to-kubeconfig), as JSON. */
  async function preflightTo(namespace: string): Promise<{
    code: number | null;
    leftBehind: string[];
    findings: { severity: string; kind: string; name: string; problem: string }[];
  }> {
    const args = ["preflight-move", "-n", namespace, "-o", "json", "--to-kubeconfig", target.kubeconfigPath];
    if (source.context) args.push("--context", source.context);
    if (target.context) args.push("--to-kubeconfig-context", target.context);
    const r = await runCli(args, { KUBECONFIG: source.kubeconfigPath });
    const doc = JSON.parse(r.stdout || "{}") as { leftBehind?: string[]; findings?: [] };
    return { code: r.code, leftBehind: doc.leftBehind ?? [], findings: doc.findings ?? [] };
  }

  before(async function () {
    this.timeout(300_000);
    world = await openWorld();
    ({ source, target } = world);
    sourcePools = poolClients(source);
    targetPools = poolClients(target);
    for (const ns of NAMESPACES) await ensureNamespace(source, ns);
    // Global pools are served only by a controller that sees every namespace.
    for (const side of [source, target]) controllers.set(side.name, await startRecordedController(side, ""));
    await sourcePools.global.create("", globalPool(GLOBAL, GLOBAL_SPEC));
    await sourcePools.global.create("", globalPool(GLOBAL_PRE, GLOBAL_PRE_SPEC));
    // The endpoint webhook and its guard, served as our controller would on each side (the target's sees the Cluster
    // clusterctl creates there).
    if (!world.existing) {
      for (const ns of [NS_EP, NS_EP_STAY]) webhooks.push(await serveEndpointWebhooks(source, ns));
      webhooks.push(await serveEndpointWebhooks(target, NS_EP));
    }
  });

  after(async function () {
    this.timeout(120_000);
    for (const c of controllers.values()) await c.stop();
    for (const stop of webhooks) await stop();
    if (!world) return;
    if (world.existing && process.env.PIVOT_KEEP !== "true") {
      for (const side of [source, target]) {
        for (const ns of NAMESPACES) await wipeNamespace(side, ns);
        for (const name of [GLOBAL, GLOBAL_PRE, GLOBAL_EP]) {
          await poolClients(side)
            .global.patch("", name, { metadata: { finalizers: null } })
            .catch(() => undefined);
          await poolClients(side)
            .global.delete("", name)
            .catch(() => undefined);
        }
      }
    }
    await world.close();
  });

  it("moves the namespaced pool with its namespace and copies the global one; every address stays bound", async () => {
    // The namespace that stays claims first, so the moved claims do not simply hold the pool's lowest addresses.
    const stay = topology("st", 2, GLOBAL);
    await createTopology(source.k, NS_STAY, stay);
    await settledPicture(source.k, NS_STAY, claimCount(stay));
    await sourcePools.local.create(NS, {
      apiVersion: apiVersionOf(INCLUSTER_IPPOOL),
      kind: INCLUSTER_IPPOOL.kind,
      metadata: { name: "local", namespace: NS },
      spec: { addresses: ["10.71.0.0/28"], prefix: 28, gateway: "10.71.0.1" },
    });
    const moving = topology("ic", 3, GLOBAL, "local");
    await createTopology(source.k, NS, moving);
    const s0 = await settledPicture(source.k, NS, claimCount(moving));
    expect(linesOf(s0, "local")).to.have.length(3);
    expect(linesOf(s0, GLOBAL)).to.have.length(3);
    await eventually(
      "the source's global pool to count 5",
      async () => used(await sourcePools.global.get("", GLOBAL)) === 5,
    );
    const globalBefore = await sourcePools.global.get("", GLOBAL);

    // preflight-move, told the target, says what the move does with each pool: the shared global pool is a blocker
    // (the target has none, so clusterctl copies the source's range); nothing is left behind.
    const pre = await preflightTo(NS);
    expect(pre.code).to.equal(1);
    expect(pre.leftBehind).to.deep.equal([]);
    expect(pre.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal([
      `blocker GlobalInClusterIPPool/${GLOBAL}`,
    ]);
    expect(pre.findings[0]!.problem).to.match(/^is missing on the target: clusterctl copies it there/);
    const addresses = await recordEvents(target, target.k.capiAddresses.collectionPath(NS));
    const globals = await recordEvents(target, targetPools.global.collectionPath());
    const since = Date.now();
    try {
      const r = await clusterctlMove(source, target, NS);
      console.log(`      move: clusterctl exit ${String(r.code)} after ${(r.ms / 1000).toFixed(1)} s`);
      expect(r.code, `clusterctl move failed:\n${outputTail(r)}\n`).to.equal(0);
      const moved = await settledPicture(target.k, NS, claimCount(moving), 60_000);
      // Same claims, same addresses, same IPAddresses (name, address, prefix, gateway, pool, claim).
      expect(moved.claims).to.deep.equal(s0.claims);
      expect(moved.capiAddresses).to.deep.equal(s0.capiAddresses);
    } finally {
      addresses.stop();
      globals.stop();
    }
    // Every IPAddress on the target is one clusterctl copied, created once; the target controller made none.
    expect(addedNames(addresses)).to.deep.equal(s0.capiAddresses.map((l) => l.split(" ")[0]!).sort());
    expect(addresses.deleted).to.deep.equal([]);
    expect(
      [...addresses.firstSeen.values()]
        .filter((o) => !managersOf(o).includes("clusterctl"))
        .map((o) => o.metadata.name),
    ).to.deep.equal([]);
    // clusterctl copies every global pool it sees (both of them here), with the source's spec.
    expect(addedNames(globals)).to.deep.equal([GLOBAL, GLOBAL_PRE].sort());
    const copied = await targetPools.global.get("", GLOBAL);
    expect(copied.spec).to.deep.equal(globalBefore.spec);
    expect(copied.metadata.finalizers).to.deep.equal([PROTECT_POOL_FINALIZER]);
    // Finalizers and owners on the target: each record owned by its claim (controller) and its pool, as on the source.
    await eventually(
      "records on the target owned by their claim and pool, with the pools' counts rebuilt",
      async () => {
        const local = await targetPools.local.get(NS, "local");
        const global = await targetPools.global.get("", GLOBAL);
        if (used(local) !== 3 || used(global) !== 3) return false;
        for (const a of (await target.k.capiAddresses.list(NS)).items) {
          const claim = await target.k.capiClaims.get(NS, a.spec.claimRef.name);
          const pool = a.spec.poolRef.kind === INCLUSTER_IPPOOL.kind ? local : global;
          const owners = (a.metadata.ownerReferences ?? []).map((o) => `${o.kind}/${o.uid}/${String(o.controller)}`);
          const want = [`${claim.kind}/${claim.metadata.uid}/true`, `${pool.kind}/${pool.metadata.uid}/undefined`];
          if (JSON.stringify(owners.sort()) !== JSON.stringify(want.sort())) return false;
          if (JSON.stringify(a.metadata.finalizers) !== JSON.stringify([PROTECT_ADDRESS_FINALIZER])) return false;
          if (!(claim.metadata.finalizers ?? []).includes(RELEASE_ADDRESS_FINALIZER)) return false;
        }
        return true;
      },
      30_000,
      500,
    );
    if (!external) expect(ctl(target).count(ALLOCATED, since), "allocations by the target controller").to.equal(0);

    // The source: the namespace's Clusters, claims, namespaced pool and its records are gone; the global pool stays
    // with the records of the claims that left, still counted, so their addresses are not handed out again here.
    const keepsGlobal = async (): Promise<boolean> => {
      const p = await pictureOf(source.k, NS);
      const global = await sourcePools.global.get("", GLOBAL);
      return (
        p.counts.clusters === 0 &&
        p.counts.capiClaims === 0 &&
        (await sourcePools.local.list(NS)).items.length === 0 &&
        JSON.stringify(p.capiAddresses) === JSON.stringify(linesOf(s0, GLOBAL)) &&
        used(global) === 5
      );
    };
    await eventually("the source to keep the global pool's records of the moved claims", keepsGlobal, 15_000, 250);
    await consistently("the source to keep them", keepsGlobal, 3_000, 250);
    if (!external)
      for (const msg of [ALLOCATED, ...RELEASES])
        expect(ctl(source).count(msg, since), `source controller: ${msg}`).to.equal(0);
    // A new claim of the namespace that stayed gets none of the moved claims' addresses.
    await source.k.capiClaims.create(NS_STAY, {
      metadata: { name: "newcomer", namespace: NS_STAY },
      spec: { poolRef: globalPoolRef(GLOBAL) },
    });
    const newcomer = await eventually(
      "newcomer bound",
      async () => (await pictureOf(source.k, NS_STAY)).claims["IPAddressClaim/newcomer"] || undefined,
    );
    expect(Object.values(s0.claims)).to.not.include(newcomer);
  });

  it("keeps a global pool that exists on the target before the move, and binds the moved claims to it", async () => {
    await createTopology(source.k, NS_STAY, topology("st2", 2, GLOBAL_PRE));
    const moving = topology("pre", 2, GLOBAL_PRE);
    await createTopology(source.k, NS_PRE, moving);
    const s0 = await settledPicture(source.k, NS_PRE, claimCount(moving));
    const staying = await eventually("the staying claims on the pool bound", async () => {
      const p = await pictureOf(source.k, NS_STAY);
      const held = linesOf(p, GLOBAL_PRE).map((l) => l.split(" ")[1]!.split("/")[0]!);
      return held.length === 2 ? held : undefined;
    });
    // The first test's move copied this pool to the target with the source's range: shared, that is a blocker.
    const copied = await preflightTo(NS_PRE);
    expect(copied.code).to.equal(1);
    expect(copied.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal([
      `blocker GlobalInClusterIPPool/${GLOBAL_PRE}`,
    ]);
    expect(copied.findings[0]!.problem).to.include("(which clusterctl keeps) can hand out 10.72.0.10-");
    // The fix spec §7 gives: the target's pool gets a range of its own (the moved claims keep theirs, out of range
    // there). Then preflight passes, with a warning only.
    await targetPools.global.patch("", GLOBAL_PRE, { spec: { addresses: ["10.72.1.10-10.72.1.60"] } });
    const split = await preflightTo(NS_PRE);
    expect(split.code, JSON.stringify(split.findings)).to.equal(0);
    expect(split.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal([
      `warning GlobalInClusterIPPool/${GLOBAL_PRE}`,
    ]);
    const targetSpec = (await targetPools.global.get("", GLOBAL_PRE)).spec;
    const sourceUid = (await sourcePools.global.get("", GLOBAL_PRE)).metadata.uid;
    const addresses = await recordEvents(target, target.k.capiAddresses.collectionPath(NS_PRE));
    const since = Date.now();
    let moved: Picture;
    try {
      const r = await clusterctlMove(source, target, NS_PRE);
      expect(r.code, `clusterctl move failed:\n${outputTail(r)}\n`).to.equal(0);
      moved = await settledPicture(target.k, NS_PRE, claimCount(moving), 60_000);
    } finally {
      addresses.stop();
    }
    expect(moved.claims).to.deep.equal(s0.claims);
    expect(moved.capiAddresses).to.deep.equal(s0.capiAddresses);
    // clusterctl left the target's pool as it was.
    expect((await targetPools.global.get("", GLOBAL_PRE)).spec).to.deep.equal(targetSpec);
    // clusterctl found the pool there and wrote the records' owner reference with the source pool's uid (an owner
    // that does not exist on the target); the records end up owned by the target's pool object.
    const poolOwners = [...addresses.firstSeen.values()].map((a) =>
      (a.metadata.ownerReferences ?? []).filter((o) => o.kind === GLOBAL_INCLUSTER_IPPOOL.kind).map((o) => o.uid),
    );
    expect(poolOwners).to.deep.equal(s0.capiAddresses.map(() => [sourceUid]));
    const targetUid = (await targetPools.global.get("", GLOBAL_PRE)).metadata.uid;
    await eventually(
      "records owned by the target's pool",
      async () =>
        (await target.k.capiAddresses.list(NS_PRE)).items.every(
          (a) =>
            JSON.stringify(
              (a.metadata.ownerReferences ?? [])
                .filter((o) => o.kind === GLOBAL_INCLUSTER_IPPOOL.kind)
                .map((o) => o.uid),
            ) === JSON.stringify([targetUid]),
        ),
      30_000,
      500,
    );
    if (!external) expect(ctl(target).count(ALLOCATED, since), "allocations by the target controller").to.equal(0);
    // A new claim on the target gets neither a moved address nor one the source still hands out.
    const cluster = await target.k.clusters.get(NS_PRE, "pre");
    await target.k.capiClaims.create(NS_PRE, {
      metadata: { name: "newcomer", namespace: NS_PRE, labels: { "cluster.x-k8s.io/cluster-name": "pre" } },
      spec: { poolRef: globalPoolRef(GLOBAL_PRE), clusterName: cluster.metadata.name ?? "" },
    });
    const newcomer = await eventually(
      "newcomer bound on the target",
      async () => (await pictureOf(target.k, NS_PRE)).claims["IPAddressClaim/newcomer"] || undefined,
    );
    expect(newcomer).to.equal("10.72.1.10");
    expect([...Object.values(s0.claims), ...staying]).to.not.include(newcomer);
    // The moved records are kept though the target's pool does not contain them: counted out of range. The status is
    // a view that may trail the records (a write that changes no condition waits its interval), so it is awaited.
    await eventually(
      "the target's global pool to count the newcomer and both moved records",
      async () => {
        const counts = (await targetPools.global.get("", GLOBAL_PRE)).status?.ipAddresses;
        return counts?.used === 3 && counts.outOfRange === 2;
      },
      30_000,
      500,
    );
  });
  it("moves an endpoint from a global pool: kept on the target, still held in the source, not handed out again", async function () {
    // The webhooks are served from this process, which only a local plane can call.
    if (world.existing) this.skip();
    // Made now: every move copies the global pools there are, and the earlier tests count theirs.
    await sourcePools.global.create("", globalPool(GLOBAL_EP, GLOBAL_EP_SPEC));
    const endpointPool = `GlobalInClusterIPPool/${GLOBAL_EP}`;
    const moving: Topology = { pools: {}, clusters: [{ name: "ge", machines: 0, claims: [], endpointPool }] };
    await createTopology(source.k, NS_EP, moving);
    const s0 = await settledPicture(source.k, NS_EP, claimCount(moving));
    const e0 = await ownedEndpoints(source.k, NS_EP, 1);
    expect(e0.ge).to.equal(
      `10.74.0.10:6443 claim=ge-control-plane-endpoint pool=${endpointPool} owner=Cluster/ge address=ge-control-plane-endpoint 10.74.0.10`,
    );
    const claims = await recordEvents(target, target.k.capiClaims.collectionPath(NS_EP));
    const addresses = await recordEvents(target, target.k.capiAddresses.collectionPath(NS_EP));
    const since = Date.now();
    try {
      const r = await clusterctlMove(source, target, NS_EP);
      console.log(
        `      move of an endpoint from a global pool: clusterctl exit ${String(r.code)} after ${(r.ms / 1000).toFixed(1)} s`,
      );
      expect(r.code, `clusterctl move failed:\n${outputTail(r)}\n`).to.equal(0);
      const moved = await settledPicture(target.k, NS_EP, claimCount(moving), 60_000);
      expect(moved.claims).to.deep.equal(s0.claims);
      expect(moved.capiAddresses).to.deep.equal(s0.capiAddresses);
      // Same host, claim and record, the claim owned by the target's Cluster.
      expect(await endpointsSettle(target.k, NS_EP, e0)).to.deep.equal(e0);
    } finally {
      claims.stop();
      addresses.stop();
    }
    // Created once each by clusterctl; nothing re-allocated, re-owned or deleted by the target's controller.
    expect([...claims.added, ...addresses.added]).to.deep.equal([
      "ge-control-plane-endpoint",
      "ge-control-plane-endpoint",
    ]);
    expect([...claims.deleted, ...addresses.deleted]).to.deep.equal([]);
    expect(
      [...claims.firstSeen.values(), ...addresses.firstSeen.values()]
        .filter((o) => !managersOf(o).includes("clusterctl"))
        .map((o) => o.metadata.name),
    ).to.deep.equal([]);
    expect(ctl(target).count(ALLOCATED, since), "allocations by the target controller").to.equal(0);
    expect(ctl(target).count(ENDPOINT_OWNED, since), "target: owner references added").to.equal(0);
    for (const side of [source, target])
      expect(ctl(side).count(ENDPOINT_DELETED, since), `${side.name}: endpoint claims deleted`).to.equal(0);
    for (const msg of [ALLOCATED, ...RELEASES])
      expect(ctl(source).count(msg, since), `source controller: ${msg}`).to.equal(0);

    // The source keeps the global pool's record of the moved endpoint: its Cluster and claim left, the address stays
    // held, so the guard refuses it as a host and the next endpoint of the pool gets another address.
    const keepsRecord = async (): Promise<boolean> => {
      const p = await pictureOf(source.k, NS_EP);
      return (
        p.counts.clusters === 0 &&
        p.counts.capiClaims === 0 &&
        JSON.stringify(p.capiAddresses) === JSON.stringify(s0.capiAddresses) &&
        used(await sourcePools.global.get("", GLOBAL_EP)) === 1
      );
    };
    await eventually("the source to keep the moved endpoint's record", keepsRecord, 15_000, 250);
    await consistently("the source to keep it", keepsRecord, 2_000, 250);
    const refused = await source.k.clusters
      .create(NS_EP_STAY, {
        metadata: { name: "copycat", namespace: NS_EP_STAY },
        spec: { controlPlaneEndpoint: { host: "10.74.0.10", port: 6443 } },
      })
      .then(
        () => "admitted",
        (err: unknown) => describeError(err),
      );
    expect(refused).to.include("address 10.74.0.10 is already held by").and.to.include("ge-control-plane-endpoint");
    const staying: Topology = { pools: {}, clusters: [{ name: "gs", machines: 0, claims: [], endpointPool }] };
    await createTopology(source.k, NS_EP_STAY, staying);
    const next = await endpointsOf(source.k, NS_EP_STAY);
    expect(next.gs).to.match(/^10\.74\.0\.11:6443 claim=gs-control-plane-endpoint /);
  });
});
