/**
 * What a step of a pool pass (a claim's write, the status step, the engine's backoff) asks of the pool's next pass,
 * returned rather than written into the pass's context: the pass folds every step's outcome with
 * {@link mergeOutcomes} and turns the result into its requeue (reconciler.ts `requeueOf`). Outcomes are frozen and
 * shared, so a step with nothing to report returns {@link NONE} and allocates nothing.
 */
import { describeError } from "../../kube/errors.js";
import type { Logger } from "../../runtime/logger.js";

export interface PassOutcome {
  /** A write lost a race: the pool runs again soon, as a full pass. */
  readonly requeue?: true;
  /** Something waits for a time (a reuse grace period, a held-back status write, an engine's backoff): in ms. */
  readonly wakeInMs?: number;
}

/** Nothing to report. */
export const NONE: PassOutcome = Object.freeze({});

/** A lost race. */
export const REQUEUE: PassOutcome = Object.freeze({ requeue: true });

/**
 * A claim's write lost a race (kube/errors.ts isLostRace, or a record name taken): nothing is wrong, the pool's next
 * pass decides again on fresh reads. Logged at debug with `claim` (its log key and name) and the API server's answer.
 */
export function lostRace(log: Logger, claim: Readonly<Record<string, string | undefined>>, err: unknown): PassOutcome {
  log.debug("Lost a race; retrying the pool", { ...claim, error: describeError(err) });
  return REQUEUE;
}

/** Run the pool again in `ms`. */
export function wakeIn(ms: number): PassOutcome {
  return Object.freeze({ wakeInMs: ms });
}

/**
 * Both outcomes in one: a requeue if either asks for one, the earliest wake of the two. Pure; returns one of its
 * arguments whenever that one already says everything (so folding NONE into an outcome allocates nothing).
 */
export function mergeOutcomes(a: PassOutcome, b: PassOutcome): PassOutcome {
  if (b === NONE || b === a) return a;
  if (a === NONE) return b;
  const requeue = a.requeue ?? b.requeue;
  const wakeInMs = a.wakeInMs === undefined || (b.wakeInMs ?? Infinity) < a.wakeInMs ? b.wakeInMs : a.wakeInMs;
  if (requeue === a.requeue && wakeInMs === a.wakeInMs) return a;
  if (requeue === b.requeue && wakeInMs === b.wakeInMs) return b;
  return Object.freeze({ requeue: true, ...(wakeInMs === undefined ? {} : { wakeInMs }) });
}
