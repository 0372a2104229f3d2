/** Pure helpers for `metav1.Condition` lists. */
import type { Condition } from "../../api/v1alpha1/types.js";

export type ConditionInput = Pick<Condition, "type" | "status" | "reason" | "message">;

/** The reason as stored: the CRDs require a non-empty one, so an empty reason is stored as "Unknown". */
const storedReason = (reason: string): string => reason || "Unknown";

/**
 * The longest message stored, in UTF-16 code units: metav1.Condition's schema allows 32768 characters, and a longer
 * one would make the API server refuse the whole status write (a pool with thousands of invalid entries lists an
 * error per entry), so every later pass would fail the same way.
 */
export const MAX_CONDITION_MESSAGE = 32_768;
const TRUNCATED = " …";

/** The message as stored: cut to {@link MAX_CONDITION_MESSAGE}, marked when cut. */
const storedMessage = (message: string): string =>
  message.length <= MAX_CONDITION_MESSAGE
    ? message
    : `${message.slice(0, MAX_CONDITION_MESSAGE - TRUNCATED.length)}${TRUNCATED}`;

/**
 * Returns `conditions` with `input` set. `lastTransitionTime` moves only when the status flips, so a repeated pass
 * writes nothing new. Reasons must be non-empty (the CRDs require it): an empty one becomes "Unknown"; a message
 * longer than the schema allows is cut.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === input.type);
  const previous = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: storedReason(input.reason),
    message: storedMessage(input.message),
    lastTransitionTime:
      previous && previous.status === input.status
        ? previous.lastTransitionTime
        : now.toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

/** The condition of `type`, or undefined. */
export function getCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * True when setting `input` would change nothing visible (status, reason, message). Reason and message are compared
 * as {@link setCondition} stores them, so an empty reason matches the "Unknown" it became and a long message its cut.
 */
export function conditionUnchanged(conditions: readonly Condition[] | undefined, input: ConditionInput): boolean {
  const c = getCondition(conditions, input.type);
  return (
    c !== undefined &&
    c.status === input.status &&
    c.reason === storedReason(input.reason) &&
    c.message === storedMessage(input.message)
  );
}
