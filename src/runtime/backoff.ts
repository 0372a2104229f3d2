/**
 * Retry delays for the work queue. Pure: no clock, no randomness, no state.
 */

/**
 * Highest exponent ever applied. 2^64 times any sane base is still finite, and capping the exponent keeps
 * `0 * 2^n` from becoming `0 * Infinity = NaN` after thousands of failures.
 */
const MAX_EXPONENT = 64;

/**
 * Checks that a base and cap describe a usable exponential backoff.
 *
 * @throws RangeError when either bound is negative or not finite, or when `maxMs < baseMs`.
 */
export function assertBackoffBounds(baseMs: number, maxMs: number): void {
  if (!Number.isFinite(baseMs) || baseMs < 0) {
    throw new RangeError(`backoff base must be a finite number >= 0, got ${baseMs}`);
  }
  if (!Number.isFinite(maxMs) || maxMs < baseMs) {
    throw new RangeError(`backoff cap must be a finite number >= base (${baseMs}), got ${maxMs}`);
  }
}

/**
 * Delay before the next attempt after `failures` earlier consecutive failures: `baseMs * 2^failures`, capped at
 * `maxMs`. So the first retry (no earlier failures) waits `baseMs`, the second `2 * baseMs`, and so on.
 *
 * Guarantees a finite result in `[baseMs, maxMs]` for every valid input, however large `failures` grows.
 *
 * @throws RangeError when `failures` is not a non-negative integer, or the bounds fail {@link assertBackoffBounds}.
 */
export function exponentialBackoffMs(failures: number, baseMs: number, maxMs: number): number {
  if (!Number.isInteger(failures) || failures < 0) {
    throw new RangeError(`failures must be an integer >= 0, got ${failures}`);
  }
  assertBackoffBounds(baseMs, maxMs);
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures, MAX_EXPONENT));
}
