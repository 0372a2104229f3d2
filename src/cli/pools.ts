/**
 * `kubectl ipam pools`: one line per pool of every kind with its fill and the claims that wait or fail. Pure: rows
 * from an inventory, text and machine renderings of rows.
 *
 * A NetBox pool's fill is NetBox's (every record in its prefix or range, ours or not), as the controller last wrote it
 * to the pool's `status.ipAddresses`: the CLI never calls NetBox and never reads its token. Its claims bound here
 * (the pool's IPAddresses) are counted apart, in BOUND.
 */
import {
  allocatorOf,
  allPools,
  claimsOf,
  holdingsOf,
  ipAddressClaimState,
  ipClaimState,
  type ClaimState,
  type Inventory,
} from "./inventory.js";
import { bar, jsonCount, levelColour, paint, percent, table, type Style } from "./output.js";
import { isGlobalKind, isNetBoxKind, type PoolKindName } from "../../api/registry.js";
import { idOf, isMetal3Pool, isNetBoxPool, kindKey, strategyOf, UNTAGGED_KIND, type AnyPool } from "./poolkind.js";

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
  /**
   * NetBox pools only: the IPAddresses of the pool (its claims bound here), and whether the counts above are known
   * (the controller has written NetBox's utilisation to the pool's status).
   */
  netbox?: { bound: number; reported: boolean };
}

function countClaims(pool: AnyPool, inv: Inventory, state: ClaimState): ClaimCounts {
  const mine = claimsOf(pool, inv);
  return {
    ipClaims: mine.ipClaims.filter((c) => ipClaimState(c) === state).length,
    ipAddressClaims: mine.ipAddressClaims.filter((c) => ipAddressClaimState(c) === state).length,
  };
}

/** NetBox's utilisation of a NetBox pool, from its status (zeros until the controller has written it). */
function netBoxCounts(pool: AnyPool, inv: Inventory): Pick<PoolRow, "total" | "used" | "free" | "netbox"> {
  const reported = isNetBoxPool(pool) ? pool.object.status?.ipAddresses : undefined;
  return {
    total: BigInt(reported?.total ?? 0),
    used: BigInt(reported?.used ?? 0),
    free: BigInt(reported?.free ?? 0),
    netbox: { bound: holdingsOf(pool, inv).length, reported: reported !== undefined },
  };
}

/**
 * The row of one pool, counted from the allocation records (not from the pool's status, which may lag); a NetBox
 * pool's fill from its status (NetBox's count, which the records cannot give).
 */
export function poolRow(pool: AnyPool, inv: Inventory): PoolRow {
  const id = idOf(pool);
  const counts: Pick<PoolRow, "total" | "used" | "free" | "netbox"> = isNetBoxKind(id.kind)
    ? netBoxCounts(pool, inv)
    : allocatorOf(pool, inv).capacity();
  return {
    kind: id.kind,
    namespace: id.namespace,
    name: id.name,
    cluster: isMetal3Pool(pool) ? (pool.object.spec.clusterName ?? "") : "",
    strategy: strategyOf(pool),
    total: counts.total,
    used: counts.used,
    free: counts.free,
    ...(counts.netbox ? { netbox: counts.netbox } : {}),
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
 * the KIND column only when a pool is not a Metal3 IPPool (a Metal3-only cluster sees the table it always did), the
 * BOUND column (claims bound on the pool) only when a NetBox pool is listed, whose USED counts NetBox's records.
 */
export function renderPools(rows: readonly PoolRow[], style: Style, withNamespace: boolean): string {
  if (rows.length === 0) return "No pools found.";
  const withKind = rows.some((r) => r.kind !== UNTAGGED_KIND);
  const withBound = rows.some((r) => r.netbox);
  const head = [
    ...(withNamespace ? ["NAMESPACE"] : []),
    ...(withKind ? ["KIND"] : []),
    "NAME",
    "CLUSTER",
    "STRATEGY",
    ...(style.bars ? ["USAGE"] : []),
    "USED/TOTAL",
    "%",
    ...(withBound ? ["BOUND"] : []),
    "PENDING",
    "FAILED",
  ];
  const body = rows.map((r) => {
    // A NetBox pool whose status the controller has not written yet: NetBox's counts are not known here.
    const unknown = r.netbox?.reported === false;
    const colour = levelColour(r.used, r.total);
    const failed = sum(r.failed) > 0 ? paint(style, "red", claimsCell(r.failed)) : claimsCell(r.failed);
    return [
      ...(withNamespace ? [r.namespace || "-"] : []),
      ...(withKind ? [r.kind] : []),
      r.name,
      r.cluster || "-",
      r.strategy,
      ...(style.bars ? [paint(style, colour, bar(r.used, r.total))] : []),
      unknown ? "?/?" : `${r.used}/${r.total}`,
      unknown ? "-" : paint(style, colour, percent(r.used, r.total)),
      ...(withBound ? [String(r.netbox?.bound ?? r.used)] : []),
      claimsCell(r.pending),
      failed,
    ];
  });
  const first = (withNamespace ? 1 : 0) + (withKind ? 1 : 0);
  const rightAligned = [first + (style.bars ? 4 : 3), first + (style.bars ? 5 : 4)];
  return table([head, ...body], withBound ? [...rightAligned, rightAligned[1]! + 1] : rightAligned);
}

/**
 * The machine form of rows (stable keys; counts exact). `kind` only for pools that are not Metal3 IPPools (the
 * documents had no such key before); a global pool's `namespace` is null. NetBox pools add `bound` and `countedBy:
 * "netbox"` (counts are null until the controller has written NetBox's utilisation to the pool's status).
 */
export function poolsDocument(rows: readonly PoolRow[]): object {
  return {
    pools: rows.map((r) => ({
      ...kindKey(r.kind),
      namespace: isGlobalKind(r.kind) ? null : r.namespace,
      name: r.name,
      cluster: r.cluster || null,
      strategy: r.strategy,
      ...(r.netbox?.reported === false
        ? { total: null, used: null, free: null, percent: null }
        : {
            total: jsonCount(r.total),
            used: jsonCount(r.used),
            free: jsonCount(r.free),
            percent: percent(r.used, r.total),
          }),
      ...(r.netbox ? { countedBy: "netbox", bound: r.netbox.bound } : {}),
      pending: r.pending,
      failed: r.failed,
    })),
  };
}
