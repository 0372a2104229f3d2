/**
 * Gives the V8 heap pages a collection freed back to the operating system.
 *
 * Why: the V8 of Node 24 keeps the 256 KiB pages a major collection empties in a pool for reuse and hands them back
 * only on a memory-reducing collection (V8's memory reducer, memory pressure, a last-resort GC). Node schedules none
 * of those while the process keeps working, so the controller's RSS follows the highest the heap has ever been, not
 * what it holds: after a burst it stays at the burst's peak, and under steady churn it climbs in steps at each new
 * high of the heap (Node 20's V8 unmapped such pages at once). A Go controller's runtime returns freed memory in the
 * background; this is the equivalent: when RSS has risen by `minGrowthBytes` over its settled size since the last
 * release, one memory-reducing collection empties the pool.
 *
 * The collection stops the process and takes CPU from the API server it shares the machine with, the more the larger
 * the heap. So a release that is due waits for an interval in which the event
 * loop was quiet (a controller serving claims one at a time is busy, one that sits waiting is quiet), and runs anyway
 * after a few busy ones: a process that is never quiet still gives memory back, at most once per that many intervals.
 *
 * The collection is V8's `gc({type: "major", flavor: "last-resort"})`, which exists only when Node runs with
 * `--expose-gc` (the image's ENTRYPOINT passes it); without it, {@link memoryReducingCollection} returns undefined and
 * the controller runs without releases.
 */

/** A memory-reducing full collection: returns the pool of empty heap pages to the OS. */
export type Collect = () => void;

/** The memory-reducing collection of `globalThis.gc`, or undefined when Node runs without `--expose-gc`. */
export function memoryReducingCollection(global: { gc?: unknown } = globalThis): Collect | undefined {
  if (typeof global.gc !== "function") return undefined;
  const gc = global.gc as (options: { type: string; execution: string; flavor: string }) => void;
  // "last-resort" makes V8 collect as it does under memory pressure: it compacts and releases pooled pages, which a
  // plain major collection keeps. "sync": the release is measured right after the call returns.
  return () => void gc({ type: "major", execution: "sync", flavor: "last-resort" });
}

/** One release: RSS just before and just after the collection, and how long the collection took. */
export interface Release {
  beforeBytes: number;
  afterBytes: number;
  durationMs: number;
}

export interface MemoryReleaserOptions {
  /** How often RSS is read (the cost of a check is one read of RSS). */
  intervalMs: number;
  /** RSS growth over the lowest RSS seen since the last release that is worth a collection. */
  minGrowthBytes: number;
  collect: Collect;
  /** The process's resident set size, in bytes. Default `process.memoryUsage.rss`. */
  readRss?: () => number;
  /**
   * Whether the process was quiet since the previous call (the first: since the probe was made); called at each check.
   * Default: always quiet. {@link eventLoopQuiet} is the controller's.
   */
  quiet?: () => boolean;
  /** Busy checks a due release waits through at most before it runs anyway. Default {@link MAX_DEFERRED_CHECKS}. */
  maxDeferredChecks?: number;
  /** Called after each release (metrics, logs). */
  onRelease?: (release: Release) => void;
  /** Called when a collection threw; the releaser has stopped by then (a failed release never ends the process). */
  onError?: (err: unknown) => void;
}

/** Busy checks a due release waits through by default: with the default interval, five minutes. */
export const MAX_DEFERRED_CHECKS = 4;

/**
 * Whether the event loop was busy at most `maxUtilization` of the time since the previous call: an idle controller's
 * loop is busy well under 1% of the time; one serving ten claims a second about 3%.
 */
export function eventLoopQuiet(maxUtilization = 0.01): () => boolean {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return busy <= maxUtilization;
  };
}

/**
 * Checks RSS every `intervalMs` and runs a memory-reducing collection when it has grown by `minGrowthBytes` over the
 * floor: the lowest RSS read since the start, or since the first check after the last release. An idle process never
 * pays for a collection, and one that grew for real (a larger cache) pays for one and then has a new floor.
 *
 * Why not the RSS right after a release: the collection compacts the heap below its working size, and a process that
 * keeps working grows back to that size within seconds. Measured from there, a busy process "grew" by the minimum in
 * every interval and paid for a collection each minute whatever its size did.
 */
export class MemoryReleaser {
  private floor: number | undefined;
  /** Set by a release: the next check reads the new floor instead of comparing with one. */
  private settling = false;
  /** Busy checks the due release has waited through. */
  private deferred = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly readRss: () => number;

  constructor(private readonly options: MemoryReleaserOptions) {
    this.readRss = options.readRss ?? (() => process.memoryUsage.rss());
  }

  start(): void {
    if (this.timer) return;
    this.floor = this.readRss();
    this.timer = setInterval(() => this.check(), this.options.intervalMs);
    // A check never keeps the process alive: shutdown does not wait for it.
    this.timer.unref();
  }

  /** Whether checks are scheduled (between start() and stop(), unless a collection failed). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One check (what the timer runs); returns the release it made, if any. */
  check(): Release | undefined {
    const beforeBytes = this.readRss();
    const quiet = this.options.quiet?.() ?? true;
    if (this.settling) {
      // The first check after a release: the size the process works at is the new floor.
      this.settling = false;
      this.floor = beforeBytes;
      return undefined;
    }
    const floor = this.floor ?? beforeBytes;
    if (beforeBytes - floor < this.options.minGrowthBytes) {
      this.floor = Math.min(floor, beforeBytes);
      this.deferred = 0;
      return undefined;
    }
    if (!quiet && this.deferred < (this.options.maxDeferredChecks ?? MAX_DEFERRED_CHECKS)) {
      this.deferred++;
      return undefined;
    }
    this.deferred = 0;
    const started = performance.now();
    try {
      this.options.collect();
    } catch (err) {
      this.stop();
      this.options.onError?.(err);
      return undefined;
    }
    const release = { beforeBytes, afterBytes: this.readRss(), durationMs: performance.now() - started };
    // No floor until the next check: the heap grows back to its working size in between.
    this.settling = true;
    this.options.onRelease?.(release);
    return release;
  }
}
