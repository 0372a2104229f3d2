/** Settings of `npm run soak`, from environment variables; every one has a default. */

export interface SoakConfig {
  /** How long the churn runs (SOAK_MINUTES, default 10; fractions allowed). */
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

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number, integer: boolean): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? "integer" : "number"}, got "${text}"`);
  }
  return value;
}

/** Reads the settings; throws with the variable's name on a bad value. */
export function readSoakConfig(env: NodeJS.ProcessEnv, defaultOutFile: string): SoakConfig {
  const config: SoakConfig = {
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
