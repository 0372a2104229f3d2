/**
 * `ipam.metal3.io/v1alpha1`: IPPool, IPClaim and IPAddress, field for field compatible with the Metal3 IP Address
 * Manager (spec §1). Types only: no runtime dependencies besides the constants below.
 *
 * Compatibility rule: nothing is ever added to a `spec`; clients built on Metal3's Go types write whole objects back
 * and would silently drop unknown spec fields. Our additions live in `status` and annotations.
 */

export const GROUP = "ipam.metal3.io";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
// Plurals and scope of these kinds: api/registry.ts.

export const IPPOOL_KIND = "IPPool";
export const IPCLAIM_KIND = "IPClaim";
export const IPADDRESS_KIND = "IPAddress";

/** Held on an IPPool until no IPAddress references it (spec §3.5). */
export const IPPOOL_FINALIZER = "ippool.ipam.metal3.io";
/** Held on an IPClaim while it owns an address (spec §3.3). */
export const IPCLAIM_FINALIZER = "ipclaim.ipam.metal3.io";
/** Held on an IPAddress the controller allocated, until its claim releases it (spec §3.3). */
export const IPADDRESS_FINALIZER = "ipaddress.ipam.metal3.io";

/** Bare annotation key (no prefix, as in Metal3) on an IPClaim asking for one specific address (spec §1.2). */
export const IP_ADDRESS_ANNOTATION = "ipAddress";

/** Cluster API label naming the Cluster an object belongs to. */
export const CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name";
/** Cluster API provider label put on pools (spec §1.1). */
export const PROVIDER_LABEL = "cluster.x-k8s.io/provider";
export const PROVIDER_NAME = "ipam-metal3";
/** Cluster API pause annotation, on a Cluster or on an object itself (spec §4). */
export const PAUSED_ANNOTATION = "cluster.x-k8s.io/paused";
/** Set by `clusterctl move` on source objects it is about to delete (spec §7). */
export const DELETE_FOR_MOVE_ANNOTATION = "clusterctl.cluster.x-k8s.io/delete-for-move";
/** Label clusterctl requires on every CRD whose objects it moves (spec §7). */
export const CLUSTERCTL_LABEL = "clusterctl.cluster.x-k8s.io";

export interface ObjectMeta {
  name?: string;
  /** Prefix of a name the API server completes (creates only). */
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/**
 * Kubernetes `corev1.ObjectReference`, which Metal3 uses for every reference: all fields optional. The CRDs keep them
 * all so objects written by Metal3 clients round-trip without pruning; only `name` and `namespace` carry meaning here.
 */
export interface ObjectReference {
  apiVersion?: string;
  fieldPath?: string;
  /** As written by the client (Metal3 clients may set it); only compared for immutability, never interpreted. */
  kind?: string;
  name?: string;
  /** Empty means "the referrer's namespace". */
  namespace?: string;
  resourceVersion?: string;
  uid?: string;
}

/** An `ObjectReference` whose `name` the schema requires (the references in a spec). */
export interface ObjectRef extends ObjectReference {
  name: string;
}

/** Kubernetes `metav1.Condition`. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** One range of an IPPool (spec §1.1, §2). Every field optional; at least one of start/end/subnet must be set. */
export interface Pool {
  start?: string;
  end?: string;
  subnet?: string;
  /** Overrides the pool-wide prefix for addresses of this entry when non-zero. */
  prefix?: number;
  /** Overrides the pool-wide gateway for addresses of this entry when set. */
  gateway?: string;
  /** Overrides the pool-wide DNS servers for addresses of this entry when non-empty. */
  dnsServers?: string[];
}

export type AllocationStrategy = "sequential" | "random";

export interface IPPoolSpec {
  clusterName?: string;
  pools?: Pool[];
  allocationStrategy?: AllocationStrategy | "";
  /** Claim name → address reserved for that claim (IPClaims and Cluster API IPAddressClaims alike). */
  preAllocations?: Record<string, string>;
  prefix?: number;
  gateway?: string;
  dnsServers?: string[];
  /** Prefix of IPAddress object names (spec §3.1). Required, immutable. */
  namePrefix: string;
}

export interface IPPoolStatus {
  /** Claim name → address. A view rebuilt from IPAddress objects, never the source of truth. */
  indexes?: Record<string, string>;
  /** When `indexes` last changed. */
  lastUpdated?: string;
  /** Ours: exact number of addresses the entries can yield, capped at the int64 maximum. */
  total?: number;
  /** Ours: addresses held by IPAddress objects (of any origin) inside the pool's entries. */
  used?: number;
  /** Ours: total - used, capped like total. */
  free?: number;
  conditions?: Condition[];
}

export interface IPPool {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: IPPoolSpec;
  status?: IPPoolStatus;
}

export interface IPClaimSpec {
  pool: ObjectRef;
}

export interface IPClaimStatus {
  /** `name` optional as in the CRD (and Metal3's): a client may write a reference without one. */
  address?: ObjectReference;
  errorMessage?: string;
  conditions?: Condition[];
}

export interface IPClaim {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: IPClaimSpec;
  status?: IPClaimStatus;
}

export interface IPAddressSpec {
  address: string;
  pool: ObjectRef;
  claim: ObjectRef;
  prefix?: number;
  gateway?: string;
  dnsServers?: string[];
}

export interface IPAddress {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: IPAddressSpec;
}

/** Condition type and reasons we write on claims and pools. */
export const READY_CONDITION = "Ready";
export const Reasons = {
  Allocated: "Allocated",
  PoolExhausted: "PoolExhausted",
  AllocationFailed: "AllocationFailed",
  PoolNotFound: "PoolNotFound",
  PoolNotReady: "PoolNotReady",
  InvalidSpec: "InvalidSpec",
  Paused: "Paused",
  ClusterNotFound: "ClusterNotFound",
  WaitingForRelease: "WaitingForRelease",
  NameCollision: "NameCollision",
  PoolReady: "PoolReady",
} as const;
export type Reason = (typeof Reasons)[keyof typeof Reasons];
