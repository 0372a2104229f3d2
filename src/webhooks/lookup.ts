/**
 * What the webhooks read from the cluster: the pools of a namespace (for the warnings of spec §6), the addresses in
 * use in a pool (to refuse ranges that would drop them), and the addresses of the Cluster API IPAddresses of an
 * in-cluster provider's pool (its update and delete rules). An interface, so handler tests inject plain data.
 */
import type { Kube } from "../kube/access.js";
import {
  CAPI_IPADDRESS,
  GLOBAL_INCLUSTER_IPPOOL,
  INCLUSTER_IPPOOL,
  IPADDRESS,
  IPPOOL,
  resourceType,
} from "../../api/registry.js";
import type { IPAddress, IPPool } from "../../api/v1alpha1/types.js";
import type { CapiIPAddress, PoolRef } from "../../api/capi/types.js";
import { INCLUSTER_GROUP } from "../../api/incluster/types.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import { isNotFound } from "../kube/errors.js";
import { ResourceClient } from "../kube/resource.js";

/** Reads the webhooks need. Implementations reject on API failures; handlers decide what a failure means. */
export interface ClusterLookup {
  /**
   * Every IPPool of `namespace` but the one named `except` (filtered by the API server: a review's stored pool, as
   * large as the pool under review, is never read for it).
   */
  poolsInNamespace(namespace: string, except?: string): Promise<IPPool[]>;
  /**
   * The addresses held in pool `poolName` of `namespace`: `spec.address` of every IPAddress whose `spec.pool` names
   * it, and of every Cluster API IPAddress whose `poolRef` names it (the only record of a Cluster API claim).
   */
  addressesOfPool(namespace: string, poolName: string): Promise<string[]>;
  /**
   * `spec.address` of every Cluster API IPAddress whose `spec.poolRef` names the in-cluster provider's pool of `kind`
   * and `name` (apiGroup `ipam.cluster.x-k8s.io`, or none, which the provider reads as that group): those of
   * `namespace` for an `InClusterIPPool`, of every namespace when `namespace` is undefined (`GlobalInClusterIPPool`).
   * None when Cluster API's IPAddress is not served.
   */
  inClusterPoolAddresses(kind: string, name: string, namespace: string | undefined): Promise<string[]>;
  /**
   * `metadata.uid` of the stored in-cluster provider's pool of `kind` (`InClusterIPPool` in `namespace`,
   * `GlobalInClusterIPPool` when `namespace` is undefined) and `name`; undefined when there is none.
   */
  inClusterPoolUid(kind: string, name: string, namespace: string | undefined): Promise<string | undefined>;
}

/** RBAC of the lookups, cluster-wide: lists of pools and of both kinds of IPAddress (global pools span namespaces). */
export const LOOKUP_RULES = [
  { apiGroups: [IPPOOL.group], resources: [IPPOOL.plural, IPADDRESS.plural], verbs: ["list"] },
  { apiGroups: [CAPI_IPADDRESS.group], resources: [CAPI_IPADDRESS.plural], verbs: ["list"] },
  // The stored pool's uid, which an in-cluster pool review must match before the addresses in use are read.
  {
    apiGroups: [INCLUSTER_IPPOOL.group],
    resources: [INCLUSTER_IPPOOL.plural, GLOBAL_INCLUSTER_IPPOOL.plural],
    verbs: ["get"],
  },
];

/** Whether `ref` names the in-cluster pool `kind`/`name`, an absent apiGroup read as the provider reads it. */
function namesInClusterPool(ref: PoolRef | undefined, kind: string, name: string): boolean {
  return (ref?.apiGroup || INCLUSTER_GROUP) === INCLUSTER_GROUP && ref?.kind === kind && ref.name === name;
}

/**
 * The Cluster API IPAddresses of `namespace` (every namespace when "") whose `poolRef.name` is `poolName`, through the
 * newest served version (a version the server does not serve answers 404 and the next is tried); none when Cluster
 * API's IPAM is not installed.
 */
async function capiAddressesNamed(
  clients: readonly ResourceClient<CapiIPAddress>[],
  namespace: string,
  poolName: string,
): Promise<CapiIPAddress[]> {
  for (const client of clients) {
    try {
      return await client.listWhere(namespace, "spec.poolRef.name", poolName, (a) => a.spec?.poolRef?.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return [];
}

/** `spec.address` of the Cluster API IPAddresses of `namespace` on our pool `poolName`. */
async function capiAddressesOfPool(
  clients: readonly ResourceClient<CapiIPAddress>[],
  namespace: string,
  poolName: string,
): Promise<string[]> {
  return (await capiAddressesNamed(clients, namespace, poolName))
    .filter((a) => a.spec.poolRef.apiGroup === IPPOOL.group && a.spec.poolRef.kind === IPPOOL.kind)
    .map((a) => a.spec.address);
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
  const inClusterPools = new Map(
    [INCLUSTER_IPPOOL, GLOBAL_INCLUSTER_IPPOOL].map((kind) => [
      kind.kind as string,
      new ResourceClient<InClusterIPPool>(kubeConfig, resourceType(kind)),
    ]),
  );
  const metal3AddressesOfPool = async (namespace: string, poolName: string): Promise<string[]> =>
    (await addresses.listWhere(namespace, "spec.pool.name", poolName, (a) => a.spec?.pool?.name))
      .filter((a) => !a.spec.pool.namespace || a.spec.pool.namespace === namespace)
      .map((a) => a.spec.address)
      .filter((text): text is string => typeof text === "string");
  return {
    poolsInNamespace: async (namespace, except) =>
      (await pools.list(namespace, except ? { fieldSelector: `metadata.name!=${except}` } : {})).items,
    addressesOfPool: async (namespace, poolName) => {
      const [metal3, capi] = await Promise.all([
        metal3AddressesOfPool(namespace, poolName),
        capiAddressesOfPool(capiAddresses, namespace, poolName),
      ]);
      return [...metal3, ...capi];
    },
    inClusterPoolAddresses: async (kind, name, namespace) =>
      (await capiAddressesNamed(capiAddresses, namespace ?? "", name))
        .filter((a) => namesInClusterPool(a.spec?.poolRef, kind, name))
        .map((a) => a.spec.address),
    inClusterPoolUid: async (kind, name, namespace) => {
      const client = inClusterPools.get(kind);
      if (!client) return undefined;
      try {
        // Metadata only: the stored pool may be as large as the one under review, and only its uid is needed.
        return (await client.getMetadata(namespace ?? "", name)).metadata.uid;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
  };
}

/**
 * A lookup over fixed data, for tests and tools: Metal3 pools and IPAddresses, Cluster API IPAddresses, and the
 * in-cluster provider's pools (their `kind` says which).
 */
export function staticLookup(
  pools: readonly IPPool[],
  addresses: readonly IPAddress[] = [],
  capiAddresses: readonly CapiIPAddress[] = [],
  inClusterPools: readonly InClusterIPPool[] = [],
): ClusterLookup {
  return {
    poolsInNamespace: (namespace, except) =>
      Promise.resolve(pools.filter((p) => p.metadata.namespace === namespace && p.metadata.name !== except)),
    addressesOfPool: (namespace, poolName) =>
      Promise.resolve(
        addresses
          .filter((a) => a.metadata.namespace === namespace && a.spec.pool.name === poolName)
          .map((a) => a.spec.address),
      ),
    inClusterPoolAddresses: (kind, name, namespace) =>
      Promise.resolve(
        capiAddresses
          .filter((a) => namespace === undefined || a.metadata.namespace === namespace)
          .filter((a) => namesInClusterPool(a.spec.poolRef, kind, name))
          .map((a) => a.spec.address),
      ),
    inClusterPoolUid: (kind, name, namespace) =>
      Promise.resolve(
        inClusterPools.find((p) => p.kind === kind && p.metadata.name === name && p.metadata.namespace === namespace)
          ?.metadata.uid,
      ),
  };
}
