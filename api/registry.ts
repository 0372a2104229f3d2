/**
 * The one registry of the resource kinds this project reads or writes: group, kind, plural, scope and the versions we
 * speak, preferred first. Every client, informer, discovery probe, test and tool takes its kind from here, so a new
 * Cluster API contract version is one edit of {@link CLUSTER_API_VERSIONS} (plus whatever its object shapes change).
 * Types and constants only: no runtime dependencies.
 */
import {
  CAPI_IPADDRESS_KIND,
  CAPI_IPAM_GROUP,
  CLUSTER_GROUP,
  CLUSTER_KIND,
  IPADDRESSCLAIM_KIND,
  MACHINE_KIND,
} from "./capi/types.js";
import {
  GLOBAL_INCLUSTER_IPPOOL_KIND,
  INCLUSTER_GROUP,
  INCLUSTER_IPPOOL_KIND,
  INCLUSTER_VERSION,
} from "./incluster/types.js";
import { GLOBAL_NETBOX_IPPOOL_KIND, NETBOX_GROUP, NETBOX_IPPOOL_KIND, NETBOX_VERSION } from "./netbox/types.js";
import { GROUP, IPADDRESS_KIND, IPCLAIM_KIND, IPPOOL_KIND, VERSION } from "./v1alpha1/types.js";

/** A resource kind and every version of it we can speak. */
export interface ResourceDescriptor {
  /** API group; "" for the core group. */
  readonly group: string;
  readonly kind: string;
  /** Resource name in URLs, RBAC rules and CRD names. */
  readonly plural: string;
  /** Versions we can read and write, preferred first; the first one served wins. Never empty. */
  readonly versions: readonly [string, ...string[]];
  readonly namespaced: boolean;
}

/**
 * A pool kind: a resource whose objects hand out addresses to claims. Its scope is `namespaced` (false: a global
 * pool, used by claims of every namespace).
 */
export interface PoolDescriptor extends ResourceDescriptor {
  /**
   * What chooses a pool's addresses: "allocator", this project's allocator over the ranges the pool's spec lists
   * (`src/ipam`); "netbox", NetBox, in the prefix or range the spec names (the spec states no addresses itself).
   */
  readonly engine: "allocator" | "netbox";
}

/** One served version of a kind: enough to address it over REST (what `ResourceClient` and informers take). */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** The versions a descriptor can be spoken at, as a union of literals. */
export type VersionOf<D extends ResourceDescriptor> = D["versions"][number];

/**
 * Cluster API contract versions, preferred first. Cluster API moves all its groups (`cluster.x-k8s.io`,
 * `ipam.cluster.x-k8s.io`) to a new version in the same release (v1beta2 in 1.11), so one list serves every kind of
 * it; v1beta1 is what management clusters on Cluster API 1.10 and older serve.
 */
export const CLUSTER_API_VERSIONS = ["v1beta2", "v1beta1"] as const;
/** A Cluster API contract version we speak. */
export type ClusterApiVersion = (typeof CLUSTER_API_VERSIONS)[number];

/** `ipam.metal3.io/v1alpha1` IPPool. */
export const IPPOOL = {
  group: GROUP,
  kind: IPPOOL_KIND,
  plural: "ippools",
  versions: [VERSION],
  namespaced: true,
  engine: "allocator",
} as const satisfies PoolDescriptor;
/** `ipam.metal3.io/v1alpha1` IPClaim. */
export const IPCLAIM = {
  group: GROUP,
  kind: IPCLAIM_KIND,
  plural: "ipclaims",
  versions: [VERSION],
  namespaced: true,
} as const satisfies ResourceDescriptor;
/** `ipam.metal3.io/v1alpha1` IPAddress. */
export const IPADDRESS = {
  group: GROUP,
  kind: IPADDRESS_KIND,
  plural: "ipaddresses",
  versions: [VERSION],
  namespaced: true,
} as const satisfies ResourceDescriptor;

/** Cluster API's IPAddressClaim (`ipam.cluster.x-k8s.io`), served by the bridge. */
export const CAPI_IPADDRESSCLAIM = {
  group: CAPI_IPAM_GROUP,
  kind: IPADDRESSCLAIM_KIND,
  plural: "ipaddressclaims",
  versions: CLUSTER_API_VERSIONS,
  namespaced: true,
} as const satisfies ResourceDescriptor;

/** The kinds of claim a pool serves: Metal3's IPClaim and Cluster API's IPAddressClaim. */
export const CLAIM_KINDS = [IPCLAIM.kind, CAPI_IPADDRESSCLAIM.kind] as const;
export type ClaimKind = (typeof CLAIM_KINDS)[number];
/** Cluster API's IPAddress (`ipam.cluster.x-k8s.io`), the record the bridge makes for an IPAddressClaim. */
export const CAPI_IPADDRESS = {
  group: CAPI_IPAM_GROUP,
  kind: CAPI_IPADDRESS_KIND,
  plural: "ipaddresses",
  versions: CLUSTER_API_VERSIONS,
  namespaced: true,
} as const satisfies ResourceDescriptor;

/** The in-cluster provider's namespaced pool (`ipam.cluster.x-k8s.io/v1alpha2`), served when its CRD is installed. */
export const INCLUSTER_IPPOOL = {
  group: INCLUSTER_GROUP,
  kind: INCLUSTER_IPPOOL_KIND,
  plural: "inclusterippools",
  versions: [INCLUSTER_VERSION],
  namespaced: true,
  engine: "allocator",
} as const satisfies PoolDescriptor;
/** The in-cluster provider's cluster-scoped pool, used by claims of every namespace. */
export const GLOBAL_INCLUSTER_IPPOOL = {
  group: INCLUSTER_GROUP,
  kind: GLOBAL_INCLUSTER_IPPOOL_KIND,
  plural: "globalinclusterippools",
  versions: [INCLUSTER_VERSION],
  namespaced: false,
  engine: "allocator",
} as const satisfies PoolDescriptor;

/** A pool whose addresses NetBox hands out (`netbox.ipam.cluster.x-k8s.io/v1alpha1`), served when its CRD is installed. */
export const NETBOX_IPPOOL = {
  group: NETBOX_GROUP,
  kind: NETBOX_IPPOOL_KIND,
  plural: "netboxippools",
  versions: [NETBOX_VERSION],
  namespaced: true,
  engine: "netbox",
} as const satisfies PoolDescriptor;
/** The cluster-scoped NetBox pool, used by claims of every namespace. */
export const GLOBAL_NETBOX_IPPOOL = {
  group: NETBOX_GROUP,
  kind: GLOBAL_NETBOX_IPPOOL_KIND,
  plural: "globalnetboxippools",
  versions: [NETBOX_VERSION],
  namespaced: false,
  engine: "netbox",
} as const satisfies PoolDescriptor;

/** Every pool kind, in the order a listing shows pools of one namespace and name. */
export const POOL_DESCRIPTORS = [
  IPPOOL,
  INCLUSTER_IPPOOL,
  GLOBAL_INCLUSTER_IPPOOL,
  NETBOX_IPPOOL,
  GLOBAL_NETBOX_IPPOOL,
] as const satisfies readonly PoolDescriptor[];
/** A pool kind by its Kubernetes kind name. */
export type PoolKindName = (typeof POOL_DESCRIPTORS)[number]["kind"];
/** The descriptor of the pool kind named `K`. */
export type PoolDescriptorOf<K extends PoolKindName> = Extract<(typeof POOL_DESCRIPTORS)[number], { kind: K }>;
/** The pool kinds whose addresses NetBox chooses. */
export type NetBoxKindName = Extract<(typeof POOL_DESCRIPTORS)[number], { engine: "netbox" }>["kind"];

/** The descriptor of a pool kind. */
export function poolDescriptor<K extends PoolKindName>(kind: K): PoolDescriptorOf<K> {
  return POOL_DESCRIPTORS.find((d) => d.kind === kind) as PoolDescriptorOf<K>;
}

/** Whether pools of `kind` are global: cluster-scoped, used by claims of every namespace. */
export const isGlobalKind = (kind: PoolKindName): boolean => !poolDescriptor(kind).namespaced;

/** Whether NetBox chooses the addresses of pools of `kind`. */
export const isNetBoxKind = (kind: PoolKindName): kind is NetBoxKindName => poolDescriptor(kind).engine === "netbox";

/**
 * The pool kind a reference names by API group and kind (a Cluster API `poolRef`, an IPAddress's), or undefined for
 * anything that is not one of our pool kinds.
 */
export function poolKindOfRef(ref: { apiGroup?: string; kind: string } | undefined): PoolKindName | undefined {
  return POOL_DESCRIPTORS.find((d) => d.group === ref?.apiGroup && d.kind === ref.kind)?.kind;
}

/** Cluster API's Cluster, read for pause and owner references. */
export const CLUSTER = {
  group: CLUSTER_GROUP,
  kind: CLUSTER_KIND,
  plural: "clusters",
  versions: CLUSTER_API_VERSIONS,
  namespaced: true,
} as const satisfies ResourceDescriptor;
/** Cluster API's Machine: never read by the controller; the tests build owner chains through it (`clusterctl move`). */
export const MACHINE = {
  group: CLUSTER_GROUP,
  kind: MACHINE_KIND,
  plural: "machines",
  versions: CLUSTER_API_VERSIONS,
  namespaced: true,
} as const satisfies ResourceDescriptor;

/**
 * The REST address of `descriptor` at `version` (its preferred version by default). Only versions the descriptor
 * lists type-check, so a version nobody declared cannot be spoken by accident.
 */
export function resourceType<D extends ResourceDescriptor>(
  descriptor: D,
  version: VersionOf<D> = descriptor.versions[0],
): ResourceType {
  const { group, kind, plural, namespaced } = descriptor;
  return { group, version, plural, kind, namespaced };
}

/** `apiVersion` of objects of `descriptor` at `version` (its preferred version by default). */
export function apiVersionOf<D extends ResourceDescriptor>(
  descriptor: D,
  version: VersionOf<D> = descriptor.versions[0],
): string {
  return descriptor.group === "" ? version : `${descriptor.group}/${version}`;
}

/** `plural.group`: the CustomResourceDefinition's name, and how kubectl and RBAC messages name the resource. */
export function qualifiedName(descriptor: Pick<ResourceDescriptor, "group" | "plural">): string {
  return descriptor.group === "" ? descriptor.plural : `${descriptor.plural}.${descriptor.group}`;
}

/**
 * The words kubectl accepts for a resource on its command line, lower case: the kind and the plural, each alone and
 * qualified by the group (`ippool`, `ippools`, `ippool.ipam.metal3.io`, `ippools.ipam.metal3.io`).
 */
export function kubectlSpellings(descriptor: Pick<ResourceDescriptor, "group" | "kind" | "plural">): string[] {
  const singular = descriptor.kind.toLowerCase();
  return [singular, descriptor.plural, `${singular}.${descriptor.group}`, qualifiedName(descriptor)];
}
