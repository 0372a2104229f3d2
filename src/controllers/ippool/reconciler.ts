/**
 * The pool-keyed reconciler (spec §3.3 to §4). One call handles everything of one pool: its metadata, every claim
 * that names it, orphaned addresses, deletion and status. The work queue guarantees one call per pool at a time,
 * which serialises all allocation decisions of a pool; the store's read-your-writes makes each decision see the last.
 */
import isEqual from "lodash/isEqual.js";
import { apiVersionOf, CLUSTER } from "../../../api/registry.js";
import {
  CLUSTER_NAME_LABEL,
  IPCLAIM_FINALIZER,
  IPCLAIM_KIND,
  IPPOOL_FINALIZER,
  PROVIDER_LABEL,
  PROVIDER_NAME,
  Reasons,
  type IPAddress,
  type IPClaim,
  type IPPool,
  type IPPoolStatus,
  type ObjectMeta,
  type OwnerReference,
} from "../../../api/v1alpha1/types.js";
import {
  CAPI_IPADDRESS_FINALIZER,
  IPADDRESSCLAIM_FINALIZER,
  IPADDRESSCLAIM_KIND,
  type CapiIPAddress,
  type IPAddressClaim,
} from "../../../api/capi/types.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import { ipAddressName } from "../../ipam/naming.js";
import { describeError } from "../../kube/errors.js";
import type { Logger } from "../../runtime/logger.js";
import { noMetrics, type ControllerMetrics } from "../../runtime/metrics.js";
import type { ReconcileResult } from "../../runtime/workqueue.js";
import { pauseState, type Cluster } from "../clusters.js";
import type { EventSink } from "../events.js";
import { byCreationThenName, hasFinalizer, isDeletedForMove, isDeleting, splitKey } from "../meta.js";
import type { Store } from "../store.js";
import { applyCapiClaimAction, releaseCapiAddress, type CapiInformers } from "../capi/claims.js";
import { planCapiClaim } from "../capi/plan.js";
import { capiClaimClusterName } from "../capi/translate.js";
import { atOrPast, compareVersions, isEtcdVersion, keyOf } from "../../kube/informer.js";
import { applyClaimAction, holderOf, releaseAddress, type ApplyContext, type RecordKind } from "./claims.js";
import { BY_CLAIM, BY_NAMESPACE, BY_POOL, BY_POOL_ADDRESS, poolAddressKey } from "./indexes.js";
import { planClaim } from "./plan.js";
import { desiredPoolStatus, indexesPatch, pendingClaimsByKind, sameStatus } from "./status.js";

export interface PoolReconcilerOptions {
  metrics?: ControllerMetrics;
  /** Claim writes of one pass run this many at a time (decisions stay sequential). Default 32. */
  writeConcurrency?: number;
  clock?: () => Date;
}

export class PoolReconciler {
  /** When each pool's status was last written (its key), for {@link STATUS_WRITE_INTERVAL_MS}. */
  private readonly statusWrittenAt = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly events: EventSink,
    private readonly logger: Logger,
    private readonly options: PoolReconcilerOptions = {},
  ) {}

  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = splitKey(key);
    const log = this.logger.child({ controller: "ippool", namespace, name });
    let pool = this.store.pools.get(namespace, name);
    const pause = pool ? pauseState(pool.metadata, pool.spec?.clusterName, this.store.lookupCluster) : undefined;
    if (pool && !isDeleting(pool.metadata)) pool = await this.ensurePoolMetadata(pool, pause?.paused === false);
    if (pause?.paused) {
      log.debug("Pool is paused", { why: pause.why });
      return;
    }
    // Unsorted: reconcileClaims puts the decisions in order.
    const claims = this.store.claims.byIndex(BY_POOL, key);
    const capiClaims = this.store.capi?.claims.byIndex(BY_POOL, key) ?? [];
    const confirm = await this.refreshIfAllocating(pool, key, claims, capiClaims);
    const collisions: string[] = [];
    const allocator = pool ? this.buildAllocator(pool, key, collisions) : undefined;
    const metrics = this.options.metrics ?? noMetrics;
    if (!pool) {
      metrics.poolGone(namespace, name);
      this.statusWrittenAt.delete(key);
    }
    const ctx: ApplyContext = {
      store: this.store,
      events: this.events,
      log,
      allocator,
      now: this.now(),
      requeue: false,
      metrics,
      ...(confirm ? { confirm } : {}),
    };
    await this.reconcileClaims(ctx, pool, claims, capiClaims, collisions);
    await this.cleanupOrphans(ctx, this.store.addresses.byIndex(BY_POOL, key));
    await this.cleanupCapiOrphans(ctx, key);
    if (pool && isDeleting(pool.metadata)) await this.finishDeletion(ctx, pool, key);
    else if (pool && allocator) await this.writePoolStatus(ctx, pool, key, allocator, collisions);
    const after = [ctx.requeue ? 200 : undefined, ctx.statusDueInMs].filter((ms) => ms !== undefined);
    return after.length > 0 ? { requeueAfterMs: Math.min(...after) } : undefined;
  }

  private now(): Date {
    return this.options.clock?.() ?? new Date();
  }

  /**
   * Finalizer, Cluster labels and the non-controller owner reference to the Cluster (what makes the pool move). The
   * labels and the owner reference are set even while the pool is paused (spec §4: Metal3 sets them before its pause
   * check), so a pool created under a paused Cluster still moves with it; the finalizer waits for `unpaused`.
   */
  private async ensurePoolMetadata(pool: IPPool, unpaused: boolean): Promise<IPPool> {
    const clusterName = pool.spec?.clusterName;
    const labels = { ...(pool.metadata.labels ?? {}) };
    if (clusterName) Object.assign(labels, { [CLUSTER_NAME_LABEL]: clusterName, [PROVIDER_LABEL]: PROVIDER_NAME });
    const owners = [...(pool.metadata.ownerReferences ?? [])];
    const cluster = clusterName ? this.store.lookupCluster(pool.metadata.namespace ?? "", clusterName) : undefined;
    if (cluster && !owners.some((o) => o.kind === CLUSTER.kind && o.uid === cluster.metadata.uid)) {
      owners.push(clusterOwnerRef(cluster));
    }
    const finalizers = pool.metadata.finalizers ?? [];
    const patch = {
      ...(finalizers.includes(IPPOOL_FINALIZER) || !unpaused ? {} : { finalizers: [...finalizers, IPPOOL_FINALIZER] }),
      ...(isEqual(labels, pool.metadata.labels ?? {}) ? {} : { labels }),
      ...(owners.length === (pool.metadata.ownerReferences ?? []).length ? {} : { ownerReferences: owners }),
    };
    if (Object.keys(patch).length === 0) return pool;
    return await this.store.patchMetadata(this.store.pools, pool, patch);
  }

  /**
   * The freshness barrier (spec §3.4, see addressBarrier) before a pass that will allocate. The records of a kind whose
   * watch has not delivered as far as the barrier are re-listed, unless this pass allocates records of that very kind:
   * then each new record is confirmed once its own watch event arrives (see confirmCreated), which costs one event
   * instead of a list of every record of the pool (a list per claim made one claim cost in proportion to the pool).
   * Returns how to confirm new records, or undefined when the caches are known fresh.
   */
  private async refreshIfAllocating(
    pool: IPPool | undefined,
    key: string,
    claims: readonly IPClaim[],
    capiClaims: readonly IPAddressClaim[],
  ): Promise<ApplyContext["confirm"]> {
    if (!pool || isDeleting(pool.metadata)) return undefined;
    const pending = claims.filter((c) => this.needsAllocation(c));
    const capiPending = capiClaims.filter((c) => this.capiNeedsAllocation(c));
    if (pending.length === 0 && capiPending.length === 0) return undefined;
    const barrier = this.barrierOf(pool, claims, capiClaims, pending, capiPending);
    const namespace = pool.metadata.namespace ?? "";
    const poolName = pool.metadata.name ?? "";
    // Both kinds of records hold addresses of the pool, so both must be as fresh as the barrier. A watch that has
    // already delivered everything up to the barrier makes its cache as fresh as a list would be.
    const fresh = (observed: string): boolean => barrier !== undefined && atOrPast(observed, barrier);
    const { addresses, capi } = this.store;
    const metal3Fresh = fresh(addresses.observedResourceVersion);
    const capiFresh = !capi || fresh(capi.addresses.observedResourceVersion);
    // A quorum read (barrier undefined) cannot be confirmed by an event: it lists, as does a kind nothing is made of.
    const stale = new Set<RecordKind>();
    if (barrier !== undefined && pending.length > 0 && !metal3Fresh) stale.add("IPAddress");
    if (barrier !== undefined && capiPending.length > 0 && !capiFresh) stale.add("CapiIPAddress");
    const listMetal3 = (notOlderThan: string | undefined): Promise<void> =>
      this.store.refreshWhere(addresses, namespace, ADDRESS_POOL_FIELD, poolName, notOlderThan);
    const listCapi = async (notOlderThan: string | undefined): Promise<void> => {
      if (capi)
        await this.store.refreshWhere(capi.addresses, namespace, CAPI_ADDRESS_POOL_FIELD, poolName, notOlderThan);
    };
    await Promise.all([
      metal3Fresh || stale.has("IPAddress") ? undefined : listMetal3(barrier),
      capiFresh || stale.has("CapiIPAddress") ? undefined : listCapi(barrier),
    ]);
    if (stale.size === 0 || barrier === undefined) return undefined;
    return this.confirmer(key, barrier, stale, { listMetal3, listCapi });
  }

  /**
   * confirmCreated for one pass: a record we just made holds its address alone once its kind's watch has delivered
   * its own creation (everything written before it, so everything written before its claim, is then in the cache)
   * and the other kind's cache is as fresh as the barrier; a record whose event does not come within
   * {@link ECHO_TIMEOUT_MS} is confirmed by a list instead. Each kind is listed at most once per pass.
   */
  private confirmer(
    key: string,
    barrier: string,
    stale: ReadonlySet<RecordKind>,
    lists: { listMetal3: (rv: string) => Promise<void>; listCapi: (rv: string) => Promise<void> },
  ): NonNullable<ApplyContext["confirm"]> {
    const { addresses, capi } = this.store;
    const listedAt: Partial<Record<RecordKind, Promise<void>>> = {};
    // A kind not in `stale` was fresh, or listed, before the pass decided anything.
    const ensure = async (kind: RecordKind, rv: string): Promise<void> => {
      const informer = kind === "IPAddress" ? addresses : capi?.addresses;
      if (!informer || !stale.has(kind) || (await informer.waitObserved(rv, ECHO_TIMEOUT_MS))) return;
      listedAt[kind] ??= kind === "IPAddress" ? lists.listMetal3(rv) : lists.listCapi(rv);
      await listedAt[kind];
    };
    return async (kind, created) => {
      const other: RecordKind = kind === "IPAddress" ? "CapiIPAddress" : "IPAddress";
      await Promise.all([ensure(kind, created.metadata.resourceVersion ?? barrier), ensure(other, barrier)]);
      return this.holdersOf(key, created.spec.address).every((r) => r.metadata.uid === created.metadata.uid);
    };
  }

  /** Every record of either API in pool `key` that holds `address`. */
  private holdersOf(key: string, address: string): { metadata: ObjectMeta }[] {
    const byAddress = poolAddressKey(key, address);
    return [
      ...this.store.addresses.byIndex(BY_POOL_ADDRESS, byAddress),
      ...(this.store.capi?.addresses.byIndex(BY_POOL_ADDRESS, byAddress) ?? []),
    ];
  }

  /** addressBarrier over the pool and its claims, with the pending claims that carry our finalizer as interrupted. */
  private barrierOf(
    pool: IPPool,
    claims: readonly IPClaim[],
    capiClaims: readonly IPAddressClaim[],
    pending: readonly IPClaim[],
    capiPending: readonly IPAddressClaim[],
  ): string | undefined {
    return addressBarrier(
      [pool, ...claims, ...capiClaims],
      [
        ...pending.filter((c) => hasFinalizer(c.metadata, IPCLAIM_FINALIZER)),
        ...capiPending.filter((c) => hasFinalizer(c.metadata, IPADDRESSCLAIM_FINALIZER)),
      ],
    );
  }

  /** A live claim with no IPAddress yet: the pass will allocate for it. */
  private needsAllocation(claim: IPClaim): boolean {
    return (
      !isDeleting(claim.metadata) &&
      this.store.addresses.byIndex(BY_CLAIM, `${claim.metadata.namespace ?? ""}/${claim.metadata.name ?? ""}`)
        .length === 0
    );
  }

  /** A live Cluster API claim with no Cluster API IPAddress yet. */
  private capiNeedsAllocation(claim: IPAddressClaim): boolean {
    return (
      !isDeleting(claim.metadata) && (this.store.capi?.addresses.byIndex(BY_CLAIM, keyOf(claim)) ?? []).length === 0
    );
  }

  /**
   * Every record of the pool holds its address for its claim (kind and name), whoever made it: IPAddresses
   * (person-made reservations included) and Cluster API IPAddresses (ours, adopted ones, Metal3's). Addresses whose
   * record name is already taken by another pool's object (same namePrefix, spec §3.6) are held too and reported as
   * collisions, so the pass skips them instead of looping on AlreadyExists.
   */
  private buildAllocator(pool: IPPool, key: string, collisions: string[]): PoolAllocator {
    const allocator = new PoolAllocator(pool.spec);
    for (const a of this.store.addresses.byIndex(BY_POOL, key)) allocator.reserve(a.spec.address, holderOf(a));
    for (const a of this.capiAddressesOf(key)) {
      allocator.reserve(a.spec.address, {
        kind: "claim",
        claimName: a.spec.claimRef.name,
        claimKind: IPADDRESSCLAIM_KIND,
      });
    }
    const foreign = (owner: string | undefined, address: string | undefined, name: string | undefined): void => {
      if (owner === pool.metadata.name || !address || !allocator.contains(address)) return;
      if (ipAddressName(pool.spec.namePrefix, address) !== name) return;
      allocator.reserve(address, { kind: "other", description: `IPAddress ${name} of IPPool ${owner ?? ""}` });
      collisions.push(
        `IPAddress ${name} of IPPool ${owner ?? ""} holds the name this pool would give ${address} (shared namePrefix "${pool.spec.namePrefix}"); the address is skipped`,
      );
    };
    for (const other of this.store.addresses.byIndex(BY_NAMESPACE, pool.metadata.namespace ?? ""))
      foreign(other.spec?.pool?.name, other.spec?.address, other.metadata.name);
    return allocator;
  }

  /** Decides claim by claim (both kinds, one deterministic order), then applies the writes a few at a time. */
  private async reconcileClaims(
    ctx: ApplyContext,
    pool: IPPool | undefined,
    claims: readonly IPClaim[],
    capiClaims: readonly IPAddressClaim[],
    collisions: string[],
  ): Promise<void> {
    const blocked =
      pool !== undefined && isDeleting(pool.metadata)
        ? {
            allocationBlocked: {
              reason: Reasons.PoolNotReady,
              message: `IPPool ${pool.metadata.name ?? ""} is being deleted`,
            },
          }
        : {};
    const onCollision = (message: string): void => void collisions.push(message);
    const capi = this.store.capi;
    const poolKey = pool ? `${pool.metadata.namespace ?? ""}/${pool.metadata.name ?? ""}` : "";
    const heldByAnother = (record: { metadata: ObjectMeta; spec: { address: string } }): boolean =>
      this.holdersOf(poolKey, record.spec.address).some((r) => r.metadata.uid !== record.metadata.uid);
    const work: { claim: { metadata: ObjectMeta }; decide: () => () => Promise<void> }[] = [];
    for (const claim of claims) {
      work.push({
        claim,
        decide: () => {
          const action = planClaim({
            claim,
            pool,
            claimAddresses: this.store.addresses.byIndex(BY_CLAIM, keyOf(claim)),
            pause: pauseState(claim.metadata, claimClusterName(claim, pool), this.store.lookupCluster),
            allocator: ctx.allocator,
            ...blocked,
            addressNamed: (name) => this.store.addresses.get(claim.metadata.namespace ?? "", name),
            onCollision,
            heldByAnother,
          });
          return () => applyClaimAction(ctx, action);
        },
      });
    }
    for (const claim of capi ? capiClaims : []) {
      const informers = capi as CapiInformers;
      work.push({
        claim,
        decide: () => {
          const action = planCapiClaim({
            claim,
            pool,
            claimAddresses: informers.addresses.byIndex(BY_CLAIM, keyOf(claim)),
            pause: pauseState(claim.metadata, capiClaimClusterName(claim, pool), this.store.lookupCluster),
            allocator: ctx.allocator,
            ...blocked,
            movedAway: this.store.movedAway.has(claim.metadata.uid ?? ""),
            addressNamed: (name) => informers.addresses.get(claim.metadata.namespace ?? "", name),
            onCollision,
            addressApiVersion: informers.addresses.client.apiVersion(),
            heldByAnother,
          });
          return () => applyCapiClaimAction(ctx, informers, action);
        },
      });
    }
    // Decisions run in claim order (creation, then name) across both kinds, so neither kind starves the other.
    const writes = work.sort((a, b) => byCreationThenName(a.claim, b.claim)).map((w) => w.decide());
    await runLimited(writes, this.options.writeConcurrency ?? 32, (write) => write());
  }

  /**
   * IPAddresses made for a claim that no longer exists (Metal3 leaks them, its issue 694). Only addresses owned by an
   * IPClaim qualify, so person-made reservations stay; the claim's absence is confirmed with the API server.
   */
  private async cleanupOrphans(ctx: ApplyContext, addresses: readonly IPAddress[]): Promise<void> {
    for (const address of addresses) {
      const owner = (address.metadata.ownerReferences ?? []).find((o) => o.kind === IPCLAIM_KIND);
      const claimName = address.spec?.claim?.name;
      if (!owner || !claimName) continue;
      // Its claim left with `clusterctl move` and this address stayed with its pool: still in use there (spec §7).
      if (this.store.movedAway.has(owner.uid)) continue;
      const cached = this.store.claims.get(address.metadata.namespace ?? "", claimName);
      if (cached && cached.metadata.uid === owner.uid) continue;
      const live = await this.store.fetch(this.store.claims, address.metadata.namespace ?? "", claimName);
      if (live && live.metadata.uid === owner.uid) continue;
      ctx.log.info("Releasing IPAddress of a claim that is gone", {
        ipAddress: address.metadata.name,
        claim: claimName,
      });
      await releaseAddress(ctx, address);
    }
  }

  /**
   * Cluster API IPAddresses of the pool that we made (our finalizer) for an IPAddressClaim that is gone: the claim's
   * finalizer was removed by someone else, so its release never ran. Released like IPAddress orphans; those of a
   * claim that left with `clusterctl move` are in use on the other side and stay.
   */
  private async cleanupCapiOrphans(ctx: ApplyContext, key: string): Promise<void> {
    const capi = this.store.capi;
    for (const address of capi?.addresses.byIndex(BY_POOL, key) ?? []) {
      if (!capi || !hasFinalizer(address.metadata, CAPI_IPADDRESS_FINALIZER)) continue;
      const owner = (address.metadata.ownerReferences ?? []).find((o) => o.kind === IPADDRESSCLAIM_KIND);
      if (!owner || this.store.movedAway.has(owner.uid) || isDeletedForMove(address.metadata)) continue;
      const namespace = address.metadata.namespace ?? "";
      if (capi.claims.get(namespace, address.spec.claimRef.name)?.metadata.uid === owner.uid) continue;
      const live = await this.store.fetch(capi.claims, namespace, address.spec.claimRef.name);
      if (live && live.metadata.uid === owner.uid) continue;
      ctx.log.info("Releasing IPAddress of an IPAddressClaim that is gone", {
        ipAddress: address.metadata.name,
        claim: address.spec.claimRef.name,
      });
      await releaseCapiAddress(ctx, capi, address);
    }
  }

  /** A deleting pool keeps its finalizer until no IPAddress (of either API) references it. */
  private async finishDeletion(ctx: ApplyContext, pool: IPPool, key: string): Promise<void> {
    const remaining = [...this.store.addresses.byIndex(BY_POOL, key), ...this.capiAddressesOf(key)];
    if (remaining.length > 0) {
      ctx.log.info("Pool deletion waits for its IPAddresses", { remaining: remaining.length });
      return;
    }
    await this.store.removeFinalizer(this.store.pools, pool, IPPOOL_FINALIZER);
  }

  private capiAddressesOf(poolKey: string): CapiIPAddress[] {
    return this.store.capi?.addresses.byIndex(BY_POOL, poolKey) ?? [];
  }

  /** Capacity and waiting claims of the pool as this pass leaves them (the store reads its own writes). */
  private recordPoolMetrics(
    ctx: ApplyContext,
    pool: IPPool,
    key: string,
    status: IPPoolStatus,
    records: { addresses: IPAddress[]; capiAddresses: CapiIPAddress[] },
  ): void {
    const [namespace, name] = [pool.metadata.namespace ?? "", pool.metadata.name ?? ""];
    ctx.metrics.poolCapacity(namespace, name, status.total ?? 0, status.used ?? 0, status.free ?? 0);
    const claims = this.store.claims.byIndex(BY_POOL, key);
    const capiClaims = this.store.capi?.claims.byIndex(BY_POOL, key) ?? [];
    ctx.metrics.pendingClaims(namespace, name, pendingClaimsByKind({ claims, capiClaims, ...records }));
  }

  private async writePoolStatus(
    ctx: ApplyContext,
    pool: IPPool,
    key: string,
    allocator: PoolAllocator,
    collisions: string[],
  ): Promise<void> {
    const records = { addresses: this.store.addresses.byIndex(BY_POOL, key), capiAddresses: this.capiAddressesOf(key) };
    const health = { specErrors: allocator.specErrors, collisions };
    const status = desiredPoolStatus(
      pool,
      records.addresses,
      records.capiAddresses,
      allocator.capacity(),
      health,
      ctx.now,
    );
    this.recordPoolMetrics(ctx, pool, key, status, records);
    if (sameStatus(status, pool.status) || adoptedAsIs(pool, status)) return;
    const before = pool.status?.conditions?.find((c) => c.type === "Ready");
    const after = status.conditions?.find((c) => c.type === "Ready");
    const deferMs = this.statusDeferral(key, pool.status, status);
    if (deferMs > 0) {
      ctx.statusDueInMs = deferMs;
      return;
    }
    this.statusWrittenAt.set(key, Date.now());
    await this.store.patchStatus(this.store.pools, pool, { ...status, indexes: indexesPatch(pool.status, status) });
    if (after && after.status === "False" && (before?.reason !== after.reason || before?.message !== after.message)) {
      this.events.record(pool, "Warning", after.reason, after.message);
      ctx.log.warn("Pool is not ready", { reason: after.reason, message: after.message });
    }
  }

  /**
   * How long to hold back a status write, 0 for now. Only a change of the view alone (indexes, counts, lastUpdated)
   * waits, and only within {@link STATUS_WRITE_INTERVAL_MS} of the last write: conditions, and a first write, go at
   * once.
   */
  private statusDeferral(key: string, current: IPPoolStatus | undefined, desired: IPPoolStatus): number {
    if (!current || !isEqual(current.conditions, desired.conditions)) return 0;
    const last = this.statusWrittenAt.get(key);
    return last === undefined ? 0 : Math.max(0, last + STATUS_WRITE_INTERVAL_MS - Date.now());
  }
}

/**
 * Minimum time between two status writes of one pool whose conditions did not change. Each write carries the pool's
 * whole `indexes` (one entry per claim, as Metal3 lists them) back to us and to every watcher, so in a trickle of
 * claims a write per claim made each claim cost in proportion to the pool. The status is a view rebuilt from records:
 * nobody decides from it (Metal3's controller, after a rollback, rebuilds it from IPAddresses; `kubectl ipam` reads
 * records; our metrics come from this pass), so it may trail the records by this much.
 */
export const STATUS_WRITE_INTERVAL_MS = 2_000;

/**
 * A ready pool whose status Metal3's controller wrote (indexes, no conditions) and whose indexes are still right is
 * left as it is: a migration rewrites nothing (issue 12). Our counts and condition appear with the next change.
 */
function adoptedAsIs(pool: IPPool, desired: IPPoolStatus): boolean {
  const current = pool.status;
  const ready = desired.conditions?.find((c) => c.type === "Ready")?.status === "True";
  return (
    ready &&
    current?.conditions === undefined &&
    current?.indexes !== undefined &&
    isEqual(current.indexes, desired.indexes)
  );
}

/** How long a new record's own watch event is waited for before a list confirms it instead. */
const ECHO_TIMEOUT_MS = 5_000;

/** The selectable field naming the pool of an IPAddress (field selector, and how to read it where unsupported). */
const ADDRESS_POOL_FIELD = { path: "spec.pool.name", read: (a: IPAddress): string | undefined => a.spec?.pool?.name };
/** The same for a Cluster API IPAddress (`poolRef`; not selectable in Cluster API's CRDs, so read here). */
const CAPI_ADDRESS_POOL_FIELD = {
  path: "spec.poolRef.name",
  read: (a: CapiIPAddress): string | undefined => a.spec?.poolRef?.name,
};

/** The Cluster a claim belongs to (spec §4): its own label, else its pool's. */
export function claimClusterName(claim: IPClaim, pool: IPPool | undefined): string | undefined {
  return claim.metadata.labels?.[CLUSTER_NAME_LABEL] ?? pool?.spec?.clusterName ?? undefined;
}

function clusterOwnerRef(cluster: Cluster): OwnerReference {
  return {
    apiVersion: cluster.apiVersion ?? apiVersionOf(CLUSTER),
    kind: CLUSTER.kind,
    name: cluster.metadata.name ?? "",
    uid: cluster.metadata.uid ?? "",
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

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first error after all have settled. */
async function runLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let firstError: unknown;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        firstError ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (firstError !== undefined) throw firstError instanceof Error ? firstError : new Error(describeError(firstError));
}
