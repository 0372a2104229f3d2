/**
 * The bound of large reviews in progress (http.ts) as slots taken in order of arrival. When every slot is taken, a
 * review waits in a short line for the next one to free, rather than being refused at once: a sender that posts again
 * the moment it is answered (anyone who reaches the port can) must not take every slot that frees ahead of the API
 * server's own reviews, which arrive at any time. The line is bounded (its bodies are held in memory) and so is each
 * wait (the review's deadline); either bound reached is a refusal, which the caller turns into a "retry later".
 */

/** Why a slot was not given. */
export type NoSlot = "line full" | "deadline";

export class Slots {
  private taken = 0;
  private readonly line: Array<{ grant: () => void }> = [];

  /**
   * @param max slots (large reviews in progress at once)
   * @param maxWaiting reviews waiting for a slot at once
   */
  constructor(
    readonly max: number,
    readonly maxWaiting: number,
  ) {}

  /** Slots taken now. */
  get inUse(): number {
    return this.taken;
  }

  /** Reviews waiting now. */
  get waiting(): number {
    return this.line.length;
  }

  /**
   * Takes a slot, at once or when one frees for this review in its turn, by `deadline` (`performance.now()` ms).
   * Resolves with a `release` to call exactly once when the review is done, or with why there is none.
   */
  take(deadline: number): Promise<{ release: () => void } | { refused: NoSlot }> {
    if (this.taken < this.max && this.line.length === 0) return Promise.resolve(this.granted());
    if (this.line.length >= this.maxWaiting) return Promise.resolve({ refused: "line full" });
    return new Promise((resolve) => {
      const waiter = {
        grant: () => {
          clearTimeout(timer);
          resolve(this.granted());
        },
      };
      const timer = setTimeout(
        () => {
          const at = this.line.indexOf(waiter);
          if (at >= 0) this.line.splice(at, 1);
          resolve({ refused: "deadline" });
        },
        Math.max(0, deadline - performance.now()),
      );
      this.line.push(waiter);
    });
  }

  private granted(): { release: () => void } {
    this.taken++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.taken--;
        // The slot goes to the first in line: it takes it before anyone arriving later can.
        this.line.shift()?.grant();
      },
    };
  }
}
