/** Builders for the CLI's table tests: small objects of both address APIs. */
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import { INCLUSTER_GROUP, type InClusterIPPool, type InClusterIPPoolSpec } from "../../api/incluster/types.js";
import type { IPAddress, IPClaim, IPPool, IPPoolSpec, OwnerReference } from "../../api/v1alpha1/types.js";
import type { Inventory } from "./inventory.js";
import type { AnyPool } from "./poolkind.js";

export const NS = "ns1";

export function pool(
  name: string,
  spec: Partial<IPPoolSpec>,
  uid = `uid-pool-${name}`,
  owners: OwnerReference[] = [],
): IPPool {
  return { metadata: { name, namespace: NS, uid, ownerReferences: owners }, spec: { namePrefix: name, ...spec } };
}

/** A Metal3 IPPool tagged as a pool of any kind. */
export const metal3 = (object: IPPool): AnyPool => ({ kind: "IPPool", object });

/** An InClusterIPPool in {@link NS}, or a GlobalInClusterIPPool (no namespace) when `global`. */
export function inClusterPool(name: string, spec: InClusterIPPoolSpec, global = false): InClusterIPPool {
  return { metadata: { name, ...(global ? {} : { namespace: NS }), uid: `uid-icp-${name}` }, spec };
}

/** A Cluster API claim of an in-cluster pool (`kind` InClusterIPPool or GlobalInClusterIPPool), in `namespace`. */
export function inClusterClaim(
  name: string,
  kind: string,
  poolName: string,
  extra: Partial<IPAddressClaim> = {},
  namespace = NS,
): IPAddressClaim {
  return {
    metadata: { name, namespace, uid: `uid-icc-${namespace}-${name}`, ...extra.metadata },
    spec: { poolRef: { apiGroup: INCLUSTER_GROUP, kind, name: poolName } },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

/** The Cluster API IPAddress of an in-cluster pool's claim: named after the claim, as the provider names it. */
export function inClusterAddress(
  kind: string,
  poolName: string,
  address: string,
  claimName: string,
  namespace = NS,
): CapiIPAddress {
  return {
    metadata: { name: claimName, namespace, uid: `uid-ica-${namespace}-${claimName}` },
    spec: {
      address,
      prefix: 24,
      poolRef: { apiGroup: INCLUSTER_GROUP, kind, name: poolName },
      claimRef: { name: claimName },
    },
  };
}

export function ipClaim(name: string, poolName: string, extra: Partial<IPClaim> = {}): IPClaim {
  return {
    metadata: { name, namespace: NS, uid: `uid-ipc-${name}`, ...extra.metadata },
    spec: { pool: { name: poolName } },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

export function capiClaim(name: string, poolName: string, extra: Partial<IPAddressClaim> = {}): IPAddressClaim {
  return {
    metadata: { name, namespace: NS, uid: `uid-ipac-${name}`, ...extra.metadata },
    spec: { poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: poolName } },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

export function m3Address(
  poolName: string,
  address: string,
  claimName: string,
  owners: OwnerReference[] = [],
): IPAddress {
  const name = `${poolName}-${address.replace(/[.:]/g, "-")}`;
  return {
    metadata: { name, namespace: NS, uid: `uid-ipa-${name}`, ownerReferences: owners },
    spec: { address, pool: { name: poolName }, claim: { name: claimName } },
  };
}

export function capiAddress(
  poolName: string,
  address: string,
  claimName: string,
  owners: OwnerReference[] = [],
): CapiIPAddress {
  const name = `${poolName}-${address.replace(/[.:]/g, "-")}`;
  return {
    metadata: { name, namespace: NS, uid: `uid-capa-${name}`, ownerReferences: owners },
    spec: {
      address,
      prefix: 24,
      poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: poolName },
      claimRef: { name: claimName },
    },
  };
}

export function inventory(parts: Partial<Inventory>): Inventory {
  return {
    pools: [],
    inClusterPools: [],
    globalPools: [],
    netBoxPools: [],
    globalNetBoxPools: [],
    claims: [],
    addresses: [],
    capiClaims: [],
    capiAddresses: [],
    globalRecords: { claims: [], addresses: [] },
    ...parts,
  };
}

export function owner(kind: string, name: string, uid: string, apiVersion = "example.test/v1"): OwnerReference {
  return { apiVersion, kind, name, uid };
}
