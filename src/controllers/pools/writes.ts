/** The writes of one pass, run side by side with a bound on how many are in flight. */
import { describeError } from "../../kube/errors.js";
import { mergeOutcomes, NONE, type PassOutcome } from "./outcome.js";

/**
 * Runs writes as they are added, at most `limit` at a time; `drain` waits for all, then rejects with the first error
 * or resolves to their outcomes merged.
 */
export class WriteRunner {
  private readonly queue: (() => Promise<PassOutcome>)[] = [];
  private running = 0;
  private firstError: unknown;
  private outcome = NONE;
  private idle: (() => void) | undefined;

  constructor(private readonly limit: number) {}

  add(write: () => Promise<PassOutcome>): void {
    this.queue.push(write);
    this.next();
  }

  private next(): void {
    while (this.running < this.limit && this.queue.length > 0) {
      const write = this.queue.shift() as () => Promise<PassOutcome>;
      this.running++;
      // Started from a promise, so a write that throws before its first await is counted as failed, not lost.
      void Promise.resolve()
        .then(write)
        .then(
          (outcome) => {
            this.outcome = mergeOutcomes(this.outcome, outcome);
          },
          (err: unknown) => {
            this.firstError ??= err;
          },
        )
        .finally(() => {
          this.running--;
          this.next();
          if (this.running === 0 && this.queue.length === 0) this.idle?.();
        });
    }
  }

  async drain(): Promise<PassOutcome> {
    if (this.running > 0 || this.queue.length > 0) await new Promise<void>((resolve) => (this.idle = resolve));
    const err = this.firstError;
    if (err !== undefined) throw err instanceof Error ? err : new Error(describeError(err));
    return this.outcome;
  }
}
