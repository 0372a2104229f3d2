/**
 * Pivot of NetBox pools (spec §7): the real `clusterctl move` of a namespace whose Cluster's claims are bound
 * on a NetBoxIPPool of the namespace and on a GlobalNetBoxIPPool shared with a namespace that stays, between two real
 * API servers, with our controller on each side talking to one real NetBox.
 *
 * What must hold: NetBox is the record of every address, and the records name claims by namespace and name (which a
 * move keeps) and the management cluster that made them: the same records (ids, addresses, claims), none deleted by
 * the source's controller when clusterctl deletes its objects (delete-for-move), none added by the target's, whose
 * claims adopt the IPAddresses clusterctl copied and take over their records (re-keyed to the target's installation).
 * The token Secret is in the controller's namespace, which clusterctl does not move: the test creates it on the
 * target, as docs/netbox.md tells users to.
 *
 * And two management clusters sharing one NetBox prefix with the same namespace and claim names: distinct addresses,
 * each cluster's records its own (releases on one never touch the other's), a hand-made look-alike never adopted nor
 * deleted, and a move between them re-keys the moved claims' records only.
 */
import { expect } from "chai";
import { GLOBAL_NETBOX_IPPOOL_KIND, NETBOX_ADDRESS_FINALIZER, NETBOX_CLAIM_FINALIZER } from "../../api/netbox/types.js";
import type { NetBoxIPPool } from "../../api/netbox/types.js";
import { RECORDS_CONDITION } from "../../src/controllers/netbox/kind.js";
import {
  legacyKey,
  OWNER_TAG,
  parseKey,
  RECORD_ID_ANNOTATION,
  recordKey,
} from "../../src/controllers/netbox/identity.js";
import { sharedNetBox, type NetBoxServer } from "../../hack/testkit/netbox.js";
import { NETBOX_TOOL } from "../../hack/testkit/netboxinstall.js";
import { skipWithout } from "../../hack/testkit/skips.js";
import { CONTROLLER_NAMESPACE } from "../../hack/testkit/serviceaccount.js";
import { consistently, eventually } from "../../hack/testkit/wait.js";
import { runCli } from "../../hack/testkit/cli.js";
import {
  claimOfRecord,
  hostOf,
  installationIn,
  keyIn,
  netBoxClients,
  netBoxPool,
  netBoxRef,
  ourRecordsIn,
  tokenSecret,
  writeToken,
} from "../../hack/testkit/netboxpools.js";
import { addressClaim } from "../../hack/testkit/incluster.js";
import { claimCount, createTopology, inBatches, pictureOf, settledPicture, type Topology } from "./fixtures.js";
import {
  clusterctlMove,
  ensureNamespace,
  managersOf,
  openWorld,
  outputTail,
  recordEvents,
  startRecordedController,
  wipeNamespace,
  type RecordedController,
  type Side,
  type World,
} from "./harness.js";

const external = process.env.E2E_EXTERNAL_CONTROLLER === "true";
const suffix = Math.random().toString(36).slice(2, 7);
/** Moved: a Cluster whose machines claim from the namespace's NetBoxIPPool and from the global pool. */
const NS = `pivot-nb-${suffix}`;
/** Stays in the source, sharing the global pool. */
const NS_STAY = `pivot-nbstay-${suffix}`;
const GLOBAL = `pivot-nbg-${suffix}`;
/** What the controllers log when they allocate or release (in Kubernetes or in NetBox). */
const ALLOCATED = "Allocated IPAddress";
const RELEASES = [
  "Released IPAddress",
  "Releasing IPAddress of an IPAddressClaim that is gone",
  "Released the NetBox record of a claim",
];

/** Each machine of `cluster` claims from the namespaced pool `local` (when set) and from the global pool. */
function topology(cluster: string, machines: number, local?: string): Topology {
  return {
    pools: {},
    clusters: [
      {
        name: cluster,
        machines,
        claims: [
          ...(local
            ? [{ suffix: "nb", kind: "IPAddressClaim" as const, pool: local, poolKind: "NetBoxIPPool" as const }]
            : []),
          { suffix: "g", kind: "IPAddressClaim", pool: GLOBAL, poolKind: GLOBAL_NETBOX_IPPOOL_KIND },
        ],
      },
    ],
  };
}

/** Two management clusters share this namespace's names, claim names included. */
const SHARED = `pivot-nbsh-${suffix}`;
/** Moved between them. */
const NS_MOVE = `pivot-nbmv-${suffix}`;

/** A NetBox record as compared across the move: everything that must not change (the key's installation may). */
interface RecordLine {
  id: number;
  address: string;
  /** `namespace/name` of the claim its description names. */
  claim: string;
  comments: string;
}

async function recordLines(nb: NetBoxServer, cidr: string): Promise<RecordLine[]> {
  return (await ourRecordsIn(nb, cidr))
    .map((r) => ({ id: r.id, address: r.address, claim: claimOfRecord(r.description), comments: r.comments }))
    .sort((a, b) => a.id - b.id);
}

/** The installation of each of our records inside `cidr`, by record id ("" for a key without one). */
async function installations(nb: NetBoxServer, cidr: string): Promise<Map<number, string>> {
  return new Map((await ourRecordsIn(nb, cidr)).map((r) => [r.id, parseKey(r.description)?.installation ?? ""]));
}

describe("clusterctl move of NetBox pools (a real NetBox)", function () {
  this.timeout(240_000);
  this.slow(60_000);
  let world: World | undefined;
  let source: Side;
  let target: Side;
  let nb: NetBoxServer;
  const controllers = new Map<string, RecordedController>();
  const ctl = (side: Side): RecordedController => controllers.get(side.name)!;

  /** `kubectl ipam preflight-move` of `namespace` on the source, told the target (--to-kubeconfig), as JSON. */
  async function preflightTo(namespace: string): Promise<{
    code: number | null;
    leftBehind: string[];
    findings: { severity: string; kind: string; name: string; problem: string; fix: string }[];
  }> {
    const args = ["preflight-move", "-n", namespace, "-o", "json", "--to-kubeconfig", target.kubeconfigPath];
    if (source.context) args.push("--context", source.context);
    if (target.context) args.push("--to-kubeconfig-context", target.context);
    const r = await runCli(args, { KUBECONFIG: source.kubeconfigPath });
    const doc = JSON.parse(r.stdout || "{}") as { leftBehind?: string[]; findings?: [] };
    return { code: r.code, leftBehind: doc.leftBehind ?? [], findings: doc.findings ?? [] };
  }

  before(async function () {
    this.timeout(30 * 60_000);
    skipWithout(this, NETBOX_TOOL);
    let opened: World;
    [opened, nb] = await Promise.all([openWorld(), sharedNetBox()]);
    world = opened;
    ({ source, target } = opened);
    for (const side of [source, target]) await ensureNamespace(side, CONTROLLER_NAMESPACE);
    for (const ns of [NS, NS_STAY]) await ensureNamespace(source, ns);
    // Global pools are served only by a controller that sees every namespace.
    for (const side of [source, target]) controllers.set(side.name, await startRecordedController(side, ""));
  });

  after(async function () {
    this.timeout(120_000);
    for (const c of controllers.values()) await c.stop();
    if (!world) return;
    if (world.existing && process.env.PIVOT_KEEP !== "true") {
      for (const side of [source, target]) {
        for (const ns of [NS, NS_STAY, SHARED, NS_MOVE]) await wipeNamespace(side, ns);
        const globals = netBoxClients(side.kubeConfig).globals;
        await globals.patch("", GLOBAL, { metadata: { finalizers: null } }).catch(() => undefined);
        await globals.delete("", GLOBAL).catch(() => undefined);
      }
    }
    await world.close();
  });

  it("keeps every address and every NetBox record: nothing released by the source, nothing allocated by the target", async () => {
    const [localPrefix, globalPrefix] = [await nb.admin.freshPrefix(26), await nb.admin.freshPrefix(24)];
    const src = netBoxClients(source.kubeConfig);
    const dst = netBoxClients(target.kubeConfig);
    await writeToken(src, NS, nb.token);
    await src.pools.create(NS, netBoxPool(NS, "local", { prefix: { id: localPrefix.id } }));
    const global: NetBoxIPPool = {
      metadata: { name: GLOBAL },
      spec: { netbox: { credentialsRef: { name: tokenSecret(NS) } }, prefix: { id: globalPrefix.id } },
    };
    await src.globals.create("", global);
    // The namespace that stays claims first, so the moved claims do not simply hold the global pool's lowest addresses.
    const stay = topology("st", 2);
    await createTopology(source.k, NS_STAY, stay);
    await settledPicture(source.k, NS_STAY, claimCount(stay), 90_000);
    const moving = topology("nbc", 3, "local");
    await createTopology(source.k, NS, moving);
    const s0 = await settledPicture(source.k, NS, claimCount(moving), 90_000);
    const localBefore = await recordLines(nb, localPrefix.cidr);
    const globalBefore = await recordLines(nb, globalPrefix.cidr);
    expect((await ourRecordsIn(nb, localPrefix.cidr)).map((r) => r.description)).to.have.members(
      await Promise.all(["nbc-m00-nb", "nbc-m01-nb", "nbc-m02-nb"].map((name) => keyIn(source.kubeConfig, NS, name))),
    );
    expect(globalBefore).to.have.length(5);
    // Every bound address is its NetBox record's.
    const hosts = [...localBefore, ...globalBefore].map((r) => r.address.split("/")[0]);
    expect(Object.values(s0.claims).every((a) => hosts.includes(a))).to.equal(true);

    // preflight-move names both pools: the token Secret to make on the target, the global pool copied and left here
    // (shared, and still no blocker: NetBox hands out every address). A target pool of that name pointing elsewhere
    // in NetBox is a blocker.
    const pre = await preflightTo(NS);
    expect(pre.code, JSON.stringify(pre.findings)).to.equal(0);
    expect(pre.leftBehind).to.deep.equal([]);
    expect(pre.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal([
      `warning GlobalNetBoxIPPool/${GLOBAL}`,
      "warning NetBoxIPPool/local",
    ]);
    for (const f of pre.findings) expect(f.fix).to.include(`create Secret ${tokenSecret(NS)} on the target`);
    expect(pre.findings[0]!.problem).to.match(/^is missing on the target: clusterctl copies it there/);
    expect(pre.findings[0]!.problem).to.include("shared with 2 claim(s) of namespaces that stay, which is safe");
    const elsewhere = await nb.admin.freshPrefix(28);
    await dst.globals.create("", { ...global, spec: { ...global.spec, prefix: { id: elsewhere.id } } });
    const blocked = await preflightTo(NS);
    expect(blocked.code).to.equal(1);
    expect(blocked.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.include(
      `blocker GlobalNetBoxIPPool/${GLOBAL}`,
    );
    await dst.globals.delete("", GLOBAL);
    await eventually("the target's stray pool gone", async () => (await preflightTo(NS)).code === 0, 30_000, 500);

    // The token Secret lives in the controller's namespace, which clusterctl does not move: made on the target first.
    await writeToken(dst, NS, nb.token);
    const addresses = await recordEvents(target, target.k.capiAddresses.collectionPath(NS));
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
    }
    // Every IPAddress on the target is one clusterctl copied; the target's controller made none and deleted none.
    expect([...addresses.added].sort()).to.deep.equal(s0.capiAddresses.map((l) => l.split(" ")[0]!).sort());
    expect(addresses.deleted).to.deep.equal([]);
    expect(
      [...addresses.firstSeen.values()]
        .filter((o) => !managersOf(o).includes("clusterctl"))
        .map((o) => o.metadata.name),
    ).to.deep.equal([]);

    // NetBox: the same records, none deleted, none added; and it stays so while both controllers run (the source's
    // would release right after clusterctl deleted its objects, if it were going to). The target takes over the moved
    // claims' records (their keys now carry its installation); the staying claims' records keep the source's.
    const [srcId, dstId] = await Promise.all([installationIn(source.kubeConfig), installationIn(target.kubeConfig)]);
    await eventually(
      "the moved claims' records re-keyed to the target's installation, the others not",
      async () => {
        const local = await installations(nb, localPrefix.cidr);
        const global = await installations(nb, globalPrefix.cidr);
        const want = (r: RecordLine): string => (r.claim.startsWith(`${NS}/`) ? dstId : srcId);
        return (
          localBefore.every((r) => local.get(r.id) === dstId) && globalBefore.every((r) => global.get(r.id) === want(r))
        );
      },
      30_000,
      500,
    );
    const unchanged = async (): Promise<boolean> => {
      expect(await recordLines(nb, localPrefix.cidr), "NetBox records of the NetBoxIPPool").to.deep.equal(localBefore);
      expect(await recordLines(nb, globalPrefix.cidr), "NetBox records of the GlobalNetBoxIPPool").to.deep.equal(
        globalBefore,
      );
      return true;
    };
    await consistently("NetBox's records to stay as they were", unchanged, 5_000, 500);
    // The target's controller adopted them: finalizers on claims and records, and both pools Ready with every
    // record found in NetBox.
    await eventually(
      "claims and records on the target carrying the NetBox finalizers, the pools Ready with their records",
      async () => {
        for (const a of (await target.k.capiAddresses.list(NS)).items) {
          if (JSON.stringify(a.metadata.finalizers) !== JSON.stringify([NETBOX_ADDRESS_FINALIZER])) return false;
          const claim = await target.k.capiClaims.get(NS, a.spec.claimRef.name);
          if (!(claim.metadata.finalizers ?? []).includes(NETBOX_CLAIM_FINALIZER)) return false;
        }
        for (const pool of [await dst.pools.get(NS, "local"), await dst.globals.get("", GLOBAL)]) {
          const conditions = pool.status?.conditions ?? [];
          const ok = (type: string): boolean => conditions.some((c) => c.type === type && c.status === "True");
          if (!ok("Ready") || !ok(RECORDS_CONDITION)) return false;
        }
        return true;
      },
      30_000,
      500,
    );

    if (!external) {
      expect(ctl(target).count(ALLOCATED, since), "allocations by the target controller").to.equal(0);
      for (const msg of [ALLOCATED, ...RELEASES])
        expect(ctl(source).count(msg, since), `source controller: ${msg}`).to.equal(0);
    }

    // The source: the namespace's Cluster, claims and namespaced pool are gone; the global pool stays (clusterctl
    // never deletes a cluster-scoped pool) with the moved claims' IPAddresses of it, as for GlobalInClusterIPPool.
    await eventually(
      "the source to keep only the global pool's records of the moved claims",
      async () => {
        const p = await pictureOf(source.k, NS);
        return (
          p.counts.clusters === 0 &&
          p.counts.capiClaims === 0 &&
          (await src.pools.list(NS)).items.length === 0 &&
          JSON.stringify(p.capiAddresses) === JSON.stringify(s0.capiAddresses.filter((l) => l.split(" ")[3] === GLOBAL))
        );
      },
      15_000,
      250,
    );

    // The target's controller owns the records now: a new claim gets an address NetBox has not given anyone, and a
    // moved claim deleted on the target gives its record back in NetBox.
    const cluster = await target.k.clusters.get(NS, "nbc");
    await target.k.capiClaims.create(NS, {
      metadata: { name: "newcomer", namespace: NS, labels: { "cluster.x-k8s.io/cluster-name": "nbc" } },
      spec: { poolRef: netBoxRef("local"), clusterName: cluster.metadata.name ?? "" },
    });
    const newcomer = await eventually(
      "newcomer bound on the target",
      async () => (await pictureOf(target.k, NS)).claims["IPAddressClaim/newcomer"] || undefined,
      60_000,
    );
    expect(localBefore.map((r) => r.address.split("/")[0])).to.not.include(newcomer);
    const gone = localBefore.find((r) => r.claim === `${NS}/nbc-m00-nb`)!;
    await target.k.capiClaims.delete(NS, "nbc-m00-nb");
    await eventually(
      "the deleted claim's NetBox record released by the target",
      async () => !(await recordLines(nb, localPrefix.cidr)).some((r) => r.id === gone.id),
      60_000,
      500,
    );
  });

  it("two management clusters, same namespace and claim names, one prefix: own addresses and records; a move re-keys", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const [srcId, dstId] = await Promise.all([installationIn(source.kubeConfig), installationIn(target.kubeConfig)]);
    expect(srcId).to.not.equal(dstId);
    const sides = [source, target];
    const clients = sides.map((side) => netBoxClients(side.kubeConfig));
    const [src, dst] = clients as [ReturnType<typeof netBoxClients>, ReturnType<typeof netBoxClients>];
    // A hand-made record that looks like ours: our tag, the key used before installations, for a claim both have.
    await nb.admin.createTag(OWNER_TAG.slug, OWNER_TAG.name).catch(() => undefined);
    const lookalikeAddress = prefix.cidr.replace(/\.0\/24$/, ".250/24");
    const lookalike = {
      id: await nb.admin.reserveAddress(lookalikeAddress, {
        status: "active",
        description: legacyKey({ namespace: SHARED, name: "s-5" }),
        tags: [OWNER_TAG.slug],
      }),
      address: lookalikeAddress,
      claim: `${SHARED}/s-5`,
      comments: "",
    };
    for (const [i, side] of sides.entries()) {
      await ensureNamespace(side, SHARED);
      await writeToken(clients[i]!, SHARED, nb.token);
      await clients[i]!.pools.create(SHARED, netBoxPool(SHARED, "p", { prefix: { id: prefix.id } }));
    }
    await ensureNamespace(source, NS_MOVE);
    await writeToken(src, NS_MOVE, nb.token);
    await src.pools.create(NS_MOVE, netBoxPool(NS_MOVE, "p", { prefix: { id: prefix.id } }));
    const moving: Topology = {
      pools: {},
      clusters: [
        {
          name: "mv",
          machines: 3,
          claims: [{ suffix: "nb", kind: "IPAddressClaim", pool: "p", poolKind: "NetBoxIPPool" }],
        },
      ],
    };

    // 100 claims on each cluster at once, the same names; and the Cluster that will move, on the source.
    const names = Array.from({ length: 100 }, (_, i) => `s-${i}`);
    await Promise.all([
      ...clients.map((k) =>
        inBatches(names, 25, (n) => k.claims.create(SHARED, addressClaim(SHARED, n, netBoxRef("p")))),
      ),
      createTopology(source.k, NS_MOVE, moving),
    ]);
    const [srcShared, dstShared, moveBefore] = await Promise.all([
      settledPicture(source.k, SHARED, 100, 60_000),
      settledPicture(target.k, SHARED, 100, 60_000),
      settledPicture(source.k, NS_MOVE, claimCount(moving), 60_000),
    ]);
    const bound = [srcShared, dstShared, moveBefore].flatMap((p) => Object.values(p.claims));
    expect(new Set(bound).size, "distinct addresses across both clusters").to.equal(203);
    expect(bound).to.not.include(hostOf(lookalikeAddress));

    // In NetBox: one record per claim, keyed with the installation of the cluster that holds it, at its address; each
    // IPAddress names its record.
    const keyed = async (): Promise<Map<string, { id: number; address: string }>> =>
      new Map(
        (await ourRecordsIn(nb, prefix.cidr))
          .filter((r) => r.id !== lookalike.id)
          .map((r) => [r.description, { id: r.id, address: hostOf(r.address) }]),
      );
    const records = await keyed();
    expect(records.size).to.equal(203);
    for (const [side, namespace, picture, id] of [
      [source, SHARED, srcShared, srcId],
      [target, SHARED, dstShared, dstId],
      [source, NS_MOVE, moveBefore, srcId],
    ] as const) {
      for (const a of (await side.k.capiAddresses.list(namespace)).items) {
        const record = records.get(recordKey({ namespace, name: a.spec.claimRef.name }, id));
        expect(record?.address, `${side.name} ${namespace}/${a.spec.claimRef.name}`).to.equal(a.spec.address);
        expect(a.metadata.annotations?.[RECORD_ID_ANNOTATION]).to.equal(String(record?.id));
      }
      expect(Object.keys(picture.claims)).to.have.length(namespace === SHARED ? 100 : 3);
    }
    const lines = async (): Promise<RecordLine[]> => await recordLines(nb, prefix.cidr);
    const withKeys = async (): Promise<string[]> =>
      (await ourRecordsIn(nb, prefix.cidr)).map((r) => `${r.id} ${r.address} ${r.description}`).sort();
    const theirs = (all: string[], id: string): string[] => all.filter((l) => l.endsWith(` @${id}`));
    const recordsBecome = (what: string, want: string[]): Promise<boolean> =>
      eventually(
        what,
        async () => {
          expect(await withKeys()).to.deep.equal(want);
          return true;
        },
        30_000,
        500,
      );

    // Releases on the source (s-5 among them, the look-alike's claim) never touch the target's records.
    const before = await withKeys();
    const released = names.slice(0, 10);
    await inBatches(released, 10, (n) => src.claims.delete(SHARED, n));
    await eventually(
      "the source's ten records released",
      async () => theirs(await withKeys(), srcId).length === 93,
      30_000,
      250,
    );
    const after = await withKeys();
    expect(theirs(after, dstId), "the target's records").to.deep.equal(theirs(before, dstId));
    expect(after).to.include(`${lookalike.id} ${lookalike.address} ${legacyKey({ namespace: SHARED, name: "s-5" })}`);
    expect((await settledPicture(target.k, SHARED, 100, 10_000)).claims).to.deep.equal(dstShared.claims);

    // clusterctl move of the source's Cluster to the target: every address kept on both; the target takes over the
    // moved records (same ids and addresses, its key), the source deletes none.
    await writeToken(dst, NS_MOVE, nb.token);
    const since = Date.now();
    const r = await clusterctlMove(source, target, NS_MOVE);
    expect(r.code, `clusterctl move failed:\n${outputTail(r)}\n`).to.equal(0);
    const moved = await settledPicture(target.k, NS_MOVE, claimCount(moving), 60_000);
    expect(moved.claims).to.deep.equal(moveBefore.claims);
    const movedKeys = Object.keys(moveBefore.claims).map((k) => k.split("/")[1] ?? "");
    const expected = before
      .filter((l) => !released.some((n) => l.endsWith(` ${recordKey({ namespace: SHARED, name: n }, srcId)}`)))
      .map((l) => {
        const name = movedKeys.find((n) => l.endsWith(` ${recordKey({ namespace: NS_MOVE, name: n }, srcId)}`));
        return name ? l.replace(/ @[^ ]+$/, ` @${dstId}`) : l;
      })
      .sort();
    await recordsBecome("the moved claims' records re-keyed to the target", expected);
    expect((await settledPicture(source.k, SHARED, 90, 10_000)).claims).to.deep.equal(
      Object.fromEntries(Object.entries(srcShared.claims).filter(([k]) => !released.includes(k.split("/")[1] ?? ""))),
    );
    expect((await settledPicture(target.k, SHARED, 100, 10_000)).claims).to.deep.equal(dstShared.claims);
    if (!external)
      for (const msg of [ALLOCATED, ...RELEASES])
        expect(ctl(source).count(msg, since), `source controller: ${msg}`).to.equal(0);

    // The target owns the moved records now: a moved claim deleted there gives its record back; nothing else goes.
    const goneClaim = movedKeys[0]!;
    await target.k.capiClaims.delete(NS_MOVE, goneClaim);
    const rest = expected.filter((l) => !l.endsWith(` ${recordKey({ namespace: NS_MOVE, name: goneClaim }, dstId)}`));
    await recordsBecome("the deleted moved claim's record released by the target", rest);
    expect((await lines()).find((l) => l.id === lookalike.id)).to.deep.equal(lookalike);
  });
});
