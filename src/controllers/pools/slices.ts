/**
 * A pass decides its claims in slices: between two decisions, once a slice has lasted {@link DECISION_SLICE_MS}, it
 * gives the event loop a turn (`setImmediate`: timers and I/O run first), so a pool of thousands of claims does not
 * starve the leader Lease's renewal, the webhooks or other pools' passes. Decisions stay sequential and in order; the
 * pass's allocator is its own (the work queue runs one pass per pool), so nothing else changes it meanwhile. What the
 * watches deliver during a pause waits in the change logs for the next pass, as what they deliver while the pass's
 * writes run does.
 */

/** The longest a pass decides without giving the event loop a turn, in ms. */
export const DECISION_SLICE_MS = 10;

/** Tells a pass when to pause between decisions. */
export class DecisionSlicer {
  private sliceStart = 0;

  /** `now` in ms (monotonic); injectable for tests. */
  constructor(
    private readonly sliceMs = DECISION_SLICE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Starts a slice: when the pass starts deciding, and after it awaited something else (the event loop turned). */
  start(): void {
    this.sliceStart = this.now();
  }

  /**
   * Called between two decisions: undefined while the slice lasts, else a promise that resolves on the event loop's
   * next turn, when a new slice starts.
   */
  pause(): Promise<void> | undefined {
    if (this.now() - this.sliceStart < this.sliceMs) return undefined;
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.start());
  }
}

/** Runs `decide` of every step in order, pausing between them as `slicer` says; the results in order. */
export async function decideInSlices<T>(
  steps: readonly { decide: () => T }[],
  slicer: DecisionSlicer = new DecisionSlicer(),
): Promise<T[]> {
  const out: T[] = [];
  slicer.start();
  for (const step of steps) {
    const pause = out.length > 0 ? slicer.pause() : undefined;
    if (pause) await pause;
    out.push(step.decide());
  }
  return out;
}
