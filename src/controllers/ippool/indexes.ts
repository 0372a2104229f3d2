/**
 * Index keys and watch mappers of the pool-keyed controller. A pool key names kind, scope and name (pools/kind.ts,
 * `poolKeyOf`); every claim and address event maps to the key of its pool, so all allocation decisions of one pool
 * run in one queue slot. The mappers here are Metal3's (IPPool, IPClaim, ipam.metal3.io IPAddress).
 */
import type { IPAddress, IPClaim, IPPool } from "../../../api/v1alpha1/types.js";
import { CLUSTER_NAME_LABEL, GROUP, IPPOOL_KIND } from "../../../api/v1alpha1/types.js";
import { poolAddressKey, poolKeyOf } from "../pools/indexes.js";

/** The key of Metal3 IPPool `name` in `namespace`. */
export const ipPoolKey = (namespace: string, name: string): string =>
  poolKeyOf({ group: GROUP, kind: IPPOOL_KIND, namespace, name });

/**
 * Key of the pool a claim names. Claims naming another namespace are keyed in their own (and fail there); claims
 * naming no pool (no spec, an empty name) under the empty name, a key the pass never asks the API server about
 * (they fail there: plan.ts, ipClaimRefProblem).
 */
export const claimToPool = (c: IPClaim): string => ipPoolKey(c.metadata.namespace ?? "", c.spec?.pool?.name ?? "");

/**
 * Whether someone waits on the pass of this claim's pool: the claim has no address yet, or its deletion waits for its
 * release. Such a pool goes ahead of pools queued only to refresh their status (src/runtime/workqueue.ts).
 */
export const claimWaits = (c: IPClaim): boolean => !c.status?.address?.name || !!c.metadata.deletionTimestamp;

/** Key of the pool an IPAddress belongs to (its own namespace: pools and addresses share one). */
export const addressToPool = (a: IPAddress): string => ipPoolKey(a.metadata.namespace ?? "", a.spec?.pool?.name ?? "");

/** {@link BY_POOL_ADDRESS} key of an IPAddress. */
export const addressToPoolAddress = (a: IPAddress): string[] =>
  a.spec?.address ? [poolAddressKey(addressToPool(a), a.spec.address)] : [];

/** Key of the claim an IPAddress was made for, if it names one. */
export const addressToClaim = (a: IPAddress): string[] =>
  a.spec?.claim?.name ? [`${a.metadata.namespace ?? ""}/${a.spec.claim.name}`] : [];

/** `<namespace>/<cluster>` of a pool's Cluster. */
export const poolToCluster = (p: IPPool): string[] =>
  p.spec?.clusterName ? [`${p.metadata.namespace ?? ""}/${p.spec.clusterName}`] : [];

/** `<namespace>/<cluster>` of a claim's own Cluster label (its pool's Cluster is found through the pool). */
export const claimToCluster = (c: IPClaim): string[] => {
  const name = c.metadata.labels?.[CLUSTER_NAME_LABEL];
  return name ? [`${c.metadata.namespace ?? ""}/${name}`] : [];
};

export const poolKey = (p: IPPool): string => ipPoolKey(p.metadata.namespace ?? "", p.metadata.name ?? "");
