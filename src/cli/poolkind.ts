/**
 * The kinds of pool `kubectl ipam` shows: Metal3's `IPPool`, the in-cluster provider's `InClusterIPPool`
 * (namespaced) and `GlobalInClusterIPPool` (cluster-scoped: claims of every namespace use it), and the NetBox pools
 * `NetBoxIPPool` and `GlobalNetBoxIPPool`. Pure: the kinds' names, how a person names a pool on the command line, how
 * a Cluster API `poolRef` names one, and each kind's address space as the controller sees it (the allocator and the
 * free spans). A NetBox pool's space is NetBox's: the CLI never calls NetBox (nor reads its token), so it has no
 * allocator of its own here, and its counts are the ones the controller wrote to the pool's status.
 */
import { INCLUSTER_GROUP, type InClusterIPPool } from "../../api/incluster/types.js";
import { NETBOX_GROUP, type NetBoxIPPool } from "../../api/netbox/types.js";
import {
  GLOBAL_INCLUSTER_IPPOOL,
  GLOBAL_NETBOX_IPPOOL,
  INCLUSTER_IPPOOL,
  IPPOOL,
  NETBOX_IPPOOL,
  qualifiedName,
} from "../../api/registry.js";
import { GROUP, IPPOOL_KIND, type IPPool } from "../../api/v1alpha1/types.js";
import {
  compileEntries,
  entryUnion,
  inClusterSpace,
  PoolAllocator,
  type AddressSpace,
  type Family,
} from "../ipam/index.js";

/** A pool kind by its Kubernetes kind name. */
export type PoolKindName = "IPPool" | "InClusterIPPool" | "GlobalInClusterIPPool" | NetBoxKindName;

/** The NetBox pool kinds: addresses handed out by NetBox. */
export type NetBoxKindName = "NetBoxIPPool" | "GlobalNetBoxIPPool";

/** A pool of any kind, tagged with its kind. */
export type AnyPool =
  | { kind: "IPPool"; object: IPPool }
  | { kind: "InClusterIPPool" | "GlobalInClusterIPPool"; object: InClusterIPPool }
  | { kind: NetBoxKindName; object: NetBoxIPPool };

/** Where a pool is: its kind, namespace ("" for a global pool) and name. */
export interface PoolId {
  kind: PoolKindName;
  namespace: string;
  name: string;
}

/** Every kind, in the order a listing shows pools of one namespace and name. */
export const POOL_KINDS: readonly PoolKindName[] = [
  "IPPool",
  "InClusterIPPool",
  "GlobalInClusterIPPool",
  "NetBoxIPPool",
  "GlobalNetBoxIPPool",
];

const DESCRIPTORS = {
  IPPool: IPPOOL,
  InClusterIPPool: INCLUSTER_IPPOOL,
  GlobalInClusterIPPool: GLOBAL_INCLUSTER_IPPOOL,
  NetBoxIPPool: NETBOX_IPPOOL,
  GlobalNetBoxIPPool: GLOBAL_NETBOX_IPPOOL,
};

/** Whether pools of `kind` are cluster-scoped (no namespace; claims of every namespace). */
export const isGlobalKind = (kind: PoolKindName): boolean =>
  kind === "GlobalInClusterIPPool" || kind === "GlobalNetBoxIPPool";

/** Whether NetBox hands out the addresses of pools of `kind`. */
export const isNetBoxKind = (kind: PoolKindName): kind is NetBoxKindName =>
  kind === "NetBoxIPPool" || kind === "GlobalNetBoxIPPool";

/** The pool kind a Cluster API `poolRef` (or an IPAddress's) names, or undefined for a pool kind we do not serve. */
export function poolKindOfRef(ref: { apiGroup?: string; kind: string } | undefined): PoolKindName | undefined {
  if (ref?.apiGroup === GROUP && ref.kind === IPPOOL_KIND) return "IPPool";
  if (ref?.apiGroup === NETBOX_GROUP)
    return ref.kind === NETBOX_IPPOOL.kind || ref.kind === GLOBAL_NETBOX_IPPOOL.kind ? ref.kind : undefined;
  if (ref?.apiGroup !== INCLUSTER_GROUP) return undefined;
  return ref.kind === INCLUSTER_IPPOOL.kind || ref.kind === GLOBAL_INCLUSTER_IPPOOL.kind ? ref.kind : undefined;
}

/** The words a person may put before `/NAME` for each kind: kubectl's kind, plural, and their qualified forms. */
function spellings(kind: PoolKindName): string[] {
  const d = DESCRIPTORS[kind];
  const [singular, plural] = [d.kind.toLowerCase(), d.plural];
  return [singular, plural, `${singular}.${d.group}`, qualifiedName(d)];
}

/**
 * Parses a pool argument: `NAME` (a Metal3 IPPool, as always), or `KIND/NAME` with KIND `ippool`,
 * `inclusterippool`, `globalinclusterippool`, `netboxippool` or `globalnetboxippool` (plurals and `.group` forms too,
 * any case). Undefined for an unknown
 * KIND: the caller says so (names cannot contain "/").
 */
export function parsePoolArgument(arg: string): { kind: PoolKindName; name: string } | undefined {
  const slash = arg.indexOf("/");
  if (slash < 0) return { kind: "IPPool", name: arg };
  const word = arg.slice(0, slash).toLowerCase();
  const kind = POOL_KINDS.find((k) => spellings(k).includes(word));
  return kind ? { kind, name: arg.slice(slash + 1) } : undefined;
}

/** The identity of a pool. */
export function idOf(p: AnyPool): PoolId {
  return {
    kind: p.kind,
    namespace: isGlobalKind(p.kind) ? "" : (p.object.metadata.namespace ?? ""),
    name: p.object.metadata.name ?? "",
  };
}

/**
 * A pool as the text output names it: `NS/NAME` for a Metal3 IPPool (as before other kinds were shown),
 * `InClusterIPPool NS/NAME`, `GlobalInClusterIPPool NAME`.
 */
export function poolTitle(id: PoolId): string {
  if (id.kind === "IPPool") return `${id.namespace}/${id.name}`;
  return isGlobalKind(id.kind) ? `${id.kind} ${id.name}` : `${id.kind} ${id.namespace}/${id.name}`;
}

/** The machine form's `kind` key: absent for Metal3 IPPools (the documents had no key before), else the kind. */
export function kindKey(kind: PoolKindName): { kind?: PoolKindName } {
  return kind === "IPPool" ? {} : { kind };
}

/** The address space of a non-Metal3 pool: NetBox pools have none the CLI knows (NetBox's space is NetBox's). */
function spaceOf(p: Exclude<AnyPool, { kind: "IPPool" }>): AddressSpace {
  switch (p.kind) {
    case "NetBoxIPPool":
    case "GlobalNetBoxIPPool":
      return { entries: [], specErrors: [] };
    default:
      return inClusterSpace(p.object.spec);
  }
}

/** The allocator of a pool's spec, nothing reserved yet: the controller's view of the kind (empty for NetBox). */
export function openAllocator(p: AnyPool): PoolAllocator {
  return p.kind === "IPPool" ? new PoolAllocator(p.object.spec) : PoolAllocator.fromSpace(spaceOf(p));
}

/** The pool's addresses per family as sorted disjoint spans (before any is taken). */
export function poolSpans(p: AnyPool): Record<Family, Array<[bigint, bigint]>> {
  return entryUnion(p.kind === "IPPool" ? compileEntries(p.object.spec).entries : spaceOf(p).entries);
}

/**
 * How the next address is chosen: Metal3's strategy; the in-cluster kinds take the lowest free, i.e. sequential;
 * NetBox pools take what NetBox's `available-ips` gives.
 */
export function strategyOf(p: AnyPool): string {
  if (p.kind === "IPPool") return p.object.spec.allocationStrategy || "sequential";
  return isNetBoxKind(p.kind) ? "netbox" : "sequential";
}

/** Metal3's `preAllocations` (claim name → address); the in-cluster kinds have none. */
export function preAllocationsOf(p: AnyPool): Record<string, string> {
  return p.kind === "IPPool" ? (p.object.spec.preAllocations ?? {}) : {};
}
