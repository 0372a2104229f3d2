/**
 * What the CLI reads about addresses, and the facts every subcommand derives from it. Pure: no I/O here.
 *
 * The allocation record model (spec §3.2, §5): a pool's used set is its `ipam.metal3.io` IPAddresses
 * (`spec.pool.name`), the Cluster API IPAddresses whose `poolRef` names it (apiGroup ipam.metal3.io, kind IPPool),
 * and its preallocations. A Cluster API claim's only record is its Cluster API IPAddress.
 */
import { CAPI_IPAM_GROUP, type CapiIPAddress, type IPAddressClaim } from "../../api/capi/types.js";
import {
  GROUP,
  IPPOOL_KIND,
  READY_CONDITION,
  type IPAddress,
  type IPClaim,
  type IPPool,
} from "../../api/v1alpha1/types.js";
import { PoolAllocator, parseAddress, sameAddress } from "../ipam/index.js";

/** Everything about addresses in the namespaces looked at. */
export interface Inventory {
  pools: IPPool[];
  claims: IPClaim[];
  addresses: IPAddress[];
  capiClaims: IPAddressClaim[];
  capiAddresses: CapiIPAddress[];
}

/** The two claim kinds, as kubectl names them. */
export type ClaimKind = "IPClaim" | "IPAddressClaim";

/** One allocation record of either kind. */
export interface Holding {
  address: string;
  /** `IPAddress` object name. */
  object: string;
  /** Which API the IPAddress object belongs to. */
  api: typeof GROUP | typeof CAPI_IPAM_GROUP;
  namespace: string;
  pool: string;
  claimKind: ClaimKind;
  claimName: string;
}

const ns = (o: { metadata: { namespace?: string } }): string => o.metadata.namespace ?? "";
const name = (o: { metadata: { name?: string } }): string => o.metadata.name ?? "";

/** Whether a Cluster API poolRef names one of our pools. */
export function isOurPoolRef(ref: { apiGroup?: string; kind: string } | undefined): boolean {
  return ref?.apiGroup === GROUP && ref.kind === IPPOOL_KIND;
}

/** Every allocation record of the inventory, both kinds. */
export function holdings(inv: Inventory): Holding[] {
  const m3 = inv.addresses.map((a): Holding => ({
    address: a.spec.address,
    object: name(a),
    api: GROUP,
    namespace: ns(a),
    pool: a.spec.pool?.name ?? "",
    claimKind: "IPClaim",
    claimName: a.spec.claim?.name ?? "",
  }));
  const capi = inv.capiAddresses
    .filter((a) => isOurPoolRef(a.spec.poolRef))
    .map((a): Holding => ({
      address: a.spec.address,
      object: name(a),
      api: CAPI_IPAM_GROUP,
      namespace: ns(a),
      pool: a.spec.poolRef.name,
      claimKind: "IPAddressClaim",
      claimName: a.spec.claimRef?.name ?? "",
    }));
  return [...m3, ...capi];
}

/** The allocation records of one pool. */
export function holdingsOf(pool: IPPool, inv: Inventory): Holding[] {
  return holdings(inv).filter((h) => h.namespace === ns(pool) && h.pool === name(pool));
}

/** The pool's allocator with every record reserved: what the controller would decide from. */
export function allocatorOf(pool: IPPool, inv: Inventory): PoolAllocator {
  const allocator = new PoolAllocator(pool.spec);
  for (const h of holdingsOf(pool, inv))
    allocator.reserve(h.address, { kind: "claim", claimName: `${h.claimKind}/${h.claimName}` });
  return allocator;
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
