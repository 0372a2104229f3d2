/**
 * Scenario 8, the large site: the pools site.ts lays out, in 10 namespaces of their own, then controllers of all
 * namespaces:
 *
 *   1. a controller on the empty site: its idle reading once every pool's status is written, then the trickle into
 *      the empty site (the reference of the site's trickle);
 *   2. with no controller running, the held claims and their records written directly as a controller leaves them
 *      (sitefixtures.ts) at high concurrency, plus one new claim;
 *   3. a controller started on that (c): until its /readyz, the new claim bound, every pool's status counting what it
 *      holds, and the writes it made; then the trickle (a) and the burst (b) on it;
 *   4. the handover (c): a standby on the same Lease fills its caches, the leader gets SIGTERM, and a claim created
 *      once it is gone is bound by the standby.
 *
 * The controllers elect a leader on a Lease as the shipped Deployment's replicas do.
 *
 * Every stage reads the controller's CPU, the API server's and etcd's (from /proc), the controller's API requests
 * (the API server's apiserver_request_total, the bench's own creates left out), what the API server spent (its
 * collections, allocations and lists by source, from its /metrics; its kernel CPU and page faults, from /proc), and
 * at its end the controller's RSS
 * (/proc) and V8 heap in use (its /metrics), as read and settled: after the controller's next memory release.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import mapValues from "lodash/mapValues.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import { CAPI_IPADDRESS, resourceType } from "../../api/registry.js";
import { Informer } from "../../src/kube/informer.js";
import type { PoolObject } from "../../src/controllers/pools/kind.js";
import { ResourceClient, type KubeObject } from "../../src/kube/resource.js";
import { silentLogger } from "../../src/runtime/logger.js";
import { MAX_DEFERRED_CHECKS } from "../../src/runtime/memory.js";
import { freshNamespace } from "../testkit/cluster.js";
import { clients, pool as ipPool } from "../testkit/ipam.js";
import { metricSample, metricTotal, scrapeMetrics } from "../testkit/metrics.js";
import { poll, sleep } from "../testkit/wait.js";
import { startBenchController, type BenchController } from "./controller.js";
import {
  cpuSeconds,
  procCpu,
  parseRequestCounts,
  perClaim,
  readServerMetrics,
  requestDelta,
  type ProcCpu,
  type RequestCounts,
} from "./efficiency.js";
import {
  CAPI_IPADDRESSCLAIM,
  CAPI_ON_GLOBAL_INCLUSTER,
  CAPI_ON_INCLUSTER,
  METAL3_IPCLAIM,
  type BenchClaimKind,
} from "./kinds.js";
import { BENCH_PREFIX, GLOBAL_INCLUSTER_POOL, INCLUSTER_POOL, METAL3_POOL, type BenchPool } from "./pools.js";
import { runLimited, type BenchContext } from "./scenarios.js";
import { fixtureClients, writeHeldClaim } from "./sitefixtures.js";
import {
  claimsPerPool,
  heldAddresses,
  heldClaim,
  preAllocations,
  siteCensus,
  siteLayout,
  SITE_STAGES,
  stageClaim,
  type SiteClaim,
  type SiteClaimApi,
  type SiteHandover,
  type SiteLayout,
  type SitePool,
  type SitePoolKind,
  type SiteResult,
  type SettledMemory,
  type SiteStage,
  type StageCollections,
  type StageServer,
} from "./site.js";
import { nowMs, summarize } from "./stats.js";
import { waitIdle, waitReady } from "./trickle.js";
import { ClaimWatch } from "./watch.js";

/** Options of {@link siteScenario}. */
export interface SiteScenarioOptions {
  addresses: number;
  pools: number;
  /** Claims of each trickle, created one at a time `gapMs` after the last create returned. */
  trickle: number;
  gapMs: number;
  /** Claims of the burst, created `concurrency` at a time. */
  burst: number;
  concurrency: number;
  /** Held claims written at once while the site is built (each takes four requests, one after another). */
  loadConcurrency: number;
  /** The controllers' `--memory-release-interval`, seconds (see site.ts's `DEFAULT_SITE_RELEASE_INTERVAL_S`). */
  releaseIntervalS: number;
  /** The plane's processes, for their CPU. */
  planePids: () => { etcd?: number; apiServer?: number };
  /** Where the scenario says what it is doing (the site takes minutes to build). */
  progress: (message: string) => void;
}

/** Namespaces of a site. */
const NAMESPACES = 10;
/** Idle time after a stage's last claim is counted, inside its CPU and request readings (trailing events). */
const TRAIL_MS = 1_000;
/** The controller's V8 heap in use, from prom-client's default metrics under our prefix. */
const HEAP_USED = "metal3_ipam_nodejs_heap_size_used_bytes";
/** The controller's memory releases so far (src/runtime/memory.ts). */
const MEMORY_RELEASES = "metal3_ipam_memory_releases_total";
/** How long a stage's settled reading waits for a release: the checks a due release waits through while busy, and two. */
const releaseWaitMs = (intervalS: number): number => (MAX_DEFERRED_CHECKS + 2) * intervalS * 1000;
/** Seconds in V8's collections by kind, from prom-client's default metrics under our prefix. */
const GC_SECONDS = "metal3_ipam_nodejs_gc_duration_seconds_sum";
/** Seconds the controller's memory releases held it (src/runtime/memory.ts). */
const RELEASE_SECONDS = "metal3_ipam_memory_release_seconds_total";

const BENCH_POOLS: Record<SitePoolKind, BenchPool> = {
  IPPool: METAL3_POOL,
  InClusterIPPool: INCLUSTER_POOL,
  GlobalInClusterIPPool: GLOBAL_INCLUSTER_POOL,
};
const CAPI_KINDS: Record<SitePoolKind, BenchClaimKind> = {
  IPPool: CAPI_IPADDRESSCLAIM,
  InClusterIPPool: CAPI_ON_INCLUSTER,
  GlobalInClusterIPPool: CAPI_ON_GLOBAL_INCLUSTER,
};
const kindOf = (c: SiteClaim): BenchClaimKind => (c.api === "IPClaim" ? METAL3_IPCLAIM : CAPI_KINDS[c.pool.kind]);

/** Every pool's `used` as its status says, kept current by a watch of each pool kind (no polling in the windows). */
class PoolWatch {
  private readonly used = new Map<string, number | undefined>();

  private constructor(private readonly informers: Informer<KubeObject>[]) {}

  static async start(kc: KubeConfig): Promise<PoolWatch> {
    const informers = Object.values(BENCH_POOLS).map(
      (pool) =>
        new Informer<KubeObject>(kc, new ResourceClient<KubeObject>(kc, resourceType(pool.descriptor)), {
          resyncMs: 0,
          logger: silentLogger(),
        }),
    );
    const watch = new PoolWatch(informers);
    for (const [i, informer] of informers.entries()) {
      const pool = Object.values(BENCH_POOLS)[i] as BenchPool;
      informer.on((event, obj) => {
        if (event !== "delete") watch.used.set(obj.metadata.name ?? "", pool.usedOf(obj));
      });
    }
    await Promise.all(informers.map((informer) => informer.start()));
    return watch;
  }

  /** Resolves once every pool of `layout` counts at least `expected[index]` used (its status written). */
  async waitUsed(
    ctx: BenchContext,
    controller: BenchController,
    layout: SiteLayout,
    expected: readonly number[],
  ): Promise<void> {
    const current = (): boolean => layout.pools.every((p) => (this.used.get(p.name) ?? -1) >= (expected[p.index] ?? 0));
    if (!(await controller.guard(poll(() => Promise.resolve(current()), ctx.timeoutMs, 20))))
      throw new Error(
        `the site's pools did not count their addresses within ${ctx.timeoutMs / 1000} s (log ${controller.logFile})`,
      );
  }

  stop(): void {
    for (const informer of this.informers) informer.stop();
  }
}

/** What a run of the scenario shares. */
interface Site {
  ctx: BenchContext;
  options: SiteScenarioOptions;
  layout: SiteLayout;
  namespaces: string[];
  /** Bound claims as seen by a watch per claim API, over the site's namespaces. */
  claims: Record<SiteClaimApi, ClaimWatch>;
  pools: PoolWatch;
  /** What each pool should count used once the controller caught up. */
  expected: number[];
  /** The pools as created (their uids name them in the records' owners), by name. */
  created: Map<string, PoolObject>;
}

const namespaceOf = (site: Site, c: SiteClaim): string => site.namespaces[c.namespace] as string;

async function createSitePool(site: Site, p: SitePool): Promise<void> {
  site.created.set(p.name, await createPoolObject(site, p));
}

async function createPoolObject(site: Site, p: SitePool): Promise<PoolObject> {
  const { kc } = site.ctx;
  const namespace = site.namespaces[p.claimNamespaces[0] as number] as string;
  if (p.kind === "IPPool") {
    const preallocated = preAllocations(site.layout, p);
    return await clients(kc).pools.create(
      namespace,
      ipPool(namespace, p.name, {
        pools: [{ subnet: p.subnet }],
        prefix: BENCH_PREFIX,
        gateway: p.gateway,
        ...(p.preallocated > 0 ? { preAllocations: preallocated } : {}),
      }),
    );
  }
  const descriptor = BENCH_POOLS[p.kind].descriptor;
  return await new ResourceClient<InClusterIPPool>(kc, resourceType(descriptor)).create(namespace, {
    metadata: descriptor.namespaced ? { name: p.name, namespace } : { name: p.name },
    spec: { addresses: [p.subnet], prefix: BENCH_PREFIX, gateway: p.gateway },
  });
}

/** Pool name → addresses its records hold now (the claims the empty site's trickle bound), both record kinds. */
async function takenAddresses(kc: KubeConfig): Promise<Map<string, Set<string>>> {
  const taken = new Map<string, Set<string>>();
  const note = (pool: string | undefined, address: string | undefined): void => {
    if (pool === undefined || address === undefined) return;
    taken.set(pool, (taken.get(pool) ?? new Set()).add(address));
  };
  const [metal3, capi] = await Promise.all([
    clients(kc).addresses.list(),
    new ResourceClient<KubeObject & { spec?: { address?: string; poolRef?: { name?: string } } }>(
      kc,
      resourceType(CAPI_IPADDRESS),
    ).list(),
  ]);
  for (const a of metal3.items) note(a.spec?.pool?.name, a.spec?.address);
  for (const a of capi.items) note(a.spec?.poolRef?.name, a.spec?.address);
  return taken;
}

/** The held claims and records of every pool, written with no controller running; ms. */
async function writeHeld(site: Site, taken: Map<string, Set<string>>): Promise<number> {
  const work = site.layout.pools.flatMap((p) => {
    const addresses = heldAddresses(site.layout, p, taken.get(p.name) ?? new Set());
    return addresses.map((address, j) => ({ claim: heldClaim(p, j), address }));
  });
  const k = fixtureClients(site.ctx.kc);
  const start = nowMs();
  await runLimited(work, site.options.loadConcurrency, async ({ claim, address }) => {
    const pool = site.created.get(claim.pool.name);
    if (!pool) throw new Error(`pool ${claim.pool.name} was not created`);
    await writeHeldClaim(k, namespaceOf(site, claim), claim, pool, address);
  });
  return nowMs() - start;
}

/** CPU of the controller and the plane, the API server's request counters. */
interface Reading {
  controller: number;
  apiServer: number;
  etcd: number;
  requests: RequestCounts;
  /** The controller's collections so far (all 0 when none runs). */
  gc: StageCollections;
  /** The API server's counters so far. */
  server: StageServer;
}

/** The {@link StageServer} figures its /metrics gives; /proc gives the others. */
type ServerMetric = Exclude<keyof StageServer, "systemCpuS" | "minorFaults">;

/** The API server's metric behind each {@link ServerMetric} (counters, but for the live heap). */
const SERVER_METRICS: Record<ServerMetric, string> = {
  gcCpuS: "go_cpu_classes_gc_total_cpu_seconds_total",
  gcCycles: "go_gc_cycles_total_gc_cycles_total",
  allocatedBytes: "go_gc_heap_allocs_bytes_total",
  cacheLists: "apiserver_cache_list_total",
  cacheObjects: "apiserver_cache_list_returned_objects_total",
  etcdLists: "apiserver_storage_list_total",
  etcdObjects: "apiserver_storage_list_fetched_objects_total",
  liveHeapBytes: "go_gc_heap_live_bytes",
};

/** The {@link StageServer} counters of an API server's /metrics text and of its /proc reading (NaN without one). */
function serverCounters(text: string, proc: ProcCpu | undefined): StageServer {
  return {
    ...mapValues(SERVER_METRICS, (metric) => metricTotal(text, metric)),
    systemCpuS: proc?.systemS ?? Number.NaN,
    minorFaults: proc?.minorFaults ?? Number.NaN,
  };
}

const NO_COLLECTIONS: StageCollections = { majorS: 0, minorS: 0, incrementalS: 0, releases: 0, releaseS: 0 };

/** The controller's collections so far, from its /metrics. */
async function readCollections(controller: BenchController | undefined): Promise<StageCollections> {
  if (!controller) return NO_COLLECTIONS;
  const text = await scrapeMetrics(controller.metricsPort ?? 0);
  const sample = (metric: string, labels?: Record<string, string>): number => metricSample(text, metric, labels) ?? 0;
  return {
    majorS: sample(GC_SECONDS, { kind: "major" }),
    minorS: sample(GC_SECONDS, { kind: "minor" }),
    incrementalS: sample(GC_SECONDS, { kind: "incremental" }),
    releases: sample(MEMORY_RELEASES),
    releaseS: sample(RELEASE_SECONDS),
  };
}

/** The readings now; the controller's CPU is 0 when none runs (`controller` undefined). */
async function read(site: Site, controller: BenchController | undefined): Promise<Reading> {
  const pids = site.options.planePids();
  const cpu = (pid: number | undefined, none: number): Promise<number> =>
    pid === undefined ? Promise.resolve(none) : cpuSeconds(pid);
  const [c, server, etcd, metrics, gc] = await Promise.all([
    cpu(controller?.pid, 0),
    pids.apiServer === undefined ? undefined : procCpu(pids.apiServer),
    cpu(pids.etcd, Number.NaN),
    readServerMetrics(site.ctx.kc),
    readCollections(controller),
  ]);
  return {
    controller: c,
    apiServer: server ? server.userS + server.systemS : Number.NaN,
    etcd,
    requests: parseRequestCounts(metrics),
    gc,
    server: serverCounters(metrics, server),
  };
}

/** The bench's own creates of `claims`, by request key (left out of the controller's requests). */
function ownCreates(claims: readonly SiteClaim[]): Record<string, number> {
  const own: Record<string, number> = {};
  for (const c of claims) {
    const key = kindOf(c).createRequest;
    own[key] = (own[key] ?? 0) + 1;
  }
  return own;
}

/** A stage's figures from its readings; requests per claim, or per stage when it created none. */
async function stageOf(
  site: Site,
  controller: BenchController,
  stage: string,
  window: { before: Reading; after: Reading; start: number; wallMs: number },
  claims: readonly SiteClaim[],
  bind?: number[],
): Promise<SiteStage> {
  const { before, after } = window;
  const delta = (key: keyof StageCollections): number => after.gc[key] - before.gc[key];
  const heap = metricSample(await scrapeMetrics(controller.metricsPort ?? 0), HEAP_USED) ?? Number.NaN;
  const memory = await controller.memory();
  return {
    stage,
    claims: claims.length,
    wallMs: window.wallMs,
    cpu: {
      controller: after.controller - before.controller,
      apiServer: after.apiServer - before.apiServer,
      etcd: after.etcd - before.etcd,
    },
    requests: perClaim(requestDelta(before.requests, after.requests), Math.max(1, claims.length), ownCreates(claims)),
    ...(bind ? { bindMs: summarize(bind) } : {}),
    timedOut: bind ? claims.length - bind.length : 0,
    memory,
    heapUsed: heap,
    settled: await settledMemory(site, controller, stage),
    monotonicWindowMs: [window.start, window.start + window.wallMs],
    gc: {
      majorS: delta("majorS"),
      minorS: delta("minorS"),
      incrementalS: delta("incrementalS"),
      releases: delta("releases"),
      releaseS: delta("releaseS"),
    },
    server: mapValues(after.server, (n, key) =>
      key === "liveHeapBytes" ? n : n - before.server[key as keyof StageServer],
    ),
  };
}

/**
 * The controller's memory once its next memory release ran (within {@link releaseWaitMs}; at its end when none was
 * due: RSS had not grown enough since the last one).
 */
async function settledMemory(site: Site, controller: BenchController, stage: string): Promise<SettledMemory> {
  const waitMs = releaseWaitMs(site.options.releaseIntervalS);
  site.options.progress(`${stage}: a settled reading, waiting up to ${waitMs / 1000} s for a memory release`);
  const sample = async (metric: string): Promise<number> =>
    metricSample(await scrapeMetrics(controller.metricsPort ?? 0), metric) ?? Number.NaN;
  const before = await sample(MEMORY_RELEASES);
  // Once a second: a scrape costs the controller a few ms, and scraping faster would keep its loop from counting as
  // quiet, deferring the release it waits for.
  const released =
    (await controller.guard(poll(async () => (await sample(MEMORY_RELEASES)) > before, waitMs, 1_000))) === true;
  const [memory, heapUsed] = await Promise.all([controller.memory(), sample(HEAP_USED)]);
  return { rss: memory.rss, heapUsed, released };
}

/** The API server's write requests between two readings, by verb and resource (totals). */
function writesBetween(before: Reading, after: Reading): Record<string, number> {
  return Object.fromEntries(
    [...requestDelta(before.requests, after.requests)].filter(([key]) => /^(POST|PUT|PATCH|DELETE|APPLY) /.test(key)),
  );
}

/** Resolves once every claim of `claims` was seen bound (false at the deadline); create → bound of each bound one. */
async function waitBound(
  site: Site,
  controller: BenchController,
  claims: readonly SiteClaim[],
  sentAt: ReadonlyMap<string, number>,
): Promise<number[]> {
  for (const api of ["IPClaim", "IPAddressClaim"] as const) {
    const names = claims.filter((c) => c.api === api).map((c) => c.name);
    await controller.guard(site.claims[api].waitBound(names, site.ctx.timeoutMs));
  }
  return claims.flatMap((c) => {
    const [bound, sent] = [site.claims[c.api].boundAt.get(c.name), sentAt.get(c.name)];
    return bound !== undefined && sent !== undefined ? [bound - sent] : [];
  });
}

/**
 * A stage of `count` new claims spread over the pools: one at a time (each `gapMs` after the last create returned)
 * or `concurrency` at a time; its window ends once all are bound and every pool's status counts them.
 */
async function claimStage(
  site: Site,
  controller: BenchController,
  stage: string,
  prefix: string,
  count: number,
  oneAtATime: boolean,
): Promise<SiteStage> {
  const claims = Array.from({ length: count }, (_, t) => stageClaim(site.layout, prefix, t));
  claimsPerPool(site.layout, count).forEach((n, i) => (site.expected[i] = (site.expected[i] ?? 0) + n));
  const sentAt = new Map<string, number>();
  const create = async (c: SiteClaim): Promise<void> => {
    sentAt.set(c.name, nowMs());
    await kindOf(c).create(site.ctx.kc, namespaceOf(site, c), c.name, c.pool.name);
  };
  const before = await read(site, controller);
  const start = nowMs();
  if (oneAtATime)
    for (const c of claims) {
      await controller.guard(create(c));
      if (site.options.gapMs > 0) await sleep(site.options.gapMs);
    }
  else await controller.guard(runLimited(claims, site.options.concurrency, create));
  const bind = await waitBound(site, controller, claims, sentAt);
  await site.pools.waitUsed(site.ctx, controller, site.layout, site.expected);
  const wallMs = nowMs() - start;
  await controller.guard(sleep(TRAIL_MS));
  const after = await read(site, controller);
  return await stageOf(site, controller, stage, { before, after, start, wallMs }, claims, bind);
}

/** The Lease the site's controllers elect their leader on, as the shipped Deployment's replicas do. */
const SITE_LEASE = ["--leader-elect", "--leader-election-namespace=default", "--leader-election-id=bench-site"];

/**
 * A controller of all namespaces with /metrics and /readyz and leader election, on its own CPU profile when
 * BENCH_CPU_PROF asks.
 */
async function startSiteController(site: Site, profile: string): Promise<BenchController> {
  return await startBenchController(site.ctx.kubeconfigPath, site.ctx.logDir, {
    ports: true,
    profileName: `site-${profile}.cpuprofile`,
    flags: [`--memory-release-interval=${site.options.releaseIntervalS}s`, ...SITE_LEASE],
  });
}

/** Stage 1: a controller on the empty site; its idle reading, then the trickle into the empty site. */
async function emptySite(site: Site): Promise<SiteStage[]> {
  const before = await read(site, undefined);
  const controller = await startSiteController(site, "empty");
  try {
    const start = nowMs();
    await waitReady(site.ctx, controller);
    await site.pools.waitUsed(site.ctx, controller, site.layout, site.expected);
    const wallMs = nowMs() - start;
    await waitIdle(site.ctx, controller);
    // From the controller's start: the plane's CPU and the requests of its start-up, its whole CPU.
    const idle = await stageOf(
      site,
      controller,
      SITE_STAGES.idle,
      { before, after: await read(site, controller), start, wallMs },
      [],
    );
    const trickle = await claimStage(site, controller, SITE_STAGES.emptyTrickle, "empty", site.options.trickle, true);
    return [idle, trickle];
  } finally {
    await controller.stop();
  }
}

/**
 * The first IPPool of the namespace whose name sorts first: the API server lists in key order (`<namespace>/<name>`),
 * so a controller's first lists reach that namespace's objects first.
 */
function listedFirstPool(site: Site): SitePool {
  const first = site.namespaces.indexOf([...site.namespaces].sort()[0] ?? "");
  const pools = site.layout.pools;
  return pools.find((p) => p.kind === "IPPool" && p.claimNamespaces[0] === first) ?? (pools[0] as SitePool);
}

/** Stage 3: a controller started on the held site (c), then the trickle (a) and the burst (b) on it. */
async function heldSite(
  site: Site,
): Promise<{ stages: SiteStage[]; restart: SiteResult["restart"]; handover: SiteHandover }> {
  // Created while no controller runs: the start-up serves them among everything it finds. One in the last pool,
  // one in an IPPool of the namespace the lists reach first.
  const first = stageClaim(site.layout, "first", site.layout.pools.length - 1);
  const early = stageClaim(site.layout, "early", listedFirstPool(site).index);
  for (const c of [first, early]) {
    site.expected[c.pool.index] = (site.expected[c.pool.index] ?? 0) + 1;
    await kindOf(c).create(site.ctx.kc, namespaceOf(site, c), c.name, c.pool.name);
  }
  const before = await read(site, undefined);
  const controller = await startSiteController(site, "held");
  try {
    const start = nowMs();
    const ready = waitReady(site.ctx, controller).then(() => nowMs() - start);
    const bound = (c: SiteClaim): Promise<number> =>
      waitBound(site, controller, [c], new Map([[c.name, start]])).then(([ms]) => ms ?? Number.NaN);
    const [firstBound, listedFirstBound] = [bound(first), bound(early)];
    const poolsCurrent = site.pools
      .waitUsed(site.ctx, controller, site.layout, site.expected)
      .then(() => nowMs() - start);
    const [readyMs, firstBoundMs, listedFirstBoundMs, poolsCurrentMs] = await Promise.all([
      ready,
      firstBound,
      listedFirstBound,
      poolsCurrent,
    ]);
    await waitIdle(site.ctx, controller);
    const window = { before, after: await read(site, controller) };
    const restart = await stageOf(
      site,
      controller,
      SITE_STAGES.restart,
      { ...window, start, wallMs: poolsCurrentMs },
      [],
    );
    // Totals: the stage created no claims of the bench's in its window (the first one came before it).
    const writes = writesBetween(window.before, window.after);
    const trickle = await claimStage(site, controller, SITE_STAGES.trickle, "trickle", site.options.trickle, true);
    const burst = await claimStage(site, controller, SITE_STAGES.burst, "burst", site.options.burst, false);
    const handedOver = await handover(site, controller);
    return {
      stages: [restart, trickle, burst],
      restart: { readyMs, firstBoundMs, listedFirstBoundMs, poolsCurrentMs, claims: 2, writes },
      handover: handedOver,
    };
  } finally {
    await controller.stop();
  }
}

/**
 * The shipped Deployment's other replica: a standby started beside the leader fills its caches; the leader is
 * stopped (SIGTERM: it drains and releases the Lease), a claim is created once it is gone, and the standby, elected,
 * binds it.
 */
async function handover(site: Site, leader: BenchController): Promise<SiteHandover> {
  const claim = stageClaim(site.layout, "handover", 0);
  site.expected[claim.pool.index] = (site.expected[claim.pool.index] ?? 0) + 1;
  site.options.progress("handover: a standby on the leader's Lease fills its caches, then the leader stops");
  const standby = await startSiteController(site, "standby");
  try {
    const started = nowMs();
    await waitReady(site.ctx, standby);
    const readyMs = nowMs() - started;
    const before = await read(site, standby);
    const stopping = nowMs();
    await leader.stop();
    const leaderGoneMs = nowMs() - stopping;
    await standby.guard(kindOf(claim).create(site.ctx.kc, namespaceOf(site, claim), claim.name, claim.pool.name));
    const [firstBoundMs] = await waitBound(site, standby, [claim], new Map([[claim.name, stopping]]));
    await site.pools.waitUsed(site.ctx, standby, site.layout, site.expected);
    await waitIdle(site.ctx, standby);
    const after = await read(site, standby);
    return { readyMs, leaderGoneMs, firstBoundMs: firstBoundMs ?? Number.NaN, writes: writesBetween(before, after) };
  } finally {
    await standby.stop();
  }
}

/** Scenario 8 (see the top of this file). */
export async function siteScenario(ctx: BenchContext, options: SiteScenarioOptions): Promise<SiteResult> {
  const layout = siteLayout({
    addresses: options.addresses,
    pools: options.pools,
    namespaces: NAMESPACES,
    newClaims: 2 * options.trickle + options.burst + 2,
  });
  const namespaces = await Promise.all(Array.from({ length: NAMESPACES }, () => freshNamespace(ctx.kc, "bench-site")));
  const [ipClaims, capiClaims, pools] = await Promise.all([
    ClaimWatch.start(ctx.kc, METAL3_IPCLAIM, namespaces),
    ClaimWatch.start(ctx.kc, CAPI_IPADDRESSCLAIM, namespaces),
    PoolWatch.start(ctx.kc),
  ]);
  const site: Site = {
    ctx,
    options,
    layout,
    namespaces,
    claims: { IPClaim: ipClaims, IPAddressClaim: capiClaims },
    pools,
    expected: layout.pools.map(() => 0),
    created: new Map(),
  };
  try {
    options.progress(`creating ${layout.pools.length} pools, then a controller on the empty site`);
    await runLimited(layout.pools, options.loadConcurrency, (p) => createSitePool(site, p));
    const empty = await emptySite(site);
    options.progress(`writing ${options.addresses} held claims and records, ${options.loadConcurrency} at a time`);
    const loadMs = await writeHeld(site, await takenAddresses(ctx.kc));
    options.progress("starting a controller on the held site: restart, trickle, burst");
    layout.pools.forEach((p) => (site.expected[p.index] = (site.expected[p.index] ?? 0) + p.held));
    const held = await heldSite(site);
    return {
      addresses: options.addresses,
      pools: options.pools,
      namespaces: NAMESPACES,
      census: siteCensus(layout),
      loadMs,
      loadConcurrency: options.loadConcurrency,
      releaseIntervalS: options.releaseIntervalS,
      stages: [...empty, ...held.stages],
      restart: held.restart,
      handover: held.handover,
    };
  } finally {
    ipClaims.stop();
    capiClaims.stop();
    pools.stop();
  }
}
