/**
 * A keyed, de-duplicating work queue for level-based reconcilers.
 *
 * Invariants (each one is what the tests try to break):
 * 1. A key is never handled by two runs at once. Allocation for a pool is serialised by keying the queue by pool.
 * 2. A key is queued at most once; adding a queued key is a no-op.
 * 3. A key added while its handler runs is handled exactly once more, after the current run settles.
 * 4. At most `concurrency` handlers run at once, and keys start in the order they were queued within their lane.
 * 5. A key someone is waiting on (added with `waiting`, e.g. the pool of a claim that has no address yet) starts before
 *    the other queued keys, but never starves them: after {@link WAITING_STREAK} such starts in a row, the oldest other
 *    key starts. After a restart every pool is queued to refresh its status; a new claim must not wait behind them all.
 */
import { assertBackoffBounds, exponentialBackoffMs } from "./backoff.js";

/**
 * What a handler returns: nothing when the key is done, or `{ requeueAfterMs }` to have it handled again after that
 * many milliseconds (through {@link WorkQueue.addAfter}, so an earlier pending add wins).
 */
export type ReconcileResult = { requeueAfterMs?: number } | void;

/**
 * Handles one key. Throwing (or rejecting) requeues the key with per-key exponential backoff. `signal` aborts when
 * the queue shuts down, so long handlers can stop early; the queue waits for them either way.
 */
export type ReconcileHandler = (key: string, signal: AbortSignal) => Promise<ReconcileResult>;

/** Cancels a scheduled callback. Calling it after the callback ran, or twice, must be harmless. */
export type Cancel = () => void;

/** Time source and timer, injectable so tests can drive backoff and delayed adds without waiting. */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences are used. */
  now(): number;
  /** Runs `callback` once, about `delayMs` from now, unless cancelled first. */
  schedule(callback: () => void, delayMs: number): Cancel;
}

/** Longest delay Node's setTimeout honours; larger values would fire after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The real clock: `performance.now()` and `setTimeout`. Delays beyond ~24.8 days are clamped to that. */
export const systemClock: Clock = {
  now: () => performance.now(),
  schedule(callback, delayMs) {
    const timer = setTimeout(callback, Math.min(delayMs, MAX_TIMER_MS));
    return () => clearTimeout(timer);
  },
};

/** Observation hooks for Prometheus or tests. Exceptions they throw are swallowed so they cannot wedge the queue. */
export interface WorkQueueMetrics {
  /** Called whenever the number of queued (waiting, not in-flight) keys changes. */
  queued(depth: number): void;
  /**
   * Called after every run: `waitMs` from the first add to the handler starting, `workMs` spent in the handler,
   * `ok` false when it threw or returned an invalid result.
   */
  processed(key: string, waitMs: number, workMs: number, ok: boolean): void;
}

/** Options for {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** Most handlers running at once, over different keys. An integer >= 1. */
  concurrency: number;
  /** First retry delay after a failure. Default 50 ms. */
  baseBackoffMs?: number;
  /** Retry delay cap, >= baseBackoffMs. Default 30 000 ms, or baseBackoffMs when that is larger. */
  maxBackoffMs?: number;
  /**
   * Told about every handler failure, with the delay before the retry, or `undefined` when the queue is shutting
   * down and will not retry. Exceptions it throws are swallowed.
   */
  onError?: (key: string, error: unknown, retryInMs: number | undefined) => void;
  /** Depth and latency hooks; see {@link WorkQueueMetrics}. */
  onMetrics?: WorkQueueMetrics;
  /** Time source and timers; defaults to {@link systemClock}. */
  clock?: Clock;
}

/** How one run ended, after validating what the handler returned. */
type Outcome = { ok: true; requeueAfterMs: number | undefined } | { ok: false; error: unknown };

/** A pending delayed add; identity lets a late-firing, already-replaced timer recognise itself. */
interface DelayedAdd {
  dueAt: number;
  cancel: Cancel;
}

/** Starts of waited-on keys in a row after which one other queued key starts, if any is queued (invariant 5). */
export const WAITING_STREAK = 8;

const DEFAULT_BASE_BACKOFF_MS = 50;
const DEFAULT_MAX_BACKOFF_MS = 30_000;

/**
 * Keyed, de-duplicating work queue in the manner of client-go's rate-limited queue, with the worker pool built in.
 *
 * Lifecycle: keys may be added before {@link start} (they wait); {@link shutdown} stops everything for good.
 * Errors: the constructor throws RangeError on invalid options; handler failures never escape, they are retried.
 */
export class WorkQueue {
  readonly #handler: ReconcileHandler;
  readonly #concurrency: number;
  readonly #baseBackoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #onError: WorkQueueOptions["onError"];
  readonly #metrics: WorkQueueMetrics | undefined;
  readonly #clock: Clock;

  /**
   * Keys waiting to run, in two disjoint lanes: those someone waits on, and the others. A Set iterates in insertion
   * order, which gives FIFO with O(1) membership.
   */
  readonly #waited = new Set<string>();
  readonly #queued = new Set<string>();
  /** Waited-on keys started in a row since an other key last started (invariant 5). */
  #streak = 0;
  /** Keys whose handler is running. Invariant 1: a key in here is never started again. */
  readonly #processing = new Set<string>();
  /** In-flight keys added again; each is re-queued once when its run settles (invariant 3). Subset of #processing. */
  readonly #dirty = new Set<string>();
  /** Those of #dirty added with `waiting`: their re-run goes into the waited-on lane. */
  readonly #dirtyWaited = new Set<string>();
  /** Time of the first add not yet picked up by a run, per key, for the wait-latency metric. */
  readonly #addedAt = new Map<string, number>();
  readonly #delayed = new Map<string, DelayedAdd>();
  /** Consecutive failures per key; deleted on success. */
  readonly #failures = new Map<string, number>();
  readonly #idleWaiters: Array<() => void> = [];
  readonly #abort = new AbortController();
  #started = false;
  #stopping = false;
  #drained: Promise<void> | undefined;

  /**
   * @param handler reconciles one key; see {@link ReconcileHandler}.
   * @throws RangeError when `concurrency` is not an integer >= 1 or the backoff bounds are invalid.
   */
  constructor(handler: ReconcileHandler, options: WorkQueueOptions) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new RangeError(`concurrency must be an integer >= 1, got ${options.concurrency}`);
    }
    this.#baseBackoffMs = options.baseBackoffMs ?? DEFAULT_BASE_BACKOFF_MS;
    this.#maxBackoffMs = options.maxBackoffMs ?? Math.max(DEFAULT_MAX_BACKOFF_MS, this.#baseBackoffMs);
    assertBackoffBounds(this.#baseBackoffMs, this.#maxBackoffMs);
    this.#handler = handler;
    this.#concurrency = options.concurrency;
    this.#onError = options.onError;
    this.#metrics = options.onMetrics;
    this.#clock = options.clock ?? systemClock;
  }

  /**
   * Queues `key` to be handled. No-op when it is already queued (invariant 2) or the queue is shutting down, except
   * that `waiting` moves a queued key into the waited-on lane (invariant 5). When the key is in flight it is marked to
   * run once more after the current run (invariant 3). Never throws.
   */
  add(key: string, waiting = false): void {
    if (this.#stopping) return;
    if (waiting && this.#queued.delete(key)) this.#waited.add(key);
    if (waiting && this.#dirty.has(key)) this.#dirtyWaited.add(key);
    if (this.#waited.has(key) || this.#queued.has(key) || this.#dirty.has(key)) return;
    if (!this.#addedAt.has(key)) this.#addedAt.set(key, this.#clock.now());
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      if (waiting) this.#dirtyWaited.add(key);
      return;
    }
    (waiting ? this.#waited : this.#queued).add(key);
    this.#emitDepth();
    this.#pump();
  }

  /**
   * Adds `key` after `delayMs` (immediately when `delayMs <= 0`). Pending delayed adds of one key coalesce: the
   * earliest due time wins. No-op while shutting down; pending timers are cancelled by {@link shutdown}.
   *
   * @throws RangeError when `delayMs` is not a finite number.
   */
  addAfter(key: string, delayMs: number): void {
    if (!Number.isFinite(delayMs)) throw new RangeError(`delay must be a finite number, got ${delayMs}`);
    if (this.#stopping) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const dueAt = this.#clock.now() + delayMs;
    const pending = this.#delayed.get(key);
    if (pending !== undefined && pending.dueAt <= dueAt) return;
    pending?.cancel();
    const entry: DelayedAdd = { dueAt, cancel: () => undefined };
    this.#delayed.set(key, entry);
    entry.cancel = this.#clock.schedule(() => this.#fireDelayed(key, entry), delayMs);
  }

  /**
   * Starts handling queued keys. Idempotent.
   *
   * @throws Error when called after {@link shutdown}; a queue is not restartable.
   */
  start(): void {
    if (this.#stopping) throw new Error("WorkQueue: start() called after shutdown()");
    if (!this.#started) {
      // Keys queued before the start (a standby replica's) waited for no handler: their wait begins now.
      const now = this.#clock.now();
      for (const key of this.#addedAt.keys()) this.#addedAt.set(key, now);
      this.#started = true;
      this.#emitDepth();
    }
    this.#pump();
  }

  /**
   * Stops for good: later adds are dropped, queued keys and pending delayed adds are discarded, keys marked to run
   * again are not re-run, and handlers' signals abort. Resolves once every in-flight handler has settled. Idempotent
   * (every call returns the same promise); never rejects.
   */
  shutdown(): Promise<void> {
    if (this.#drained !== undefined) return this.#drained;
    this.#stopping = true;
    for (const pending of this.#delayed.values()) pending.cancel();
    this.#delayed.clear();
    this.#waited.clear();
    this.#queued.clear();
    this.#dirty.clear();
    this.#dirtyWaited.clear();
    this.#addedAt.clear();
    this.#emitDepth();
    this.#abort.abort(new Error("work queue shutting down"));
    this.#drained = this.onIdle();
    this.#notifyIdle();
    return this.#drained;
  }

  /**
   * Resolves when nothing is queued and nothing is in flight. Pending delayed adds (backoff retries,
   * `requeueAfterMs`) do not count: a queue waiting only on timers is idle. Before {@link start}, queued keys keep
   * it from resolving. Never rejects.
   */
  onIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Number of keys waiting to run (excluding in-flight keys and pending delayed adds). */
  len(): number {
    return this.#waited.size + this.#queued.size;
  }

  /** Number of handlers running now; never more than `concurrency`. */
  inFlight(): number {
    return this.#processing.size;
  }

  /** Consecutive failures of `key` since its last success; 0 for unknown keys. */
  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  #fireDelayed(key: string, entry: DelayedAdd): void {
    // A timer cancelled too late, or replaced by an earlier one, must not touch its successor's bookkeeping.
    if (this.#delayed.get(key) !== entry) return;
    this.#delayed.delete(key);
    this.add(key);
  }

  /** Starts runs while there is capacity and queued work. */
  #pump(): void {
    while (this.#started && !this.#stopping && this.#processing.size < this.#concurrency) {
      const key = this.#takeNext();
      if (key === undefined) return;
      const addedAt = this.#addedAt.get(key);
      this.#addedAt.delete(key);
      // Marked in flight before anything can yield, so a concurrent add() of this key lands in #dirty.
      this.#processing.add(key);
      void this.#run(key, addedAt ?? this.#clock.now());
    }
  }

  /** The next key to start, by invariants 4 and 5. */
  #takeNext(): string | undefined {
    const otherDue = this.#waited.size === 0 || (this.#streak >= WAITING_STREAK && this.#queued.size > 0);
    const lane = otherDue ? this.#queued : this.#waited;
    const first = lane.values().next();
    if (first.done === true) return undefined;
    lane.delete(first.value);
    this.#streak = otherDue ? 0 : this.#streak + 1;
    this.#emitDepth();
    return first.value;
  }

  /** Runs the handler once. Never rejects: every path ends in #settle. */
  async #run(key: string, addedAt: number): Promise<void> {
    // Yield first so a handler that throws synchronously or calls add() never re-enters #pump's loop.
    await Promise.resolve();
    const startedAt = this.#clock.now();
    let outcome: Outcome;
    try {
      outcome = toOutcome(await this.#handler(key, this.#abort.signal));
    } catch (error: unknown) {
      outcome = { ok: false, error };
    }
    this.#settle(key, outcome, startedAt - addedAt, this.#clock.now() - startedAt);
  }

  #settle(key: string, outcome: Outcome, waitMs: number, workMs: number): void {
    this.#processing.delete(key);
    callSafely(() => this.#metrics?.processed(key, waitMs, workMs, outcome.ok));
    if (outcome.ok) this.#succeeded(key, outcome.requeueAfterMs);
    else this.#failed(key, outcome.error);
    // Invariant 3: the extra run goes to the back of its lane, behind keys that waited while this one ran.
    if (this.#dirty.delete(key)) this.add(key, this.#dirtyWaited.delete(key));
    this.#pump();
    this.#notifyIdle();
  }

  #succeeded(key: string, requeueAfterMs: number | undefined): void {
    this.#failures.delete(key);
    if (requeueAfterMs !== undefined) this.addAfter(key, requeueAfterMs);
  }

  #failed(key: string, error: unknown): void {
    if (this.#stopping) {
      callSafely(() => this.#onError?.(key, error, undefined));
      return;
    }
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    const retryInMs = exponentialBackoffMs(failures, this.#baseBackoffMs, this.#maxBackoffMs);
    callSafely(() => this.#onError?.(key, error, retryInMs));
    this.addAfter(key, retryInMs);
  }

  #isIdle(): boolean {
    return this.len() === 0 && this.#processing.size === 0;
  }

  #notifyIdle(): void {
    if (!this.#isIdle()) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /** The depth is reported from the start on: before it, nothing can drain the queue. */
  #emitDepth(): void {
    if (!this.#started) return;
    callSafely(() => this.#metrics?.queued(this.len()));
  }
}

/** A handler result with a non-finite `requeueAfterMs` is a bug in the handler, so it counts as a failure. */
function toOutcome(result: ReconcileResult): Outcome {
  const requeueAfterMs = result?.requeueAfterMs;
  if (requeueAfterMs === undefined || Number.isFinite(requeueAfterMs)) return { ok: true, requeueAfterMs };
  return { ok: false, error: new RangeError(`requeueAfterMs must be a finite number, got ${requeueAfterMs}`) };
}

/** Runs an observer hook; a faulty hook must not break the queue's bookkeeping, so its exception is dropped. */
function callSafely(hook: () => void): void {
  try {
    hook();
  } catch {
    // Deliberately ignored; see above.
  }
}
