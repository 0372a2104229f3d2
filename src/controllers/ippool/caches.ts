/**
 * Metal3's caches: the store's informers of IPPools, IPClaims and ipam.metal3.io IPAddresses, with the indexes the
 * pass reads them through (pools/claimindex.ts) and the BY_POOL journals of what changed in a pool (pools/state.ts).
 * The manager attaches them to its store once, before the store starts; the store starts, stops and awaits them
 * like its own (Store.track) and knows nothing of their kinds.
 */
import { GROUP, type IPAddress, type IPClaim, type IPPool } from "../../../api/v1alpha1/types.js";
import { IPADDRESS, IPCLAIM, IPPOOL, resourceType } from "../../../api/registry.js";
import type { Informer } from "../../kube/informer.js";
import { BY_CLAIM, BY_CLUSTER, BY_NAMESPACE, BY_POOL, BY_POOL_ADDRESS } from "../pools/indexes.js";
import type { Store } from "../store.js";
import {
  addressToClaim,
  addressToPool,
  addressToPoolAddress,
  claimToCluster,
  claimToPool,
  poolToCluster,
} from "./indexes.js";

/** RBAC the reads and writes of Metal3's caches need (rendered into config/rbac by `npm run generate`). */
export const METAL3_CACHE_RULES = [
  { apiGroups: [GROUP], resources: [IPPOOL.plural], verbs: ["get", "list", "watch", "patch"] },
  { apiGroups: [GROUP], resources: [`${IPPOOL.plural}/status`, `${IPCLAIM.plural}/status`], verbs: ["patch"] },
  { apiGroups: [GROUP], resources: [IPCLAIM.plural], verbs: ["get", "list", "watch", "patch"] },
  { apiGroups: [GROUP], resources: [IPADDRESS.plural], verbs: ["get", "list", "watch", "create", "patch", "delete"] },
];

export interface Metal3Caches {
  pools: Informer<IPPool>;
  claims: Informer<IPClaim>;
  addresses: Informer<IPAddress>;
}

/** The Metal3 caches of each store they were attached to. */
const ATTACHED = new WeakMap<Store, Metal3Caches>();

/** Makes, indexes and attaches Metal3's caches to `store` (once, before it starts). */
export function attachMetal3Caches(store: Store): Metal3Caches {
  const pools = store.track(store.informerFor<IPPool>(resourceType(IPPOOL)));
  const claims = store.track(store.informerFor<IPClaim>(resourceType(IPCLAIM)));
  const addresses = store.track(store.informerFor<IPAddress>(resourceType(IPADDRESS)));
  pools.addIndex(BY_CLUSTER, poolToCluster);
  claims.addIndex(BY_POOL, (c) => [claimToPool(c)]);
  // The pool pass reads what changed in its pool instead of every claim and record of it (pools/state.ts).
  store.journal(claims, BY_POOL);
  claims.addIndex(BY_CLUSTER, claimToCluster);
  addresses.addIndex(BY_POOL, (a) => [addressToPool(a)]);
  store.journal(addresses, BY_POOL);
  addresses.addIndex(BY_CLAIM, addressToClaim);
  addresses.addIndex(BY_NAMESPACE, (a) => [a.metadata.namespace ?? ""]);
  addresses.addIndex(BY_POOL_ADDRESS, addressToPoolAddress);
  claims.on(store.recordMovedAway);
  const caches = { pools, claims, addresses };
  ATTACHED.set(store, caches);
  return caches;
}

/** The Metal3 caches attached to `store`; throws when none were (a wiring fault, not a cluster state). */
export function metal3Caches(store: Store): Metal3Caches {
  const caches = ATTACHED.get(store);
  if (!caches) throw new Error("Metal3's caches are not attached to this store");
  return caches;
}
