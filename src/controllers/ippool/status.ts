/** Pure computation of an IPPool's status: a view rebuilt from IPAddress objects (spec §1.1), never a source of truth. */
import isEqual from "lodash/isEqual.js";
import { IPADDRESSCLAIM_KIND } from "../../../api/capi/types.js";
import type { Condition, IPAddress, IPClaim, IPPool, IPPoolStatus } from "../../../api/v1alpha1/types.js";
import { READY_CONDITION, Reasons } from "../../../api/v1alpha1/types.js";
import { canonicalAddress } from "../../ipam/address.js";
import { toInt64Capped, type Capacity } from "../../ipam/allocator.js";
import type { ClaimKind } from "../../runtime/metrics.js";
import { setCondition } from "../conditions.js";
import { isDeleting } from "../meta.js";

export interface PoolHealth {
  specErrors: readonly string[];
  collisions: readonly string[];
}

/** claim name → canonical address, from the pool's IPAddress objects that name a claim. */
export function indexesFrom(addresses: readonly IPAddress[]): Record<string, string> {
  const indexes: Record<string, string> = {};
  for (const a of addresses) {
    const claim = a.spec?.claim?.name;
    if (!claim) continue;
    indexes[claim] = canonicalAddress(a.spec.address) ?? a.spec.address;
  }
  return indexes;
}

function readyCondition(health: PoolHealth): Pick<Condition, "type" | "status" | "reason" | "message"> {
  if (health.specErrors.length > 0) {
    return { type: READY_CONDITION, status: "False", reason: Reasons.InvalidSpec, message: health.specErrors.join("; ") };
  }
  if (health.collisions.length > 0) {
    return { type: READY_CONDITION, status: "False", reason: Reasons.NameCollision, message: health.collisions.join("; ") };
  }
  return { type: READY_CONDITION, status: "True", reason: Reasons.PoolReady, message: "Pool is ready" };
}

/**
 * The status the pool should have. `lastUpdated` moves only when `indexes` changed (a timestamp that moves on every
 * pass would make the controller reconcile itself forever); it starts at the pool's creation time.
 */
export function desiredPoolStatus(pool: IPPool, addresses: readonly IPAddress[], capacity: Capacity, health: PoolHealth, now: Date): IPPoolStatus {
  const current = pool.status ?? {};
  const indexes = indexesFrom(addresses);
  const changed = !isEqual(indexes, current.indexes ?? {});
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, "Z");
  // A fresh (or wiped) status starts at the creation time; afterwards only a real change of indexes moves it.
  const lastUpdated = changed && current.lastUpdated ? stamp : current.lastUpdated ?? pool.metadata.creationTimestamp ?? stamp;
  return {
    ...current,
    indexes,
    lastUpdated,
    total: toInt64Capped(capacity.total),
    used: toInt64Capped(capacity.used),
    free: toInt64Capped(capacity.free),
    conditions: setCondition(current.conditions, readyCondition(health), now),
  };
}

/**
 * The kind of claim an IPClaim stands for. The Cluster API bridge carries each IPAddressClaim through an IPClaim it
 * controls (same name), so that IPClaim counts as the IPAddressClaim. Extend this (or count IPAddressClaims next to
 * it in {@link pendingClaimsByKind}) if the bridge ever allocates without such an IPClaim.
 */
export function claimKindOf(claim: IPClaim): ClaimKind {
  const controller = (claim.metadata.ownerReferences ?? []).find((o) => o.controller === true);
  return controller?.kind === IPADDRESSCLAIM_KIND ? "IPAddressClaim" : "IPClaim";
}

/**
 * Live claims of a pool that no IPAddress of the pool names yet, per kind: the claims waiting for an address (on an
 * exhausted pool, a paused Cluster, a failing write). `addresses` are the pool's IPAddresses after the pass.
 */
export function pendingClaimsByKind(claims: readonly IPClaim[], addresses: readonly IPAddress[]): Record<ClaimKind, number> {
  const bound = new Set(addresses.map((a) => a.spec?.claim?.name).filter((n): n is string => Boolean(n)));
  const counts: Record<ClaimKind, number> = { IPClaim: 0, IPAddressClaim: 0 };
  for (const claim of claims) {
    if (isDeleting(claim.metadata) || bound.has(claim.metadata.name ?? "")) continue;
    counts[claimKindOf(claim)]++;
  }
  return counts;
}
