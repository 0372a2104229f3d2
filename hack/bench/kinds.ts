/**
 * The claim kinds a scenario can drive, each on the pool kind it asks: Metal3's IPClaim on an IPPool, and Cluster
 * API's IPAddressClaim on an IPPool, an InClusterIPPool or a GlobalInClusterIPPool. A scenario only needs
 * to create the claim's pool ({@link BenchClaimKind.pool}) and claims, recognise a bound claim in a watch event, and read
 * back which address each claim got.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import {
  IPADDRESS_FINALIZER,
  IPCLAIM_FINALIZER,
  READY_CONDITION,
  type IPAddress,
  type IPClaim,
} from "../../api/v1alpha1/types.js";
import { clients, claim } from "../testkit/ipam.js";
import { ipAddressName } from "../../src/ipam/naming.js";
import { isNotFound } from "../../src/kube/errors.js";
import type { Kube } from "../../src/kube/access.js";
import { ResourceClient, type KubeObject, type ResourceType } from "../../src/kube/resource.js";
// Aliased: this module exports BenchClaimKinds of Cluster API's IPAddressClaim under names of their own.
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM as CAPI_CLAIM,
  IPADDRESS,
  IPCLAIM,
  resourceType,
} from "../../api/registry.js";
import { BENCH_PREFIX, GLOBAL_INCLUSTER_POOL, INCLUSTER_POOL, METAL3_POOL, type BenchPool } from "./pools.js";

/** What a scenario needs to know about one kind of claim. */
export interface BenchClaimKind {
  /** The claim's kind, for the report: "IPClaim" or "IPAddressClaim". */
  readonly label: string;
  /** The pool the claims ask, which a scenario creates for them. */
  readonly pool: BenchPool;
  /** The claim resource, for the watch that observes binding. */
  readonly claimType: ResourceType;
  /** The address record resource a claim of this kind is bound to. */
  readonly recordType: ResourceType;
  /** Creates claim `name` in `namespace` asking pool `poolName` of {@link pool} (same namespace if namespaced). */
  create(kc: KubeConfig, namespace: string, name: string, poolName: string): Promise<void>;
  /** Whether a claim object, as a watch delivers it, is bound: address reference set and Ready=True. */
  isBound(obj: unknown): boolean;
  /**
   * Claim name → address text, for every claim of `namespace` whose address reference resolves to an existing
   * address object (the chain a consumer follows), so a scenario can check that the addresses are distinct.
   */
  boundAddresses(kc: KubeConfig, namespace: string): Promise<Map<string, string>>;
  /** The API server's request key of `create` (`<VERB> <group>/<resource>`): the driver's own writes in a burst. */
  readonly createRequest: string;
  /**
   * The ceiling's writes for one claim, as a bare client does them with no controller: create the claim, then
   * {@link bareBind} it. The floor a controller cannot go under (the pool status, shared by many claims, aside).
   */
  bareWrites(kc: KubeConfig, namespace: string, name: string, poolName: string, address: string): Promise<void>;
  /**
   * What a controller writes to bind claim `name` (of `resourceVersion`) to `address`, and nothing else: the claim's
   * finalizer, the address record, the claim's status. The trickle's floor client (floorclient.ts) makes these too.
   */
  bareBind(
    kube: Kube,
    claim: { namespace: string; name: string; resourceVersion: string | undefined },
    poolName: string,
    address: string,
  ): Promise<void>;
  /**
   * The records the read-your-writes barrier lists before a claim of this kind is given an address (spec §3.4): the
   * other claim API's, which share the pool's addresses. Undefined when no other claim API serves the pool's kind.
   */
  readonly barrierListType?: ResourceType;
  /** Removes what {@link bareWrites} made for claim `name` (finalizers off, objects deleted). */
  removeBare(kc: KubeConfig, namespace: string, name: string, poolName: string, address: string): Promise<void>;
}

/** Drops the finalizers of `name` and deletes it; already gone counts as done. */
async function forceDelete<T extends KubeObject>(
  client: ResourceClient<T>,
  namespace: string,
  name: string,
): Promise<void> {
  try {
    await client.patch(namespace, name, { metadata: { finalizers: null } });
    await client.delete(namespace, name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** One set of clients per KubeConfig (or API door), so a burst does not build clients per request. */
function cached<K extends object, T>(make: (kc: K) => T): (kc: K) => T {
  const made = new WeakMap<K, T>();
  return (kc) => {
    let value = made.get(kc);
    if (value === undefined) {
      value = make(kc);
      made.set(kc, value);
    }
    return value;
  };
}

const metal3Clients = cached(clients);
/** The two Metal3 resources a bind writes, over any API door (the floor client's is a ClusterAccess). */
const metal3BindClients = cached((kube: Kube) => ({
  claims: new ResourceClient<IPClaim>(kube, resourceType(IPCLAIM)),
  addresses: new ResourceClient<IPAddress>(kube, resourceType(IPADDRESS)),
}));

function readyCondition(address: string): object[] {
  return [
    {
      type: READY_CONDITION,
      status: "True",
      reason: "Allocated",
      message: `Allocated ${address}`,
      lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    },
  ];
}

function readyTrue(conditions: unknown): boolean {
  if (!Array.isArray(conditions)) return false;
  return conditions.some((c: unknown) => {
    const cond = c as { type?: unknown; status?: unknown } | null;
    return cond?.type === READY_CONDITION && cond.status === "True";
  });
}

/** Metal3's IPClaim (`ipam.metal3.io/v1alpha1`): bound when `status.address.name` is set and Ready=True. */
export const METAL3_IPCLAIM: BenchClaimKind = {
  label: "IPClaim",
  pool: METAL3_POOL,
  claimType: resourceType(IPCLAIM),
  recordType: resourceType(IPADDRESS),
  createRequest: `POST ${IPCLAIM.group}/${IPCLAIM.plural}`,
  async create(kc, namespace, name, poolName) {
    await metal3Clients(kc).claims.create(namespace, claim(namespace, name, poolName));
  },
  barrierListType: resourceType(CAPI_IPADDRESS),
  async bareWrites(kc, namespace, name, poolName, address) {
    const created = await metal3Clients(kc).claims.create(namespace, claim(namespace, name, poolName));
    await this.bareBind(kc, { namespace, name, resourceVersion: created.metadata.resourceVersion }, poolName, address);
  },
  async bareBind(kube, { namespace, name, resourceVersion }, poolName, address) {
    const c = metal3BindClients(kube);
    await c.claims.patch(namespace, name, { metadata: { finalizers: [IPCLAIM_FINALIZER], resourceVersion } });
    const record = await c.addresses.create(namespace, {
      metadata: { name: ipAddressName(poolName, address), namespace, finalizers: [IPADDRESS_FINALIZER] },
      spec: { address, prefix: BENCH_PREFIX, pool: { name: poolName, namespace }, claim: { name, namespace } },
    });
    await c.claims.patchStatus(namespace, name, {
      status: { address: { name: record.metadata.name, namespace }, conditions: readyCondition(address) },
    });
  },
  async removeBare(kc, namespace, name, poolName, address) {
    const c = metal3Clients(kc);
    await forceDelete(c.addresses, namespace, ipAddressName(poolName, address));
    await forceDelete(c.claims, namespace, name);
  },
  isBound(obj) {
    const status = (obj as Partial<IPClaim> | null)?.status;
    return Boolean(status?.address?.name) && readyTrue(status?.conditions);
  },
  async boundAddresses(kc, namespace) {
    const c = metal3Clients(kc);
    const [claims, addresses] = await Promise.all([c.claims.list(namespace), c.addresses.list(namespace)]);
    const byName = new Map(addresses.items.map((a) => [a.metadata.name ?? "", a]));
    const result = new Map<string, string>();
    for (const cl of claims.items) {
      const ref = cl.status?.address?.name;
      const address = ref ? byName.get(ref) : undefined;
      if (address && address.spec.claim.name === cl.metadata.name)
        result.set(cl.metadata.name ?? "", address.spec.address);
    }
    return result;
  },
};

const capiClaims = cached(
  (kc: Kube): ResourceClient<IPAddressClaim> => new ResourceClient<IPAddressClaim>(kc, CAPI_CLAIM_TYPE),
);
const capiAddresses = cached(
  (kc: Kube): ResourceClient<CapiIPAddress> => new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS)),
);
const CAPI_CLAIM_TYPE: ResourceType = resourceType(CAPI_CLAIM);

/**
 * Cluster API's IPAddressClaim (`ipam.cluster.x-k8s.io/v1beta2`) on a pool of `pool`'s kind: bound when
 * `status.addressRef` is set and Ready=True; the address is read from the Cluster API IPAddress it names. Every pool
 * kind serves it through the same pool pass (translated in memory, one Cluster API IPAddress as its record); what
 * differs is the pool's allocatable set, its status, and the record's name and finalizers ({@link BenchPool.capiRecord}).
 */
export function capiClaimKind(pool: BenchPool): BenchClaimKind {
  const capiClaim = (namespace: string, name: string, poolName: string): IPAddressClaim => ({
    metadata: { name, namespace },
    spec: { poolRef: pool.ref(poolName) },
  });
  const { claimFinalizer, recordFinalizer, name: recordName } = pool.capiRecord;
  return {
    label: "IPAddressClaim",
    pool,
    claimType: CAPI_CLAIM_TYPE,
    recordType: resourceType(CAPI_IPADDRESS),
    createRequest: `POST ${CAPI_CLAIM.group}/${CAPI_CLAIM.plural}`,
    async create(kc, namespace, name, poolName) {
      await capiClaims(kc).create(namespace, capiClaim(namespace, name, poolName));
    },
    // Metal3's IPClaims share an IPPool's addresses; no other claim API serves the in-cluster pools.
    ...(pool === METAL3_POOL ? { barrierListType: resourceType(IPADDRESS) } : {}),
    async bareWrites(kc, namespace, name, poolName, address) {
      const created = await capiClaims(kc).create(namespace, capiClaim(namespace, name, poolName));
      await this.bareBind(
        kc,
        { namespace, name, resourceVersion: created.metadata.resourceVersion },
        poolName,
        address,
      );
    },
    async bareBind(kube, { namespace, name, resourceVersion }, poolName, address) {
      await capiClaims(kube).patch(namespace, name, { metadata: { finalizers: [claimFinalizer], resourceVersion } });
      const record = await capiAddresses(kube).create(namespace, {
        metadata: { name: recordName(poolName, name, address), namespace, finalizers: [recordFinalizer] },
        spec: { address, prefix: BENCH_PREFIX, poolRef: pool.ref(poolName), claimRef: { name } },
      });
      await capiClaims(kube).patchStatus(namespace, name, {
        status: { addressRef: { name: record.metadata.name }, conditions: readyCondition(address) },
      });
    },
    async removeBare(kc, namespace, name, poolName, address) {
      await forceDelete(capiAddresses(kc), namespace, recordName(poolName, name, address));
      await forceDelete(capiClaims(kc), namespace, name);
    },
    isBound(obj) {
      const status = (obj as Partial<IPAddressClaim> | null)?.status;
      return Boolean(status?.addressRef?.name) && readyTrue(status?.conditions);
    },
    async boundAddresses(kc, namespace) {
      const [claims, addresses] = await Promise.all([
        capiClaims(kc).list(namespace),
        capiAddresses(kc).list(namespace),
      ]);
      const byName = new Map(addresses.items.map((a) => [a.metadata.name ?? "", a]));
      const result = new Map<string, string>();
      for (const cl of claims.items) {
        const address = byName.get(cl.status?.addressRef?.name ?? "");
        if (address && address.spec.claimRef.name === cl.metadata.name)
          result.set(cl.metadata.name ?? "", address.spec.address);
      }
      return result;
    },
  };
}

/** IPAddressClaims on a Metal3 IPPool: served by the same pool pass as IPClaims, so both should cost about the same. */
export const CAPI_IPADDRESSCLAIM: BenchClaimKind = capiClaimKind(METAL3_POOL);
/** IPAddressClaims on an InClusterIPPool of their namespace. */
export const CAPI_ON_INCLUSTER: BenchClaimKind = capiClaimKind(INCLUSTER_POOL);
/** IPAddressClaims of several namespaces on one GlobalInClusterIPPool. */
export const CAPI_ON_GLOBAL_INCLUSTER: BenchClaimKind = capiClaimKind(GLOBAL_INCLUSTER_POOL);

/** Every claim kind a run drives, in the order it drives them; the first two are the Metal3 pool paths. */
export const BENCH_CLAIM_KINDS: readonly BenchClaimKind[] = [
  METAL3_IPCLAIM,
  CAPI_IPADDRESSCLAIM,
  CAPI_ON_INCLUSTER,
  CAPI_ON_GLOBAL_INCLUSTER,
];
