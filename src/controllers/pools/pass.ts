/**
 * What one pass over one pool shares with the claim lifecycles it drives: the pool and its kind, the allocator, the
 * store, and the confirmation of new records. What a write asks of the next pass it returns (pools/outcome.ts). The
 * lifecycles of the two claim APIs (ippool/api.ts for IPClaims, capi/api.ts for IPAddressClaims) implement
 * {@link ClaimApi}.
 */
import type { ClaimKind } from "../../../api/registry.js";
import type { ObjectMeta, Reason } from "../../../api/v1alpha1/types.js";
import type { Holder, PoolAllocator } from "../../ipam/allocator.js";
import type { BucketChange } from "../../kube/journal.js";
import type { KubeObject } from "../../kube/resource.js";
import type { Logger } from "../../runtime/logger.js";
import type { ControllerMetrics } from "../../runtime/metrics.js";
import type { EventSink } from "../events.js";
import type { Store } from "../store.js";
import type { PoolLocation } from "./indexes.js";
import type { PassOutcome } from "./outcome.js";
import type { ExternalAnswer, ExternalClaim, ExternalHolding, PoolKind, PoolObject, PoolRecord } from "./kind.js";

/** What the pass reads of a claim API's records cache (an Informer of the record type satisfies it). */
export interface RecordCache {
  byIndex(index: string, key: string): PoolRecord[];
  /**
   * The resourceVersion as of which the cache holds every record of a namespace (Informer.observedIn): the newest
   * the watch has delivered, or the first list's snapshot for a namespace that list went past.
   */
  observedIn(namespace: string): string;
  /** False while a list fills the cache: no watch runs then, so no new record's own event comes until it is done. */
  readonly synced: boolean;
  /** Resolves true once the watch has delivered `resourceVersion`, false after `timeoutMs`. */
  waitObserved(resourceVersion: string, timeoutMs: number): Promise<boolean>;
}

/** What the pass asks of a claim API's caches of claims and records (see pools/claimindex.ts). */
export interface ClaimQueries {
  /** The records' informer; undefined while the API is not served (Cluster API's, before discovery). */
  records(): RecordCache | undefined;
  /** The claims of pool `key` (unsorted). */
  claimsOf(key: string): KubeObject[];
  /** The claim cached under `cacheKey` (`<namespace>/<name>`) if it belongs to pool `key`. */
  claimInPool(cacheKey: string, key: string): KubeObject | undefined;
  /** The cache key of the claim `record` was made for, if it names one. */
  claimKeyOf(record: PoolRecord): string | undefined;
  /** Records whose claim is the one cached under `cacheKey`, in pool `key`. */
  recordsOfClaim(cacheKey: string, key: string): PoolRecord[];
  /** What changed among the claims of pool `key` since the last call; undefined when the log overflowed. */
  claimChanges(key: string): BucketChange<KubeObject>[] | undefined;
  /** What changed among the records of pool `key` since the last call; undefined when the log overflowed. */
  recordChanges(key: string): BucketChange<PoolRecord>[] | undefined;
  /** The records of pool `key`. */
  recordsOf(key: string): PoolRecord[];
  /** A live claim with no record yet: the pass will allocate for it. */
  needsAllocation(claim: KubeObject): boolean;
}

/** The two kinds of address records: ipam.metal3.io IPAddress, Cluster API IPAddress. */
export type RecordKind = "IPAddress" | "CapiIPAddress";

/** What the writes of one pass share. */
export interface ApplyContext {
  store: Store;
  events: EventSink;
  log: Logger;
  allocator: PoolAllocator | undefined;
  now: Date;
  /**
   * Set when the records' caches were not known fresh before allocating (spec §3.4): resolves whether a record just
   * created holds its address alone. A claim is bound only to a confirmed record; an unconfirmed one is released.
   */
  confirm?: (kind: RecordKind, created: { metadata: ObjectMeta; spec: { address: string } }) => Promise<boolean>;
  metrics: ControllerMetrics;
}

/** One pass over one pool, as the claim lifecycles see it. */
export interface Pass {
  ctx: ApplyContext;
  kind: PoolKind;
  ref: PoolLocation;
  key: string;
  /** Undefined when the pool does not exist (its claims fail, its orphans are released). */
  pool: PoolObject | undefined;
  /** Set when the pool may not hand out new addresses (deleting); preallocated claims are still served. */
  allocationBlocked?: { reason: Reason; message: string };
  /** The pool's collisions: those found when its allocator was built, then those this pass finds. */
  collisions: string[];
  /** Called for an address skipped because another pool's record bears its name. */
  onCollision: (message: string) => void;
  /** Whether another record of the pool (of either API) holds the address `record` holds. */
  heldByAnother: (record: PoolRecord) => boolean;
  /** For a kind with an external engine: its answers for this pass's claims, by holder name (see ExternalEngine). */
  external?: ReadonlyMap<string, ExternalAnswer>;
}

/** One claim's decision, taken in pass order; the write it returns runs later, a few at a time. */
export interface ClaimWork {
  claim: KubeObject;
  /**
   * Decides; `settled` says the claim is bound and needs no further pass until it or its records change. The write
   * resolves to what it asks of the next pass (NONE when nothing).
   */
  decide: () => { write: () => Promise<PassOutcome>; settled: boolean };
}

/**
 * One claim API's lifecycle, as the pool pass drives it: which claims and records of a pool it has (its `index`), how
 * its records hold addresses, how a claim is decided and applied, and how records of vanished claims are released.
 */
export interface ClaimApi {
  readonly claimKind: ClaimKind;
  readonly recordKind: RecordKind;
  /** The API's cache queries (pools/claimindex.ts answers them for both APIs). */
  readonly index: ClaimQueries;
  /** Whether pools of `kind` take claims of this API. */
  serves(kind: PoolKind): boolean;
  /**
   * Whether `claim` carries the finalizer this API puts on before creating a record: a pending claim that has it is
   * the trace of an allocation whose create answer may have been lost (the barrier then reads at quorum).
   */
  interrupted(claim: KubeObject, kind: PoolKind): boolean;
  /** Who holds `record`'s address, for the allocator. */
  holderOf(record: PoolRecord, pass: Pick<Pass, "kind">): Holder;
  /** Lists the pool's records at `notOlderThan` (undefined: a quorum read) into the cache. */
  listRecords(pass: Pick<Pass, "kind" | "ref" | "key">, notOlderThan: string | undefined): Promise<void>;
  /** The decision for `claim`, taken when the pass reaches it in claim order. */
  work(pass: Pass, claim: KubeObject): ClaimWork;
  /** Releases records this API made for claims that no longer exist: among `candidates`, or all of the pool's. */
  cleanupOrphans(pass: Pass, candidates?: readonly PoolRecord[]): Promise<void>;
  /**
   * For pools whose kind has an external engine: `claim` as the engine is asked for it, when this pass would give it
   * a new address (live, unpaused, no record yet); undefined otherwise. Absent for APIs that never use such kinds.
   */
  externalClaim?(pass: Pass, claim: KubeObject): ExternalClaim | undefined;
  /**
   * For such pools: every live claim of the pool with the address its record holds (none while pending) and that
   * record's annotations.
   */
  externalHoldings?(pass: Pass): ExternalHolding[];
}
