/**
 * What the webhooks read from the cluster: the pools of a namespace (for the warnings of spec §6) and the addresses
 * in use in a pool (to refuse ranges that would drop them). An interface, so handler tests inject plain data.
 */
import type { Kube } from "../kube/access.js";
import { CAPI_IPADDRESS, IPADDRESS, IPPOOL, resourceType } from "../../api/registry.js";
import type { IPAddress, IPPool } from "../../api/v1alpha1/types.js";
import type { CapiIPAddress } from "../../api/capi/types.js";
import { isNotFound } from "../kube/errors.js";
import { ResourceClient } from "../kube/resource.js";

/** Reads the webhooks need. Implementations reject on API failures; handlers decide what a failure means. */
export interface ClusterLookup {
  /** Every IPPool of `namespace`. */
  poolsInNamespace(namespace: string): Promise<IPPool[]>;
  /**
   * The addresses held in pool `poolName` of `namespace`: `spec.address` of every IPAddress whose `spec.pool` names
   * it, and of every Cluster API IPAddress whose `poolRef` names it (the only record of a Cluster API claim).
   */
  addressesOfPool(namespace: string, poolName: string): Promise<string[]>;
}

/**
 * `spec.address` of the Cluster API IPAddresses of `namespace` on our pool `poolName`, through the newest served
 * version; none when Cluster API's IPAM is not installed.
 */
async function capiAddressesOfPool(
  clients: readonly ResourceClient<CapiIPAddress>[],
  namespace: string,
  poolName: string,
): Promise<string[]> {
  for (const client of clients) {
    try {
      const items = await client.listWhere(namespace, "spec.poolRef.name", poolName, (a) => a.spec?.poolRef?.name);
      return items
        .filter((a) => a.spec.poolRef.apiGroup === IPPOOL.group && a.spec.poolRef.kind === IPPOOL.kind)
        .map((a) => a.spec.address);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return [];
}

/**
 * The lookup through the API server (quorum reads, all pages; a pool's addresses through the `spec.pool.name` field
 * selector where the server supports it). Needs list on `ippools` and on both kinds of `ipaddresses`, which the
 * controller has anyway.
 */
export function kubeLookup(kubeConfig: Kube): ClusterLookup {
  const pools = new ResourceClient<IPPool>(kubeConfig, resourceType(IPPOOL));
  const addresses = new ResourceClient<IPAddress>(kubeConfig, resourceType(IPADDRESS));
  const capiAddresses = CAPI_IPADDRESS.versions.map(
    (version) => new ResourceClient<CapiIPAddress>(kubeConfig, resourceType(CAPI_IPADDRESS, version)),
  );
  const metal3AddressesOfPool = async (namespace: string, poolName: string): Promise<string[]> =>
    (await addresses.listWhere(namespace, "spec.pool.name", poolName, (a) => a.spec?.pool?.name))
      .filter((a) => !a.spec.pool.namespace || a.spec.pool.namespace === namespace)
      .map((a) => a.spec.address)
      .filter((text): text is string => typeof text === "string");
  return {
    poolsInNamespace: async (namespace) => (await pools.list(namespace)).items,
    addressesOfPool: async (namespace, poolName) => {
      const [metal3, capi] = await Promise.all([
        metal3AddressesOfPool(namespace, poolName),
        capiAddressesOfPool(capiAddresses, namespace, poolName),
      ]);
      return [...metal3, ...capi];
    },
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
