/**
 * The large site of the `site` scenario, pure: which pools it has (kind, name, namespaces, subnet,
 * preallocations), how many addresses each holds and which, where each new claim of a stage goes, and the report's
 * rows. The scenario itself (sitescenario.ts) writes and measures what this module lays out.
 *
 * Every pool has a block of 10.0.0.0/8 of its own (a power of two, at least a /24), so pools never share an address
 * and the in-cluster pools never overlap; every pool's `prefix` is pools.ts's BENCH_PREFIX (16) and its gateway the
 * first host of the /16 its block lies in, so the records the bench writes (sitefixtures.ts) carry the prefix
 * their pool hands out.
 * A held address's offset in its block is 2 or more and at most the block's size − 2: never the network, the gateway
 * or the broadcast of a /16, which an in-cluster pool does not hand out.
 */
import type { ProcMemory } from "./controller.js";
import type { RequestsPerClaim } from "./efficiency.js";
import { fmt, fmtBytes, fmtMs, type Summary } from "./stats.js";
import type { Row, Section } from "./table.js";

/** The pool kinds of a site, as the other scenarios label them (pools.ts). */
export type SitePoolKind = "IPPool" | "InClusterIPPool" | "GlobalInClusterIPPool";
/** The claim APIs: Metal3's IPClaim (IPPools only) and Cluster API's IPAddressClaim (every pool kind). */
export type SiteClaimApi = "IPClaim" | "IPAddressClaim";

/** The shape of a site. */
export interface SiteOptions {
  /** Addresses held across the site. */
  addresses: number;
  pools: number;
  namespaces: number;
  /** Claims the stages add after the held ones, spread over the pools (each pool's block has room for its share). */
  newClaims: number;
}

/** One pool of a site. */
export interface SitePool {
  index: number;
  kind: SitePoolKind;
  /** Unique in the site, so also in the cluster for a cluster-scoped pool. */
  name: string;
  /** Indexes into the site's namespaces: the pool's own (namespaced), or those its claims are spread over (global). */
  claimNamespaces: number[];
  /** The block of 10.0.0.0/8 it hands out, as CIDR. */
  subnet: string;
  gateway: string;
  /** Addresses it holds when the site is built. */
  held: number;
  /** Its first `preallocated` held claims are named in `spec.preAllocations` (IPPools only). */
  preallocated: number;
}

/** A site: its pools in index order. */
export interface SiteLayout {
  options: SiteOptions;
  /** log2 of every pool's block size. */
  blockBits: number;
  pools: SitePool[];
}

/** Namespaces a GlobalInClusterIPPool's claims are spread over, as in the other scenarios (pools.ts). */
const GLOBAL_SPREAD = 3;
/** Of every 10 pools: 5 IPPools (the first 2 with preallocations), 3 InClusterIPPools, 2 GlobalInClusterIPPools. */
const KIND_CYCLE: readonly SitePoolKind[] = [
  "IPPool",
  "IPPool",
  "IPPool",
  "IPPool",
  "IPPool",
  "InClusterIPPool",
  "InClusterIPPool",
  "InClusterIPPool",
  "GlobalInClusterIPPool",
  "GlobalInClusterIPPool",
];
const PREALLOCATING = 2;
/** One in PREALLOCATED_SHARE of a preallocating pool's held claims (at least one) is preallocated. */
const PREALLOCATED_SHARE = 10;
const SHORT: Record<SitePoolKind, string> = { IPPool: "m3", InClusterIPPool: "ic", GlobalInClusterIPPool: "gic" };
/** Offsets of a block no held address takes: the network and gateway of a /16 below, its broadcast above. */
const LOW_RESERVED = 2;
const HIGH_RESERVED = 2;

const pad = (n: number, width: number): string => String(n).padStart(width, "0");

function dotted(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 255).join(".");
}

/** The site of `options`; throws when it does not fit 10.0.0.0/8 or is empty. */
export function siteLayout(options: SiteOptions): SiteLayout {
  const { addresses, pools, namespaces, newClaims } = options;
  if (pools < 1 || namespaces < 1) throw new Error("a site needs at least one pool and one namespace");
  const most = Math.ceil(addresses / pools) + Math.ceil(newClaims / pools) + 1;
  const blockBits = Math.max(8, Math.ceil(Math.log2(most + LOW_RESERVED + HIGH_RESERVED)));
  if (blockBits > 16 || pools * 2 ** blockBits > 2 ** 24)
    throw new Error(`${pools} pools of ${most} addresses each do not fit 10.0.0.0/8 in blocks of a /16 at most`);
  const width = String(pools - 1).length;
  const site: SitePool[] = [];
  for (let index = 0; index < pools; index++) {
    const kind = KIND_CYCLE[index % KIND_CYCLE.length] as SitePoolKind;
    const base = (10 << 24) + index * 2 ** blockBits;
    const held = Math.floor(addresses / pools) + (index < addresses % pools ? 1 : 0);
    const preallocating = kind === "IPPool" && index % KIND_CYCLE.length < PREALLOCATING && held > 0;
    const spread = kind === "GlobalInClusterIPPool" ? Math.min(GLOBAL_SPREAD, namespaces) : 1;
    site.push({
      index,
      kind,
      name: `site-${SHORT[kind]}-${pad(index, width)}`,
      claimNamespaces: Array.from({ length: spread }, (_, i) => (index + i) % namespaces),
      subnet: `${dotted(base)}/${32 - blockBits}`,
      gateway: dotted((base & ~0xffff) + 1),
      held,
      preallocated: preallocating ? Math.max(1, Math.floor(held / PREALLOCATED_SHARE)) : 0,
    });
  }
  return { options, blockBits, pools: site };
}

/** Whether a pool takes IPClaims too (Metal3's IPPools do; the in-cluster pools serve IPAddressClaims only). */
const takesIpClaims = (pool: SitePool): boolean => pool.kind === "IPPool";

/** One claim of a site: where it goes and what it is. */
export interface SiteClaim {
  name: string;
  api: SiteClaimApi;
  pool: SitePool;
  namespace: number;
}

/** The `j`-th held claim (0-based) of `pool`: IPClaims and IPAddressClaims alternate on an IPPool. */
export function heldClaim(pool: SitePool, j: number): SiteClaim {
  return {
    name: `${pool.name}-h${pad(j, 5)}`,
    api: takesIpClaims(pool) && j % 2 === 0 ? "IPClaim" : "IPAddressClaim",
    pool,
    namespace: pool.claimNamespaces[j % pool.claimNamespaces.length] as number,
  };
}

/**
 * The `t`-th claim (0-based) of a stage named `stage`, spread over the pools round robin: pool t mod P; on an IPPool
 * the two APIs alternate per pass over the pools, starting with the pool's parity so that both appear in a pass.
 */
export function stageClaim(layout: SiteLayout, stage: string, t: number): SiteClaim {
  const { pools } = layout;
  const pool = pools[t % pools.length] as SitePool;
  const round = Math.floor(t / pools.length);
  return {
    name: `${stage}-${pad(t, 6)}`,
    api: takesIpClaims(pool) && (round + pool.index) % 2 === 0 ? "IPClaim" : "IPAddressClaim",
    pool,
    namespace: pool.claimNamespaces[round % pool.claimNamespaces.length] as number,
  };
}

/** How many of a stage's `count` claims go to each pool, by pool index. */
export function claimsPerPool(layout: SiteLayout, count: number): number[] {
  const n = layout.pools.length;
  return layout.pools.map((p) => Math.floor(count / n) + (p.index < count % n ? 1 : 0));
}

/** The `offset`-th address of `pool`'s block. */
function addressAt(layout: SiteLayout, pool: SitePool, offset: number): string {
  return dotted((10 << 24) + pool.index * 2 ** layout.blockBits + offset);
}

/** Claim name → address of `pool`'s preallocated held claims (its `spec.preAllocations`). */
export function preAllocations(layout: SiteLayout, pool: SitePool): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: pool.preallocated }, (_, j) => [
      heldClaim(pool, j).name,
      addressAt(layout, pool, LOW_RESERVED + j),
    ]),
  );
}

/**
 * The address of each of `pool`'s held claims, in order: a preallocated one its preallocation, the others the lowest
 * offsets past the preallocated ones that `taken` (addresses the pool's records hold already) does not hold. Throws
 * when the block runs out.
 */
export function heldAddresses(layout: SiteLayout, pool: SitePool, taken: ReadonlySet<string>): string[] {
  const result = Object.values(preAllocations(layout, pool));
  const last = 2 ** layout.blockBits - HIGH_RESERVED;
  for (let offset = LOW_RESERVED + pool.preallocated; result.length < pool.held; offset++) {
    if (offset > last) throw new Error(`pool ${pool.name} has no room for ${pool.held} held addresses`);
    const address = addressAt(layout, pool, offset);
    if (!taken.has(address)) result.push(address);
  }
  return result;
}

/** The site's pools by kind, and how many of them preallocate. */
export function siteCensus(layout: SiteLayout): Record<SitePoolKind | "preallocating", number> {
  const count = (p: (pool: SitePool) => boolean): number => layout.pools.filter(p).length;
  return {
    IPPool: count((p) => p.kind === "IPPool"),
    InClusterIPPool: count((p) => p.kind === "InClusterIPPool"),
    GlobalInClusterIPPool: count((p) => p.kind === "GlobalInClusterIPPool"),
    preallocating: count((p) => p.preallocated > 0),
  };
}

/**
 * How often the site's controllers check for a memory release by default (the controller's own default is a minute):
 * a release that is due runs within seconds of a stage instead of a minute, so the settled readings come quickly. One
 * due during a busy stage runs at most every few checks, inside that stage's CPU: at this interval far more often
 * than at the controller's default, which BENCH_SITE_RELEASE_INTERVAL=60 measures instead.
 */
export const DEFAULT_SITE_RELEASE_INTERVAL_S = 2;

/** What one stage of the scenario measured. */
export interface SiteStage {
  /** The stage, for the report: "idle, empty site", "trickle into the empty site", … */
  stage: string;
  /** Claims the stage created (0: none, e.g. idle). */
  claims: number;
  /** The stage's window, ms. */
  wallMs: number;
  /** CPU seconds in the window: the controller's, the API server's, etcd's. */
  cpu: { controller: number; apiServer: number; etcd: number };
  /** The controller's API requests in the window per claim (per stage when it created none). */
  requests: RequestsPerClaim;
  /** Per claim, create sent → seen bound (absent when the stage created none). */
  bindMs?: Summary;
  /** Claims not seen bound before the deadline. */
  timedOut: number;
  /** The controller's memory at the window's end, and its V8 heap in use (its /metrics), as read then. */
  memory: ProcMemory;
  heapUsed: number;
  /** The same once the controller's memory release ran after the window: what it holds, garbage and freed pages out. */
  settled: SettledMemory;
  /** The window on the monotonic clock (ms), as V8's profiler reads it: cuts a BENCH_CPU_PROF profile to the stage. */
  monotonicWindowMs: [number, number];
  /** The controller's garbage collections in the window. */
  gc: StageCollections;
  /** What the API server did in the window. */
  server: StageServer;
}

/**
 * What the API server did in a stage: from /proc its kernel CPU and page faults; from its own /metrics its Go
 * runtime's collections (their CPU and count), the bytes it allocated, and its lists by where it served them from,
 * its watch cache (the objects it returned) or etcd (the objects it fetched). Every client's, the bench's own polls
 * included.
 */
export interface StageServer {
  /** Its CPU in kernel mode (of its CPU in all), and its minor page faults: what a heap that grows costs it. */
  systemCpuS: number;
  minorFaults: number;
  gcCpuS: number;
  gcCycles: number;
  allocatedBytes: number;
  cacheLists: number;
  cacheObjects: number;
  etcdLists: number;
  etcdObjects: number;
  /** The heap its last collection left live, as read at the stage's end (not a difference). */
  liveHeapBytes: number;
}

/**
 * A stage's garbage collections, from the controller's /metrics: seconds in V8's own collections by kind (prom-client's
 * `nodejs_gc_duration_seconds`, which leaves out the collections the controller forces), and the memory releases (the
 * forced ones: `metal3_ipam_memory_release_seconds_total`).
 */
export interface StageCollections {
  majorS: number;
  minorS: number;
  incrementalS: number;
  releases: number;
  releaseS: number;
}

/**
 * A stage's memory after the window, once the controller's memory release (src/runtime/memory.ts: a memory-reducing
 * collection) ran: RSS without the freed heap pages V8 keeps, heap used without the garbage not yet collected.
 */
export interface SettledMemory {
  rss: number;
  heapUsed: number;
  /** Whether a release ran; false: none was due within the wait, and the figures are read at its end. */
  released: boolean;
}

/** The restart with the site held (stage c), beyond its {@link SiteStage} figures. */
export interface SiteRestart {
  /** Controller start → its /readyz answers. */
  readyMs: number;
  /**
   * Controller start → a claim created while it was down is seen bound: in the site's last pool (a
   * GlobalInClusterIPPool when the pools are a multiple of 10: cluster-scoped, it waits for every list).
   */
  firstBoundMs: number;
  /**
   * Controller start → a claim created while it was down is seen bound, in an IPPool of the namespace the lists
   * reach first (a namespaced pool is served once the lists went past its namespace); absent from older runs.
   */
  listedFirstBoundMs?: number;
  /** Controller start → every pool's status counts what it holds. */
  poolsCurrentMs: number;
  /** Claims created while no controller ran (default 1, as older runs made). */
  claims?: number;
  /** Writes of the start-up (those claims' included) by verb and resource: totals, not per claim. */
  writes: Record<string, number>;
}

/**
 * The handover to a warm standby after the burst: a second controller on the same Lease (the shipped Deployment runs
 * two) fills its caches beside the leader, the leader gets SIGTERM, and a claim created once it is gone is bound by
 * the standby.
 */
export interface SiteHandover {
  /** Standby start → its /readyz (its caches filled). */
  readyMs: number;
  /** The leader's SIGTERM → its exit (it drains and releases the Lease). */
  leaderGoneMs: number;
  /** The leader's SIGTERM → the claim created after its exit is seen bound. */
  firstBoundMs: number;
  /** Writes from the SIGTERM until the standby is idle again, by verb and resource (the new claim's included). */
  writes: Record<string, number>;
}

/** Result of the `site` scenario. */
export interface SiteResult {
  addresses: number;
  pools: number;
  namespaces: number;
  census: Record<SitePoolKind | "preallocating", number>;
  /** Writing the held claims and records with no controller running, ms, and in how many requests at once. */
  loadMs: number;
  loadConcurrency: number;
  /** The controllers' `--memory-release-interval`, seconds. */
  releaseIntervalS: number;
  /** In order: idle, trickle into the empty site, restart with the site held, trickle, burst. */
  stages: SiteStage[];
  restart: SiteRestart;
  /** Absent from results recorded before the handover was measured. */
  handover?: SiteHandover;
}

/** The stage names, in the order the scenario runs them. */
export const SITE_STAGES = {
  idle: "idle, empty site",
  emptyTrickle: "(a) trickle, empty site",
  restart: "(c) restart, site held",
  trickle: "(a) trickle, site held",
  burst: "(b) burst, site held",
} as const;

/** Writes to claims and address records among `writes` (the rest: pool statuses, Events, Leases). */
export function claimAndRecordWrites(writes: Record<string, number>): number {
  return Object.entries(writes)
    .filter(([key]) => /claims(\/status)?$|ipaddresses$/.test(key))
    .reduce((sum, [, n]) => sum + n, 0);
}

/** Writes to pool statuses among `writes`. */
export function poolStatusWrites(writes: Record<string, number>): number {
  return Object.entries(writes)
    .filter(([key]) => /ippools\/status$/.test(key))
    .reduce((sum, [, n]) => sum + n, 0);
}

/**
 * The bounds a site is held to, as the `8 checks` rows show and BENCH_SITE_CHECK=1 enforces: a start-up
 * rewrites nothing that is current (it binds the claims created while no controller ran, each with its finalizer, its
 * record, its status: {@link SITE_BOUNDS.startupClaimWrites} per claim) and writes each pool's status at most once; a handover to the standby rewrites nothing either (the claim
 * made meanwhile: its create by the bench and the same three writes); a held address (its claim and its record
 * together) costs at most {@link SITE_BOUNDS.perAddressKiB} beyond the idle floor, in V8's heap at every size and in
 * RSS from {@link SITE_BOUNDS.rssFromAddresses} addresses on (below, the process's own swings in RSS between two
 * controllers outweigh what the site holds; at the smallest sites its heap's do too, so the guard is a site of tens
 * of thousands of addresses); every claim of every stage is bound.
 */
export const SITE_BOUNDS = {
  startupClaimWrites: 3,
  handoverClaimWrites: 4,
  perAddressKiB: 3,
  rssFromAddresses: 50_000,
} as const;

/** One check of a run against {@link SITE_BOUNDS}. */
export interface SiteCheck {
  check: string;
  value: number;
  bound: number;
  ok: boolean;
}

/** The checks `r` can be held to (those whose stages ran). */
export function siteChecks(r: SiteResult, bounds: Record<keyof typeof SITE_BOUNDS, number> = SITE_BOUNDS): SiteCheck[] {
  const checks: SiteCheck[] = [];
  const atMost = (check: string, value: number, bound: number): void => {
    checks.push({ check, value, bound, ok: value <= bound });
  };
  const [idle, restart] = [stageOf(r, SITE_STAGES.idle), stageOf(r, SITE_STAGES.restart)];
  if (restart) {
    atMost(
      "start-up writes to claims and records",
      claimAndRecordWrites(r.restart.writes),
      bounds.startupClaimWrites * (r.restart.claims ?? 1),
    );
    atMost("start-up pool status writes", poolStatusWrites(r.restart.writes), r.pools);
  }
  if (r.handover)
    atMost(
      "handover writes to claims and records",
      claimAndRecordWrites(r.handover.writes),
      bounds.handoverClaimWrites,
    );
  if (idle && restart && r.addresses > 0) {
    const perAddress = (bytes: number): number => bytes / r.addresses / 1024;
    atMost(
      "heap used per held address beyond the idle floor (settled), KiB",
      perAddress(restart.settled.heapUsed - idle.settled.heapUsed),
      bounds.perAddressKiB,
    );
    if (r.addresses >= bounds.rssFromAddresses)
      atMost(
        "RSS per held address beyond the idle floor (settled), KiB",
        perAddress(restart.settled.rss - idle.settled.rss),
        bounds.perAddressKiB,
      );
  }
  atMost(
    "claims not bound",
    r.stages.reduce((sum, s) => sum + s.timedOut, 0),
    0,
  );
  return checks;
}

function stageOf(r: SiteResult, name: string): SiteStage | undefined {
  return r.stages.find((s) => s.stage === name);
}

function checkSection(r: SiteResult): Section {
  return {
    title: "8 checks: the bounds a site is held to (BENCH_SITE_CHECK=1 fails the run on any over)",
    rows: siteChecks(r).map((c) => ({
      metric: c.check,
      value: fmt(c.value),
      detail: `${c.ok ? "OK" : "OVER"}: at most ${c.bound}`,
    })),
  };
}

/** The site's table: one line per stage, then the derived figures. */
export function siteSections(r: SiteResult): Section[] {
  const c = r.census;
  const grid: Section = {
    title:
      `8. Site: ${r.addresses.toLocaleString("en-US")} addresses held across ${r.pools.toLocaleString("en-US")} pools ` +
      `(${c.IPPool} IPPools, ${c.preallocating} of them with preallocations; ${c.InClusterIPPool} InClusterIPPools; ` +
      `${c.GlobalInClusterIPPool} GlobalInClusterIPPools) in ${r.namespaces} namespaces, both claim APIs; one ` +
      "controller of all namespaces; per claim where a stage creates claims, per stage otherwise; CPU = seconds in the window; " +
      "RSS and heap as read at the stage's end, then settled: after the controller's memory release",
    header: [
      "stage",
      "claims",
      "wall",
      "ctrl CPU s",
      "CPU ms/claim",
      "apiserver CPU s",
      "etcd CPU s",
      "writes",
      "reads",
      "bound median",
      "p99",
      "RSS",
      "heap used",
      "RSS settled",
      "heap settled",
      "check",
    ],
    cells: r.stages.map((s) => [
      s.stage,
      String(s.claims),
      fmtMs(s.wallMs),
      fmt(s.cpu.controller),
      s.claims > 0 ? fmt((s.cpu.controller * 1000) / s.claims) : "-",
      fmt(s.cpu.apiServer),
      fmt(s.cpu.etcd),
      fmt(s.requests.writes),
      fmt(s.requests.reads),
      s.bindMs ? fmtMs(s.bindMs.median) : "-",
      s.bindMs ? fmtMs(s.bindMs.p99) : "-",
      fmtBytes(s.memory.rss),
      fmtBytes(s.heapUsed),
      fmtBytes(s.settled.rss),
      `${fmtBytes(s.settled.heapUsed)}${s.settled.released ? "" : " (no release)"}`,
      s.timedOut > 0 ? `${s.timedOut} TIMED OUT` : "OK",
    ]),
  };
  return [
    grid,
    { title: "8 derived: the site against the empty site, same run", rows: derivedRows(r) },
    checkSection(r),
    collectionsSection(r),
    serverSection(r),
  ];
}

/**
 * What the API server did per stage: its CPU beside its Go runtime's collection CPU and allocations, and where it
 * served the stage's lists from. A list served from etcd reads every object it returns from the database; from the
 * watch cache it reads none.
 */
function serverSection(r: SiteResult): Section {
  return {
    title:
      "8 API server: per stage, its CPU, its Go runtime's collections and allocations (live heap: as its last " +
      "collection left it by the stage's end), and its lists by where they were served from (every client's, the " +
      "bench's own polls included)",
    header: [
      "stage",
      "apiserver CPU s",
      "of it kernel s",
      "page faults",
      "its GC CPU s",
      "GC cycles",
      "allocated",
      "live heap",
      "lists from watch cache",
      "objects returned",
      "lists from etcd",
      "objects fetched",
    ],
    cells: r.stages.map((s) => [
      s.stage,
      fmt(s.cpu.apiServer),
      fmt(s.server.systemCpuS),
      String(s.server.minorFaults),
      fmt(s.server.gcCpuS),
      String(s.server.gcCycles),
      fmtBytes(s.server.allocatedBytes),
      fmtBytes(s.server.liveHeapBytes),
      String(s.server.cacheLists),
      String(s.server.cacheObjects),
      String(s.server.etcdLists),
      String(s.server.etcdObjects),
    ]),
  };
}

/** Where each stage's collection time went: V8's own collections against the controller's memory releases. */
function collectionsSection(r: SiteResult): Section {
  return {
    title:
      `8 collections: the controller's garbage collections per stage, seconds (memory release every ` +
      `${r.releaseIntervalS} s when due; V8's own collections and, apart, the releases the controller forces)`,
    header: ["stage", "ctrl CPU s", "major s", "minor s", "incremental s", "releases", "releases s", "window"],
    cells: r.stages.map((s) => [
      s.stage,
      fmt(s.cpu.controller),
      fmt(s.gc.majorS),
      fmt(s.gc.minorS),
      fmt(s.gc.incrementalS),
      String(s.gc.releases),
      fmt(s.gc.releaseS),
      s.monotonicWindowMs.map((ms) => ms.toFixed(0)).join(","),
    ]),
  };
}

function derivedRows(r: SiteResult): Row[] {
  const rows: Row[] = [
    {
      metric: `writing ${r.addresses.toLocaleString("en-US")} held claims and records (no controller)`,
      value: fmtMs(r.loadMs),
      detail: `${r.loadConcurrency} claims in flight, 3 requests each (claim, record, status)`,
    },
  ];
  const [idle, empty, restart, trickle, burst] = [
    stageOf(r, SITE_STAGES.idle),
    stageOf(r, SITE_STAGES.emptyTrickle),
    stageOf(r, SITE_STAGES.restart),
    stageOf(r, SITE_STAGES.trickle),
    stageOf(r, SITE_STAGES.burst),
  ];
  if (restart) {
    const w = r.restart.writes;
    rows.push(
      { metric: "(c) restart: start → /readyz", value: fmtMs(r.restart.readyMs) },
      ...(r.restart.listedFirstBoundMs === undefined
        ? []
        : [
            {
              metric: "(c) restart: start → new claim bound, namespace listed first",
              value: fmtMs(r.restart.listedFirstBoundMs),
              detail: "an IPPool's: served once the lists went past its namespace",
            },
          ]),
      {
        metric: "(c) restart: start → new claim bound, last pool",
        value: fmtMs(r.restart.firstBoundMs),
        detail: "a GlobalInClusterIPPool's at every size of 10n pools: cluster-scoped, it waits for every list",
      },
      { metric: "(c) restart: start → every pool's status current", value: fmtMs(r.restart.poolsCurrentMs) },
      {
        metric: "(c) restart: writes to claims and records",
        value: String(claimAndRecordWrites(w)),
        detail: `${(r.restart.claims ?? 1) === 1 ? "the new claim's" : `the ${r.restart.claims} new claims'`} own included (3 each: finalizer, record, status)`,
      },
      {
        metric: "(c) restart: pool status writes",
        value: String(poolStatusWrites(w)),
        detail: `${r.pools} pools; ${Object.entries(w)
          .map(([k, n]) => `${k} ${n}`)
          .join(", ")}`,
      },
    );
  }
  if (r.handover) {
    const h = r.handover;
    rows.push(
      {
        metric: "(c) handover: leader's SIGTERM → first new claim bound by the standby",
        value: fmtMs(h.firstBoundMs),
        detail: `the leader drained and released the Lease in ${fmtMs(h.leaderGoneMs)}; the standby was ready ${fmtMs(
          h.readyMs,
        )} after its start`,
      },
      {
        metric: "(c) handover: writes to claims and records, pool status writes",
        value: `${claimAndRecordWrites(h.writes)}, ${poolStatusWrites(h.writes)}`,
        detail: "the new claim's own included (4: its create by the bench, finalizer, record, status)",
      },
    );
  }
  const cpuPerClaim = (s: SiteStage): number => (s.cpu.controller * 1000) / s.claims;
  if (empty && trickle)
    rows.push({
      metric: "(a) trickle: CPU per claim, site held / empty site",
      value: `${fmt(cpuPerClaim(trickle) / cpuPerClaim(empty))}×`,
      detail: `${fmt(cpuPerClaim(trickle))} vs ${fmt(cpuPerClaim(empty))} ms; wall per claim ${fmtMs(
        trickle.wallMs / trickle.claims,
      )} vs ${fmtMs(empty.wallMs / empty.claims)}`,
    });
  if (burst)
    rows.push({
      metric: `(b) burst: ${burst.claims} claims bound in`,
      value: fmtMs(burst.wallMs),
      detail: `${fmt(burst.claims / (burst.wallMs / 1000))} claims/s, ${fmt(burst.cpu.controller)} CPU-s, ${fmt(
        burst.requests.writes,
      )} writes and ${fmt(burst.requests.reads)} reads per claim`,
    });
  if (idle && restart && r.addresses > 0) {
    const per = (bytes: number): string => `${fmt(bytes / r.addresses / 1024)} KiB`;
    rows.push({
      metric: "(d) per held address beyond the idle floor: RSS, settled",
      value: per(restart.settled.rss - idle.settled.rss),
      detail: `heap used ${per(restart.settled.heapUsed - idle.settled.heapUsed)}, settled; as read at the stage's end: RSS ${per(
        restart.memory.rss - idle.memory.rss,
      )}, heap used ${per(restart.heapUsed - idle.heapUsed)}; peak RSS at start-up ${fmtBytes(restart.memory.peakRss)}`,
    });
  }
  return rows;
}
