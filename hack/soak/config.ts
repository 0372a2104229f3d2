/** Settings of `npm run soak`, from environment variables; every one has a default. */

export interface SoakConfig {
  /**
   * How long the churn runs before memory is judged (SOAK_WARMUP_MINUTES, default 5; 0 judges from the start):
   * under churn the controller's RSS first climbs quickly for some minutes (malloc arenas, V8's pages and compiled
   * code reaching their working size) while the heap in use stays flat, and a line fitted across that climb says
   * nothing about a leak.
   */
  warmupMinutes: number;
  /** How long the churn runs after the warm-up, the window memory is judged over (SOAK_MINUTES, default 10). */
  minutes: number;
  /** Pools churned in parallel (SOAK_POOLS, default 4), each a /24. */
  pools: number;
  /** Create→bound→delete loops per pool (SOAK_WORKERS, default 4). */
  workersPerPool: number;
  /** Claims per pool created first and kept to the end, so the pools are never empty (SOAK_RESIDENT, default 50). */
  residentPerPool: number;
  /** Longest wait for everything to settle after the churn (SOAK_SETTLE_SECONDS, default 180). */
  settleSeconds: number;
  /** Where the JSON figures go (SOAK_OUT, default .cache/soak/last.json). */
  outFile: string;
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number, integer: boolean, zero = false): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zero) || (integer && !Number.isInteger(value))) {
    const what = `${zero ? "non-negative" : "positive"} ${integer ? "integer" : "number"}`;
    throw new Error(`${name} must be a ${what}, got "${text}"`);
  }
  return value;
}

/** Reads the settings; throws with the variable's name on a bad value. */
export function readSoakConfig(env: NodeJS.ProcessEnv, defaultOutFile: string): SoakConfig {
  const config: SoakConfig = {
    warmupMinutes: positive(env, "SOAK_WARMUP_MINUTES", 5, false, true),
    minutes: positive(env, "SOAK_MINUTES", 10, false),
    pools: positive(env, "SOAK_POOLS", 4, true),
    workersPerPool: positive(env, "SOAK_WORKERS", 4, true),
    residentPerPool: positive(env, "SOAK_RESIDENT", 50, true),
    settleSeconds: positive(env, "SOAK_SETTLE_SECONDS", 180, false),
    outFile: env.SOAK_OUT || defaultOutFile,
  };
  if (config.pools > 200) throw new Error("SOAK_POOLS must be at most 200 (one /24 each in 10.100.0.0/16)");
  if (config.residentPerPool + config.workersPerPool > 250)
    throw new Error("SOAK_RESIDENT + SOAK_WORKERS must fit a /24 (at most 250)");
  return config;
}
