/**
 * The freshness barrier before a pass that will allocate (spec §3.4). Claims and records arrive on separate watches,
 * so before deciding, the records of the pool must be at least as fresh as the newest pool or claim the pass has seen:
 * a record made before a claim (by hand, say) must not be missed. The records of an API whose watch has not delivered
 * as far as the barrier are re-listed, unless this pass allocates records of that very API: then each new record is
 * confirmed once its own watch event arrives (ApplyContext.confirm), which costs one event instead of a list of every
 * record of the pool (a list per claim made one claim cost in proportion to the pool).
 */
import type { ObjectMeta } from "../../../api/v1alpha1/types.js";
import { atOrPast, compareVersions, isEtcdVersion } from "../../kube/informer.js";
import type { KubeObject } from "../../kube/resource.js";
import { isDeleting } from "../meta.js";
import type { ApplyContext, ClaimApi, Pass } from "./pass.js";
import { BY_POOL_ADDRESS, poolAddressKey } from "./indexes.js";
import type { PoolRecord } from "./kind.js";

/** How long a new record's own watch event is waited for before a list confirms it instead. */
const ECHO_TIMEOUT_MS = 5_000;

/**
 * Makes the caches of `apis`' records fresh enough to allocate in pool `pass.key`, listing what must be listed.
 * Returns how to confirm new records, or undefined when the caches are known fresh (or nothing will be allocated).
 */
export async function freshnessBarrier(
  pass: Pass,
  apis: readonly ClaimApi[],
  claims: ReadonlyMap<ClaimApi, readonly KubeObject[]>,
): Promise<ApplyContext["confirm"]> {
  const { pool, kind } = pass;
  if (!pool || isDeleting(pool.metadata)) return undefined;
  const pending = new Map(
    apis.map((api) => [api, (claims.get(api) ?? []).filter((c) => api.index.needsAllocation(c))]),
  );
  if ([...pending.values()].every((list) => list.length === 0)) return undefined;
  const interrupted = apis.flatMap((api) => (pending.get(api) ?? []).filter((c) => api.interrupted(c, kind)));
  const barrier = addressBarrier([pool, ...[...claims.values()].flat()], interrupted);
  // Every API's records hold addresses of the pool, so all must be as fresh as the barrier. A watch that has already
  // delivered everything up to the barrier makes its cache as fresh as a list would be; so does a first list that went
  // past the pool's namespace, from a snapshot at or past the barrier (a namespaced pool's records are in its own).
  const fresh = (api: ClaimApi): boolean =>
    barrier !== undefined && atOrPast(api.index.records()?.observedIn(pass.ref.namespace) ?? "", barrier);
  // A quorum read (barrier undefined) cannot be confirmed by an event: it lists, as does an API nothing is made of
  // and one whose cache is being listed (no watch would echo a new record before the list is done).
  const echoes = (api: ClaimApi): boolean => api.index.records()?.synced === true;
  const stale = new Set(
    apis.filter((api) => barrier !== undefined && (pending.get(api) ?? []).length > 0 && !fresh(api) && echoes(api)),
  );
  await Promise.all(apis.filter((api) => !fresh(api) && !stale.has(api)).map((api) => api.listRecords(pass, barrier)));
  if (stale.size === 0 || barrier === undefined) return undefined;
  return confirmer(pass, apis, barrier, stale);
}

/**
 * The confirmation (ApplyContext.confirm) of one pass: a record we just made holds its address alone once its API's
 * watch has delivered its own creation (everything written before it, so everything written before its claim, is
 * then in the cache) and the other APIs' caches are as fresh as the barrier; a record whose event does not come within {@link ECHO_TIMEOUT_MS}
 * is confirmed by a list instead. Each API is listed at most once per pass.
 */
function confirmer(
  pass: Pass,
  apis: readonly ClaimApi[],
  barrier: string,
  stale: ReadonlySet<ClaimApi>,
): NonNullable<ApplyContext["confirm"]> {
  const listed = new Map<ClaimApi, Promise<void>>();
  // An API not in `stale` was fresh, or listed, before the pass decided anything.
  const ensure = async (api: ClaimApi, rv: string): Promise<void> => {
    const informer = api.index.records();
    if (!informer || !stale.has(api) || (await informer.waitObserved(rv, ECHO_TIMEOUT_MS))) return;
    if (!listed.has(api)) listed.set(api, api.listRecords(pass, rv));
    await listed.get(api);
  };
  return async (recordKind, created) => {
    const own = created.metadata.resourceVersion ?? barrier;
    await Promise.all(apis.map((api) => ensure(api, api.recordKind === recordKind ? own : barrier)));
    return holdersOf(apis, pass.key, created.spec.address).every((r) => r.metadata.uid === created.metadata.uid);
  };
}

/**
 * The resourceVersion the pool's records are read at before allocating (spec §3.4); undefined asks for a quorum
 * read. Normally the newest of the pool and its claims, so every record made before them (by hand, say) is seen.
 * But a claim that carries our finalizer and still has no record in the cache is the trace of an interrupted
 * allocation (`interrupted`): the finalizer is written first, then the record, whose create may have succeeded while
 * its answer was lost (a timeout, a connection cut by a restarting API server). That record is newer than anything
 * we know, so only a quorum read is sure to show it; deciding without it would give the claim a second address.
 */
function addressBarrier(
  objects: readonly { metadata: ObjectMeta }[],
  interrupted: readonly unknown[],
): string | undefined {
  if (interrupted.length > 0) return undefined;
  return newestResourceVersion(objects);
}

/** The highest resourceVersion among `objects` (integers, as etcd issues them), or undefined. */
function newestResourceVersion(objects: readonly { metadata: { resourceVersion?: string } }[]): string | undefined {
  let best: string | undefined;
  for (const o of objects) {
    const text = o.metadata.resourceVersion;
    if (!text || !isEtcdVersion(text)) continue;
    if (best === undefined || compareVersions(text, best) > 0) best = text;
  }
  return best;
}

/** Every record of any of `apis` in pool `key` that holds `address` (the BY_POOL_ADDRESS index of each). */
export function holdersOf(apis: readonly ClaimApi[], key: string, address: string): PoolRecord[] {
  const byAddress = poolAddressKey(key, address);
  return apis.flatMap((api) => api.index.records()?.byIndex(BY_POOL_ADDRESS, byAddress) ?? []);
}
