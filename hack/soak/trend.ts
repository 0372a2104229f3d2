/**
 * Does a memory series grow? A least-squares line through timestamped samples, after a warm-up, compared with the
 * series' own noise. Pure: the soak feeds it RSS and V8 heap readings; nothing here touches a process or a cluster.
 */
import { quantile } from "../bench/stats.js";

/** One reading: when (ms from any fixed start) and how many bytes. */
export interface MemorySample {
  atMs: number;
  bytes: number;
}

export type TrendVerdict = "flat" | "growing" | "shrinking" | "too few samples";

/** The fit of {@link memoryTrend} and what it concludes. */
export interface MemoryTrend {
  verdict: TrendVerdict;
  /** Samples fitted (those after the warm-up). */
  samples: number;
  /** Length of the warm-up left out, in ms. */
  warmupMs: number;
  /** Slope of the fitted line, bytes per minute. */
  bytesPerMinute: number;
  /** What the slope adds up to over the fitted span (last − first fitted sample), in bytes. */
  growthBytes: number;
  /** p90 − p10 of the residuals around the line: how far readings scatter with no trend at all. */
  noiseBytes: number;
  minBytes: number;
  maxBytes: number;
}

/** Fewer fitted samples than this give no verdict: a line through a handful of GC-timed readings says nothing. */
export const MIN_FITTED_SAMPLES = 6;
/** Growth below this is never a trend, whatever the noise: one V8 page or malloc arena is in this range. */
export const GROWTH_FLOOR_BYTES = 2 * 1024 * 1024;
/**
 * Fits a line through the samples taken `warmupMs` or more after `startMs` (default: the first sample) and calls it
 * `flat` when the growth the line implies over the fitted span is within the noise band, or within
 * {@link GROWTH_FLOOR_BYTES}; `growing` or `shrinking` otherwise. Samples may come in any order.
 */
export function memoryTrend(samples: readonly MemorySample[], warmupMs: number, startMs?: number): MemoryTrend {
  const sorted = [...samples].sort((a, b) => a.atMs - b.atMs);
  const start = startMs ?? sorted[0]?.atMs ?? 0;
  const fitted = sorted.filter((s) => s.atMs - start >= warmupMs);
  const bytes = fitted.map((s) => s.bytes);
  const base = {
    samples: fitted.length,
    warmupMs,
    minBytes: bytes.length ? Math.min(...bytes) : Number.NaN,
    maxBytes: bytes.length ? Math.max(...bytes) : Number.NaN,
  };
  if (fitted.length < MIN_FITTED_SAMPLES) {
    return {
      ...base,
      verdict: "too few samples",
      bytesPerMinute: Number.NaN,
      growthBytes: Number.NaN,
      noiseBytes: Number.NaN,
    };
  }
  const { slope, intercept } = leastSquares(fitted.map((s) => [s.atMs, s.bytes] as const));
  const residuals = fitted.map((s) => s.bytes - (intercept + slope * s.atMs));
  const noiseBytes = quantile(residuals, 0.9) - quantile(residuals, 0.1);
  const growthBytes = slope * ((fitted.at(-1)?.atMs ?? 0) - (fitted[0]?.atMs ?? 0));
  const verdict: TrendVerdict =
    Math.abs(growthBytes) <= Math.max(noiseBytes, GROWTH_FLOOR_BYTES)
      ? "flat"
      : growthBytes > 0
        ? "growing"
        : "shrinking";
  return { ...base, verdict, bytesPerMinute: slope * 60_000, growthBytes, noiseBytes };
}

/** Ordinary least squares of y on x. Needs two distinct x values; gives slope 0 when all x are equal. */
function leastSquares(points: readonly (readonly [number, number])[]): { slope: number; intercept: number } {
  const n = points.length;
  const meanX = points.reduce((s, [x]) => s + x, 0) / n;
  const meanY = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - meanX) * (y - meanY);
    sxx += (x - meanX) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: meanY - slope * meanX };
}
