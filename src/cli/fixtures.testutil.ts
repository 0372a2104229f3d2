/** Builders for the CLI's table tests: small objects of both address APIs. */
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { IPAddress, IPClaim, IPPool, IPPoolSpec, OwnerReference } from "../../api/v1alpha1/types.js";
import type { Inventory } from "./inventory.js";

export const NS = "ns1";

export function pool(
  name: string,
  spec: Partial<IPPoolSpec>,
  uid = `uid-pool-${name}`,
  owners: OwnerReference[] = [],
): IPPool {
  return { metadata: { name, namespace: NS, uid, ownerReferences: owners }, spec: { namePrefix: name, ...spec } };
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
  return { pools: [], claims: [], addresses: [], capiClaims: [], capiAddresses: [], ...parts };
}

export function owner(kind: string, name: string, uid: string, apiVersion = "example.test/v1"): OwnerReference {
  return { apiVersion, kind, name, uid };
}
