/**
 * Index names every informer of the pool pass uses, whatever the kind: claims and records by pool key (pools/kind.ts,
 * `poolKeyOf`), records by claim (`<namespace>/<claim>`), pools and claims by Cluster (`<namespace>/<cluster>`),
 * records by namespace, and records by pool and address.
 */
import { canonicalAddress } from "../../ipam/address.js";

export const BY_POOL = "pool";
export const BY_CLAIM = "claim";
export const BY_CLUSTER = "cluster";
export const BY_NAMESPACE = "namespace";
/** `<pool key>/<canonical address>` of a record: who else holds an address, without a scan of the pool. */
export const BY_POOL_ADDRESS = "pool-address";

/** The {@link BY_POOL_ADDRESS} key of `address` in pool `poolKey`. */
export const poolAddressKey = (poolKey: string, address: string): string =>
  `${poolKey}/${canonicalAddress(address) ?? address}`;

/** Where a pool is: its kind's group and kind, its namespace ("" for a cluster-scoped kind) and name. */
export interface PoolLocation {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/**
 * The work-queue key of a pool: `<Kind>.<group>/<namespace>/<name>`, namespace empty for a cluster-scoped kind. Keys
 * carry kind and scope, so a GlobalInClusterIPPool and an InClusterIPPool or IPPool of one name never share a slot.
 */
export function poolKeyOf(ref: PoolLocation): string {
  return `${ref.kind}.${ref.group}/${ref.namespace}/${ref.name}`;
}

/** The inverse of {@link poolKeyOf}; undefined for a string that is not a pool key. */
export function parsePoolKey(key: string): PoolLocation | undefined {
  const first = key.indexOf("/");
  const second = key.indexOf("/", first + 1);
  const dot = key.indexOf(".");
  if (first < 0 || second < 0 || dot < 0 || dot > first) return undefined;
  return {
    kind: key.slice(0, dot),
    group: key.slice(dot + 1, first),
    namespace: key.slice(first + 1, second),
    name: key.slice(second + 1),
  };
}

/** `<namespace>/<name>` (an informer's cache key) → [namespace, name]. */
export function splitCacheKey(cacheKey: string): [string, string] {
  const i = cacheKey.indexOf("/");
  return [cacheKey.slice(0, i), cacheKey.slice(i + 1)];
}
