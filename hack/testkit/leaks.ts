/**
 * In-process controllers the test kit started, and the test that started each: a controller a test leaves running
 * keeps serving every namespace it watches, so later suites on the shared plane would see a second controller (two
 * NetBox records for one claim, say) and fail far from the cause. The root hooks (hooks.ts) stop such a controller
 * when its test ends and fail that test. Controllers started by a suite's `before` hook belong to no test: their
 * suite's `after` hook stops them.
 */

interface Running {
  /** The test that started it; undefined when started outside a test (a `before` hook). */
  test: string | undefined;
  stop: () => Promise<void>;
}

let currentTest: string | undefined;
const running = new Set<Running>();

/** Called by the root hooks as each test starts (its full title) and ends (undefined). */
export function setCurrentTest(title: string | undefined): void {
  currentTest = title;
}

/** Records a controller started now; the returned stop stops it once and forgets it. */
export function tracked(stop: () => Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  const entry: Running = {
    test: currentTest,
    stop: () => {
      running.delete(entry);
      stopping ??= stop();
      return stopping;
    },
  };
  running.add(entry);
  return entry.stop;
}

/** Stops the controllers the current test started and left running; resolves with how many there were. */
export async function stopLeftRunning(): Promise<number> {
  const left = [...running].filter((r) => r.test !== undefined && r.test === currentTest);
  await Promise.all(left.map((r) => r.stop().catch(() => undefined)));
  return left.length;
}
