/**
 * The kinds of pool `kubectl ipam` shows, as `api/registry.ts` lists them (POOL_DESCRIPTORS: Metal3's `IPPool`, the
 * in-cluster provider's and NetBox's namespaced and global pools), and what the CLI alone makes of them: a pool
 * tagged with its kind and spec type, how the output names it, and each kind's address space as the controller sees
 * it (the allocator and the free spans). Every fact of a kind (name, scope, engine, group, spellings) is the
 * registry's. A NetBox pool's space is NetBox's: the CLI never calls NetBox (nor reads its token), so it has no
 * allocator of its own here, and its counts are the ones the controller wrote to the pool's status.
 */
import type { InClusterIPPool } from "../../api/incluster/types.js";
import type { NetBoxIPPool } from "../../api/netbox/types.js";
import {
  GLOBAL_INCLUSTER_IPPOOL,
  GLOBAL_NETBOX_IPPOOL,
  INCLUSTER_IPPOOL,
  IPPOOL,
  isGlobalKind,
  isNetBoxKind,
  kubectlSpellings,
  NETBOX_IPPOOL,
  POOL_DESCRIPTORS,
  poolKindOfRef,
  type NetBoxKindName,
  type PoolDescriptor,
  type PoolKindName,
} from "../../api/registry.js";
import type { IPPool } from "../../api/v1alpha1/types.js";
import {
  compileEntries,
  entryUnion,
  inClusterSpace,
  PoolAllocator,
  type AddressSpace,
  type Family,
} from "../ipam/index.js";

/** A pool of any kind, tagged with its kind: the kind picks the spec type. */
export type AnyPool =
  | { kind: typeof IPPOOL.kind; object: IPPool }
  | { kind: typeof INCLUSTER_IPPOOL.kind | typeof GLOBAL_INCLUSTER_IPPOOL.kind; object: InClusterIPPool }
  | { kind: typeof NETBOX_IPPOOL.kind | typeof GLOBAL_NETBOX_IPPOOL.kind; object: NetBoxIPPool };

/** A Metal3 IPPool, tagged. */
export type Metal3Pool = Extract<AnyPool, { kind: typeof IPPOOL.kind }>;

/** Where a pool is: its kind, namespace ("" for a global pool) and name. */
export interface PoolId {
  kind: PoolKindName;
  namespace: string;
  name: string;
}

/**
 * The kind the CLI showed before it showed others: a bare `NAME` on the command line means it, the output names its
 * pools `NS/NAME` and gives them no kind key, so a Metal3-only cluster reads as it always did.
 */
export const UNTAGGED_KIND = IPPOOL.kind;

/** Whether `kind` is Metal3's IPPool: the kind Metal3's IPClaims and IPAddresses name, whose spec is Metal3's. */
export const isMetal3Kind = (kind: PoolKindName): kind is typeof IPPOOL.kind => kind === IPPOOL.kind;

/**
 * Whether a reference (a `poolRef`, an IPAddress's) names a pool of `descriptor`'s kind: for the reads that serve one
 * kind and take its spec type (preflight-move's GlobalInClusterIPPool findings).
 */
export const refersTo = (ref: { apiGroup?: string; kind: string } | undefined, descriptor: PoolDescriptor): boolean =>
  poolKindOfRef(ref) === descriptor.kind;

/** Whether `p` is a Metal3 IPPool. */
export const isMetal3Pool = (p: AnyPool): p is Metal3Pool => isMetal3Kind(p.kind);

/** Whether `p` is a NetBox pool (its status carries NetBox's counts). */
export const isNetBoxPool = (p: AnyPool): p is Extract<AnyPool, { kind: NetBoxKindName }> => isNetBoxKind(p.kind);

/**
 * Parses a pool argument: `NAME` (a Metal3 IPPool, as always), or `KIND/NAME` with KIND any spelling kubectl
 * accepts for a pool kind (`ippool`, `inclusterippools`, `globalnetboxippool.netbox.ipam.cluster.x-k8s.io`; any
 * case). Undefined for an unknown KIND: the caller says so (names cannot contain "/").
 */
export function parsePoolArgument(arg: string): { kind: PoolKindName; name: string } | undefined {
  const slash = arg.indexOf("/");
  if (slash < 0) return { kind: UNTAGGED_KIND, name: arg };
  const word = arg.slice(0, slash).toLowerCase();
  const kind = POOL_DESCRIPTORS.find((d) => kubectlSpellings(d).includes(word))?.kind;
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
  if (id.kind === UNTAGGED_KIND) return `${id.namespace}/${id.name}`;
  return isGlobalKind(id.kind) ? `${id.kind} ${id.name}` : `${id.kind} ${id.namespace}/${id.name}`;
}

/** The machine form's `kind` key: absent for Metal3 IPPools (the documents had no key before), else the kind. */
export function kindKey(kind: PoolKindName): { kind?: PoolKindName } {
  return kind === UNTAGGED_KIND ? {} : { kind };
}

/** The address space of a non-Metal3 pool: NetBox pools have none the CLI knows (NetBox's space is NetBox's). */
function spaceOf(p: Exclude<AnyPool, Metal3Pool>): AddressSpace {
  return isNetBoxPool(p) ? { entries: [], specErrors: [] } : inClusterSpace(p.object.spec);
}

/** The allocator of a pool's spec, nothing reserved yet: the controller's view of the kind (empty for NetBox). */
export function openAllocator(p: AnyPool): PoolAllocator {
  return isMetal3Pool(p) ? new PoolAllocator(p.object.spec) : PoolAllocator.fromSpace(spaceOf(p));
}

/** The pool's addresses per family as sorted disjoint spans (before any is taken). */
export function poolSpans(p: AnyPool): Record<Family, Array<[bigint, bigint]>> {
  return entryUnion(isMetal3Pool(p) ? compileEntries(p.object.spec).entries : spaceOf(p).entries);
}

/**
 * How the next address is chosen: Metal3's strategy; the in-cluster kinds take the lowest free, i.e. sequential;
 * NetBox pools take what NetBox's `available-ips` gives.
 */
export function strategyOf(p: AnyPool): string {
  if (isMetal3Pool(p)) return p.object.spec.allocationStrategy || "sequential";
  return isNetBoxKind(p.kind) ? "netbox" : "sequential";
}

/** Metal3's `preAllocations` (claim name → address); the in-cluster kinds have none. */
export function preAllocationsOf(p: AnyPool): Record<string, string> {
  return isMetal3Pool(p) ? (p.object.spec.preAllocations ?? {}) : {};
}
