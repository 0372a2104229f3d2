/**
 * What the webhooks read from the cluster: the pools of a namespace (for the warnings of spec §6) and the addresses
 * in use in a pool (to refuse ranges that would drop them). An interface, so handler tests inject plain data.
 */
import type { Kube } from "../kube/access.js";
import { IPADDRESS, IPPOOL, resourceType } from "../../api/registry.js";
import type { IPAddress, IPPool } from "../../api/v1alpha1/types.js";
import { ResourceClient } from "../kube/resource.js";

/** Reads the webhooks need. Implementations reject on API failures; handlers decide what a failure means. */
export interface ClusterLookup {
  /** Every IPPool of `namespace`. */
  poolsInNamespace(namespace: string): Promise<IPPool[]>;
  /** `spec.address` of every IPAddress of `namespace` whose `spec.pool` names pool `poolName` of that namespace. */
  addressesOfPool(namespace: string, poolName: string): Promise<string[]>;
}

/**
 * The lookup through the API server (quorum reads, all pages; a pool's addresses through the `spec.pool.name` field
 * selector where the server supports it). Needs list on `ippools` and `ipaddresses`, which the controller has anyway.
 */
export function kubeLookup(kubeConfig: Kube): ClusterLookup {
  const pools = new ResourceClient<IPPool>(kubeConfig, resourceType(IPPOOL));
  const addresses = new ResourceClient<IPAddress>(kubeConfig, resourceType(IPADDRESS));
  return {
    poolsInNamespace: async (namespace) => (await pools.list(namespace)).items,
    addressesOfPool: async (namespace, poolName) =>
      (await addresses.listWhere(namespace, "spec.pool.name", poolName, (a) => a.spec?.pool?.name))
        .filter((a) => !a.spec.pool.namespace || a.spec.pool.namespace === namespace)
        .map((a) => a.spec.address)
        .filter((text): text is string => typeof text === "string"),
  };
}

/** A lookup over fixed data, for tests and tools. */
export function staticLookup(pools: readonly IPPool[], addresses: readonly IPAddress[] = []): ClusterLookup {
  return {
    poolsInNamespace: (namespace) => Promise.resolve(pools.filter((p) => p.metadata.namespace === namespace)),
    addressesOfPool: (namespace, poolName) =>
      Promise.resolve(
        addresses
          .filter((a) => a.metadata.namespace === namespace && a.spec.pool.name === poolName)
          .map((a) => a.spec.address),
      ),
  };
}
