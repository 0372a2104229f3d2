/**
 * A site's held claims written by the bench with no controller running, as the controller leaves a bound claim: the
 * claim with its finalizer, its record made by the controller's own builders (name, finalizer, owners, labels), and
 * the claim's bound status (address named, Ready=True Allocated). Three requests per claim, so a large site is built
 * in minutes; a controller started on it finds every claim current and has nothing to write but pool statuses.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import { apiVersionOf, CAPI_IPADDRESS, CAPI_IPADDRESSCLAIM, resourceType } from "../../api/registry.js";
import { IPCLAIM_FINALIZER, READY_CONDITION, Reasons, type IPPool } from "../../api/v1alpha1/types.js";
import { claimStatus, desiredCapiAddress } from "../../src/controllers/capi/translate.js";
import { setCondition } from "../../src/controllers/conditions.js";
import { GLOBAL_INCLUSTER_POOL_KIND, INCLUSTER_POOL_KIND } from "../../src/controllers/incluster/kind.js";
import { METAL3_POOL_KIND } from "../../src/controllers/ippool/kind.js";
import { newAddress } from "../../src/controllers/ippool/plan.js";
import type { PoolKind, PoolObject } from "../../src/controllers/pools/kind.js";
import { ipAddressName } from "../../src/ipam/naming.js";
import { ResourceClient } from "../../src/kube/resource.js";
import { claim as ipClaim, clients, type Clients } from "../testkit/ipam.js";
import { BENCH_PREFIX, GLOBAL_INCLUSTER_POOL, INCLUSTER_POOL, METAL3_POOL, type BenchPool } from "./pools.js";
import type { SiteClaim, SitePoolKind } from "./site.js";

const POOL_KINDS: Record<SitePoolKind, { kind: PoolKind; bench: BenchPool }> = {
  IPPool: { kind: METAL3_POOL_KIND, bench: METAL3_POOL },
  InClusterIPPool: { kind: INCLUSTER_POOL_KIND, bench: INCLUSTER_POOL },
  GlobalInClusterIPPool: { kind: GLOBAL_INCLUSTER_POOL_KIND, bench: GLOBAL_INCLUSTER_POOL },
};

/** The clients a site's fixtures are written with, made once. */
export interface FixtureClients {
  metal3: Clients;
  capiClaims: ResourceClient<IPAddressClaim>;
  capiAddresses: ResourceClient<CapiIPAddress>;
}

export function fixtureClients(kc: KubeConfig): FixtureClients {
  return {
    metal3: clients(kc),
    capiClaims: new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM)),
    capiAddresses: new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS)),
  };
}

const allocated = (address: string): { status: "True"; reason: string; message: string } => ({
  status: "True",
  reason: Reasons.Allocated,
  message: `Allocated ${address}`,
});

/**
 * Writes held claim `c` of pool object `pool` (as created, with its uid) in `namespace`, bound to `address` with the
 * pool's gateway, as the controller would have bound it.
 */
export async function writeHeldClaim(
  k: FixtureClients,
  namespace: string,
  c: SiteClaim,
  pool: PoolObject,
  address: string,
): Promise<void> {
  const allocation = { address, prefix: BENCH_PREFIX, gateway: c.pool.gateway };
  if (c.api === "IPClaim") {
    const created = await k.metal3.claims.create(
      namespace,
      ipClaim(namespace, c.name, c.pool.name, { finalizers: [IPCLAIM_FINALIZER] }),
    );
    const metal3Pool = pool as IPPool;
    const name = ipAddressName(metal3Pool.spec.namePrefix, address);
    await k.metal3.addresses.create(namespace, newAddress(metal3Pool, created, name, allocation));
    await k.metal3.claims.patchStatus(namespace, c.name, {
      status: {
        address: { name, namespace },
        conditions: setCondition(undefined, { type: READY_CONDITION, ...allocated(address) }, new Date()),
      },
    });
    return;
  }
  const { kind, bench } = POOL_KINDS[c.pool.kind];
  const created = await k.capiClaims.create(namespace, {
    metadata: { name: c.name, namespace, finalizers: [kind.finalizers.claim] },
    spec: { poolRef: bench.ref(c.pool.name) },
  });
  const name = kind.recordName(pool, c.name, address);
  await k.capiAddresses.create(
    namespace,
    desiredCapiAddress(created, kind, pool, name, allocation, apiVersionOf(CAPI_IPADDRESS)),
  );
  await k.capiClaims.patchStatus(namespace, c.name, {
    status: claimStatus(created, CAPI_IPADDRESSCLAIM.versions[0], name, allocated(address), new Date()),
  });
}
