/**
 * `kubectl ipam pools`: one line per pool with its fill and the claims that wait or fail. Pure: rows from an
 * inventory, text and machine renderings of rows.
 */
import type { IPPool } from "../../api/v1alpha1/types.js";
import {
  allocatorOf,
  byNamespaceAndName,
  claimPool,
  ipAddressClaimState,
  ipClaimState,
  type ClaimState,
  type Inventory,
} from "./inventory.js";
import { bar, jsonCount, levelColour, paint, percent, table, type Style } from "./output.js";

/** Claims of one pool in one state, per kind. */
export interface ClaimCounts {
  ipClaims: number;
  ipAddressClaims: number;
}

/** One pool's line. Counts are exact (bigint): an IPv6 pool can hold more than 2^64 addresses. */
export interface PoolRow {
  namespace: string;
  name: string;
  cluster: string;
  strategy: string;
  total: bigint;
  used: bigint;
  free: bigint;
  pending: ClaimCounts;
  failed: ClaimCounts;
}

function countClaims(pool: IPPool, inv: Inventory, state: ClaimState): ClaimCounts {
  const namespace = pool.metadata.namespace ?? "";
  const mine = <T extends { metadata: { namespace?: string } }>(c: T): boolean => c.metadata.namespace === namespace;
  return {
    ipClaims: inv.claims.filter((c) => mine(c) && claimPool(c) === pool.metadata.name && ipClaimState(c) === state)
      .length,
    ipAddressClaims: inv.capiClaims.filter(
      (c) => mine(c) && claimPool(c) === pool.metadata.name && ipAddressClaimState(c) === state,
    ).length,
  };
}

/** The row of one pool, counted from the allocation records (not from the pool's status, which may lag). */
export function poolRow(pool: IPPool, inv: Inventory): PoolRow {
  const capacity = allocatorOf(pool, inv).capacity();
  return {
    namespace: pool.metadata.namespace ?? "",
    name: pool.metadata.name ?? "",
    cluster: pool.spec.clusterName ?? "",
    strategy: pool.spec.allocationStrategy || "sequential",
    total: capacity.total,
    used: capacity.used,
    free: capacity.free,
    pending: countClaims(pool, inv, "pending"),
    failed: countClaims(pool, inv, "failed"),
  };
}

/** Rows of every pool, sorted by namespace and name. */
export function poolRows(inv: Inventory): PoolRow[] {
  return byNamespaceAndName(inv.pools).map((p) => poolRow(p, inv));
}

const sum = (c: ClaimCounts): number => c.ipClaims + c.ipAddressClaims;

/** "3" or "3 (1 capi)": both kinds in one cell, Cluster API claims called out. */
function claimsCell(c: ClaimCounts): string {
  return c.ipAddressClaims > 0 ? `${sum(c)} (${c.ipAddressClaims} capi)` : String(sum(c));
}

/** The table; the NAMESPACE column only when rows span namespaces (kubectl's -A convention). */
export function renderPools(rows: readonly PoolRow[], style: Style, withNamespace: boolean): string {
  if (rows.length === 0) return "No pools found.";
  const head = [
    ...(withNamespace ? ["NAMESPACE"] : []),
    "NAME",
    "CLUSTER",
    "STRATEGY",
    ...(style.bars ? ["USAGE"] : []),
    "USED/TOTAL",
    "%",
    "PENDING",
    "FAILED",
  ];
  const body = rows.map((r) => {
    const colour = levelColour(r.used, r.total);
    const failed = sum(r.failed) > 0 ? paint(style, "red", claimsCell(r.failed)) : claimsCell(r.failed);
    return [
      ...(withNamespace ? [r.namespace] : []),
      r.name,
      r.cluster || "-",
      r.strategy,
      ...(style.bars ? [paint(style, colour, bar(r.used, r.total))] : []),
      `${r.used}/${r.total}`,
      paint(style, colour, percent(r.used, r.total)),
      claimsCell(r.pending),
      failed,
    ];
  });
  const first = withNamespace ? 1 : 0;
  return table([head, ...body], [first + (style.bars ? 4 : 3), first + (style.bars ? 5 : 4)]);
}

/** The machine form of rows (stable keys; counts exact). */
export function poolsDocument(rows: readonly PoolRow[]): object {
  return {
    pools: rows.map((r) => ({
      namespace: r.namespace,
      name: r.name,
      cluster: r.cluster || null,
      strategy: r.strategy,
      total: jsonCount(r.total),
      used: jsonCount(r.used),
      free: jsonCount(r.free),
      percent: percent(r.used, r.total),
      pending: r.pending,
      failed: r.failed,
    })),
  };
}
