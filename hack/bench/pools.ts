/**
 * The pools a scenario puts its claims on, one per pool kind the controller serves: Metal3's IPPool, and the Cluster
 * API in-cluster provider's InClusterIPPool and GlobalInClusterIPPool. A scenario creates the pool its
 * claim kind asks ({@link BenchClaimKind.pool}), waits until the controller wrote the pool's status, and reads back how many
 * addresses the status counts used; each pool kind keeps those in a status of its own.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { CAPI_IPADDRESS_FINALIZER, IPADDRESSCLAIM_FINALIZER, type PoolRef } from "../../api/capi/types.js";
import {
  PROTECT_ADDRESS_FINALIZER,
  RELEASE_ADDRESS_FINALIZER,
  type InClusterIPPool,
} from "../../api/incluster/types.js";
import {
  GLOBAL_INCLUSTER_IPPOOL,
  INCLUSTER_IPPOOL,
  IPPOOL,
  resourceType,
  type ResourceDescriptor,
} from "../../api/registry.js";
import type { IPPool } from "../../api/v1alpha1/types.js";
import { clients, pool } from "../testkit/ipam.js";
import { ipAddressName } from "../../src/ipam/naming.js";
import { isNotFound } from "../../src/kube/errors.js";
import { ResourceClient } from "../../src/kube/resource.js";

/** The gateway of every bench pool: 10.0.0.1, the first host address of the subnets below. */
const GATEWAY = "10.0.0.1";
/** The network's prefix length written into every bench pool (and into the ceiling's records). */
export const BENCH_PREFIX = 16;

/**
 * The namespaces a scenario spreads the claims of a GlobalInClusterIPPool over: a cluster-scoped pool is there to
 * serve claims of several namespaces (one per workload cluster, say), so its pool pass gathers records from all of
 * them. Three, so no namespace is "the other one".
 */
export const GLOBAL_POOL_NAMESPACES = 3;

/** What a scenario needs to know about the pool its claims ask. */
export interface BenchPool {
  /** The pool's kind, for the report: "IPPool", "InClusterIPPool" or "GlobalInClusterIPPool". */
  readonly label: string;
  readonly descriptor: ResourceDescriptor;
  /** Namespaces a scenario spreads one pool's claims over: 1 for a namespaced pool. */
  readonly claimNamespaces: number;
  /**
   * The name of the scenario's pool `base` whose (first) claim namespace is `namespace`: `base` for a namespaced pool,
   * unique in the cluster for a cluster-scoped one.
   */
  poolName(namespace: string, base: string): string;
  /** Creates pool `name` (in `namespace` when namespaced) with room for at least `count` claims. */
  create(kc: KubeConfig, namespace: string, name: string, count: number): Promise<void>;
  /** Addresses the pool's status counts used; undefined while the controller has not written its status yet. */
  used(kc: KubeConfig, namespace: string, name: string): Promise<number | undefined>;
  /** What {@link used} reads, from a pool object of this kind as a list or a watch delivers it. */
  usedOf(pool: unknown): number | undefined;
  /** The API server's request key of {@link used}'s read (`GET <group>/<plural>`): the driver's own, left out. */
  readonly getRequest: string;
  /** The pool reference of a Cluster API IPAddressClaim (and of its record) naming pool `name`. */
  ref(name: string): PoolRef;
  /**
   * What a controller serving a Cluster API IPAddressClaim of this pool writes, for the bare client's ceiling: the
   * claim's and the record's finalizers, and the record's name.
   */
  readonly capiRecord: {
    claimFinalizer: string;
    recordFinalizer: string;
    name: (poolName: string, claimName: string, address: string) => string;
  };
}

/** 10.0.0.0 with the longest prefix (at most /16) whose subnet yields at least `count` addresses (spec §2: network+1 … broadcast). */
export function subnetFor(count: number): string {
  const bits = Math.max(16, Math.ceil(Math.log2(count + 1)));
  if (bits > 24) throw new Error(`${count} addresses do not fit in 10.0.0.0/8`);
  return `10.0.0.0/${32 - bits}`;
}

/**
 * The spec of an in-cluster pool with room for `count` claims: a CIDR of 10.0.0.0 as `addresses`, its own length as
 * `prefix`, the gateway of the Metal3 pools. The provider hands out neither the network and broadcast addresses nor
 * the gateway, so the CIDR must hold `count + 3` addresses.
 */
export function inClusterSpec(count: number): InClusterIPPool["spec"] {
  const subnet = subnetFor(count + 2);
  return { addresses: [subnet], prefix: Number(subnet.split("/")[1]), gateway: GATEWAY };
}

/** Which of `namespaces` the `index`-th claim (0-based) of a scenario goes to: round robin. */
export function namespaceOf(namespaces: readonly string[], index: number): string {
  const namespace = namespaces[index % namespaces.length];
  if (namespace === undefined) throw new Error("a scenario needs at least one namespace");
  return namespace;
}

export async function createPool(kc: KubeConfig, namespace: string, name: string, count: number): Promise<IPPool> {
  return await clients(kc).pools.create(
    namespace,
    pool(namespace, name, { pools: [{ subnet: subnetFor(count) }], prefix: BENCH_PREFIX, gateway: GATEWAY }),
  );
}

export async function readPool(kc: KubeConfig, namespace: string, name: string): Promise<IPPool | undefined> {
  try {
    return await clients(kc).pools.get(namespace, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

const getRequest = (d: ResourceDescriptor): string => `GET ${d.group}/${d.plural}`;

/** Metal3's IPPool (`ipam.metal3.io/v1alpha1`): reconciled once its status has conditions; `status.used` counts. */
export const METAL3_POOL: BenchPool = {
  label: "IPPool",
  descriptor: IPPOOL,
  claimNamespaces: 1,
  poolName: (_namespace, base) => base,
  async create(kc, namespace, name, count) {
    await createPool(kc, namespace, name, count);
  },
  async used(kc, namespace, name) {
    return this.usedOf(await readPool(kc, namespace, name));
  },
  usedOf(pool) {
    const status = (pool as IPPool | undefined)?.status;
    return status?.conditions?.length ? (status.used ?? 0) : undefined;
  },
  getRequest: getRequest(IPPOOL),
  ref: (name) => ({ apiGroup: IPPOOL.group, kind: IPPOOL.kind, name }),
  capiRecord: {
    claimFinalizer: IPADDRESSCLAIM_FINALIZER,
    recordFinalizer: CAPI_IPADDRESS_FINALIZER,
    name: (poolName, _claimName, address) => ipAddressName(poolName, address),
  },
};

/**
 * The in-cluster provider's pools (`ipam.cluster.x-k8s.io/v1alpha2`): reconciled once `status.ipAddresses` is written
 * (the first write is not coalesced); `status.ipAddresses.used` counts. Records are named after their claim and carry
 * the provider's finalizers. A cluster-scoped pool's name starts with its first claim namespace, unique per scenario.
 */
function inClusterPool(descriptor: ResourceDescriptor): BenchPool {
  const namespaced = descriptor.namespaced;
  // One client per KubeConfig, so a scenario does not build one per request.
  const clients = new WeakMap<KubeConfig, ResourceClient<InClusterIPPool>>();
  const client = (kc: KubeConfig): ResourceClient<InClusterIPPool> => {
    let made = clients.get(kc);
    if (!made) clients.set(kc, (made = new ResourceClient<InClusterIPPool>(kc, resourceType(descriptor))));
    return made;
  };
  return {
    label: descriptor.kind,
    descriptor,
    claimNamespaces: namespaced ? 1 : GLOBAL_POOL_NAMESPACES,
    poolName: (namespace, base) => (namespaced ? base : `${namespace}-${base}`),
    async create(kc, namespace, name, count) {
      await client(kc).create(namespace, {
        metadata: namespaced ? { name, namespace } : { name },
        spec: inClusterSpec(count),
      });
    },
    async used(kc, namespace, name) {
      try {
        return this.usedOf(await client(kc).get(namespace, name));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    usedOf: (pool) => (pool as InClusterIPPool | undefined)?.status?.ipAddresses?.used,
    getRequest: getRequest(descriptor),
    ref: (name) => ({ apiGroup: descriptor.group, kind: descriptor.kind, name }),
    capiRecord: {
      claimFinalizer: RELEASE_ADDRESS_FINALIZER,
      recordFinalizer: PROTECT_ADDRESS_FINALIZER,
      name: (_poolName, claimName) => claimName,
    },
  };
}

/** `InClusterIPPool`: namespaced, its claims in its namespace. */
export const INCLUSTER_POOL: BenchPool = inClusterPool(INCLUSTER_IPPOOL);
/** `GlobalInClusterIPPool`: cluster-scoped, its claims spread over {@link GLOBAL_POOL_NAMESPACES} namespaces. */
export const GLOBAL_INCLUSTER_POOL: BenchPool = inClusterPool(GLOBAL_INCLUSTER_IPPOOL);
