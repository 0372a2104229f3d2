/**
 * The pool-keyed reconciler (spec §3.3 to §4), for pools of every kind. One call handles everything of one pool: its
 * metadata, every claim of every claim API that names it, orphaned records, deletion and status. The work queue
 * guarantees one call per pool at a time, which serialises all allocation decisions of a pool; the store's
 * read-your-writes makes each decision see the last. What a kind means is asked of its {@link PoolKind}; what a claim
 * API does is its {@link ClaimApi}.
 */
import { Reasons } from "../../../api/v1alpha1/types.js";
import { keyOf, type Informer } from "../../kube/informer.js";
import type { KubeObject } from "../../kube/resource.js";
import type { Logger } from "../../runtime/logger.js";
import { noMetrics, type ControllerMetrics } from "../../runtime/metrics.js";
import type { ReconcileResult } from "../../runtime/workqueue.js";
import { pauseState } from "../clusters.js";
import type { EventSink } from "../events.js";
import { byCreationThenName, isDeleting } from "../meta.js";
import type { Store } from "../store.js";
import { freshnessBarrier, holdersOf } from "./barrier.js";
import {
  allClaims,
  anyChange,
  applyRecordChanges,
  FULL_PASS_INTERVAL_MS,
  orphanCandidates,
  pendingClaims,
  plannedClaims,
  poolFingerprint,
  type ApiChanges,
  type PoolState,
} from "./state.js";
import { parsePoolKey, type PoolLocation } from "./indexes.js";
import type { PoolKind, PoolObject, PoolRecord } from "./kind.js";
import { mergeOutcomes, NONE, wakeIn, type PassOutcome } from "./outcome.js";
import type { ApplyContext, ClaimApi, Pass } from "./pass.js";
import type { PoolKinds } from "./registry.js";
import { decideWithEngine, type ClaimStep } from "./external.js";
import { decideInSlices } from "./slices.js";
import { WriteRunner } from "./writes.js";

export interface PoolReconcilerOptions {
  metrics?: ControllerMetrics;
  /** Claim writes of one pass run this many at a time (decisions stay sequential). Default 32. */
  writeConcurrency?: number;
  clock?: () => Date;
}

/**
 * Minimum time between two status writes of one pool whose conditions did not change, for pools of up to 1,000
 * records. Each write carries the pool's whole view (Metal3: `indexes`, one entry per claim) back to us and to every
 * watcher, and computing it walks every record, so in a trickle of claims a write per claim made each claim cost in
 * proportion to the pool. The status is a view rebuilt from records: nobody decides from it (Metal3's controller,
 * after a rollback, rebuilds it from IPAddresses; `kubectl ipam` reads records; our metrics come from the same
 * computation), so it may trail the records by this much.
 */
export const STATUS_WRITE_INTERVAL_MS = 2_000;
/**
 * In pools of more than 1,000 records the interval grows with the pool, two milliseconds per record, up to
 * {@link MAX_STATUS_WRITE_INTERVAL_MS}, so a status write, whose cost is in proportion to the pool, costs each claim of
 * a trickle about the same whatever the pool's size. Two rather than one because at one the writes' answers, their
 * watch events and the garbage they leave still made a claim into a large pool cost clearly more than one into an
 * empty pool (the trickle's figures are in docs/benchmarks.md).
 */
export const MAX_STATUS_WRITE_INTERVAL_MS = 30_000;

/** The status write interval of a pool holding `records` records. */
export function statusWriteInterval(records: number): number {
  return Math.min(MAX_STATUS_WRITE_INTERVAL_MS, Math.max(STATUS_WRITE_INTERVAL_MS, 2 * records));
}

export class PoolReconciler {
  /** When each pool's status was last written (its key), for {@link STATUS_WRITE_INTERVAL_MS}. */
  private readonly statusWrittenAt = new Map<string, number>();
  /** What each pool's passes keep between them (pools/state.ts), by pool key. */
  private readonly states = new Map<string, PoolState>();
  /** Pools whose next pass must be full. */
  private readonly fullNext = new Set<string>();

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

  /**
   * Whether a pass of pool `key` may run while the first lists still run: its kind is served and every cache the
   * pass reads holds all of the pool's namespace (Store.covers); never for a cluster-scoped pool.
   */
  listedFor(key: string): boolean {
    const target = this.resolve(key);
    if (!target) return false;
    const namespace = target.ref.namespace;
    return target.pools.covers(namespace) && this.store.covers(namespace);
  }

  /** The pool a key names, its kind and the kind's informer; undefined for a kind not served (yet). */
  private resolve(key: string): { ref: PoolLocation; kind: PoolKind; pools: Informer<PoolObject> } | undefined {
    const ref = parsePoolKey(key);
    const kind = ref && this.kinds.find(ref.group, ref.kind);
    // A kind whose informer is not running (its CRD not served yet) has nothing to decide from.
    const pools = kind && this.store.poolInformer(kind);
    return ref && kind && pools ? { ref, kind, pools } : undefined;
  }

  private async reconcilePool(
    key: string,
    ref: PoolLocation,
    kind: PoolKind,
    pools: Informer<PoolObject>,
  ): Promise<ReconcileResult> {
    const log = this.logger.child({ controller: "ippool", kind: ref.kind, namespace: ref.namespace, name: ref.name });
    let pool = pools.get(ref.namespace, ref.name) ?? (await this.confirmMissing(key, ref, kind, pools));
    const pause = pool ? pauseState(pool.metadata, kind.clusterName(pool), this.store.lookupCluster) : undefined;
    if (pool && !isDeleting(pool.metadata))
      pool = await this.ensurePoolMetadata(kind, pools, pool, pause?.paused === false);
    if (pause?.paused) {
      log.debug("Pool is paused", { why: pause.why });
      return;
    }
    const apis = this.apis.filter((api) => api.serves(kind) && api.index.records() !== undefined);
    const metrics = this.options.metrics ?? noMetrics;
    const ctx: ApplyContext = {
      store: this.store,
      events: this.events,
      log,
      allocator: undefined,
      now: this.now(),
      metrics,
    };
    const collisions: string[] = [];
    const pass = this.passFor(ctx, kind, ref, key, pool, collisions);
    try {
      const outcome = await this.runPass(pass, apis, pools, pool);
      if (outcome.requeue) this.fullNext.add(key);
      return requeueOf(outcome);
    } catch (err) {
      // Changes taken from the logs may be half applied: the next pass starts over from the whole cache.
      this.fullNext.add(key);
      throw err;
    }
  }

  /**
   * One pass, full or incremental (pools/state.ts): which claims to plan, the barrier, the allocator, the decisions,
   * orphans, then deletion or status. Resolves to what the decisions' writes, the status step and the engine's
   * backoff ask of the next pass, merged.
   */
  private async runPass(
    pass: Pass,
    apis: readonly ClaimApi[],
    pools: Informer<PoolObject>,
    pool: PoolObject | undefined,
  ): Promise<PassOutcome> {
    const { ctx, key } = pass;
    const changes = new Map(apis.map((api): [ClaimApi, ApiChanges] => [api, this.takeChanges(api, key)]));
    const kept = pool ? this.states.get(key) : undefined;
    const full = !pool || !kept || this.needsFullPass(key, pool, kept, changes);
    // Unsorted: reconcileClaims puts the decisions in order.
    const claims = full ? allClaims(apis, key) : plannedClaims(apis, key, kept, changes);
    const confirm = await freshnessBarrier(pass, apis, claims);
    if (confirm) ctx.confirm = confirm;
    const state = await this.stateFor(pass, apis, pool, full ? undefined : kept, changes);
    let outcome = await this.reconcileClaims(pass, claims, state, pool);
    for (const api of apis) await api.cleanupOrphans(pass, full ? undefined : orphanCandidates(api, key, changes));
    if (pool && isDeleting(pool.metadata)) await this.finishDeletion(pass, apis, pools, pool);
    else if (pool && state)
      outcome = mergeOutcomes(outcome, await this.writePoolStatus(pass, apis, pools, pool, state, full));
    return mergeOutcomes(outcome, this.retryFailingEngine(pass, pool));
  }

  /**
   * The state this pass decides with: built anew (a full pass: `kept` undefined), advanced (incremental), or none
   * (the pool is gone: what was kept about it is forgotten). The pass's collisions start with the state's.
   */
  private async stateFor(
    pass: Pass,
    apis: readonly ClaimApi[],
    pool: PoolObject | undefined,
    kept: PoolState | undefined,
    changes: Map<ClaimApi, ApiChanges>,
  ): Promise<PoolState | undefined> {
    const { ctx, key } = pass;
    if (!pool) {
      this.states.delete(key);
      // Every kind's per-pool series are labelled by its ref: one forget serves them all.
      ctx.metrics.poolGone(pass.ref);
      this.statusWrittenAt.delete(key);
      pass.kind.external?.forget(pass.ref);
      return undefined;
    }
    const state = kept ? this.advanceState(pass, apis, kept, changes) : await this.buildState(pass, apis, pool);
    this.states.set(key, state);
    state.statusStale ||= !kept || anyChange(changes);
    ctx.allocator = state.allocator;
    pass.collisions.push(...state.collisions);
    return state;
  }

  /** A pool whose engine failed runs again after the engine's backoff, as a full pass (it asks the engine afresh). */
  private retryFailingEngine(pass: Pass, pool: PoolObject | undefined): PassOutcome {
    const outcome = engineRetry(pass.kind, pool);
    if (outcome !== NONE) this.fullNext.add(pass.key);
    return outcome;
  }

  /**
   * A pool missing from the cache while claims name it may only be late: pools come on a watch of their own, and a
   * claim created right after its pool can arrive first. Failing the claims then ("not found", an Event) would be
   * wrong, so the pool is read from the API server before its claims are failed. Without claims nothing is read, nor
   * for the empty name: its key collects the claims that name no pool (their lifecycles fail them), and no object of
   * that name can exist.
   */
  private async confirmMissing(
    key: string,
    ref: PoolLocation,
    kind: PoolKind,
    pools: Informer<PoolObject>,
  ): Promise<PoolObject | undefined> {
    if (!ref.name) return undefined;
    const claimed = this.apis.some((api) => api.serves(kind) && api.index.claimsOf(key).length > 0);
    return claimed ? await this.store.fetch(pools, ref.namespace, ref.name) : undefined;
  }

  /** Everything that changed in pool `key` for `api` since its last pass (taken out of the logs). */
  private takeChanges(api: ClaimApi, key: string): ApiChanges {
    return { claims: api.index.claimChanges(key), records: api.index.recordChanges(key) };
  }

  /** Whether this pass must start over from the whole cache (see pools/state.ts). */
  private needsFullPass(
    key: string,
    pool: PoolObject,
    kept: PoolState,
    changes: ReadonlyMap<ClaimApi, ApiChanges>,
  ): boolean {
    const asked = this.fullNext.delete(key);
    const overflowed = [...changes.values()].some((c) => c.claims === undefined || c.records === undefined);
    // A claim API served since the state was built (Cluster API's CRDs installed later) was never walked.
    const newApi = [...changes.keys()].some((api) => !kept.unsettled.has(api));
    return (
      asked ||
      overflowed ||
      newApi ||
      isDeleting(pool.metadata) ||
      kept.fingerprint !== poolFingerprint(pool) ||
      Date.now() - kept.builtAt > FULL_PASS_INTERVAL_MS
    );
  }

  /** Asks for a full pass of pool `key` next time (a Cluster it depends on changed). */
  markFull(key: string): void {
    this.fullNext.add(key);
  }

  /**
   * A full pass's state: the allocator built from the spec with every record of the pool reserved, then what other
   * pools stand in the way of. The change logs are emptied in the same synchronous step: everything they held is in
   * the cache the allocator was just built from.
   */
  private async buildState(pass: Pass, apis: readonly ClaimApi[], pool: PoolObject): Promise<PoolState> {
    const kctx = { store: this.store, log: pass.ctx.log };
    const allocator = await pass.kind.openAllocator(pool, kctx);
    // Before the records are read into the allocator, so no await falls between reading them and deciding.
    const engine = pass.kind.external;
    if (engine?.settle)
      await engine.settle(
        pool,
        apis.flatMap((api) => api.externalHoldings?.(pass) ?? []),
        kctx,
      );
    for (const api of apis) {
      for (const record of api.index.recordsOf(pass.key))
        allocator.reserve(record.spec.address, api.holderOf(record, pass));
      api.index.recordChanges(pass.key);
    }
    const collisions = pass.kind.reserveForeign?.(pool, allocator, kctx) ?? [];
    const unsettled = new Map(apis.map((api) => [api, new Set<string>()]));
    return {
      fingerprint: poolFingerprint(pool),
      allocator,
      collisions,
      unsettled,
      builtAt: Date.now(),
      statusStale: true,
    };
  }

  /**
   * An incremental pass's state: the kept allocator brought up to date with the records that changed, those taken
   * before the barrier and those the barrier itself brought in (taken now, in the synchronous step before deciding).
   */
  private advanceState(
    pass: Pass,
    apis: readonly ClaimApi[],
    kept: PoolState,
    changes: ReadonlyMap<ClaimApi, ApiChanges>,
  ): PoolState {
    for (const api of apis) {
      applyRecordChanges(kept.allocator, api, pass, changes.get(api)?.records ?? []);
      const late = api.index.recordChanges(pass.key) ?? [];
      applyRecordChanges(kept.allocator, api, pass, late);
      changes.get(api)?.records?.push(...late);
    }
    return kept;
  }

  private now(): Date {
    return this.options.clock?.() ?? new Date();
  }

  private passFor(
    ctx: ApplyContext,
    kind: PoolKind,
    ref: PoolLocation,
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
      collisions,
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
   * Decides claim by claim (every API, one deterministic order), then applies the writes a few at a time. A claim not
   * bound by its decision is kept in `state.unsettled`, so incremental passes plan it again until it is. For a kind
   * with an external engine (NetBox), the engine is asked for the claims to give an address segment by segment, each
   * before its claims are decided, and the writes of a segment run while the next is asked (pools/external.ts). A
   * long pass gives the event loop a turn between decisions now and then (pools/slices.ts).
   */
  private async reconcileClaims(
    pass: Pass,
    claims: ReadonlyMap<ClaimApi, readonly KubeObject[]>,
    state: PoolState | undefined,
    pool: PoolObject | undefined,
  ): Promise<PassOutcome> {
    // Decisions run in claim order (creation, then name) across the APIs, so no API starves another.
    const steps = [...claims]
      .flatMap(([api, list]) => list.map((claim): ClaimStep => stepOf(pass, api, claim, state)))
      .sort((a, b) => byCreationThenName(a.claim, b.claim));
    const concurrency = this.options.writeConcurrency ?? 32;
    const engine = pass.kind.external;
    if (engine && pool && state && !pass.allocationBlocked) {
      const kindContext = { store: this.store, log: pass.ctx.log };
      return await decideWithEngine(pass, pool, engine, steps, kindContext, concurrency);
    }
    const runner = new WriteRunner(concurrency);
    for (const write of await decideInSlices(steps)) runner.add(write);
    return await runner.drain();
  }

  /** A deleting pool keeps its kind's finalizer until no record (of any API) references it. */
  private async finishDeletion(
    pass: Pass,
    apis: readonly ClaimApi[],
    pools: Informer<PoolObject>,
    pool: PoolObject,
  ): Promise<void> {
    const remaining = apis.reduce((n, api) => n + api.index.recordsOf(pass.key).length, 0);
    if (remaining > 0) {
      pass.ctx.log.info("Pool deletion waits for its IPAddresses", { remaining });
      return;
    }
    // The engine's own holdings of the pool go before the pool does; when they cannot yet, its backoff brings the
    // pool back (retryFailingEngine).
    const released = (await pass.kind.external?.releasePool?.(pool, pass.ctx)) ?? true;
    if (!released) return;
    await this.store.removeFinalizer(pools, pool, pass.kind.finalizers.pool);
  }

  /**
   * Computes and writes the pool's status when something it shows may have changed. The status is a view rebuilt
   * from every record (Metal3's `indexes` lists every claim), so an incremental pass does not compute it while a
   * write would be held back anyway: it leaves it to the pass queued for when the write is due (the wake it
   * returns), which then computes it once for every change in between. A full pass, or a new collision (a
   * condition), computes it at once.
   */
  private async writePoolStatus(
    pass: Pass,
    apis: readonly ClaimApi[],
    pools: Informer<PoolObject>,
    pool: PoolObject,
    state: PoolState,
    full: boolean,
  ): Promise<PassOutcome> {
    const { ctx, key } = pass;
    if (!state.statusStale) return NONE;
    const newCollision = pass.collisions.length > state.collisions.length;
    const waitMs = full || newCollision ? 0 : this.statusDeferral(key, state);
    if (waitMs > 0) return wakeIn(waitMs);
    const of = (claimKind: string): ClaimApi | undefined => apis.find((api) => api.claimKind === claimKind);
    const pendingOf = (api: ClaimApi | undefined): number =>
      api ? pendingClaims(api, key, state.unsettled.get(api) ?? new Set()) : 0;
    const records = {
      addresses: of("IPClaim")?.index.recordsOf(key) ?? [],
      capiAddresses: of("IPAddressClaim")?.index.recordsOf(key) ?? [],
      pending: { IPClaim: pendingOf(of("IPClaim")), IPAddressClaim: pendingOf(of("IPAddressClaim")) },
    };
    const input = { ref: pass.ref, records, allocator: state.allocator, collisions: pass.collisions, now: ctx.now };
    const decision = pass.kind.desiredStatus(pool, { ...input, metrics: ctx.metrics });
    state.statusStale = false;
    if (!decision) return NONE;
    const deferMs = decision.viewOnly ? this.statusDeferral(key, state) : 0;
    if (deferMs > 0) {
      state.statusStale = true;
      return wakeIn(deferMs);
    }
    this.statusWrittenAt.set(key, Date.now());
    await this.store.patchStatus(pools, pool, decision.patch);
    if (decision.notReady) {
      this.events.record(pool, "Warning", decision.notReady.reason, decision.notReady.message);
      ctx.log.warn("Pool is not ready", decision.notReady);
    }
    return NONE;
  }

  /** How long to hold back a view-only status write: until {@link statusWriteInterval} after the last write. */
  private statusDeferral(key: string, state: PoolState): number {
    const last = this.statusWrittenAt.get(key);
    const interval = statusWriteInterval(state.allocator.heldCount);
    return last === undefined ? 0 : Math.max(0, last + interval - Date.now());
  }
}

/** One claim's decision, recording in `state.unsettled` whether the claim is bound; its write comes back. */
function stepOf(pass: Pass, api: ClaimApi, object: KubeObject, state: PoolState | undefined): ClaimStep {
  const { claim, decide } = api.work(pass, object);
  return {
    api,
    claim,
    decide: () => {
      const { write, settled } = decide();
      const unsettled = state?.unsettled.get(api);
      if (settled) unsettled?.delete(keyOf(claim));
      else unsettled?.add(keyOf(claim));
      return write;
    },
  };
}

/** How soon after a lost race the pool runs again, in ms. */
export const LOST_RACE_REQUEUE_MS = 200;

/**
 * When the pool should run again: the soonest of soon after a lost race and the pass's earliest wake (a held-back
 * status write due, a reuse grace period's end, a failing engine's backoff); undefined when nothing waits. Pure.
 */
export function requeueOf(outcome: PassOutcome): ReconcileResult {
  const race = outcome.requeue ? LOST_RACE_REQUEUE_MS : Infinity;
  const after = Math.min(race, outcome.wakeInMs ?? Infinity);
  return after === Infinity ? undefined : { requeueAfterMs: after };
}

/** What a failing engine asks of the pool's next pass: to run after its backoff (NONE without a pool or a failure). */
export function engineRetry(kind: Pick<PoolKind, "external">, pool: PoolObject | undefined): PassOutcome {
  const retryAfterMs = pool && kind.external?.retryAfterMs(pool);
  return retryAfterMs === undefined ? NONE : wakeIn(retryAfterMs);
}
