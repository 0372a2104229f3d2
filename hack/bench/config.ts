/** The benchmark's scale, from environment variables, so a smoke run is one line: `BENCH_CLAIMS=50 BENCH_ADDRESSES=200`. */

import { DEFAULT_SITE_RELEASE_INTERVAL_S } from "./site.js";

/** Every knob of a run. */
export interface BenchConfig {
  /** Claims created at once on one pool (scenario 1). BENCH_CLAIMS, default 1000. */
  claims: number;
  /** Burst sizes measured per claim kind: `claims`, and 10,000 too with `--large` (or BENCH_LARGE=1). */
  sizes: number[];
  /** Creates in flight during the burst and while loading IPAddresses. BENCH_CONCURRENCY, default 50. */
  concurrency: number;
  /** Claims created one at a time on a quiet pool (scenario 2). BENCH_LATENCY_CLAIMS, default 50. */
  latencyClaims: number;
  /** Allocations per allocator run; the last window ends here (scenario 3). BENCH_ALLOCATIONS, default 10000. */
  allocations: number;
  /** Allocations per measured window (scenario 3). BENCH_WINDOW, default 100. */
  window: number;
  /** Measured repetitions of each allocator run, after one warm-up (scenario 3). BENCH_REPEATS, default 5. */
  repeats: number;
  /** IPAddress objects loaded before the controller starts (scenario 4). BENCH_ADDRESSES, default 10000. */
  addresses: number;
  /** Deadline of each wait for the controller, in seconds. BENCH_TIMEOUT_S, default 900. */
  timeoutSeconds: number;
  /**
   * Seconds the controller is left idle after each burst before its memory is read again. The controller's memory
   * release (src/runtime/memory.ts) checks RSS once a minute from its start, so a reading 20 s after a burst may come
   * before or after the release that gives the burst's freed heap pages back; 65 s always comes after one (V8's own
   * memory reducer seldom runs on an idle Node process). BENCH_SETTLE_S, default 20.
   */
  settleSeconds: number;
  /** Claims created one at a time into each trickle pool (scenario 5). BENCH_TRICKLE_CLAIMS, default 100. */
  trickleClaims: number;
  /**
   * Addresses the trickle pools already hold (scenario 5): BENCH_TRICKLE_HELD, a comma-separated list, default
   * `0,2000`, with 10000 added by `--large`.
   */
  trickleHeld: number[];
  /**
   * Pause after each trickle create has returned, before the next, in ms. BENCH_TRICKLE_GAP_MS, default 100: the
   * issue's figures came from one `kubectl create` per claim, whose own start-up spaces claims about so far apart;
   * with no gap, creates arrive every few ms and a pool pass serves several at once, which a trickle should not.
   */
  trickleGapMs: number;
  /**
   * Claims each trickle's measured process (controller or floor client) serves one at a time, as the trickle does,
   * before its measured window: BENCH_TRICKLE_WARMUP, default 200 (0: none). A controller runs for days, and the claims
   * after its start carry V8's compilation of every path they take (the first 100 cost about 1 ms more each); the
   * window measures what a claim costs once that is over. The warm-up's own figure is reported beside it.
   */
  trickleWarmup: number;
  /** The site scenario (8): addresses held across the site. BENCH_SITE_ADDRESSES, default 100000. */
  siteAddresses: number;
  /** Pools of the site, of every kind (hack/bench/site.ts). BENCH_SITE_POOLS, default 1000. */
  sitePools: number;
  /** Claims of each of the site's trickles, spread over its pools. BENCH_SITE_TRICKLE, default 300. */
  siteTrickle: number;
  /** Claims of the site's burst, spread over its pools. BENCH_SITE_BURST, default 5000. */
  siteBurst: number;
  /** Held claims written at once while the site is built. BENCH_SITE_CONCURRENCY, default 200. */
  siteConcurrency: number;
  /** The site's controllers' memory release interval, seconds. BENCH_SITE_RELEASE_INTERVAL, default 2. */
  siteReleaseIntervalS: number;
  /** Fail the run when the site is over a bound of hack/bench/site.ts's SITE_BOUNDS. BENCH_SITE_CHECK=1. */
  siteCheck: boolean;
  /** Scenarios to run: BENCH_SCENARIOS, comma-separated among {@link SCENARIOS}; default {@link DEFAULT_SCENARIOS}. */
  scenarios: Scenario[];
  /**
   * Pool kinds whose claim kinds run (bursts, ceilings, trickles): BENCH_POOLS, comma-separated among
   * {@link POOL_LABELS}; default all. The IPAddressClaim-on-IPPool kind is the reference of the ratios: keep IPPool.
   */
  pools: PoolLabel[];
  /** Where the JSON results go. BENCH_OUT, default .cache/bench/last.json under the repository. */
  outFile: string;
  /** Also print the JSON on stdout after the table. BENCH_JSON=1. */
  printJson: boolean;
}

/** allocator (3), burst (ceilings, bursts, latency: 1, 2), memory (4), trickle (5), netbox (6), admission (7), site (8). */
export const SCENARIOS = ["allocator", "burst", "memory", "trickle", "netbox", "admission", "site"] as const;
/** The scenarios that need no API server: they run first, before the local plane starts. */
export const PURE_SCENARIOS: readonly Scenario[] = ["allocator", "admission"];
export type Scenario = (typeof SCENARIOS)[number];
/**
 * What runs without BENCH_SCENARIOS: all but `netbox`, which needs a NetBox (installed by its first run: minutes,
 * hack/netbox.sh), about 500 MB more memory and about 2 minutes more, and `site`, whose default size takes far longer
 * than the rest together; BENCH_SCENARIOS names them to run them.
 */
export const DEFAULT_SCENARIOS: readonly Scenario[] = SCENARIOS.filter((s) => s !== "netbox" && s !== "site");

/** The pools the claim kinds ask (hack/bench/pools.ts labels). */
export const POOL_LABELS = ["IPPool", "InClusterIPPool", "GlobalInClusterIPPool"] as const;
export type PoolLabel = (typeof POOL_LABELS)[number];

function poolOf(item: string): PoolLabel {
  const found = POOL_LABELS.find((p) => p === item);
  if (!found) throw new Error(`BENCH_POOLS: unknown pool kind "${item}" (known: ${POOL_LABELS.join(", ")})`);
  return found;
}

function nonNegativeInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${text}"`);
  return n;
}

function list<T>(env: NodeJS.ProcessEnv, name: string, fallback: T[], parse: (item: string) => T): T[] {
  const text = env[name];
  if (text === undefined || text.trim() === "") return fallback;
  return text.split(",").map((item) => parse(item.trim()));
}

function scenarioOf(item: string): Scenario {
  const found = SCENARIOS.find((s) => s === item);
  if (!found) throw new Error(`BENCH_SCENARIOS: unknown scenario "${item}" (known: ${SCENARIOS.join(", ")})`);
  return found;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${text}"`);
  return n;
}

/** Reads the configuration; throws a one-line message on a malformed value. */
export function readConfig(env: NodeJS.ProcessEnv, defaultOutFile: string, argv: readonly string[] = []): BenchConfig {
  const claims = positiveInt(env, "BENCH_CLAIMS", 1000);
  const large = argv.includes("--large") || env.BENCH_LARGE === "1";
  const allocations = positiveInt(env, "BENCH_ALLOCATIONS", 10_000);
  // The IPv4 case allocates from a /16 (65,535 addresses).
  if (allocations > 65_535)
    throw new Error(`BENCH_ALLOCATIONS must be at most 65535 (the IPv4 case uses a /16), got ${allocations}`);
  const window = Math.min(positiveInt(env, "BENCH_WINDOW", 100), allocations);
  return {
    claims,
    sizes: large && claims < 10_000 ? [claims, 10_000] : [claims],
    concurrency: positiveInt(env, "BENCH_CONCURRENCY", 50),
    latencyClaims: positiveInt(env, "BENCH_LATENCY_CLAIMS", 50),
    allocations,
    window,
    repeats: positiveInt(env, "BENCH_REPEATS", 5),
    addresses: positiveInt(env, "BENCH_ADDRESSES", 10_000),
    timeoutSeconds: positiveInt(env, "BENCH_TIMEOUT_S", 900),
    settleSeconds: positiveInt(env, "BENCH_SETTLE_S", 20),
    trickleClaims: positiveInt(env, "BENCH_TRICKLE_CLAIMS", 100),
    trickleHeld: trickleHeld(env, large),
    trickleGapMs: nonNegativeInt(env, "BENCH_TRICKLE_GAP_MS", 100),
    trickleWarmup: nonNegativeInt(env, "BENCH_TRICKLE_WARMUP", 200),
    siteAddresses: nonNegativeInt(env, "BENCH_SITE_ADDRESSES", 100_000),
    sitePools: positiveInt(env, "BENCH_SITE_POOLS", 1_000),
    siteTrickle: positiveInt(env, "BENCH_SITE_TRICKLE", 300),
    siteBurst: positiveInt(env, "BENCH_SITE_BURST", 5_000),
    siteConcurrency: positiveInt(env, "BENCH_SITE_CONCURRENCY", 200),
    siteReleaseIntervalS: positiveInt(env, "BENCH_SITE_RELEASE_INTERVAL", DEFAULT_SITE_RELEASE_INTERVAL_S),
    siteCheck: env.BENCH_SITE_CHECK === "1" || env.BENCH_SITE_CHECK === "true",
    scenarios: list(env, "BENCH_SCENARIOS", [...DEFAULT_SCENARIOS], scenarioOf),
    pools: list(env, "BENCH_POOLS", [...POOL_LABELS], poolOf),
    outFile: env.BENCH_OUT || defaultOutFile,
    printJson: env.BENCH_JSON === "1" || env.BENCH_JSON === "true",
  };
}

function trickleHeld(env: NodeJS.ProcessEnv, large: boolean): number[] {
  const held = list(env, "BENCH_TRICKLE_HELD", [0, 2_000], (item) => {
    const n = Number(item);
    if (item === "" || !Number.isInteger(n) || n < 0)
      throw new Error(`BENCH_TRICKLE_HELD must list non-negative integers, got "${env.BENCH_TRICKLE_HELD}"`);
    return n;
  });
  return large && !held.includes(10_000) ? [...held, 10_000] : held;
}
