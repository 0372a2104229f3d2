/** Small descriptive statistics and number formatting for the benchmark. Nothing here touches a cluster. */

/** Summary of a sample of numbers (all in the sample's unit). */
export interface Summary {
  n: number;
  min: number;
  mean: number;
  median: number;
  p90: number;
  p99: number;
  max: number;
}

/**
 * The q-quantile (0 ≤ q ≤ 1) of `values` by linear interpolation between closest ranks (the method spreadsheets call
 * PERCENTILE.INC). NaN for an empty sample. Does not modify `values`.
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = Math.min(Math.max(q, 0), 1) * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] ?? Number.NaN;
  const b = sorted[hi] ?? a;
  return a + (b - a) * (pos - lo);
}

/** The median of `values` (NaN when empty). */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** Min, mean, median, p90, p99 and max of `values`; NaN fields for an empty sample. */
export function summarize(values: readonly number[]): Summary {
  const n = values.length;
  const mean = n === 0 ? Number.NaN : values.reduce((s, v) => s + v, 0) / n;
  return {
    n,
    min: n === 0 ? Number.NaN : Math.min(...values),
    mean,
    median: quantile(values, 0.5),
    p90: quantile(values, 0.9),
    p99: quantile(values, 0.99),
    max: n === 0 ? Number.NaN : Math.max(...values),
  };
}

/** Milliseconds since an arbitrary origin, with sub-millisecond resolution (monotonic). */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** `x` with `digits` significant figures at most, without exponent notation for everyday magnitudes. */
export function fmt(x: number, digits = 3): string {
  if (!Number.isFinite(x)) return "n/a";
  if (x === 0) return "0";
  const abs = Math.abs(x);
  if (abs >= 10 ** digits) return Math.round(x).toLocaleString("en-US");
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(abs)));
  return x.toFixed(Math.min(decimals, 6));
}

/** A duration given in milliseconds, in the most readable unit (µs, ms or s). */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return "n/a";
  if (ms < 1) return `${fmt(ms * 1000)} µs`;
  if (ms < 1000) return `${fmt(ms)} ms`;
  return `${fmt(ms / 1000)} s`;
}

/** A size given in bytes, in KiB or MiB. */
export function fmtBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "n/a";
  const sign = bytes < 0 ? "-" : "";
  const abs = Math.abs(bytes);
  if (abs < 1024 * 1024) return `${sign}${fmt(abs / 1024)} KiB`;
  return `${sign}${fmt(abs / (1024 * 1024))} MiB`;
}

/** `a / b` formatted as `12.3×`; "n/a" when undefined. */
export function fmtRatio(a: number, b: number): string {
  return b === 0 || !Number.isFinite(a / b) ? "n/a" : `${fmt(a / b)}×`;
}
