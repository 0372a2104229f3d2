/**
 * The pool-keyed reconciler (spec §3.3 to §4), for pools of every kind. One call handles everything of one pool: its
 * metadata, every claim of every claim API that names it, orphaned records, deletion and status. The work queue
 * guarantees one call per pool at a time, which serialises all allocation decisions of a pool; the store's
 * read-your-writes makes each decision see the last. What a kind means is asked of its {@link PoolKind}; what a claim
 * API does is its {@link ClaimApi}.
 */
import { Reasons } from "../../../api/v1alpha1/types.js";
import type { PoolAllocator } from "../../ipam/allocator.js";
import { describeError } from "../../kube/errors.js";
import type { Informer } from "../../kube/informer.js";
import type { KubeObject } from "../../kube/resource.js";
import type { Logger } from "../../runtime/logger.js";
import { noMetrics, type ControllerMetrics } from "../../runtime/metrics.js";
import type { ReconcileResult } from "../../runtime/workqueue.js";
import { pauseState } from "../clusters.js";
import type { EventSink } from "../events.js";
import { byCreationThenName, isDeleting } from "../meta.js";
import type { Store } from "../store.js";
import { freshnessBarrier, holdersOf } from "./barrier.js";
import { parsePoolKey, type PoolRef } from "./indexes.js";
import type { PoolKind, PoolObject, PoolRecord } from "./kind.js";
import type { ApplyContext, ClaimApi, Pass } from "./pass.js";
import type { PoolKinds } from "./registry.js";

export interface PoolReconcilerOptions {
  metrics?: ControllerMetrics;
  /** Claim writes of one pass run this many at a time (decisions stay sequential). Default 32. */
  writeConcurrency?: number;
  clock?: () => Date;
}

/**
 * Minimum time between two status writes of one pool whose conditions did not change. Each write carries the pool's
 * whole view (Metal3: `indexes`, one entry per claim) back to us and to every watcher, so in a trickle of claims a
 * write per claim made each claim cost in proportion to the pool. The status is a view rebuilt from records: nobody
 * decides from it (Metal3's controller, after a rollback, rebuilds it from IPAddresses; `kubectl ipam` reads records;
 * our metrics come from this pass), so it may trail the records by this much.
 */
export const STATUS_WRITE_INTERVAL_MS = 2_000;

export class PoolReconciler {
  /** When each pool's status was last written (its key), for {@link STATUS_WRITE_INTERVAL_MS}. */
  private readonly statusWrittenAt = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly kinds: PoolKinds,
    private readonly apis: readonly ClaimApi[],
    private readonly events: EventSink,
    private readonly logger: Logger,
    private readonly options: PoolReconcilerOptions = {},
  ) {}

  async reconcile(key: string): Promise<ReconcileResult> {
    const target = this.resolve(key);
    return target ? await this.reconcilePool(key, target.ref, target.kind, target.pools) : undefined;
  }

  /** The pool a key names, its kind and the kind's informer; undefined for a kind not served (yet). */
  private resolve(key: string): { ref: PoolRef; kind: PoolKind; pools: Informer<PoolObject> } | undefined {
    const ref = parsePoolKey(key);
    const kind = ref && this.kinds.find(ref.group, ref.kind);
    // A kind whose informer is not running (its CRD not served yet) has nothing to decide from.
    const pools = kind && this.store.poolInformer(kind);
    return ref && kind && pools ? { ref, kind, pools } : undefined;
  }

  private async reconcilePool(
    key: string,
    ref: PoolRef,
    kind: PoolKind,
    pools: Informer<PoolObject>,
  ): Promise<ReconcileResult> {
    const log = this.logger.child({ controller: "ippool", kind: ref.kind, namespace: ref.namespace, name: ref.name });
    let pool = pools.get(ref.namespace, ref.name);
    const pause = pool ? pauseState(pool.metadata, kind.clusterName(pool), this.store.lookupCluster) : undefined;
    if (pool && !isDeleting(pool.metadata))
      pool = await this.ensurePoolMetadata(kind, pools, pool, pause?.paused === false);
    if (pause?.paused) {
      log.debug("Pool is paused", { why: pause.why });
      return;
    }
    const apis = this.apis.filter((api) => api.serves(kind) && api.records() !== undefined);
    // Unsorted: reconcileClaims puts the decisions in order.
    const claims = new Map(apis.map((api) => [api, api.claimsOf(key)]));
    const metrics = this.options.metrics ?? noMetrics;
    const ctx: ApplyContext = {
      store: this.store,
      events: this.events,
      log,
      allocator: undefined,
      now: this.now(),
      requeue: false,
      metrics,
    };
    const collisions: string[] = [];
    const pass = this.passFor(ctx, kind, ref, key, pool, collisions);
    const confirm = await freshnessBarrier(pass, apis, claims);
    if (confirm) ctx.confirm = confirm;
    ctx.allocator = pool ? await this.buildAllocator(pass, apis, pool, collisions) : undefined;
    if (!pool) {
      kind.forget?.(ref, metrics);
      this.statusWrittenAt.delete(key);
    }
    await this.reconcileClaims(pass, claims);
    for (const api of apis) await api.cleanupOrphans(pass);
    if (pool && isDeleting(pool.metadata)) await this.finishDeletion(pass, apis, pools, pool);
    else if (pool && ctx.allocator) await this.writePoolStatus(pass, apis, pools, pool, ctx.allocator, collisions);
    const after = [ctx.requeue ? 200 : undefined, ctx.statusDueInMs].filter((ms) => ms !== undefined);
    return after.length > 0 ? { requeueAfterMs: Math.min(...after) } : undefined;
  }

  private now(): Date {
    return this.options.clock?.() ?? new Date();
  }

  private passFor(
    ctx: ApplyContext,
    kind: PoolKind,
    ref: PoolRef,
    key: string,
    pool: PoolObject | undefined,
    collisions: string[],
  ): Pass {
    const deleting = pool !== undefined && isDeleting(pool.metadata);
    const blocked = deleting
      ? { reason: Reasons.PoolNotReady, message: `${kind.descriptor.kind} ${ref.name} is being deleted` }
      : pool && kind.allocationBlocked?.(pool);
    return {
      ctx,
      kind,
      ref,
      key,
      pool,
      ...(blocked ? { allocationBlocked: blocked } : {}),
      onCollision: (message) => void collisions.push(message),
      heldByAnother: (record) =>
        this.holdersOf(key, record.spec.address).some((r) => r.metadata.uid !== record.metadata.uid),
    };
  }

  /**
   * The kind's pool metadata (its finalizer once unpaused; Metal3 also Cluster labels and owner reference, even
   * while paused, spec §4), written with the resourceVersion it was decided on.
   */
  private async ensurePoolMetadata(
    kind: PoolKind,
    pools: Informer<PoolObject>,
    pool: PoolObject,
    unpaused: boolean,
  ): Promise<PoolObject> {
    const clusterName = kind.clusterName(pool);
    const cluster = clusterName ? this.store.lookupCluster(pool.metadata.namespace ?? "", clusterName) : undefined;
    const patch = kind.poolMetadata(pool, cluster, unpaused);
    return patch ? await this.store.patchMetadata(pools, pool, patch) : pool;
  }

  /** Every record of any claim API in pool `key` that holds `address`. */
  private holdersOf(key: string, address: string): PoolRecord[] {
    return holdersOf(this.apis, key, address);
  }

  /**
   * Every record of the pool holds its address for its claim, whoever made it (person-made reservations, adopted
   * records, Metal3's); then the kind reserves what other pools stand in the way of, reported as collisions.
   */
  private async buildAllocator(
    pass: Pass,
    apis: readonly ClaimApi[],
    pool: PoolObject,
    collisions: string[],
  ): Promise<PoolAllocator> {
    const kctx = { store: this.store, log: pass.ctx.log };
    const allocator = await pass.kind.openAllocator(pool, kctx);
    for (const api of apis)
      for (const record of api.recordsOf(pass.key)) allocator.reserve(record.spec.address, api.holderOf(record, pass));
    collisions.push(...(pass.kind.reserveForeign?.(pool, allocator, kctx) ?? []));
    return allocator;
  }

  /** Decides claim by claim (every API, one deterministic order), then applies the writes a few at a time. */
  private async reconcileClaims(pass: Pass, claims: ReadonlyMap<ClaimApi, readonly KubeObject[]>): Promise<void> {
    const work = [...claims].flatMap(([api, list]) => list.map((claim) => api.work(pass, claim)));
    // Decisions run in claim order (creation, then name) across the APIs, so no API starves another.
    const writes = work.sort((a, b) => byCreationThenName(a.claim, b.claim)).map((w) => w.decide());
    await runLimited(writes, this.options.writeConcurrency ?? 32, (write) => write());
  }

  /** A deleting pool keeps its kind's finalizer until no record (of any API) references it. */
  private async finishDeletion(
    pass: Pass,
    apis: readonly ClaimApi[],
    pools: Informer<PoolObject>,
    pool: PoolObject,
  ): Promise<void> {
    const remaining = apis.reduce((n, api) => n + api.recordsOf(pass.key).length, 0);
    if (remaining > 0) {
      pass.ctx.log.info("Pool deletion waits for its IPAddresses", { remaining });
      return;
    }
    await this.store.removeFinalizer(pools, pool, pass.kind.finalizers.pool);
  }

  private async writePoolStatus(
    pass: Pass,
    apis: readonly ClaimApi[],
    pools: Informer<PoolObject>,
    pool: PoolObject,
    allocator: PoolAllocator,
    collisions: string[],
  ): Promise<void> {
    const { ctx, key } = pass;
    const of = (claimKind: string): ClaimApi | undefined => apis.find((api) => api.claimKind === claimKind);
    const records = {
      addresses: of("IPClaim")?.recordsOf(key) ?? [],
      capiAddresses: of("IPAddressClaim")?.recordsOf(key) ?? [],
      pending: { IPClaim: of("IPClaim")?.pending(key) ?? 0, IPAddressClaim: of("IPAddressClaim")?.pending(key) ?? 0 },
    };
    const decision = pass.kind.desiredStatus(pool, {
      records,
      allocator,
      collisions,
      now: ctx.now,
      metrics: ctx.metrics,
    });
    if (!decision) return;
    const deferMs = decision.viewOnly ? this.statusDeferral(key) : 0;
    if (deferMs > 0) {
      ctx.statusDueInMs = deferMs;
      return;
    }
    this.statusWrittenAt.set(key, Date.now());
    await this.store.patchStatus(pools, pool, decision.patch);
    if (decision.notReady) {
      this.events.record(pool, "Warning", decision.notReady.reason, decision.notReady.message);
      ctx.log.warn("Pool is not ready", decision.notReady);
    }
  }

  /** How long to hold back a view-only status write: until {@link STATUS_WRITE_INTERVAL_MS} after the last write. */
  private statusDeferral(key: string): number {
    const last = this.statusWrittenAt.get(key);
    return last === undefined ? 0 : Math.max(0, last + STATUS_WRITE_INTERVAL_MS - Date.now());
  }
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
