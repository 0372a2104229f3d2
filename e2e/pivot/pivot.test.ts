/**
 * Pivot (spec §7): the real `clusterctl move` carries three workload clusters and their 100 claims (IPClaims
 * and Cluster API IPAddressClaims) between two management clusters while our controller runs on both, and back; and
 * Clusters whose control-plane endpoints our webhook took from a pool, with the webhooks served on both.
 *
 * By default both management clusters are local planes started here; `e2e/pivot/run.ts --from K1 --to K2` runs the
 * same suite against two existing clusters (kind).
 */
import { expect } from "chai";
import {
  claimCount,
  createMachine,
  createTopology,
  endpointsOf,
  endpointsSettle,
  endpointTopology,
  exists,
  finishClaimDeletion,
  ownedEndpoints,
  isEmpty,
  loosePoolTopology,
  mainTopology,
  pictureOf,
  restoreCapiStatus,
  settledPicture,
  smallTopology,
  startMidDeletions,
  versionsOf,
  withoutDeletionState,
  type Picture,
  type Thing,
  type Topology,
} from "./fixtures.js";
import {
  clusterctlMove,
  ENDPOINT_DELETED,
  ENDPOINT_OWNED,
  ensureNamespace,
  managersOf,
  namespaceExists,
  openWorld,
  outputTail,
  recordAll,
  recordEvents,
  serveEndpointWebhooks,
  startRecordedController,
  wipeNamespace,
  type MoveResult,
  type RecordedController,
  type Side,
  type World,
} from "./harness.js";
import { consistently, eventually } from "../../hack/testkit/wait.js";
import { runCli } from "../../hack/testkit/cli.js";

const external = process.env.E2E_EXTERNAL_CONTROLLER === "true";
const suffix = Math.random().toString(36).slice(2, 7);
const NS = `pivot-${suffix}`;
const NS_LOOSE = `pivot-loose-${suffix}`;
const NS_PAUSED = `pivot-paused-${suffix}`;
/** Clusters whose control-plane endpoints came from a pool through our webhook. */
const NS_EP = `pivot-ep-${suffix}`;
const NAMESPACES = [NS, NS_LOOSE, NS_PAUSED, NS_EP];

/** Messages our controller logs when it writes or frees an address. */
const ALLOCATED = "Allocated IPAddress";
const RELEASES = [
  "Released IPAddress",
  "Releasing IPAddress of a claim that is gone",
  "Releasing IPAddress of an IPAddressClaim that is gone",
];

function report(what: string, r: MoveResult): void {
  console.log(`      ${what}: clusterctl exit ${String(r.code)} after ${(r.ms / 1000).toFixed(1)} s`);
}

/** `kubectl ipam preflight-move` against one side, as JSON. */
async function preflightOn(
  side: Side,
  namespace: string,
): Promise<{
  code: number | null;
  leftBehind: string[];
  findings: { severity: string; kind: string; name: string }[];
}> {
  const r = await runCli(
    ["preflight-move", "-n", namespace, "-o", "json", ...(side.context ? ["--context", side.context] : [])],
    { KUBECONFIG: side.kubeconfigPath },
  );
  const report = JSON.parse(r.stdout || "{}") as {
    leftBehind?: string[];
    findings?: { severity: string; kind: string; name: string }[];
  };
  return { code: r.code, leftBehind: [...(report.leftBehind ?? [])].sort(), findings: report.findings ?? [] };
}

/** Our objects in a picture, named as preflight-move names them. */
const ourObjects = (p: Picture): string[] =>
  [
    ...Object.keys(p.pools).map((n) => `IPPool/${n}`),
    ...p.addresses.map((a) => `IPAddress.ipam.metal3.io/${a.split(" ")[0]!}`),
    ...p.capiAddresses.map((a) => `IPAddress.ipam.cluster.x-k8s.io/${a.split(" ")[0]!}`),
  ].sort();

function expectMoved(r: MoveResult): void {
  expect(r.code, `clusterctl move failed:\n${outputTail(r)}\n`).to.equal(0);
}

/** IPAddress names (both kinds) of a picture. */
const addressNames = (p: Picture): { m3: string[]; capi: string[] } => ({
  m3: p.addresses.map((a) => a.split(" ")[0]!).sort(),
  capi: p.capiAddresses.map((a) => a.split(" ")[0]!).sort(),
});

const addressesHeld = (p: Picture): Set<string> => new Set(Object.values(p.claims).filter(Boolean));

describe("clusterctl move (pivot) between two management clusters", function () {
  this.timeout(180_000);
  this.slow(60_000);
  let world: World;
  let source: Side;
  let target: Side;
  const controllers = new Map<string, RecordedController>();
  const ctl = (side: Side, ns: string): RecordedController => controllers.get(`${side.name}/${ns}`)!;
  const main: Topology = mainTopology();
  let s0: Picture;
  /** Stops the endpoint webhooks this process serves (local planes only). */
  const webhooks: (() => Promise<void>)[] = [];

  before(async function () {
    this.timeout(300_000);
    world = await openWorld();
    ({ source, target } = world);
    for (const ns of NAMESPACES) await ensureNamespace(source, ns);
    // Both sides serve the endpoint webhook and its guard for NS_EP, as our controller would on each: the target's sees
    // the Clusters clusterctl creates (the namespace is made and labelled beforehand, which clusterctl accepts).
    if (!world.existing) for (const side of [source, target]) webhooks.push(await serveEndpointWebhooks(side, NS_EP));
    for (const side of [source, target]) {
      for (const ns of NAMESPACES) controllers.set(`${side.name}/${ns}`, await startRecordedController(side, ns));
    }
    await createTopology(source.k, NS, main);
    await settledPicture(source.k, NS, claimCount(main));
    const deleting = await startMidDeletions(source.k, NS, main);
    s0 = await settledPicture(source.k, NS, claimCount(main));
    expect(s0.deleting).to.have.length(deleting.length).and.to.have.length(40);
  });

  after(async function () {
    this.timeout(120_000);
    for (const c of controllers.values()) await c.stop();
    for (const stop of webhooks) await stop();
    if (!world) return;
    if (world.existing && process.env.PIVOT_KEEP !== "true") {
      for (const side of [source, target]) for (const ns of NAMESPACES) await wipeNamespace(side, ns);
    }
    await world.close();
  });

  it("starts from 3 clusters and 100 bound claims of both kinds, 40 of them mid-deletion", () => {
    expect(Object.keys(s0.claims).filter((k) => k.startsWith("IPAddressClaim/"))).to.have.length(30);
    expect(s0.counts).to.include({
      clusters: 3,
      machines: 50,
      claims: 70,
      addresses: 70,
      capiClaims: 30,
      capiAddresses: 30,
      pools: 5,
    });
    expect(s0.claims["IPClaim/c1-m01-prov"]).to.equal("10.10.0.150");
    expect(s0.claims["IPAddressClaim/c2-m02-bm"]).to.equal("192.168.20.77");
    expect(s0.claims["IPClaim/c2-m03-prov"]).to.equal("10.10.0.200");
    expect(s0.claims["IPAddressClaim/c1-m00-bm"]).to.equal("192.168.10.100");
    expect(s0.pools.prov!.owners).to.deep.equal(["Cluster/c1"]);
    expect(Object.keys(s0.pools.prov!.indexes).filter((n) => n.startsWith("c2-"))).to.have.length(15);
  });

  it("moves everything to the target: same addresses, no new IPAddress, status rebuilt, source emptied", async () => {
    // preflight-move agrees (read before the recorders start: their watches must not idle): nothing stays; the mid-deletion claims are warnings only.
    const pre = await preflightOn(source, NS);
    expect(pre.code).to.equal(0);
    expect(pre.leftBehind).to.deep.equal([]);
    expect(pre.findings.filter((f) => f.severity !== "warning")).to.deep.equal([]);
    const watched = await recordAll(target, NS, {
      addresses: target.k.addresses,
      capiAddresses: target.k.capiAddresses,
      pools: target.k.pools,
      claims: target.k.claims,
    });
    const since = Date.now();
    let moved: Picture;
    try {
      const r = await clusterctlMove(source, target, NS);
      report("move of 3 clusters / 100 claims", r);
      expectMoved(r);
      moved = await settledPicture(target.k, NS, claimCount(main), 60_000);
    } finally {
      Object.values(watched).forEach((w) => w.stop());
    }
    // Every claim has the address it had, and pools and claims report exactly what they reported in the source.
    expect(withoutDeletionState(moved)).to.deep.equal(withoutDeletionState(s0));
    // clusterctl cannot create a deleting object: the mid-deletion claims arrive alive, still holding their addresses.
    expect(moved.deleting).to.deep.equal([]);
    // Every IPAddress in the target is one clusterctl copied over, created once; none was made by the target controller.
    const names = addressNames(s0);
    expect([...watched.addresses.added].sort()).to.deep.equal(names.m3);
    expect([...watched.capiAddresses.added].sort()).to.deep.equal(names.capi);
    expect([...watched.addresses.deleted, ...watched.capiAddresses.deleted]).to.deep.equal([]);
    const notByClusterctl = [
      ...watched.addresses.firstSeen.values(),
      ...watched.capiAddresses.firstSeen.values(),
    ].filter((o) => !managersOf(o).includes("clusterctl"));
    expect(
      notByClusterctl.map((o) => o.metadata.name),
      "IPAddresses not created by clusterctl",
    ).to.deep.equal([]);
    // Status is never carried over: pools and claims arrived without one and were rebuilt from the IPAddresses.
    for (const log of [watched.pools, watched.claims]) {
      expect(
        [...log.firstSeen.values()].filter((o) => o.status !== undefined).map((o) => o.metadata.name),
      ).to.deep.equal([]);
    }
    if (!external) {
      expect(ctl(target, NS).count(ALLOCATED, since), "allocations by the target controller").to.equal(0);
      for (const msg of [ALLOCATED, ...RELEASES])
        expect(ctl(source, NS).count(msg, since), `source controller: ${msg}`).to.equal(0);
    }
    // Nothing of the moved clusters is left in the source namespace.
    expect(isEmpty(await pictureOf(source.k, NS)), "source namespace empty").to.equal(true);
  });

  it("after the move, serves new claims in the target around the moved ones and releases deleted moved claims", async () => {
    const before = await pictureOf(target.k, NS);
    const held = addressesHeld(before);
    const clusters = new Map<string, Thing>();
    for (const name of ["c1", "c2", "c3"]) clusters.set(name, await target.k.clusters.get(NS, name));
    const [c1, c2, c3] = main.clusters as [
      Topology["clusters"][number],
      Topology["clusters"][number],
      Topology["clusters"][number],
    ];
    const fresh = [
      ...(await createMachine(target.k, NS, c1, clusters.get("c1")!, 15)),
      ...(await createMachine(target.k, NS, c2, clusters.get("c2")!, 15)),
    ];
    const withNew = await settledPicture(target.k, NS, claimCount(main) + fresh.length);
    const freshAddresses = Object.entries(withNew.claims)
      .filter(([key]) => fresh.includes(key.slice(key.indexOf("/") + 1)))
      .map(([, a]) => a);
    expect(freshAddresses).to.have.length(4); // 2 machines, each with an IPClaim and an IPAddressClaim
    for (const a of freshAddresses) expect(held.has(a), `${a} collides with a moved claim`).to.equal(false);

    // c3's claims were being deleted when they moved; CAPM3 finishes that on its new management cluster.
    const c3Claims = Object.keys(before.claims)
      .filter((k) => k.startsWith("IPClaim/c3-"))
      .map((k) => k.slice("IPClaim/".length));
    expect(c3Claims).to.have.length(40);
    await finishClaimDeletion(target.k, NS, c3Claims);
    const released = await eventually(
      "c3's addresses released",
      async () => {
        const p = await pictureOf(target.k, NS);
        const gone =
          p.addresses.every((a) => !a.startsWith("c3-")) &&
          !Object.keys(p.claims).some((k) => k.includes("/c3-")) &&
          [p.pools["c3-prov"]!, p.pools["c3-bm"]!].every((v) => v.used === 0 && Object.keys(v.indexes).length === 0);
        return gone ? p : undefined;
      },
      30_000,
      500,
    );
    expect(Object.keys(released.claims).filter((k) => k.includes("/c3-"))).to.deep.equal([]);
    // A released address is free again: the next c3 machine gets the first address of each pool, a moved claim's before.
    const next = await createMachine(target.k, NS, c3, clusters.get("c3")!, 20);
    const after = await settledPicture(target.k, NS, claimCount(main) + fresh.length - 40 + next.length);
    expect([after.claims["IPClaim/c3-m20-prov"], after.claims["IPClaim/c3-m20-bm"]]).to.deep.equal([
      "10.30.0.10",
      "fd00:30::1",
    ]);
    expect(held.has("10.30.0.10") && held.has("fd00:30::1")).to.equal(true);
  });

  it("moves back to the original management cluster and restores the picture", async () => {
    // clusterctl carries no status: Cluster API's controllers on the new management cluster report Clusters and Machines
    // again, which the move back's preflight requires. Nothing of ours is touched.
    await restoreCapiStatus(target.k, NS);
    const t1 = await pictureOf(target.k, NS);
    const watched = await recordEvents(source, source.k.addresses.collectionPath(NS));
    const since = Date.now();
    let back: Picture;
    try {
      const r = await clusterctlMove(target, source, NS);
      report("move back", r);
      expectMoved(r);
      back = await eventually(
        "the original cluster to show the picture the target had",
        async () => {
          const p = await pictureOf(source.k, NS);
          return JSON.stringify(p) === JSON.stringify(t1) ? p : undefined;
        },
        60_000,
        500,
      ).catch(() => pictureOf(source.k, NS));
    } finally {
      watched.stop();
    }
    expect(back).to.deep.equal(t1);
    expect([...watched.added].sort()).to.deep.equal(addressNames(t1).m3);
    expect(
      [...watched.firstSeen.values()].filter((o) => !managersOf(o).includes("clusterctl")).map((o) => o.metadata.name),
    ).to.deep.equal([]);
    expect(isEmpty(await pictureOf(target.k, NS)), "target namespace empty").to.equal(true);
    if (!external)
      expect(ctl(source, NS).count(ALLOCATED, since), "allocations by the original controller").to.equal(0);
    // Every claim that existed before the round trip (all but c3's, finished above) has its original address.
    for (const [key, address] of Object.entries(s0.claims)) {
      if (key.includes("/c3-")) continue;
      expect(back.claims[key], key).to.equal(address);
    }
    for (const line of s0.addresses.filter((a) => !a.startsWith("c3-"))) expect(back.addresses).to.include(line);
    expect(back.pools.prov!.owners).to.deep.equal(["Cluster/c1"]);
  });

  it("moves Clusters whose endpoints came from a pool: hosts, claims, owners and addresses kept, none re-allocated", async function () {
    // The webhooks are served from this process, which only a local plane can call.
    if (world.existing) this.skip();
    const t = endpointTopology();
    await createTopology(source.k, NS_EP, t);
    const before = await settledPicture(source.k, NS_EP, claimCount(t));
    // clusterctl follows owner references: each endpoint claim must be owned by its Cluster, the pool by e1.
    const e0 = await ownedEndpoints(source.k, NS_EP, 2);
    await eventually(
      "the pool owned by e1",
      async () => (await pictureOf(source.k, NS_EP)).pools.vips!.owners.join() === "Cluster/e1",
      30_000,
      250,
    );
    // The webhook wrote the first addresses of the pool, in creation order, before any machine claimed.
    expect(e0.e1).to.match(
      /^10\.80\.0\.10:6443 claim=e1-control-plane-endpoint pool=IPPool\/vips owner=Cluster\/e1 address=\S+ 10\.80\.0\.10$/,
    );
    expect(e0.e2).to.match(
      /^10\.80\.0\.11:6443 claim=e2-control-plane-endpoint pool=IPPool\/vips owner=Cluster\/e2 address=\S+ 10\.80\.0\.11$/,
    );
    const s1 = await settledPicture(source.k, NS_EP, claimCount(t));
    expect(s1).to.deep.equal(before);
    const watched = await recordAll(target, NS_EP, {
      clusters: target.k.clusters,
      capiClaims: target.k.capiClaims,
      capiAddresses: target.k.capiAddresses,
      addresses: target.k.addresses,
    });
    const since = Date.now();
    try {
      const r = await clusterctlMove(source, target, NS_EP);
      report("move of 2 clusters with endpoints from a pool", r);
      expectMoved(r);
      const moved = await settledPicture(target.k, NS_EP, claimCount(t), 60_000);
      expect(moved).to.deep.equal(s1);
      // Same hosts, same claims and IPAddresses (names and addresses), each claim owned by the target's Cluster.
      expect(await endpointsSettle(target.k, NS_EP, e0)).to.deep.equal(e0);
    } finally {
      Object.values(watched).forEach((w) => w.stop());
    }
    // clusterctl created the Clusters paused, and every claim and IPAddress exactly once: none deleted and re-created
    // on the target, none made by the target's controller.
    expect(
      [...watched.clusters.firstSeen.values()].map(
        (c) => `${c.metadata.name ?? ""} ${String((c as Thing).spec?.paused)}`,
      ),
    ).to.have.members(["e1 true", "e2 true"]);
    const names = addressNames(s1);
    expect([...watched.capiAddresses.added].sort()).to.deep.equal(names.capi);
    expect([...watched.addresses.added].sort()).to.deep.equal(names.m3);
    const capiClaimNames = Object.keys(s1.claims)
      .filter((k) => k.startsWith("IPAddressClaim/"))
      .map((k) => k.slice("IPAddressClaim/".length))
      .sort();
    expect(capiClaimNames).to.include.members(["e1-control-plane-endpoint", "e2-control-plane-endpoint"]);
    expect([...watched.capiClaims.added].sort()).to.deep.equal(capiClaimNames);
    for (const log of Object.values(watched)) expect(log.deleted).to.deep.equal([]);
    expect(
      [...watched.capiClaims.firstSeen.values(), ...watched.capiAddresses.firstSeen.values()]
        .filter((o) => !managersOf(o).includes("clusterctl"))
        .map((o) => o.metadata.name),
    ).to.deep.equal([]);
    // The owner reference came with the claim, and the pause clusterctl holds kept both lifecycles away.
    expect(ctl(target, NS_EP).count(ALLOCATED, since), "allocations by the target controller").to.equal(0);
    expect(ctl(target, NS_EP).count(ENDPOINT_OWNED, since), "target: owner references added").to.equal(0);
    for (const side of [source, target])
      expect(ctl(side, NS_EP).count(ENDPOINT_DELETED, since), `${side.name}: endpoint claims deleted`).to.equal(0);
    for (const msg of [ALLOCATED, ...RELEASES])
      expect(ctl(source, NS_EP).count(msg, since), `source controller: ${msg}`).to.equal(0);
    expect(isEmpty(await pictureOf(source.k, NS_EP)), "source namespace empty").to.equal(true);

    // Unpaused on the target, the claims stay as they are; a new Cluster gets an address none of them holds.
    const quiet = await endpointsOf(target.k, NS_EP);
    await consistently(
      "the moved endpoints to stay",
      async () => JSON.stringify(await endpointsOf(target.k, NS_EP)) === JSON.stringify(quiet),
      2_000,
      250,
    );
    await createTopology(target.k, NS_EP, {
      pools: {},
      clusters: [{ name: "e3", machines: 0, claims: [], endpointPool: "IPPool/vips" }],
    });
    const e3 = (await target.k.clusters.get(NS_EP, "e3")).spec?.controlPlaneEndpoint as { host?: string };
    expect(e3.host).to.match(/^10\.80\.0\.\d+$/);
    expect([...addressesHeld(s1)], `${e3.host ?? ""} was still held`).to.not.include(e3.host);
    expect(ctl(target, NS_EP).count(ENDPOINT_DELETED, since)).to.equal(0);
  });

  it("leaves a pool without clusterName behind with its addresses; the moved claims report PoolNotFound", async () => {
    const t = loosePoolTopology();
    await createTopology(source.k, NS_LOOSE, t);
    const before = await settledPicture(source.k, NS_LOOSE, claimCount(t));
    expect(before.pools.loose!.owners).to.deep.equal([]);
    const pre = await preflightOn(source, NS_LOOSE);
    expect(pre.code).to.equal(1);
    const since = Date.now();
    const r = await clusterctlMove(source, target, NS_LOOSE);
    report("move with a pool without clusterName", r);
    expectMoved(r);
    // The target: claims without their pool, waiting, with a message that says why; no address was made up.
    const there = await eventually(
      "the moved claims to report the missing pool",
      async () => {
        const p = await pictureOf(target.k, NS_LOOSE);
        return Object.keys(p.ready).length === 4 && Object.values(p.ready).every((v) => v.startsWith("False/"))
          ? p
          : undefined;
      },
      30_000,
      500,
    );
    expect(there.ready).to.deep.equal({
      "IPAddressClaim/cl-m00-bm": "False/PoolNotReady: IPPool loose not found",
      "IPAddressClaim/cl-m01-bm": "False/PoolNotReady: IPPool loose not found",
      "IPClaim/cl-m00-prov": "False/PoolNotFound: IPPool loose not found",
      "IPClaim/cl-m01-prov": "False/PoolNotFound: IPPool loose not found",
    });
    expect(there.counts).to.include({ clusters: 1, pools: 0, addresses: 0, capiAddresses: 0 });
    // The source: the pool stays with every IPAddress of the claims that left; they stay reserved (not orphans).
    const stays = async (): Promise<boolean> => {
      const p = await pictureOf(source.k, NS_LOOSE);
      return (
        p.counts.claims === 0 &&
        p.counts.clusters === 0 &&
        JSON.stringify([p.addresses, p.capiAddresses, p.pools]) ===
          JSON.stringify([before.addresses, before.capiAddresses, before.pools])
      );
    };
    await eventually("the source to keep the pool and its addresses", stays, 10_000, 250);
    await consistently("the source to keep the pool and its addresses", stays, 3_000, 250);
    // What preflight-move said would be left behind is exactly what the real move left behind.
    expect(pre.leftBehind).to.deep.equal(ourObjects(await pictureOf(source.k, NS_LOOSE)));
    if (!external)
      for (const msg of [ALLOCATED, ...RELEASES])
        expect(ctl(source, NS_LOOSE).count(msg, since), `source controller: ${msg}`).to.equal(0);
    // They stay reserved: a new claim of that pool gets none of them.
    await source.k.claims.create(NS_LOOSE, {
      metadata: { name: "newcomer", namespace: NS_LOOSE },
      spec: { pool: { name: "loose" } },
    });
    const newcomer = await eventually(
      "newcomer bound",
      async () => (await pictureOf(source.k, NS_LOOSE)).claims["IPClaim/newcomer"] || undefined,
    );
    expect(addressesHeld(before).has(newcomer), `${newcomer} was still reserved`).to.equal(false);
  });

  it("refuses to move a paused Cluster, changing nothing on either side", async () => {
    const t = smallTopology("cp");
    await createTopology(source.k, NS_PAUSED, t);
    await settledPicture(source.k, NS_PAUSED, claimCount(t));
    await source.k.clusters.patch(NS_PAUSED, "cp", { spec: { paused: true } });
    const pre = await preflightOn(source, NS_PAUSED);
    expect(pre.code).to.equal(1);
    expect(pre.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal(["blocker Cluster/cp"]);
    const versions = await versionsOf(source.k, NS_PAUSED);
    await consistently(
      "the paused namespace to stay quiet",
      async () => JSON.stringify(await versionsOf(source.k, NS_PAUSED)) === JSON.stringify(versions),
      1_000,
      250,
    );
    const r = await clusterctlMove(source, target, NS_PAUSED);
    report("move of a paused Cluster", r);
    expect(r.code).to.not.equal(0);
    expect(r.output).to.include(`cannot start operation while the following Clusters are paused: ${NS_PAUSED}/cp`);
    expect(await versionsOf(source.k, NS_PAUSED)).to.deep.equal(versions);
    expect(await exists(source.k.clusters, NS_PAUSED, "cp")).to.equal(true);
    expect(await namespaceExists(target, NS_PAUSED)).to.equal(false);
  });
});
