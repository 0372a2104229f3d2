/** Counts as JSON numbers for `int64` status fields (spec §1.1: IPv6 pools can exceed 2^63 addresses). */

/** The int64 maximum, 2^63 - 1, exactly. */
export const INT64_MAX = (1n << 63n) - 1n;

/**
 * The largest JS number that does not exceed the int64 maximum: 2^63 - 1024. 2^63 - 1 itself is not representable;
 * `Number(INT64_MAX)` rounds UP to 2^63, which a Go or API-server int64 decoder rejects as out of range.
 */
export const INT64_MAX_NUMBER = 9223372036854774784;

/**
 * `n` as a number for an int64 field: values at or above `INT64_MAX_NUMBER` become `INT64_MAX_NUMBER`, values at or
 * below -2^63 become -2^63. Exact up to 2^53; above that rounded to the nearest double (never past the cap), which is
 * fine for counts shown to people and alerts. Never throws.
 */
export function toInt64Capped(n: bigint): number {
  if (n >= BigInt(INT64_MAX_NUMBER)) return INT64_MAX_NUMBER;
  if (n <= -(1n << 63n)) return -(2 ** 63);
  return Number(n);
}
