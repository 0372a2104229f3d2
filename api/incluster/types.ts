/**
 * The Cluster API in-cluster IPAM provider's pool kinds (`cluster-api-ipam-provider-in-cluster`, v1.1 line, contract
 * v1beta2): `InClusterIPPool` (namespaced) and `GlobalInClusterIPPool` (cluster-scoped) in `ipam.cluster.x-k8s.io`,
 * version `v1alpha2` (the storage version, the only one the controller reads and writes), and the deprecated
 * `v1alpha1` the API server converts through our conversion webhook (src/ipam/incluster-conversion.ts). Served
 * through Cluster API's IPAddressClaim contract, as that provider serves them (docs/incluster.md). Types and
 * constants only.
 */
import type { ObjectMeta } from "../v1alpha1/types.js";

/** Same group as Cluster API's IPAM contract kinds. */
export const INCLUSTER_GROUP = "ipam.cluster.x-k8s.io";
/** The storage version, and the only one the controller speaks. */
export const INCLUSTER_VERSION = "v1alpha2";
/** The provider's deprecated first version: served by the CRDs, converted by our webhook, never spoken by us. */
export const INCLUSTER_DEPRECATED_VERSION = "v1alpha1";
/**
 * Cluster API's conversion annotation (`util/conversion` DataAnnotation): JSON of the fields one version cannot hold,
 * written by the conversion that would lose them and consumed by the conversion back.
 */
export const CONVERSION_DATA_ANNOTATION = "cluster.x-k8s.io/conversion-data";
/** The pools' `kind` names (`*_IPPOOL_KIND`, like `IPPOOL_KIND`); the controller's `PoolKind` objects are `*_POOL_KIND`. */
export const INCLUSTER_IPPOOL_KIND = "InClusterIPPool";
export const GLOBAL_INCLUSTER_IPPOOL_KIND = "GlobalInClusterIPPool";

/** On the in-cluster pools until no IPAddress refers to them. */
export const PROTECT_POOL_FINALIZER = "ipam.cluster.x-k8s.io/ProtectPool";
/** On IPAddressClaims of in-cluster pools until their address is released. */
export const RELEASE_ADDRESS_FINALIZER = "ipam.cluster.x-k8s.io/ReleaseAddress";
/** On the IPAddresses made for claims of in-cluster pools, until their claim releases them. */
export const PROTECT_ADDRESS_FINALIZER = "ipam.cluster.x-k8s.io/ProtectAddress";
/** A pool carrying it may be deleted while addresses are allocated from it (the provider's escape hatch). */
export const SKIP_VALIDATE_DELETE_ANNOTATION = "ipam.cluster.x-k8s.io/skip-validate-delete-webhook";

/** `spec` of both in-cluster pool kinds (v1alpha2). */
export interface InClusterIPPoolSpec {
  /** Single IPs, `a-b` ranges and CIDRs, one family. */
  addresses: string[];
  /** Prefix length of the network the addresses live in (0..128). */
  prefix: number;
  gateway?: string;
  /** Hand out the network address (and, on IPv4, the broadcast) of (first address)/prefix too. Default false. */
  allocateReservedIPAddresses?: boolean;
  /** Single IPs, ranges and CIDRs never handed out. */
  excludedAddresses?: string[];
  /**
   * Seconds a deleted claim's address stays held (its IPAddress kept) after the claim's deletionTimestamp before it is
   * released and may be handed out again; 0 or absent: at once. Skipped while the pool is being deleted.
   */
  addressReuseGracePeriodSeconds?: number;
}

/**
 * `spec` of both in-cluster pool kinds at the deprecated v1alpha1: `addresses`, or a `subnet` whose second through
 * second-to-last addresses (or `start`..`end`) are handed out, `prefix` defaulting to the subnet's. Every field is
 * optional (a Go zero value is omitted).
 */
export interface InClusterIPPoolV1Alpha1Spec {
  addresses?: string[];
  subnet?: string;
  start?: string;
  end?: string;
  prefix?: number;
  gateway?: string;
}

/** `status` of both in-cluster pool kinds: counts only, rebuilt from the IPAddresses that refer to the pool. */
export interface InClusterIPPoolStatus {
  ipAddresses?: {
    /** Addresses the pool can hand out. */
    total: number;
    /** IPAddresses that refer to the pool (those outside its addresses included). */
    used: number;
    /** `total - used` (negative when out-of-range addresses are in use, as the provider reports it). */
    free: number;
    /** IPAddresses of the pool whose address the pool can no longer hand out. */
    outOfRange: number;
  };
}

/** An `InClusterIPPool` or a `GlobalInClusterIPPool` (the latter has no namespace). */
export interface InClusterIPPool {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: InClusterIPPoolSpec;
  status?: InClusterIPPoolStatus;
}
