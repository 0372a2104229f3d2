/**
 * Drift between NetBox and the claims of a NetBox pool, both ways, as the pool's conditions say it. Pure: no
 * Kubernetes or HTTP imports.
 *
 * - **missing**: an IPAddress of the pool whose NetBox record is gone (or holds another address): someone deleted or
 *   changed it in NetBox while the claim lives. NetBox may hand that address to someone else.
 * - **unclaimed**: a record of ours (our tag, inside the pool's prefix or range) that no live claim here holds: a
 *   claim whose finalizer was removed by hand, a claim moved away by `clusterctl move` (its record is the other
 *   management cluster's), or a record someone copied. It costs NetBox an address.
 *
 * Neither is ever repaired or deleted by the controller: which record is right is a person's call (deleting a moved
 * claim's record would let NetBox hand a live address out twice). Messages name at most {@link DRIFT_EXAMPLES}.
 */
import type { NetBoxAddress } from "../../netbox/client.js";
import { splitCidr } from "./identity.js";

/** The condition saying whether every IPAddress of the pool still has its record in NetBox. */
export const RECORDS_CONDITION = "RecordsInNetBox";
/** Its reason when some do not: a record was deleted (or moved to another address) in NetBox while its claim lives. */
export const RECORD_MISSING_REASON = "RecordMissingInNetBox";
/** The condition saying whether every record of ours in the pool's prefix or range belongs to a live claim here. */
export const CLAIMED_CONDITION = "RecordsClaimed";
/** Its reason when some do not. */
export const UNCLAIMED_REASON = "UnclaimedRecordsInNetBox";

/** How many of each kind a message names; the rest is a count. */
export const DRIFT_EXAMPLES = 5;

/** An IPAddress of the pool: its claim and address. */
export interface BoundRecord {
  namespace: string;
  claim: string;
  address: string;
}

export interface PoolCondition {
  type: string;
  status: "True" | "False";
  reason: string;
  message: string;
}

/**
 * The IPAddresses of `bound` whose record is not among `owned` (our records in the parent, by description) at their
 * address. `describe` gives the description a claim's record carries.
 */
export function missingRecords(
  owned: ReadonlyMap<string, readonly NetBoxAddress[]>,
  bound: readonly BoundRecord[],
  describe: (namespace: string, claim: string) => string,
): BoundRecord[] {
  return bound.filter((r) => {
    const mine = owned.get(describe(r.namespace, r.claim)) ?? [];
    return !mine.some((m) => splitCidr(m.address).address === r.address);
  });
}

/** The records of `owned` whose description no live claim holds (`claimed`), lowest id first. */
export function unclaimedRecords(
  owned: ReadonlyMap<string, readonly NetBoxAddress[]>,
  claimed: ReadonlySet<string>,
): NetBoxAddress[] {
  const found: NetBoxAddress[] = [];
  for (const [description, records] of owned) if (!claimed.has(description)) found.push(...records);
  return found.sort((a, b) => a.id - b.id);
}

/** {@link RECORDS_CONDITION} for the IPAddresses whose record is missing. */
export function recordsCondition(missing: readonly BoundRecord[]): PoolCondition {
  if (missing.length === 0)
    return {
      type: RECORDS_CONDITION,
      status: "True",
      reason: "RecordsPresent",
      message: "Every IPAddress has its NetBox record",
    };
  return {
    type: RECORDS_CONDITION,
    status: "False",
    reason: RECORD_MISSING_REASON,
    message: `${missing.length} IPAddress(es) have no record in NetBox any more: ${examples(
      missing.map((m) => `${m.namespace}/${m.claim} ${m.address}`),
    )}`,
  };
}

/** {@link CLAIMED_CONDITION} for the records of ours no live claim holds. */
export function claimedCondition(unclaimed: readonly NetBoxAddress[]): PoolCondition {
  if (unclaimed.length === 0)
    return {
      type: CLAIMED_CONDITION,
      status: "True",
      reason: "RecordsClaimed",
      message: "Every record of ours in NetBox belongs to a live claim",
    };
  return {
    type: CLAIMED_CONDITION,
    status: "False",
    reason: UNCLAIMED_REASON,
    message:
      `${unclaimed.length} NetBox record(s) of ours belong to no live claim here (left in NetBox; delete them ` +
      `there if no cluster uses them): ${examples(unclaimed.map((r) => `#${r.id} ${r.address} "${r.description}"`))}`,
  };
}

function examples(items: readonly string[]): string {
  const shown = items.slice(0, DRIFT_EXAMPLES).join(", ");
  return items.length > DRIFT_EXAMPLES ? `${shown} and ${items.length - DRIFT_EXAMPLES} more` : shown;
}
