/**
 * The Cluster API in-cluster IPAM provider as the other provider of the in-cluster pool kinds (pools/providers.ts):
 * this controller serves them only when the operator enables it, and never while that provider's controller runs,
 * which it tells by that controller's leader-election Lease being held and renewed.
 *
 * Why the Lease: it is renewed every few seconds by exactly the process that would hand out addresses, so it says
 * "running", where clusterctl's inventory entry (`providers.clusterctl.cluster.x-k8s.io`, `in-cluster`) says only
 * "installed" (it stays with the Deployment scaled to zero) and would need a cluster-wide list of the inventory plus
 * reads of Deployments. Reading the Lease needs `get` on that one name only. The provider's controller elects a
 * leader with `--leader-elect`, which its manifests pass; one run without it holds no Lease and is not seen.
 */
import type { PoolKind } from "../pools/kind.js";
import type { SharedKinds } from "../pools/providers.js";
import { GLOBAL_INCLUSTER_POOL_KIND, INCLUSTER_POOL_KIND } from "./kind.js";

/** The provider's leader-election id (`LeaderElectionID` of its main.go): the name of its Lease. */
export const INCLUSTER_PROVIDER_LEASE = "7bb7acb4.ipam.cluster.x-k8s.io";
/** The namespace its manifests (and so clusterctl, by default) install it in: where its Lease is. */
export const INCLUSTER_PROVIDER_NAMESPACE = "capi-ipam-in-cluster-system";
/** The flag that lets this controller serve the in-cluster kinds (src/flags.ts). */
export const SERVE_INCLUSTER_FLAG = "--serve-incluster-pools";

/** The in-cluster kinds, whether the operator enabled them, and where the provider's Lease is. */
export function inClusterSharedKinds(
  enabled: boolean,
  namespace = INCLUSTER_PROVIDER_NAMESPACE,
): SharedKinds<PoolKind> {
  return {
    kinds: [INCLUSTER_POOL_KIND, GLOBAL_INCLUSTER_POOL_KIND],
    provider: { name: "in-cluster", lease: { namespace, name: INCLUSTER_PROVIDER_LEASE } },
    enabled,
    flag: SERVE_INCLUSTER_FLAG,
  };
}

/**
 * RBAC to tell whether the provider runs: `get` on its Lease by name. Cluster-wide, since its namespace is a flag
 * and may not exist when this controller is installed (a Role there could not be applied), yet limited to that one
 * name: no list or watch, no other Lease.
 */
export const INCLUSTER_PROVIDER_RULES = [
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    resourceNames: [INCLUSTER_PROVIDER_LEASE],
    verbs: ["get"],
  },
];
