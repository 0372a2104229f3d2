/**
 * The seam between the pool pass and the kinds of pool it serves. A pool kind says what its spec means as an address
 * space, how its pool's metadata and status look, and how the records of its claims are named and shaped; the claim
 * lifecycles (IPClaim in ippool/, IPAddressClaim in capi/) and the pass itself (reconciler.ts) are written once and
 * ask the kind. Adding a kind is one adapter and one line in registry.ts (docs/architecture.md, "A new pool kind").
 */
import type { ResourceDescriptor } from "../../../api/registry.js";
import type { ObjectMeta, Reason } from "../../../api/v1alpha1/types.js";
import type { PoolAllocator } from "../../ipam/allocator.js";
import type { KubeObject } from "../../kube/resource.js";
import type { Logger } from "../../runtime/logger.js";
import type { ControllerMetrics } from "../../runtime/metrics.js";
import type { Cluster } from "../clusters.js";
import type { PoolObject, Store } from "../store.js";
import { poolKeyOf, type PoolLocation } from "./indexes.js";

// A pool of any kind (declared where the store keeps it): the pass reads its metadata; only its kind reads spec and
// status. Exported here too, with the rest of the contract kinds implement.
export type { PoolObject };

/** Every record of an allocation (ipam.metal3.io IPAddress, Cluster API IPAddress) as the pass sees it. */
export interface PoolRecord {
  metadata: ObjectMeta;
  spec: { address: string };
}

/** The records of one pool, per claim API, as a pass leaves them (for status and metrics). */
export interface PoolRecords {
  /** ipam.metal3.io IPAddresses (Metal3 pools only; empty for other kinds). */
  readonly addresses: readonly PoolRecord[];
  /** Cluster API IPAddresses referring to the pool. */
  readonly capiAddresses: readonly PoolRecord[];
  /** Live claims of the pool, per claim API, that no record names yet. */
  readonly pending: { readonly IPClaim: number; readonly IPAddressClaim: number };
}

/** What a kind's status writer is told by the pass. */
export interface StatusInput {
  /** The pool, as its per-pool metrics series name it (`PoolLabels`: kind, namespace, name). */
  ref: PoolLocation;
  records: PoolRecords;
  allocator: PoolAllocator;
  /** Addresses skipped because another pool's record bears their name (Metal3's shared namePrefix). */
  collisions: readonly string[];
  now: Date;
  metrics: ControllerMetrics;
}

/** The status a pool should have, as a merge patch of `status`, or nothing to write. */
export interface StatusDecision {
  /** The body of the status merge patch. */
  patch: object;
  /**
   * Whether only the view changed (counts, lists), nothing a person or a condition would act on: such writes are
   * coalesced (STATUS_WRITE_INTERVAL_MS). A first write, or a change of conditions, goes at once.
   */
  viewOnly: boolean;
  /** A Ready=False the pool newly reports: the pass records it as a Warning Event and logs it. */
  notReady?: { reason: string; message: string };
}

/** What kinds may read besides their pool: the caches, for lookups that span pools (Metal3's name collisions). */
export interface KindContext {
  store: Store;
  log: Logger;
}

/** A claim about to be given a new address by an engine outside Kubernetes (see {@link ExternalEngine}). */
export interface ExternalClaim {
  /** The claim's name in the allocator (see capiHolderName): how the pass finds the engine's answer. */
  holder: string;
  claim: KubeObject;
  /** The claim's Cluster, when it names one (recorded in the engine for people). */
  cluster: string | undefined;
}

/**
 * The engine's answer for one claim: the address it recorded for the claim (and annotations the claim's new record
 * carries: NetBox names its record there), or why there is none.
 */
export type ExternalAnswer =
  | { ok: true; address: string; annotations?: Readonly<Record<string, string>> }
  | { ok: false; reason: Reason; message: string };

/**
 * An engine outside Kubernetes that decides addresses (NetBox): the pass asks it for every claim it is about to give
 * an address, in calls of up to ENGINE_SEGMENT claims in decision order, each before it decides those claims (the
 * writes of one segment run while the next is asked: pools/external.ts), and decides with the engine's addresses as
 * the claims' requests, so the allocator still refuses an address another record of the pool holds. Contract:
 * - `obtain` is idempotent per claim: a claim asked for again (a lost answer, a crash before its record was created,
 *   a retry) gets the address the engine already recorded for it, never a second one. It never throws for one
 *   claim's sake: failures are answers; it throws only when nothing could be asked (the pass then backs off).
 * - `release` gives the engine back whatever it recorded for a claim that is gone; absent records are done.
 */
export interface ExternalEngine<P extends PoolObject = PoolObject> {
  obtain(pool: P, claims: readonly ExternalClaim[], ctx: KindContext): Promise<Map<string, ExternalAnswer>>;
  /** Releases what the engine recorded for the claim `claim` (namespace, name, cluster) of `pool`. */
  release(pool: P, claim: ClaimIdentity, ctx: KindContext): Promise<void>;
  /**
   * Optional, on a full pass (after `openAllocator`): given every live claim of the pool and the address each is bound
   * to (with that record's annotations), lets the engine put its own records in order (NetBox: a second record of
   * one claim, left by a request that committed after a controller was killed; a moved claim's record taken over).
   * Never touches what no live claim names.
   */
  settle?(pool: P, claims: readonly ExternalHolding[], ctx: KindContext): Promise<void>;
  /**
   * Set while the engine's last call for `pool` failed, or while it wants to look again (NetBox: soon after a restart,
   * and while it is full): how long to wait before the pool runs again, as a full pass. Undefined otherwise.
   */
  retryAfterMs(pool: P): number | undefined;
  /**
   * The pool `ref` is gone from the cluster: the engine drops whatever it keeps for it (its view of the engine's
   * records, its connections when no other pool uses them), so pools created and deleted leave nothing behind.
   */
  forget(ref: PoolLocation): void;
  /**
   * Optional: the pool is being deleted and no record of it is left: the engine gives back what it holds for the pool
   * itself (NetBox: the addresses it reserved). Resolves false when it could not (the engine's failure, retried after
   * its backoff: retryAfterMs); the pool keeps its finalizer until it resolves true.
   */
  releasePool?(pool: P, ctx: KindContext): Promise<boolean>;
}

/** A live claim as ExternalEngine.settle sees it: bound to `address` by a record with `annotations`, or pending. */
export type ExternalHolding = ClaimIdentity & {
  address?: string | undefined;
  annotations?: Readonly<Record<string, string>> | undefined;
};

/** Who a record in an external engine was made for: what survives `clusterctl move` (names, not uids). */
export interface ClaimIdentity {
  namespace: string;
  name: string;
  /** The claim's Cluster (spec.clusterName or the cluster-name label), when it names one. */
  cluster: string | undefined;
}

/**
 * How a kind's claims and records behave, stated once per kind: Metal3's IPPool ({@link METAL3_STYLE}) or the
 * Cluster API provider's pools (in-cluster, NetBox: {@link PROVIDER_STYLE}). Each answer is read in one place.
 */
export interface RecordStyle {
  /** Whether Metal3 IPClaims may use pools of this kind (only Metal3's IPPool: IPClaim names a pool by name alone). */
  readonly servesIPClaims: boolean;
  /**
   * Whether a record's name follows from its address alone (Metal3's `<namePrefix>-<address>`): a second record for an
   * address then cannot be created, which makes AlreadyExists a last line of defence. Kinds that name records after
   * their claim rely on the queue and the freshness barrier alone.
   */
  readonly recordNamedByAddress: boolean;
  /**
   * Whether an adopted Cluster API IPAddress (one that existed before its claim was served) gets the owner
   * references to its claim and pool it lacks, besides the `record` finalizer. The in-cluster provider repairs them;
   * Metal3 adds its finalizer only.
   */
  readonly repairsRecordOwners: boolean;
  /**
   * Whether claims of this kind's pools may ask for an address: the `ipAddress` annotation and `preAllocations` are
   * Metal3's; other kinds hand out the next free address only.
   */
  readonly honoursRequests: boolean;
}

/** Metal3's IPPool: serves IPClaims, names records `<namePrefix>-<address>`, honours requests, keeps owners as found. */
export const METAL3_STYLE: RecordStyle = {
  servesIPClaims: true,
  recordNamedByAddress: true,
  repairsRecordOwners: false,
  honoursRequests: true,
};

/** The Cluster API provider's pools: IPAddressClaims only, records named after their claim, next free address. */
export const PROVIDER_STYLE: RecordStyle = {
  servesIPClaims: false,
  recordNamedByAddress: false,
  repairsRecordOwners: true,
  honoursRequests: false,
};

/** One kind of pool. `P` is its object type. */
export interface PoolKind<P extends PoolObject = PoolObject> {
  /** Group, kind, plural, scope and versions (api/registry.ts). A cluster-scoped kind serves claims of every namespace. */
  readonly descriptor: ResourceDescriptor;
  /** How its claims and records behave: Metal3's or the Cluster API provider's ({@link RecordStyle}). */
  readonly style: RecordStyle;
  /**
   * Finalizers: `pool` on the pool until no record refers to it; `claim` on the IPAddressClaims it serves until their
   * address is released; `record` on the Cluster API IPAddresses made for them until then.
   */
  readonly finalizers: { pool: string; claim: string; record: string };

  /** The Cluster the pool belongs to, if it names one (pause, labels, owner references). */
  clusterName(pool: P): string | undefined;
  /**
   * The metadata patch the pool needs, or undefined: the `pool` finalizer once `unpaused`, and whatever else the kind
   * keeps on its pools (Metal3: the Cluster's labels and a non-controller owner reference to it, even while paused).
   */
  poolMetadata(pool: P, cluster: Cluster | undefined, unpaused: boolean): Partial<ObjectMeta> | undefined;
  /**
   * The allocator of one pass, from the pool's spec. Asynchronous so that a kind whose addresses come from an engine
   * outside Kubernetes can ask it first (its answers then reserve what it handed out); in-memory kinds resolve at once.
   * The pass reserves every record of the pool in it before deciding.
   */
  openAllocator(pool: P, ctx: KindContext): Promise<PoolAllocator>;
  /**
   * Reserves what other pools' records stand in the way of (Metal3: addresses whose record name another pool's
   * IPAddress bears) and returns a message per collision. Optional.
   */
  reserveForeign?(pool: P, allocator: PoolAllocator, ctx: KindContext): string[];
  /** The name of the record made for claim `claimName` with `address` (`<namePrefix>-<address>`, or the claim's name). */
  recordName(pool: P, claimName: string, address: string): string;
  /** Why the record name `name` for `address` cannot be used: another pool's object `otherPool` bears it. */
  describeNameCollision(pool: P, name: string, address: string, otherPool: string): string;
  /** Whether `claimName` has an address set aside in the spec (served even while the pool is being deleted). */
  preallocated(pool: P, claimName: string): boolean;
  /**
   * How long, in seconds, the address of a deleted IPAddressClaim stays held after the claim's deletionTimestamp
   * before it is released (the in-cluster provider's `addressReuseGracePeriodSeconds`, spec §5 "In-cluster pools"):
   * 0 or undefined releases at once. Not asked while the pool is being deleted. Optional: Metal3's API has no such
   * field, so its pools release at once.
   */
  releaseGraceSeconds?(pool: P): number | undefined;
  /** Why the pool hands out nothing right now beyond deletion, pause and a missing Cluster (none: undefined). */
  allocationBlocked?(pool: P): { reason: Reason; message: string } | undefined;
  /**
   * The status the pool should have given its records, or undefined when the current one stands. Records the pool's
   * capacity and pending series on `input.metrics` on the way (labelled by `input.ref`), as the status counts them;
   * the pass drops those series when the pool is gone.
   */
  desiredStatus(pool: P, input: StatusInput): StatusDecision | undefined;
  /** Set for kinds whose addresses an engine outside Kubernetes hands out; absent for in-memory kinds. */
  readonly external?: ExternalEngine<P>;
}

/** The {@link PoolLocation} of a pool object of `kind`. */
export function refOf(kind: PoolKind, pool: PoolObject): PoolLocation {
  return {
    group: kind.descriptor.group,
    kind: kind.descriptor.kind,
    namespace: kind.descriptor.namespaced ? (pool.metadata.namespace ?? "") : "",
    name: pool.metadata.name ?? "",
  };
}

/** The pool key of a pool object of `kind`. */
export const keyOfPool = (kind: PoolKind, pool: PoolObject): string => poolKeyOf(refOf(kind, pool));
