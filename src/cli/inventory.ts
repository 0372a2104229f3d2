/**
 * What the CLI reads about addresses, and the facts every subcommand derives from it. Pure: no I/O here.
 *
 * The allocation record model (spec §3.2, §5): a Metal3 pool's used set is its `ipam.metal3.io` IPAddresses
 * (`spec.pool.name`), the Cluster API IPAddresses whose `poolRef` names it (apiGroup ipam.metal3.io, kind IPPool),
 * and its preallocations. An in-cluster pool's is the Cluster API IPAddresses whose `poolRef` names it (an
 * InClusterIPPool in their namespace, a GlobalInClusterIPPool from any), and so is a NetBox pool's (NetBoxIPPool,
 * GlobalNetBoxIPPool), whose fill in NetBox (everyone's records, not only ours) is what its status says. A Cluster API
 * claim's only record is its Cluster API IPAddress.
 */
import { CAPI_IPAM_GROUP, type CapiIPAddress, type IPAddressClaim } from "../../api/capi/types.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import type { NetBoxIPPool } from "../../api/netbox/types.js";
import { GROUP, READY_CONDITION, type IPAddress, type IPClaim, type IPPool } from "../../api/v1alpha1/types.js";
import {
  GLOBAL_INCLUSTER_IPPOOL,
  GLOBAL_NETBOX_IPPOOL,
  INCLUSTER_IPPOOL,
  IPPOOL,
  isGlobalKind,
  NETBOX_IPPOOL,
  POOL_DESCRIPTORS,
  poolKindOfRef,
  type ClaimKind,
  type PoolKindName,
} from "../../api/registry.js";
import { PoolAllocator, parseAddress, sameAddress } from "../ipam/index.js";
import { idOf, isMetal3Kind, openAllocator, type AnyPool, type PoolId } from "./poolkind.js";

/** Everything about addresses in the namespaces looked at. */
export interface Inventory {
  /** Metal3 IPPools. */
  pools: IPPool[];
  /** The in-cluster provider's InClusterIPPools (none when its CRDs are not installed). */
  inClusterPools: InClusterIPPool[];
  /** Its GlobalInClusterIPPools: all of them, whatever namespaces are looked at (they serve every namespace). */
  globalPools: InClusterIPPool[];
  /** NetBoxIPPools (none when the NetBox CRDs are not installed or not readable). */
  netBoxPools: NetBoxIPPool[];
  /** GlobalNetBoxIPPools: all of them, as for GlobalInClusterIPPools. */
  globalNetBoxPools: NetBoxIPPool[];
  claims: IPClaim[];
  addresses: IPAddress[];
  capiClaims: IPAddressClaim[];
  capiAddresses: CapiIPAddress[];
  /**
   * The IPAddressClaims and Cluster API IPAddresses of every namespace that name a global pool (either kind): a global
   * pool's fill is cluster-wide, whatever namespaces are looked at. May repeat objects of `capiClaims` and
   * `capiAddresses`; readers take each object once.
   */
  globalRecords: { claims: IPAddressClaim[]; addresses: CapiIPAddress[] };
}

/** One allocation record of either kind. */
export interface Holding {
  address: string;
  /** `IPAddress` object name. */
  object: string;
  /** Which API the IPAddress object belongs to. */
  api: typeof GROUP | typeof CAPI_IPAM_GROUP;
  namespace: string;
  pool: string;
  /** Undefined for another provider's pool (a claim's record found through the claim). */
  poolKind?: PoolKindName;
  claimKind: ClaimKind;
  claimName: string;
}

const ns = (o: { metadata: { namespace?: string } }): string => o.metadata.namespace ?? "";
const name = (o: { metadata: { name?: string } }): string => o.metadata.name ?? "";

/** Whether a Cluster API poolRef names one of our pools. */
export function isOurPoolRef(ref: { apiGroup?: string; kind: string } | undefined): boolean {
  const kind = poolKindOfRef(ref);
  return kind !== undefined && isMetal3Kind(kind);
}

/** Objects of `first` then those of `more` not in it (by namespace and name): each object once. */
export function distinct<T extends { metadata: { namespace?: string; name?: string } }>(
  first: readonly T[],
  more: readonly T[],
): T[] {
  const seen = new Set(first.map((o) => `${ns(o)}/${name(o)}`));
  return [...first, ...more.filter((o) => !seen.has(`${ns(o)}/${name(o)}`))];
}

/** Every allocation record of the inventory, both APIs, every pool kind we serve. */
export function holdings(inv: Inventory): Holding[] {
  const m3 = inv.addresses.map((a): Holding => ({
    address: a.spec.address,
    object: name(a),
    api: GROUP,
    namespace: ns(a),
    pool: a.spec.pool?.name ?? "",
    poolKind: IPPOOL.kind,
    claimKind: "IPClaim",
    claimName: a.spec.claim?.name ?? "",
  }));
  const capi = distinct(inv.capiAddresses, inv.globalRecords.addresses).flatMap((a): Holding[] => {
    const poolKind = poolKindOfRef(a.spec.poolRef);
    if (!poolKind) return [];
    const h: Holding = {
      address: a.spec.address,
      object: name(a),
      api: CAPI_IPAM_GROUP,
      namespace: ns(a),
      pool: a.spec.poolRef.name,
      poolKind,
      claimKind: "IPAddressClaim",
      claimName: a.spec.claimRef?.name ?? "",
    };
    return [h];
  });
  return [...m3, ...capi];
}

/** Whether a record or claim in `namespace` naming `kind`/`poolName` belongs to pool `id`. */
function belongs(id: PoolId, kind: PoolKindName | undefined, namespace: string, poolName: string): boolean {
  return kind === id.kind && poolName === id.name && (isGlobalKind(kind) || namespace === id.namespace);
}

/** The allocation records of one pool. */
export function holdingsOf(pool: AnyPool, inv: Inventory): Holding[] {
  const id = idOf(pool);
  return holdings(inv).filter((h) => belongs(id, h.poolKind, h.namespace, h.pool));
}

/** The pool's allocator with every record reserved: what the controller would decide from. */
export function allocatorOf(pool: AnyPool, inv: Inventory): PoolAllocator {
  const allocator = openAllocator(pool);
  for (const h of holdingsOf(pool, inv))
    allocator.reserve(h.address, { kind: "claim", claimName: `${h.claimKind}/${h.claimName}` });
  return allocator;
}

/** A kind's place in the registry's listing order. */
const kindOrder = (kind: PoolKindName): number => POOL_DESCRIPTORS.findIndex((d) => d.kind === kind);

/** Every pool of the inventory, every kind, sorted by namespace (global pools first: they have none), name, kind. */
export function allPools(inv: Inventory): AnyPool[] {
  const tagged: AnyPool[] = [
    ...inv.pools.map((object): AnyPool => ({ kind: IPPOOL.kind, object })),
    ...inv.inClusterPools.map((object): AnyPool => ({ kind: INCLUSTER_IPPOOL.kind, object })),
    ...inv.globalPools.map((object): AnyPool => ({ kind: GLOBAL_INCLUSTER_IPPOOL.kind, object })),
    ...inv.netBoxPools.map((object): AnyPool => ({ kind: NETBOX_IPPOOL.kind, object })),
    ...inv.globalNetBoxPools.map((object): AnyPool => ({ kind: GLOBAL_NETBOX_IPPOOL.kind, object })),
  ];
  const ids = new Map(tagged.map((p) => [p, idOf(p)]));
  return tagged.sort((a, b) => {
    const [x, y] = [ids.get(a)!, ids.get(b)!];
    return (
      x.namespace.localeCompare(y.namespace) || x.name.localeCompare(y.name) || kindOrder(x.kind) - kindOrder(y.kind)
    );
  });
}

/** The claims of one pool, per API (a global pool's from every namespace). */
export function claimsOf(pool: AnyPool, inv: Inventory): { ipClaims: IPClaim[]; ipAddressClaims: IPAddressClaim[] } {
  const id = idOf(pool);
  return {
    ipClaims: inv.claims.filter((c) => belongs(id, IPPOOL.kind, ns(c), c.spec.pool.name)),
    ipAddressClaims: distinct(inv.capiClaims, inv.globalRecords.claims).filter((c) =>
      belongs(id, poolKindOfRef(c.spec.poolRef), ns(c), c.spec.poolRef.name),
    ),
  };
}

/** Records of `address` (compared as numbers) in the inventory. */
export function holdingsOfAddress(address: string, inv: Inventory): Holding[] {
  const wanted = parseAddress(address);
  if (!wanted) return [];
  return holdings(inv).filter((h) => {
    const a = parseAddress(h.address);
    return a !== undefined && sameAddress(a, wanted);
  });
}

/** Where a claim stands, for counting. */
export type ClaimState = "bound" | "pending" | "failed";

/** Reasons that mean "this claim cannot get an address as things are" (the rest means waiting). */
const FAILURE_REASONS = new Set([
  "PoolExhausted",
  "AllocationFailed",
  "PoolNotFound",
  "PoolNotReady",
  "InvalidSpec",
  "NameCollision",
]);

function readyOf(
  conditions: readonly { type: string; status: string; reason?: string }[] | undefined,
): { status: string; reason?: string } | undefined {
  return conditions?.find((c) => c.type === READY_CONDITION);
}

/** State of an IPClaim: bound once `status.address` is set; failed when Ready=False for a failure reason. */
export function ipClaimState(c: IPClaim): ClaimState {
  if (c.status?.address?.name) return "bound";
  const ready = readyOf(c.status?.conditions);
  if (c.status?.errorMessage || (ready?.status === "False" && FAILURE_REASONS.has(ready.reason ?? ""))) return "failed";
  return "pending";
}

/** State of an IPAddressClaim: bound once `status.addressRef.name` is set. */
export function ipAddressClaimState(c: IPAddressClaim): ClaimState {
  if (c.status?.addressRef?.name) return "bound";
  const ready = readyOf(c.status?.conditions);
  return ready?.status === "False" && FAILURE_REASONS.has(ready.reason ?? "") ? "failed" : "pending";
}

/** The pool (namespace, name) a claim of either kind asks, or undefined for a foreign Cluster API pool. */
export function claimPool(c: IPClaim | IPAddressClaim): string | undefined {
  if ("pool" in c.spec) return c.spec.pool.name;
  return isOurPoolRef(c.spec.poolRef) ? c.spec.poolRef.name : undefined;
}

/** Sorts by namespace then name (stable output for people and golden files). */
export function byNamespaceAndName<T extends { metadata: { namespace?: string; name?: string } }>(
  items: readonly T[],
): T[] {
  return [...items].sort((a, b) => ns(a).localeCompare(ns(b)) || name(a).localeCompare(name(b)));
}
