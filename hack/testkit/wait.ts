/** Polling assertions for suites against a real API server: bounded, with the last failure in the message. */

/** Retries `probe` until it returns a value other than undefined/false; rejects after `timeoutMs` with `what`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Asserts that `probe` stays true for `forMs` (used to show that something does NOT happen). */
export async function consistently(
  what: string,
  probe: () => Promise<boolean> | boolean,
  forMs = 2_000,
  intervalMs = 200,
): Promise<void> {
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    if (!(await probe())) throw new Error(`expected ${what} to hold for ${forMs} ms, but it did not`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
