/**
 * Keeps the first lists of several caches from running past a namespace someone waits on before all of them reach it.
 *
 * The API server lists in key order (`<namespace>/<name>`), and a pass of a pool may run during the start-up once
 * every cache it reads went past the pool's namespace (Informer.covers): a pool a claim waits on is served when the
 * slowest list goes past its namespace. A list that runs ahead of it only takes CPU, ours and the API server's, from
 * the lists still short of it. So before asking for its next page, a list whose pages went past a namespace someone
 * waits on ({@link ListPacer.waitOn}) waits while another list has not: until that list goes past it or leaves (done
 * or failed). Namespaces nobody waits on hold nothing: their pools are passed once every list is done, and the lists
 * end no later than unpaced ones would.
 *
 * Bounded so that pacing never stalls a list: a wait in which no list moves for {@link STALL_MS} (a request hanging
 * until its timeout, a server slow for one resource) ends, and so does pacing for a list that waited
 * {@link BUDGET_MS} in total (a list held for minutes would outlive its continue token, which the API server forgets
 * at its next compaction); either way the list runs free for the rest of its pages.
 */

/** How long a list waits with no list moving before it runs free. */
export const STALL_MS = 5_000;
/** How long a list may wait in total before it runs free (well within the API server's compaction interval). */
export const BUDGET_MS = 60_000;

/** The key prefix of the namespace of `key` (`<namespace>/`): prefixes compare in the order the server lists keys. */
export const namespacePrefixOf = (key: string): string => key.slice(0, key.indexOf("/") + 1);

/**
 * Whether a list at `own` must wait (each position a namespace prefix, "" before a list's first page): it went past a
 * namespace in `waited` that one of `others` has not gone past.
 */
export function isAhead(own: string, others: Iterable<string>, waited: Iterable<string>): boolean {
  const behind = [...others];
  for (const namespace of waited) if (namespace < own && behind.some((other) => other <= namespace)) return true;
  return false;
}

interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
  now(): number;
}

const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
  now: () => performance.now(),
};

/** One list taking part: where it is, and how long it has waited. */
interface Runner {
  at: string;
  waitedMs: number;
}

export class ListPacer {
  private readonly runners = new Map<object, Runner>();
  /** The namespaces someone waits on, as key prefixes. */
  private readonly waited = new Set<string>();
  /** Called on every move and leave: each waiter checks again. */
  private readonly wakers = new Set<() => void>();

  constructor(private readonly timers: Timers = realTimers) {}

  /** A claim in `namespace` waits for its pool's pass: no list goes past it before all of them do. */
  waitOn(namespace: string): void {
    if (namespace !== "") this.waited.add(`${namespace}/`);
  }

  /** `list` starts its pages: until its first page went in, it is short of every namespace. */
  join(list: object): void {
    this.runners.set(list, { at: "", waitedMs: 0 });
    this.wake();
  }

  /** `list`'s pages reached the namespace of `key`. */
  reached(list: object, key: string): void {
    const runner = this.runners.get(list);
    if (!runner) return;
    runner.at = namespacePrefixOf(key);
    this.wake();
  }

  /** `list` is done, failed, or can no longer say where it is (its pages broke key order): nobody waits for it. */
  leave(list: object): void {
    if (this.runners.delete(list)) this.wake();
  }

  /**
   * Resolves when `list` may ask for its next page: at once unless it went past a namespace someone waits on that
   * another list has not; else when that changed, or when it runs free ({@link STALL_MS}, {@link BUDGET_MS}; it then leaves).
   */
  async turn(list: object): Promise<void> {
    const runner = this.runners.get(list);
    while (
      runner &&
      this.runners.get(list) === runner &&
      isAhead(runner.at, this.positionsBesides(list), this.waited)
    ) {
      const budget = BUDGET_MS - runner.waitedMs;
      if (budget <= 0) {
        this.leave(list);
        return;
      }
      const started = this.timers.now();
      const moved = await this.nextMove(Math.min(STALL_MS, budget));
      runner.waitedMs += this.timers.now() - started;
      if (!moved) {
        this.leave(list);
        return;
      }
    }
  }

  private *positionsBesides(list: object): Iterable<string> {
    for (const [other, runner] of this.runners) if (other !== list) yield runner.at;
  }

  /** Resolves true at the next move or leave, false after `ms` without one. */
  private nextMove(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waker = (): void => {
        this.timers.clearTimeout(timer);
        this.wakers.delete(waker);
        resolve(true);
      };
      const timer = this.timers.setTimeout(() => {
        this.wakers.delete(waker);
        resolve(false);
      }, ms);
      this.wakers.add(waker);
    });
  }

  private wake(): void {
    for (const waker of [...this.wakers]) waker();
  }
}
