/**
 * Pools whose addresses a NetBox instance hands out: `NetBoxIPPool` (namespaced) and `GlobalNetBoxIPPool`
 * (cluster-scoped), served through Cluster API's IPAddressClaim contract. NetBox stays the source of truth: it decides
 * each address under its own lock, and every record we make there carries the claim's identity (src/netbox/identity.ts).
 *
 * Group: the Cluster API IPAM providers that front an external engine name their pools after it in a group of their
 * own project (Infoblox `InfobloxIPPool`, Nutanix, phpIPAM, an early NetBox provider's `NetboxIPPool` in
 * `ipam.cluster.x-k8s.io`). Sharing `ipam.cluster.x-k8s.io` would give our CRD the name of that provider's
 * (`netboxippools.ipam.cluster.x-k8s.io`), and two CRDs of one name cannot be installed side by side; a group of our
 * own (`netbox.ipam.cluster.x-k8s.io`) keeps both installable and says what serves it. Types and constants only.
 */
import type { ObjectMeta } from "../v1alpha1/types.js";

export const NETBOX_GROUP = "netbox.ipam.cluster.x-k8s.io";
export const NETBOX_VERSION = "v1alpha1";
/** The pools' `kind` names (`*_IPPOOL_KIND`, like `IPPOOL_KIND`); the controller's `PoolKind` objects are `*_POOL_KIND`. */
export const NETBOX_IPPOOL_KIND = "NetBoxIPPool";
export const GLOBAL_NETBOX_IPPOOL_KIND = "GlobalNetBoxIPPool";

/** On NetBox pools until no IPAddress refers to them. */
export const NETBOX_POOL_FINALIZER = "netbox.ipam.cluster.x-k8s.io/ProtectPool";
/** On IPAddressClaims of NetBox pools until their address is released in NetBox and in Kubernetes. */
export const NETBOX_CLAIM_FINALIZER = "netbox.ipam.cluster.x-k8s.io/ReleaseAddress";
/** On the IPAddresses made for claims of NetBox pools, until their claim releases them. */
export const NETBOX_ADDRESS_FINALIZER = "netbox.ipam.cluster.x-k8s.io/ProtectAddress";

/**
 * On a credentials Secret: the namespaces (comma-separated, or `*`) whose NetBoxIPPools may use it. Without it only
 * GlobalNetBoxIPPools may (the controller's own namespace is no exception).
 */
export const ALLOWED_NAMESPACES_ANNOTATION = "netbox.ipam.cluster.x-k8s.io/allowed-namespaces";

/** The key of the token in the credentials Secret when `credentialsRef.key` is not set. */
export const DEFAULT_TOKEN_KEY = "token";

/**
 * How to reach NetBox: the Secret that holds the token and names the NetBox it is for (src/controllers/netbox/trust.ts).
 */
export interface NetBoxInstance {
  /**
   * Deprecated: the Secret's `url` names the NetBox. When set it must be that URL (scheme, host, port, path), or no
   * request is made; a GlobalNetBoxIPPool whose Secret has no `url` still uses it.
   */
  url?: string;
  /**
   * The Secret holding the API token (NetBox v2 tokens `nbt_<key>.<secret>`, or v1), the NetBox it is for (key `url`)
   * and optionally a CA (key `ca.crt`, added to the system roots), in the CONTROLLER's namespace: the controller may
   * read Secrets there only (by name, never listed), so no pool can make it read a Secret of another namespace. A
   * namespaced pool may use it only if the Secret's {@link ALLOWED_NAMESPACES_ANNOTATION} names the pool's namespace
   * (or `*`); global pools, made by cluster administrators, may use any.
   */
  credentialsRef: { name: string; key?: string };
  /**
   * Deprecated: the Secret's `ca.crt`. Ignored when the Secret has one and for NetBoxIPPools; a GlobalNetBoxIPPool's is
   * added to the system roots otherwise.
   */
  caBundle?: string;
}

/** A NetBox prefix: by id, or by CIDR (and VRF id when the CIDR is not unique). */
export interface NetBoxPrefixRef {
  id?: number;
  cidr?: string;
  vrfId?: number;
}

/** A NetBox IP range: by id, or by its first and last address (and VRF id). */
export interface NetBoxRangeRef {
  id?: number;
  start?: string;
  end?: string;
  vrfId?: number;
}

/** The most further sources a pool may list in `fallbacks`. */
export const MAX_FALLBACKS = 8;

/**
 * A further source of a pool's addresses (`spec.fallbacks`): exactly one of `prefix` and `range`, of the family of
 * the pool's first source, with its own gateway and prefix length (the pool's `gateway` and `addressPrefix` are the
 * first source's only).
 */
export interface NetBoxSource {
  prefix?: NetBoxPrefixRef;
  range?: NetBoxRangeRef;
  /** Gateway written on the IPAddresses of this source; default: the one NetBox records for its subnet. */
  gateway?: string;
  /** Prefix length written on the IPAddresses of this source; default: NetBox's. */
  addressPrefix?: number;
}

/** `spec` of both NetBox pool kinds. Exactly one of `prefix` and `range`. */
export interface NetBoxIPPoolSpec {
  netbox: NetBoxInstance;
  prefix?: NetBoxPrefixRef;
  range?: NetBoxRangeRef;
  /**
   * Further prefixes or ranges (at most {@link MAX_FALLBACKS}), tried in order once the earlier ones are full: a
   * claim gets an address of the first source with room. Entries may be appended (adding space to a filling pool);
   * an entry's prefix or range may not change, nor may entries be removed or reordered (their records would be left
   * behind): the CRD refuses that, and a pool changed so anyway serves nothing until it is put back.
   */
  fallbacks?: NetBoxSource[];
  /**
   * Prefix length written on each IPAddress of the first source; default: the one NetBox gives the address (its
   * prefix's or range's).
   */
  addressPrefix?: number;
  /**
   * Gateway written on each IPAddress of the first source (each fallback has its own). Default: the IP address record NetBox tags `gateway` inside the pool's subnet
   * (the prefix; for a range, the prefix of the range's subnet), read once per generation of the pool.
   */
  gateway?: string;
  /** NetBox tenant id set on each record. */
  tenantId?: number;
  /** Tag slugs set on each record besides ours (they must exist in NetBox). */
  tags?: string[];
  /**
   * DNS name written on each record: `{namespace}`, `{name}` (the claim's) and `{cluster}` are replaced, e.g.
   * `{name}.{cluster}.example.com`.
   */
  dnsNameTemplate?: string;
  /**
   * NetBox custom fields set on each record: name to value (at most 16; names as NetBox allows them; strings at most
   * 256 characters). Each must exist in NetBox for IP addresses with a type that takes the value.
   */
  customFields?: Record<string, string | number | boolean>;
}

/** A prefix or range a pool resolved to in NetBox (id and CIDR or bounds). */
export interface NetBoxSourceStatus {
  kind: "prefix" | "ip-range";
  id: number;
  display: string;
}

/** `status`: NetBox's view of the pool, and whether we can reach it. */
export interface NetBoxIPPoolStatus {
  /** What NetBox reports of the pool's prefixes and ranges, summed. */
  ipAddresses?: { total: number; used: number; free: number };
  /** The first prefix or range the pool resolved to. */
  netbox?: NetBoxSourceStatus;
  /** Every prefix or range of the pool, in the order they are tried, with what NetBox reports of each. */
  sources?: (NetBoxSourceStatus & { total: number; used: number; free: number })[];
  conditions?: {
    type: string;
    status: "True" | "False" | "Unknown";
    reason: string;
    message: string;
    lastTransitionTime: string;
  }[];
}

/** A `NetBoxIPPool` or a `GlobalNetBoxIPPool` (the latter has no namespace). */
export interface NetBoxIPPool {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: NetBoxIPPoolSpec;
  status?: NetBoxIPPoolStatus;
}
