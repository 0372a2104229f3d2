/**
 * The largest pools admission takes: lists longer than {@link MAX_ITEMS} are refused before any validation, with the
 * API server's own `Too many` error, so the work of one review stays bounded whoever sends it. The limit is far
 * above real pools and about what etcd's object size allows of the smallest entries; the controllers still serve
 * whatever is stored.
 */
import type { InClusterIPPool } from "../../api/incluster/types.js";
import type { IPPool } from "../../api/v1alpha1/types.js";
import type { FieldError } from "../ipam/fielderror.js";

/** Most items of one list of a pool spec (entries, preallocations, DNS servers, addresses, excluded addresses). */
export const MAX_ITEMS = 100_000;

function tooMany(field: string, count: number): FieldError[] {
  if (count <= MAX_ITEMS) return [];
  return [{ field, type: "TooMany", rendered: String(count), detail: `must have at most ${MAX_ITEMS} items` }];
}

function countOf(list: unknown): number {
  if (Array.isArray(list)) return list.length;
  return list !== null && typeof list === "object" ? Object.keys(list).length : 0;
}

/** `Too many` errors of an IPPool: `spec.pools`, `spec.preAllocations`, `spec.dnsServers` and each entry's. */
export function ipPoolLimitErrors(pool: IPPool): FieldError[] {
  const spec = pool.spec as Partial<IPPool["spec"]> | undefined;
  const errors = [
    ...tooMany("spec.pools", countOf(spec?.pools)),
    ...tooMany("spec.preAllocations", countOf(spec?.preAllocations)),
    ...tooMany("spec.dnsServers", countOf(spec?.dnsServers)),
  ];
  if (errors.length > 0 || !Array.isArray(spec?.pools)) return errors;
  spec.pools.forEach((e, i) => errors.push(...tooMany(`spec.pools[${i}].dnsServers`, countOf(e?.dnsServers))));
  return errors;
}

/** `Too many` errors of an in-cluster provider's pool: `spec.addresses` and `spec.excludedAddresses`. */
export function inClusterLimitErrors(pool: InClusterIPPool): FieldError[] {
  const spec = pool.spec as Partial<InClusterIPPool["spec"]> | undefined;
  return [
    ...tooMany("spec.addresses", countOf(spec?.addresses)),
    ...tooMany("spec.excludedAddresses", countOf(spec?.excludedAddresses)),
  ];
}
