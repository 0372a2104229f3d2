/**
 * The reads behind preflight-move's NetBox findings (preflight-netbox.ts): the NetBox pools the namespace's
 * IPAddressClaims name, who else uses a global one, and what a target cluster has of the global ones. Pools and
 * claims only: the CLI never reads the token Secret and never calls NetBox.
 */
import type { IPAddressClaim } from "../../api/capi/types.js";
import type { NetBoxIPPool } from "../../api/netbox/types.js";
import {
  CAPI_IPADDRESSCLAIM,
  GLOBAL_NETBOX_IPPOOL,
  isGlobalKind,
  poolDescriptor,
  resourceType,
  type NetBoxKindName,
} from "../../api/registry.js";
import type { Inventory } from "./inventory.js";
import { get, list, type Obj } from "./kube.js";
import { netBoxKindOfRef, type NetBoxPoolUse } from "./preflight-netbox.js";
import { capiKind } from "./read.js";

/** How `namespace` (read into `inv`) uses each NetBox pool it names. */
export async function readNetBoxPoolUse(namespace: string, inv: Inventory): Promise<NetBoxPoolUse[]> {
  const refs = [...inv.capiClaims.map((c) => c.spec.poolRef), ...inv.capiAddresses.map((a) => a.spec.poolRef)];
  const named = new Map<string, { kind: NetBoxKindName; name: string }>();
  for (const ref of refs) {
    const kind = netBoxKindOfRef(ref);
    if (kind) named.set(`${kind}/${ref.name}`, { kind, name: ref.name });
  }
  if (named.size === 0) return [];
  const anyGlobal = [...named.values()].some((n) => isGlobalKind(n.kind));
  const claimsEverywhere = anyGlobal ? await listEverywhere<IPAddressClaim & Obj>(CAPI_IPADDRESSCLAIM) : [];
  const uses: NetBoxPoolUse[] = [];
  for (const { kind, name } of [...named.values()]) {
    const pool = await get<NetBoxIPPool & Obj>(resourceType(poolDescriptor(kind)), namespace, name);
    if (!pool) continue; // claims of a pool that does not exist hold nothing a move could disturb
    const onPool = (ref: { apiGroup?: string; kind: string; name: string }): boolean =>
      netBoxKindOfRef(ref) === kind && ref.name === name;
    uses.push({
      kind,
      name,
      spec: pool.spec,
      moving: inv.capiAddresses.filter((a) => onPool(a.spec.poolRef)).map((a) => a.spec.address),
      elsewhere: isGlobalKind(kind)
        ? claimsEverywhere.filter((c) => c.metadata.namespace !== namespace && onPool(c.spec.poolRef)).length
        : 0,
    });
  }
  return uses;
}

async function listEverywhere<T extends Obj>(descriptor: typeof CAPI_IPADDRESSCLAIM) {
  const k = await capiKind(descriptor);
  return k ? await list<T>(k, undefined, { missing: "empty" }) : [];
}

/** The current cluster's GlobalNetBoxIPPools of `names`: the spec, or null when it has none of that name. */
export async function readTargetNetBoxPools(
  names: readonly string[],
): Promise<Map<string, NetBoxIPPool["spec"] | null>> {
  const found = new Map<string, NetBoxIPPool["spec"] | null>();
  for (const name of names)
    found.set(name, (await get<NetBoxIPPool & Obj>(resourceType(GLOBAL_NETBOX_IPPOOL), "", name))?.spec ?? null);
  return found;
}
