/**
 * The reads behind preflight-move's GlobalInClusterIPPool findings (preflight-global.ts): the cluster-scoped pools
 * the namespace's IPAddressClaims name, who else in the cluster uses them, and what a target cluster has of them.
 */
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import { CAPI_IPADDRESS, CAPI_IPADDRESSCLAIM, GLOBAL_INCLUSTER_IPPOOL, resourceType } from "../../api/registry.js";
import { refersTo } from "./poolkind.js";
import type { Inventory } from "./inventory.js";
import { get, list, type Obj } from "./kube.js";
import type { GlobalPoolUse } from "./preflight-global.js";
import { capiKind } from "./read.js";

const GLOBAL_POOLS = resourceType(GLOBAL_INCLUSTER_IPPOOL);

const isGlobalRef = (ref: { apiGroup?: string; kind: string } | undefined): boolean =>
  refersTo(ref, GLOBAL_INCLUSTER_IPPOOL);

/** Names of the GlobalInClusterIPPools the inventory's IPAddressClaims or IPAddresses name. */
export function globalPoolNames(inv: Inventory): string[] {
  const refs = [...inv.capiClaims.map((c) => c.spec.poolRef), ...inv.capiAddresses.map((a) => a.spec.poolRef)];
  return [...new Set(refs.filter(isGlobalRef).map((r) => r.name))].sort();
}

async function listEverywhere<T extends Obj>(descriptor: typeof CAPI_IPADDRESS | typeof CAPI_IPADDRESSCLAIM) {
  const k = await capiKind(descriptor);
  return k ? await list<T>(k, undefined, { missing: "empty" }) : [];
}

/** How `namespace` (read into `inv`) uses each GlobalInClusterIPPool it names, and who else does. */
export async function readGlobalPoolUse(namespace: string, inv: Inventory): Promise<GlobalPoolUse[]> {
  const names = globalPoolNames(inv);
  if (names.length === 0) return [];
  const [pools, claims, addresses] = await Promise.all([
    list<InClusterIPPool & Obj>(GLOBAL_POOLS, undefined, { missing: "empty" }),
    listEverywhere<IPAddressClaim & Obj>(CAPI_IPADDRESSCLAIM),
    listEverywhere<CapiIPAddress & Obj>(CAPI_IPADDRESS),
  ]);
  const uses: GlobalPoolUse[] = [];
  for (const name of names) {
    const pool = pools.find((p) => p.metadata.name === name);
    if (!pool) continue; // claims of a pool that does not exist hold nothing a move could disturb
    const onPool = addresses.filter((a) => isGlobalRef(a.spec.poolRef) && a.spec.poolRef.name === name);
    const addressOf = (ns: string, claim: string): string =>
      onPool.find((a) => a.metadata.namespace === ns && a.spec.claimRef?.name === claim)?.spec.address ?? "";
    const elsewhere = claims
      .filter((c) => c.metadata.namespace !== namespace && isGlobalRef(c.spec.poolRef) && c.spec.poolRef.name === name)
      .map((c) => {
        const ns = c.metadata.namespace ?? "";
        const claim = c.metadata.name ?? "";
        return { namespace: ns, claim, address: addressOf(ns, claim) };
      });
    // Records of other namespaces whose claim is gone (e.g. left here by an earlier move) hold their address too.
    for (const a of onPool.filter((x) => x.metadata.namespace !== namespace)) {
      const ns = a.metadata.namespace ?? "";
      if (!elsewhere.some((e) => e.namespace === ns && e.claim === a.spec.claimRef?.name))
        elsewhere.push({ namespace: ns, claim: a.spec.claimRef?.name ?? "", address: a.spec.address });
    }
    uses.push({
      name,
      spec: pool.spec,
      moving: onPool.filter((a) => a.metadata.namespace === namespace).map((a) => a.spec.address),
      elsewhere,
    });
  }
  return uses;
}

/** The current cluster's GlobalInClusterIPPools of `names`: the spec, or null when it has none of that name. */
export async function readTargetGlobalPools(
  names: readonly string[],
): Promise<Map<string, InClusterIPPool["spec"] | null>> {
  const found = new Map<string, InClusterIPPool["spec"] | null>();
  for (const name of names) found.set(name, (await get<InClusterIPPool & Obj>(GLOBAL_POOLS, "", name))?.spec ?? null);
  return found;
}
