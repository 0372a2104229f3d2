/**
 * Work done in steps: a generator that yields where its caller may let other work run and returns its result. The
 * pure code here decides where the steps are; whoever drives them decides whether to pause (the controller lets its
 * event loop run between two), and where it pauses never changes the result.
 */

/** Items of a per-item loop handled in one step: a few milliseconds of work. */
export const STEP_ITEMS = 2_048;

/** Work in steps returning `T`. */
export type Steps<T> = Generator<void, T, void>;

/** Drives `steps` to their end without pausing and returns what they return. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}
