/**
 * `kubectl ipam pools`: one line per pool of every kind with its fill and the claims that wait or fail. Pure: rows
 * from an inventory, text and machine renderings of rows.
 */
import {
  allocatorOf,
  allPools,
  claimsOf,
  ipAddressClaimState,
  ipClaimState,
  type ClaimState,
  type Inventory,
} from "./inventory.js";
import { bar, jsonCount, levelColour, paint, percent, table, type Style } from "./output.js";
import { idOf, kindKey, strategyOf, type AnyPool, type PoolKindName } from "./poolkind.js";

/** Claims of one pool in one state, per kind. */
export interface ClaimCounts {
  ipClaims: number;
  ipAddressClaims: number;
}

/** One pool's line. Counts are exact (bigint): an IPv6 pool can hold more than 2^64 addresses. */
export interface PoolRow {
  kind: PoolKindName;
  /** "" for a GlobalInClusterIPPool (cluster-scoped). */
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

function countClaims(pool: AnyPool, inv: Inventory, state: ClaimState): ClaimCounts {
  const mine = claimsOf(pool, inv);
  return {
    ipClaims: mine.ipClaims.filter((c) => ipClaimState(c) === state).length,
    ipAddressClaims: mine.ipAddressClaims.filter((c) => ipAddressClaimState(c) === state).length,
  };
}

/** The row of one pool, counted from the allocation records (not from the pool's status, which may lag). */
export function poolRow(pool: AnyPool, inv: Inventory): PoolRow {
  const capacity = allocatorOf(pool, inv).capacity();
  const id = idOf(pool);
  return {
    kind: id.kind,
    namespace: id.namespace,
    name: id.name,
    cluster: pool.kind === "IPPool" ? (pool.object.spec.clusterName ?? "") : "",
    strategy: strategyOf(pool),
    total: capacity.total,
    used: capacity.used,
    free: capacity.free,
    pending: countClaims(pool, inv, "pending"),
    failed: countClaims(pool, inv, "failed"),
  };
}

/** Rows of every pool of every kind, sorted by namespace (global pools first), name and kind. */
export function poolRows(inv: Inventory): PoolRow[] {
  return allPools(inv).map((p) => poolRow(p, inv));
}

const sum = (c: ClaimCounts): number => c.ipClaims + c.ipAddressClaims;

/** "3" or "3 (1 capi)": both kinds in one cell, Cluster API claims called out. */
function claimsCell(c: ClaimCounts): string {
  return c.ipAddressClaims > 0 ? `${sum(c)} (${c.ipAddressClaims} capi)` : String(sum(c));
}

/**
 * The table; the NAMESPACE column only when rows span namespaces (kubectl's -A convention; "-" for a global pool),
 * the KIND column only when a pool is not a Metal3 IPPool (a Metal3-only cluster sees the table it always did).
 */
export function renderPools(rows: readonly PoolRow[], style: Style, withNamespace: boolean): string {
  if (rows.length === 0) return "No pools found.";
  const withKind = rows.some((r) => r.kind !== "IPPool");
  const head = [
    ...(withNamespace ? ["NAMESPACE"] : []),
    ...(withKind ? ["KIND"] : []),
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
      ...(withNamespace ? [r.namespace || "-"] : []),
      ...(withKind ? [r.kind] : []),
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
  const first = (withNamespace ? 1 : 0) + (withKind ? 1 : 0);
  return table([head, ...body], [first + (style.bars ? 4 : 3), first + (style.bars ? 5 : 4)]);
}

/**
 * The machine form of rows (stable keys; counts exact). `kind` only for pools that are not Metal3 IPPools (the
 * documents had no such key before); a global pool's `namespace` is null.
 */
export function poolsDocument(rows: readonly PoolRow[]): object {
  return {
    pools: rows.map((r) => ({
      ...kindKey(r.kind),
      namespace: r.kind === "GlobalInClusterIPPool" ? null : r.namespace,
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
