/**
 * Metal3's IPPool as a module (pools/module.ts): its kind, served from the start on caches of its own (its CRD ships
 * with us), the IPClaim lifecycle over them, and the RBAC those caches need.
 */
import type { IPAddress, IPClaim, IPPool } from "../../../api/v1alpha1/types.js";
import { BY_CLUSTER } from "../pools/indexes.js";
import type { CacheHook, KindModule } from "../pools/module.js";
import { IPClaimApi } from "./api.js";
import { attachMetal3Caches, METAL3_CACHE_RULES } from "./caches.js";
import { addressToPool, claimToPool, claimWaits, poolKey } from "./indexes.js";
import { METAL3_POOL_KIND } from "./kind.js";

/** Metal3's caches on the manager's store, each event mapped onto the key of the pool it affects. */
const METAL3_CACHE_HOOK: CacheHook = {
  kind: METAL3_POOL_KIND,
  attach(store, enqueue) {
    const metal3 = attachMetal3Caches(store);
    store.servePools(METAL3_POOL_KIND, metal3.pools);
    metal3.pools.on((_kind, p: IPPool) => enqueue(poolKey(p)));
    metal3.claims.on((_kind, c: IPClaim) => enqueue(claimToPool(c), claimWaits(c)));
    metal3.addresses.on((_kind, a: IPAddress) => enqueue(addressToPool(a)));
    return {
      api: new IPClaimApi(store, metal3),
      poolsOfCluster: (clusterKey) => [
        ...metal3.pools.byIndex(BY_CLUSTER, clusterKey).map(poolKey),
        ...metal3.claims.byIndex(BY_CLUSTER, clusterKey).map(claimToPool),
      ],
    };
  },
};

export const METAL3_MODULE: KindModule = {
  kinds: () => [METAL3_POOL_KIND],
  hooks: [METAL3_CACHE_HOOK],
  clusterRules: METAL3_CACHE_RULES,
};
