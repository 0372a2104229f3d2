/**
 * The pool-keyed reconciler (spec §3.3 to §4). One call handles everything of one pool: its metadata, every claim
 * that names it, orphaned addresses, deletion and status. The work queue guarantees one call per pool at a time,
 * which serialises all allocation decisions of a pool; the store's read-your-writes makes each decision see the last.
 */
import isEqual from "lodash/isEqual.js";
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
  type OwnerReference,
} from "../../../api/v1alpha1/types.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import { ipAddressName } from "../../ipam/naming.js";
import { describeError } from "../../kube/errors.js";
import type { Logger } from "../../runtime/logger.js";
import { noMetrics, type ControllerMetrics } from "../../runtime/metrics.js";
import type { ReconcileResult } from "../../runtime/workqueue.js";
import { pauseState, type Cluster } from "../clusters.js";
import type { EventSink } from "../events.js";
import { byCreationThenName, hasFinalizer, isDeleting, splitKey } from "../meta.js";
import type { Store } from "../store.js";
import { applyClaimAction, releaseAddress, type ApplyContext } from "./claims.js";
import { BY_CLAIM, BY_NAMESPACE, BY_POOL } from "./indexes.js";
import { planClaim, type ClaimAction } from "./plan.js";
import { desiredPoolStatus, pendingClaimsByKind } from "./status.js";

export interface PoolReconcilerOptions {
  metrics?: ControllerMetrics;
  /** Claim writes of one pass run this many at a time (decisions stay sequential). Default 16. */
  writeConcurrency?: number;
  clock?: () => Date;
}

export class PoolReconciler {
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
    if (pause?.paused) {
      log.debug("Pool is paused", { why: pause.why });
      return;
    }
    if (pool && !isDeleting(pool.metadata)) pool = await this.ensurePoolMetadata(pool, pause && !pause.paused ? pause.cluster : undefined);
    const claims = this.store.claims.byIndex(BY_POOL, key).sort(byCreationThenName);
    await this.refreshIfAllocating(pool, claims);
    const collisions: string[] = [];
    const allocator = pool ? this.buildAllocator(pool, key, collisions) : undefined;
    const metrics = this.options.metrics ?? noMetrics;
    if (!pool) metrics.poolGone(namespace, name);
    const ctx: ApplyContext = { store: this.store, events: this.events, log, allocator, now: this.now(), requeue: false, metrics };
    await this.reconcileClaims(ctx, pool, claims, collisions);
    await this.cleanupOrphans(ctx, this.store.addresses.byIndex(BY_POOL, key));
    if (pool && isDeleting(pool.metadata)) await this.finishDeletion(ctx, pool, key);
    else if (pool && allocator) await this.writePoolStatus(ctx, pool, key, allocator, collisions);
    return ctx.requeue ? { requeueAfterMs: 200 } : undefined;
  }

  private now(): Date {
    return this.options.clock?.() ?? new Date();
  }

  /** Finalizer, Cluster labels and the non-controller owner reference to the Cluster (what makes the pool move). */
  private async ensurePoolMetadata(pool: IPPool, cluster: Cluster | undefined): Promise<IPPool> {
    const clusterName = pool.spec?.clusterName;
    const labels = { ...(pool.metadata.labels ?? {}) };
    if (clusterName) Object.assign(labels, { [CLUSTER_NAME_LABEL]: clusterName, [PROVIDER_LABEL]: PROVIDER_NAME });
    const owners = [...(pool.metadata.ownerReferences ?? [])];
    if (cluster && !owners.some((o) => o.kind === "Cluster" && o.uid === cluster.metadata.uid)) {
      owners.push(clusterOwnerRef(cluster));
    }
    const finalizers = pool.metadata.finalizers ?? [];
    const patch = {
      ...(finalizers.includes(IPPOOL_FINALIZER) ? {} : { finalizers: [...finalizers, IPPOOL_FINALIZER] }),
      ...(isEqual(labels, pool.metadata.labels ?? {}) ? {} : { labels }),
      ...(owners.length === (pool.metadata.ownerReferences ?? []).length ? {} : { ownerReferences: owners }),
    };
    if (Object.keys(patch).length === 0) return pool;
    return await this.store.patchMetadata(this.store.pools, pool, patch);
  }

  /** The freshness barrier (spec §3.4, see addressBarrier) before a pass that will allocate. */
  private async refreshIfAllocating(pool: IPPool | undefined, claims: readonly IPClaim[]): Promise<void> {
    if (!pool || isDeleting(pool.metadata)) return;
    const pending = claims.filter((c) => this.needsAllocation(c));
    if (pending.length === 0) return;
    const barrier = addressBarrier(pool, claims, pending);
    // The addresses watch has already delivered everything up to the barrier: the cache is as fresh as a list would be.
    if (barrier !== undefined && passed(this.store.addresses.observedResourceVersion, barrier)) return;
    await this.store.refreshPoolAddresses(pool.metadata.namespace ?? "", pool.metadata.name ?? "", barrier);
  }

  /** A live claim with no IPAddress yet: the pass will allocate for it. */
  private needsAllocation(claim: IPClaim): boolean {
    return !isDeleting(claim.metadata) && this.store.addresses.byIndex(BY_CLAIM, `${claim.metadata.namespace ?? ""}/${claim.metadata.name ?? ""}`).length === 0;
  }

  /**
   * Every IPAddress of the pool holds its address, whoever made it (person-made reservations included). Addresses
   * whose IPAddress name is already taken by another pool's object (same namePrefix, spec §3.6) are held too and
   * reported as collisions, so the pass skips them instead of looping on AlreadyExists.
   */
  private buildAllocator(pool: IPPool, key: string, collisions: string[]): PoolAllocator {
    const allocator = new PoolAllocator(pool.spec);
    for (const a of this.store.addresses.byIndex(BY_POOL, key)) {
      const claimName = a.spec?.claim?.name;
      allocator.reserve(a.spec.address, claimName ? { kind: "claim", claimName } : { kind: "other", description: `IPAddress ${a.metadata.name ?? ""}` });
    }
    // Cluster API IPAddresses of this pool (spec §3.2): ours mirror an IPAddress above; adopted ones hold their
    // address for the claim they name, so that claim's IPClaim gets exactly that address (spec §5.6).
    for (const a of this.store.capiAddresses?.byIndex(BY_POOL, key) ?? []) {
      allocator.reserve(a.spec.address, { kind: "claim", claimName: a.spec.claimRef.name });
    }
    for (const other of this.store.addresses.byIndex(BY_NAMESPACE, pool.metadata.namespace ?? "")) {
      if (other.spec?.pool?.name === pool.metadata.name || !allocator.contains(other.spec?.address ?? "")) continue;
      if (ipAddressName(pool.spec.namePrefix, other.spec.address) !== other.metadata.name) continue;
      allocator.reserve(other.spec.address, { kind: "other", description: `IPAddress ${other.metadata.name ?? ""} of IPPool ${other.spec.pool.name}` });
      collisions.push(`IPAddress ${other.metadata.name ?? ""} of IPPool ${other.spec.pool.name} holds the name this pool would give ${other.spec.address} (shared namePrefix "${pool.spec.namePrefix}"); the address is skipped`);
    }
    return allocator;
  }

  /** Decides claim by claim in deterministic order, then applies the writes a few at a time. */
  private async reconcileClaims(ctx: ApplyContext, pool: IPPool | undefined, claims: readonly IPClaim[], collisions: string[]): Promise<void> {
    const deleting = pool !== undefined && isDeleting(pool.metadata);
    const actions: ClaimAction[] = [];
    for (const claim of claims) {
      actions.push(planClaim({
        claim,
        pool,
        claimAddresses: this.store.addresses.byIndex(BY_CLAIM, `${claim.metadata.namespace ?? ""}/${claim.metadata.name ?? ""}`),
        pause: pauseState(claim.metadata, claimClusterName(claim, pool), this.store.lookupCluster),
        allocator: ctx.allocator,
        ...(deleting ? { allocationBlocked: { reason: Reasons.PoolNotReady, message: `IPPool ${pool.metadata.name ?? ""} is being deleted` } } : {}),
        addressNamed: (name) => this.store.addresses.get(claim.metadata.namespace ?? "", name),
        adoptAddress: this.store.capiAddresses?.byIndex(BY_CLAIM, `${claim.metadata.namespace ?? ""}/${claim.metadata.name ?? ""}`).find((a) => a.spec.poolRef.name === claim.spec?.pool?.name)?.spec.address,
        onCollision: (message) => collisions.push(message),
      }));
    }
    await runLimited(actions, this.options.writeConcurrency ?? 16, (a) => applyClaimAction(ctx, a));
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
      ctx.log.info("Releasing IPAddress of a claim that is gone", { ipAddress: address.metadata.name, claim: claimName });
      await releaseAddress(ctx, address);
    }
  }

  /** A deleting pool keeps its finalizer until no IPAddress references it. */
  private async finishDeletion(ctx: ApplyContext, pool: IPPool, key: string): Promise<void> {
    const remaining = [...this.store.addresses.byIndex(BY_POOL, key), ...(this.store.capiAddresses?.byIndex(BY_POOL, key) ?? [])];
    if (remaining.length > 0) {
      ctx.log.info("Pool deletion waits for its IPAddresses", { remaining: remaining.length });
      return;
    }
    await this.store.removeFinalizer(this.store.pools, pool, IPPOOL_FINALIZER);
  }

  /** Capacity and waiting claims of the pool as this pass leaves them (the store reads its own writes). */
  private recordPoolMetrics(ctx: ApplyContext, pool: IPPool, key: string, status: IPPoolStatus, addresses: readonly IPAddress[]): void {
    const [namespace, name] = [pool.metadata.namespace ?? "", pool.metadata.name ?? ""];
    ctx.metrics.poolCapacity(namespace, name, status.total ?? 0, status.used ?? 0, status.free ?? 0);
    ctx.metrics.pendingClaims(namespace, name, pendingClaimsByKind(this.store.claims.byIndex(BY_POOL, key), addresses));
  }

  private async writePoolStatus(ctx: ApplyContext, pool: IPPool, key: string, allocator: PoolAllocator, collisions: string[]): Promise<void> {
    const addresses = this.store.addresses.byIndex(BY_POOL, key);
    const health = { specErrors: allocator.specErrors, collisions };
    const status = desiredPoolStatus(pool, addresses, allocator.capacity(), health, ctx.now);
    this.recordPoolMetrics(ctx, pool, key, status, addresses);
    if (isEqual(status, pool.status ?? {})) return;
    const before = pool.status?.conditions?.find((c) => c.type === "Ready");
    const after = status.conditions?.find((c) => c.type === "Ready");
    // A merge patch merges maps: indexes of released claims must be sent as null to disappear.
    const removed = Object.fromEntries(Object.keys(pool.status?.indexes ?? {}).filter((k) => !(k in (status.indexes ?? {}))).map((k) => [k, null]));
    await this.store.patchStatus(this.store.pools, pool, { ...status, indexes: { ...removed, ...status.indexes } });
    if (after && after.status === "False" && (before?.reason !== after.reason || before?.message !== after.message)) {
      this.events.record(pool, "Warning", after.reason, after.message);
      ctx.log.warn("Pool is not ready", { reason: after.reason, message: after.message });
    }
  }
}

/** The Cluster a claim belongs to (spec §4): its own label, else its pool's. */
export function claimClusterName(claim: IPClaim, pool: IPPool | undefined): string | undefined {
  return claim.metadata.labels?.[CLUSTER_NAME_LABEL] ?? pool?.spec?.clusterName ?? undefined;
}

function clusterOwnerRef(cluster: Cluster): OwnerReference {
  return { apiVersion: cluster.apiVersion ?? "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: cluster.metadata.name ?? "", uid: cluster.metadata.uid ?? "" };
}

/**
 * The resourceVersion the pool's IPAddresses are read at before allocating (spec §3.4); undefined asks for a quorum
 * read. Normally the newest of the pool and its claims, so every IPAddress made before them (by hand, say) is seen.
 * But a claim that carries our finalizer and still has no IPAddress in the cache is the trace of an interrupted
 * allocation: the finalizer is written first, then the IPAddress, whose create may have succeeded while its answer
 * was lost (a timeout, a connection cut by a restarting API server). That IPAddress is newer than anything we know,
 * so only a quorum read is sure to show it; deciding without it would give the claim a second address.
 */
function addressBarrier(pool: IPPool, claims: readonly IPClaim[], pending: readonly IPClaim[]): string | undefined {
  if (pending.some((c) => hasFinalizer(c.metadata, IPCLAIM_FINALIZER))) return undefined;
  return newestResourceVersion([pool, ...claims]);
}

/** Whether resourceVersion `seen` is at or past `barrier` (both integers, as etcd issues them; otherwise false). */
function passed(seen: string, barrier: string): boolean {
  return /^\d+$/.test(seen) && /^\d+$/.test(barrier) && BigInt(seen) >= BigInt(barrier);
}

/** The highest resourceVersion among `objects` (integers, as etcd issues them), or undefined. */
function newestResourceVersion(objects: readonly { metadata: { resourceVersion?: string } }[]): string | undefined {
  let best: bigint | undefined;
  for (const o of objects) {
    const text = o.metadata.resourceVersion;
    if (!text || !/^\d+$/.test(text)) continue;
    const rv = BigInt(text);
    if (best === undefined || rv > best) best = rv;
  }
  return best?.toString();
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
