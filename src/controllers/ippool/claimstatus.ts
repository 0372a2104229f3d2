/**
 * What an IPClaim's status should say, decided without I/O for claims.ts, which writes it: the status patch of a
 * bind or a failure (none when the claim already says it), and whether a bound claim is adopted as Metal3 left it.
 */
import isEqual from "lodash/isEqual.js";
import {
  READY_CONDITION,
  type Condition,
  type IPAddress,
  type IPClaim,
  type ObjectReference,
  type Reason,
} from "../../../api/v1alpha1/types.js";
import { conditionUnchanged, setCondition, type ConditionInput } from "../conditions.js";

/** The body of an IPClaim status merge patch: null clears a field. */
export interface ClaimStatusPatch {
  address: ObjectReference | null;
  errorMessage: string | null;
  conditions: Condition[];
}

/**
 * A claim bound the way Metal3's controller leaves it (the address named, no conditions, no error) is adopted as it
 * is: rewriting every migrated claim only to add our Ready condition would change objects nobody changed (a
 * migration rewrites nothing). Our condition appears with the claim's next real change.
 */
export function boundByMetal3(claim: IPClaim, address: IPAddress): boolean {
  const status = claim.status;
  return (
    status !== undefined &&
    status.address?.name === address.metadata.name &&
    status.conditions === undefined &&
    !status.errorMessage
  );
}

/**
 * The patch that makes `claim`'s status name `address`, carry `errorMessage` (cleared when undefined) and a Ready
 * condition with `ready` (True without an error, False with one), or undefined when it already does.
 */
export function claimStatusPatch(
  claim: IPClaim,
  address: ObjectReference | undefined,
  errorMessage: string | undefined,
  ready: { reason: Reason; message: string },
  now: Date,
): ClaimStatusPatch | undefined {
  const status = claim.status ?? {};
  const input: ConditionInput = {
    type: READY_CONDITION,
    status: errorMessage === undefined ? "True" : "False",
    ...ready,
  };
  // Every pass binds every bound claim of its pool again: the common answer "nothing to write" must stay cheap.
  if (
    sameReference(status.address, address) &&
    status.errorMessage === errorMessage &&
    readyAsSet(status.conditions, input)
  )
    return undefined;
  const conditions = setCondition(status.conditions, input, now);
  const same =
    isEqual(status.address, address) && status.errorMessage === errorMessage && isEqual(status.conditions, conditions);
  if (same) return undefined;
  return { address: address ?? null, errorMessage: errorMessage ?? null, conditions };
}

/** `a` and `b` name the same object and hold nothing else (what isEqual says of two references, without its cost). */
function sameReference(a: ObjectReference | undefined, b: ObjectReference | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.name === b.name && a.namespace === b.namespace && Object.keys(a).length === Object.keys(b).length;
}

/**
 * Whether `conditions` already are what setCondition would make of them for `input`: the one condition of its type
 * with the same status, reason and message, and nothing else in it (lastTransitionTime stays when the status does).
 */
function readyAsSet(conditions: readonly Condition[] | undefined, input: ConditionInput): boolean {
  const current = conditions?.find((c) => c.type === input.type);
  return (
    current !== undefined &&
    conditionUnchanged(conditions, input) &&
    Object.keys(current).length === 5 &&
    current.lastTransitionTime !== undefined &&
    conditions?.filter((c) => c.type === input.type).length === 1
  );
}
