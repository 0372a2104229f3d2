/**
 * `kubectl ipam free POOL`: the pool's free addresses as compact ranges, and the address the next claim would get.
 * Pure: computed with the allocator of src/ipam from the pool spec and its allocation records, for every pool kind
 * (an in-cluster pool's space is its addresses minus excluded, reserved and gateway, as the controller sees it).
 */
import { formatAddress, parseAddress, type Family } from "../ipam/index.js";
import { allocatorOf, holdingsOf, type Inventory } from "./inventory.js";
import { jsonCount, table } from "./output.js";
import {
  idOf,
  kindKey,
  poolSpans,
  poolTitle,
  preAllocationsOf,
  strategyOf,
  type AnyPool,
  type PoolKindName,
} from "./poolkind.js";

/** A run of free addresses, inclusive. */
export interface FreeRange {
  family: Family;
  first: bigint;
  last: bigint;
}

/** A preallocated address nobody holds yet: free to look at, but only its claim may take it. */
export interface Reservation {
  address: string;
  claim: string;
}

/** What `free` reports. */
export interface FreeReport {
  kind: PoolKindName;
  /** "" for a GlobalInClusterIPPool. */
  namespace: string;
  pool: string;
  strategy: string;
  total: bigint;
  used: bigint;
  ranges: FreeRange[];
  reserved: Reservation[];
  /** The next claim's address under a sequential strategy; for random, undefined with `random` set. */
  next: { address?: string; random: boolean; error?: string };
}

/** Subtracts sorted distinct `used` values from the sorted disjoint `spans`. */
export function subtract(spans: readonly (readonly [bigint, bigint])[], used: readonly bigint[]): [bigint, bigint][] {
  const out: [bigint, bigint][] = [];
  let u = 0;
  for (const [lo, hi] of spans) {
    let cur = lo;
    while (u < used.length && used[u]! < lo) u++;
    while (u < used.length && used[u]! <= hi) {
      if (used[u]! > cur) out.push([cur, used[u]! - 1n]);
      cur = used[u]! + 1n;
      u++;
    }
    if (cur <= hi) out.push([cur, hi]);
  }
  return out;
}

const ascending = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

function valuesOf(addresses: readonly string[], family: Family): bigint[] {
  const values = addresses
    .map(parseAddress)
    .filter((a) => a?.family === family)
    .map((a) => a!.value);
  return [...new Set(values)].sort(ascending);
}

/** Builds the report: free = the entries' union minus held and preallocated addresses. */
export function freeReport(pool: AnyPool, inv: Inventory): FreeReport {
  const held = holdingsOf(pool, inv).map((h) => h.address);
  const pre = Object.entries(preAllocationsOf(pool));
  const taken = [...held, ...pre.map(([, a]) => a)];
  const union = poolSpans(pool);
  const ranges: FreeRange[] = [];
  for (const family of [4, 6] as const) {
    for (const [first, last] of subtract(union[family], valuesOf(taken, family))) ranges.push({ family, first, last });
  }
  const allocator = allocatorOf(pool, inv);
  const heldKeys = new Set(
    held
      .map((a) => parseAddress(a))
      .filter((a) => a)
      .map((a) => `${a!.family}/${a!.value}`),
  );
  const reserved = pre
    .filter(([, a]) => {
      const p = parseAddress(a);
      return p !== undefined && allocator.contains(a) && !heldKeys.has(`${p.family}/${p.value}`);
    })
    .map(([claim, a]) => ({ address: formatAddress(parseAddress(a)!), claim }))
    .sort((x, y) => x.claim.localeCompare(y.claim));
  const capacity = allocator.capacity();
  const id = idOf(pool);
  return {
    kind: id.kind,
    namespace: id.namespace,
    pool: id.name,
    strategy: strategyOf(pool),
    total: capacity.total,
    used: capacity.used,
    ranges,
    reserved,
    next: nextOf(pool, inv),
  };
}

/** A claim name no real claim can have (claim names are DNS names), so no preallocation applies to it. */
const NEW_CLAIM = "\u0000next";

function nextOf(pool: AnyPool, inv: Inventory): FreeReport["next"] {
  if (strategyOf(pool) === "random") return { random: true };
  const decision = allocatorOf(pool, inv).allocate({ claimName: NEW_CLAIM });
  return decision.ok ? { address: decision.address, random: false } : { random: false, error: decision.message };
}

/** Size of a range; exact for any family. */
export const rangeSize = (r: FreeRange): bigint => r.last - r.first + 1n;

/** `10.0.0.12-10.0.0.40`, or a single address. */
export function rangeText(r: FreeRange): string {
  const first = formatAddress({ family: r.family, value: r.first });
  return r.first === r.last ? first : `${first}-${formatAddress({ family: r.family, value: r.last })}`;
}

/** Sum of the ranges' sizes. */
export function freeCount(report: FreeReport): bigint {
  return report.ranges.reduce((n, r) => n + rangeSize(r), 0n);
}

function nextLine(report: FreeReport): string {
  if (report.next.random) return "next claim gets: a random free address (strategy random)";
  return report.next.address
    ? `next claim gets: ${report.next.address}`
    : `next claim gets: nothing (${report.next.error ?? "no free address"})`;
}

/** The text form. */
export function renderFree(report: FreeReport): string {
  const lines = [
    `pool ${poolTitle({ kind: report.kind, namespace: report.namespace, name: report.pool })} (${report.strategy}): ${freeCount(report)} free of ${report.total}, ${report.used} used`,
  ];
  if (report.ranges.length > 0)
    lines.push(
      table(
        report.ranges.map((r) => [`  ${rangeText(r)}`, String(rangeSize(r))]),
        [1],
      ),
    );
  for (const r of report.reserved)
    lines.push(`  reserved: ${r.address} for claim ${r.claim} (preallocated, not yet claimed)`);
  lines.push(nextLine(report));
  return lines.join("\n");
}

/** The machine form; `kind` only for pools that are not Metal3 IPPools, a global pool's `namespace` null. */
export function freeDocument(report: FreeReport): object {
  return {
    ...kindKey(report.kind),
    namespace: report.kind === "GlobalInClusterIPPool" ? null : report.namespace,
    pool: report.pool,
    strategy: report.strategy,
    total: jsonCount(report.total),
    used: jsonCount(report.used),
    free: jsonCount(freeCount(report)),
    ranges: report.ranges.map((r) => ({ range: rangeText(r), count: jsonCount(rangeSize(r)) })),
    reserved: report.reserved,
    next: report.next.random
      ? { strategy: "random", address: null }
      : {
          strategy: "sequential",
          address: report.next.address ?? null,
          ...(report.next.error ? { error: report.next.error } : {}),
        },
  };
}
