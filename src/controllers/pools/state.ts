/**
 * What the passes of one pool keep between them, so that a pass costs in proportion to what changed, not to the pool
 * (a claim arriving in a pool of 10,000 must cost about what it costs in an empty one). A pass is either FULL
 * (every claim planned, the allocator rebuilt from every record, every record checked for orphans) or INCREMENTAL:
 * it plans the claims that changed, the claims whose records changed and the claims not settled yet, and brings
 * the kept allocator up to date from the records that changed (the informers' per-pool change logs,
 * src/kube/journal.ts).
 *
 * A pass is full when nothing is kept yet, the pool changed (spec, generation or metadata: its fingerprint), a change
 * log overflowed, a claim API is served that was not when the state was built, the previous pass failed or lost a race (its changes may be half applied), a Cluster changed, or
 * {@link FULL_PASS_INTERVAL_MS} passed since the last full one (a safety net: it re-derives everything from the cache).
 */
import type { PoolAllocator } from "../../ipam/allocator.js";
import type { BucketChange } from "../../kube/journal.js";
import type { KubeObject } from "../../kube/resource.js";
import { isDeleting } from "../meta.js";
import type { PoolObject, PoolRecord } from "./kind.js";
import type { ClaimApi } from "./pass.js";

/** The longest a pool goes without a full pass while it keeps getting passes. */
export const FULL_PASS_INTERVAL_MS = 300_000;

export interface PoolState {
  /** {@link poolFingerprint} of the pool the allocator was built for. */
  fingerprint: string;
  /** Every record of the pool reserved, as the last pass left it. */
  allocator: PoolAllocator;
  /** Collisions found when the allocator was built (Metal3's shared namePrefix), for the status. */
  collisions: readonly string[];
  /** Claims planned again on every pass until bound (failed, waiting, paused, being created or released), by API. */
  unsettled: Map<ClaimApi, Set<string>>;
  /** When the last full pass built this state (Date.now()). */
  builtAt: number;
  /** Something the status shows may have changed since it was last computed. */
  statusStale: boolean;
}

/** The changes one pass takes from an API's change logs; undefined after an overflow. */
export interface ApiChanges {
  claims: BucketChange<KubeObject>[] | undefined;
  records: BucketChange<PoolRecord>[] | undefined;
}

/**
 * What of a pool, when it changes, invalidates what passes keep: its spec (generation counts spec changes of kinds
 * with a status subresource, as all ours have), deletion, and the metadata the pass acts on. Status writes (ours)
 * leave it alone.
 */
export function poolFingerprint(pool: PoolObject): string {
  const m = pool.metadata;
  return JSON.stringify([
    m.uid,
    m.generation,
    m.deletionTimestamp,
    m.labels,
    m.annotations,
    m.finalizers,
    m.ownerReferences?.length,
  ]);
}

/**
 * Brings `allocator` up to date with record changes, oldest first: a record that left the pool (or changed) gives
 * back what it held, one that entered (or changed) holds its address. Both are idempotent, so a change the pass made
 * itself (already reserved or released when it decided) is applied again harmlessly.
 */
export function applyRecordChanges(
  allocator: PoolAllocator,
  api: ClaimApi,
  kind: Parameters<ClaimApi["holderOf"]>[1],
  changes: readonly BucketChange<PoolRecord>[],
): void {
  for (const { before, after } of changes) {
    if (before) allocator.release(before.spec.address, api.holderOf(before, kind));
    if (after) allocator.reserve(after.spec.address, api.holderOf(after, kind));
  }
}

/** Every claim of pool `key`, per API (a full pass). */
export function allClaims(apis: readonly ClaimApi[], key: string): Map<ClaimApi, KubeObject[]> {
  return new Map(apis.map((api) => [api, api.index.claimsOf(key)]));
}

/**
 * The claims an incremental pass plans, per API: those not settled yet, those that changed, and those whose records
 * changed, as far as they still belong to the pool. Keys of claims gone from the pool leave the unsettled set.
 */
export function plannedClaims(
  apis: readonly ClaimApi[],
  key: string,
  state: PoolState,
  changes: ReadonlyMap<ClaimApi, ApiChanges>,
): Map<ClaimApi, KubeObject[]> {
  const planned = new Map<ClaimApi, KubeObject[]>();
  for (const api of apis) {
    const unsettled = state.unsettled.get(api) ?? new Set<string>();
    const keys = new Set(unsettled);
    for (const change of changes.get(api)?.claims ?? []) keys.add(change.key);
    for (const { before, after } of changes.get(api)?.records ?? []) {
      const claimKey = api.index.claimKeyOf((after ?? before) as PoolRecord);
      if (claimKey) keys.add(claimKey);
    }
    const claims: KubeObject[] = [];
    for (const claimKey of keys) {
      const claim = api.index.claimInPool(claimKey, key);
      if (claim) claims.push(claim);
      else unsettled.delete(claimKey);
    }
    planned.set(api, claims);
  }
  return planned;
}

/** The records an incremental pass checks for orphans: those that changed, and those of claims that left the pool. */
export function orphanCandidates(api: ClaimApi, key: string, changes: ReadonlyMap<ClaimApi, ApiChanges>): PoolRecord[] {
  const c = changes.get(api);
  const candidates = (c?.records ?? []).flatMap((change) => (change.after ? [change.after] : []));
  for (const change of c?.claims ?? [])
    if (!change.after) candidates.push(...api.index.recordsOfClaim(change.key, key));
  return [...new Set(candidates)];
}

/**
 * Live claims of pool `key` that no record of `api` names yet (the pending-claims metric). Only unsettled claims can
 * be: a claim leaves the unsettled set when a pass finds it bound, and enters it again whenever a pass plans it
 * unbound (it, or one of its records, changed), so counting there costs what waits, not the pool.
 */
export function pendingClaims(api: ClaimApi, key: string, unsettled: ReadonlySet<string>): number {
  let pending = 0;
  for (const claimKey of unsettled) {
    const claim = api.index.claimInPool(claimKey, key);
    if (claim && !isDeleting(claim.metadata) && api.index.recordsOfClaim(claimKey, key).length === 0) pending++;
  }
  return pending;
}

/** Whether any claim or record of the pool changed. */
export function anyChange(changes: ReadonlyMap<ClaimApi, ApiChanges>): boolean {
  return [...changes.values()].some((c) => (c.claims?.length ?? 0) > 0 || (c.records?.length ?? 0) > 0);
}
