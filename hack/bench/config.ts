/** The benchmark's scale, from environment variables, so a smoke run is one line: `BENCH_CLAIMS=50 BENCH_ADDRESSES=200`. */

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
  /** Where the JSON results go. BENCH_OUT, default .cache/bench/last.json under the repository. */
  outFile: string;
  /** Also print the JSON on stdout after the table. BENCH_JSON=1. */
  printJson: boolean;
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
    outFile: env.BENCH_OUT || defaultOutFile,
    printJson: env.BENCH_JSON === "1" || env.BENCH_JSON === "true",
  };
}
