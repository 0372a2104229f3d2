/**
 * The polling loops of the test infrastructure, one implementation for suites, the local plane, the bench, the soak
 * and the demo: bounded, with the last failure in the message.
 */

/** A probe's answer: a value ends the wait; `undefined` or `false` means "not yet". */
type Probe<T> = () => Promise<T | undefined | false> | T | undefined | false;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `probe` every `intervalMs` until it returns a value other than undefined/false, and resolves with it; resolves
 * with undefined once `timeoutMs` has passed without one. Errors of `probe` propagate (see {@link eventually} for a
 * wait that rides them out). For callers that handle a timeout themselves (a report, their own message).
 */
export async function poll<T>(probe: Probe<T>, timeoutMs: number, intervalMs = 100): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) return undefined;
    await sleep(intervalMs);
  }
}

/**
 * Retries `probe` until it returns a value other than undefined/false; errors count as "not yet". Rejects after
 * `timeoutMs` with `what` and the last error.
 */
export async function eventually<T>(what: string, probe: Probe<T>, timeoutMs = 30_000, intervalMs = 100): Promise<T> {
  let last: unknown;
  const tolerant = async (): Promise<T | undefined> => {
    try {
      const value = await probe();
      return value === false ? undefined : value;
    } catch (err) {
      last = err;
      return undefined;
    }
  };
  const value = await poll(tolerant, timeoutMs, intervalMs);
  if (value !== undefined) return value;
  const why = last instanceof Error ? `: ${last.message}` : "";
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
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
    await sleep(intervalMs);
  }
}
