/** Uniform random indices over bigint ranges, from a `[0, 1)` number generator such as `Math.random`. */

/** A source of numbers uniformly distributed in `[0, 1)`. */
export type Rng = () => number;

const TWO_32 = 2 ** 32;

function bitLength(n: bigint): number {
  return n.toString(2).length;
}

/**
 * A random integer in `[0, n)`. For `n ≤ 2^32` one draw scaled to `n` (as uniform as `rng`); above, enough 32-bit
 * draws for 64 bits more than `n` needs, reduced modulo `n`, so the bias is below 2^-64.
 * Returns 0n when `n ≤ 1n`. Tolerates an `rng` that returns 1 or slightly out-of-range values (clamped).
 */
export function randomBelow(n: bigint, rng: Rng): bigint {
  if (n <= 1n) return 0n;
  if (n <= BigInt(TWO_32)) {
    const r = Math.floor(rng() * Number(n));
    return BigInt(Math.min(Math.max(r, 0), Number(n) - 1));
  }
  const chunks = Math.ceil(bitLength(n) / 32) + 2;
  let acc = 0n;
  for (let i = 0; i < chunks; i++) {
    const draw = Math.min(Math.max(Math.floor(rng() * TWO_32), 0), TWO_32 - 1);
    acc = (acc << 32n) | BigInt(draw);
  }
  return acc % n;
}

/**
 * A small deterministic generator (mulberry32) for reproducible tests and benchmarks. Not for anything where
 * unpredictability matters.
 */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
