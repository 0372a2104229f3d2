/**
 * `kubectl ipam free POOL`: the pool's free addresses as compact ranges, and the address the next claim would get.
 * Pure: computed with the allocator of src/ipam from the pool spec and its allocation records, for every pool kind
 * (an in-cluster pool's space is its addresses minus excluded, reserved and gateway, as the controller sees it).
 *
 * A NetBox pool's free addresses are NetBox's to know: the CLI never calls NetBox and never reads its token, so it
 * reports the counts the controller last wrote to the pool's status (NetBox's utilisation), the prefix or range they
 * are of, and the addresses bound here; which address the next claim gets is NetBox's choice.
 */
import { formatAddress, parseAddress, type Family } from "../ipam/index.js";
import { allocatorOf, holdingsOf, type Inventory } from "./inventory.js";
import { jsonCount, table } from "./output.js";
import { isGlobalKind, isNetBoxKind, type PoolKindName } from "../../api/registry.js";
import {
  idOf,
  isNetBoxPool,
  kindKey,
  poolSpans,
  poolTitle,
  preAllocationsOf,
  strategyOf,
  type AnyPool,
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
  /** NetBox pools: what the pool's status says of NetBox, and the addresses bound here. */
  netbox?: NetBoxFree;
}

/** A NetBox pool as `free` can tell it: from the pool's status, never from NetBox. */
export interface NetBoxFree {
  /** Whether the controller has written NetBox's utilisation to the status (else the counts are unknown). */
  reported: boolean;
  /** NetBox's free count. */
  free: bigint;
  /** The prefix or range, as the controller resolved it: `prefix 10.0.0.0/24 (#7)`. */
  place?: string;
  /** The addresses of the pool's IPAddresses (its claims bound here), sorted. */
  bound: string[];
  /** Each prefix or range in the order they are tried, with NetBox's counts, when the pool has fallbacks. */
  sources?: { place: string; total: number; used: number; free: number }[];
}

const HOW_TO_KNOW =
  "kubectl ipam reads only the Kubernetes API (never NetBox, never the token): the counts are NetBox's as the controller last wrote them to the pool's status";

/** `free` of a NetBox pool: its status and its records here; no ranges, no next address (NetBox chooses). */
function netBoxFreeReport(pool: AnyPool, inv: Inventory): FreeReport {
  const id = idOf(pool);
  const status = isNetBoxPool(pool) ? pool.object.status : undefined;
  const counts = status?.ipAddresses;
  const bound = holdingsOf(pool, inv)
    .map((h) => parseAddress(h.address))
    .filter((a) => a !== undefined)
    .sort((a, b) => a.family - b.family || ascending(a.value, b.value))
    .map(formatAddress);
  return {
    kind: id.kind,
    namespace: id.namespace,
    pool: id.name,
    strategy: strategyOf(pool),
    total: BigInt(counts?.total ?? 0),
    used: BigInt(counts?.used ?? 0),
    ranges: [],
    reserved: [],
    next: { random: false },
    netbox: {
      reported: counts !== undefined,
      free: BigInt(counts?.free ?? 0),
      ...(status?.netbox ? { place: status.netbox.display } : {}),
      bound,
      ...(status?.sources && status.sources.length > 1
        ? { sources: status.sources.map((s) => ({ place: s.display, total: s.total, used: s.used, free: s.free })) }
        : {}),
    },
  };
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
  if (isNetBoxKind(pool.kind)) return netBoxFreeReport(pool, inv);
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

/** Sum of the ranges' sizes; for a NetBox pool, NetBox's free count. */
export function freeCount(report: FreeReport): bigint {
  if (report.netbox) return report.netbox.free;
  return report.ranges.reduce((n, r) => n + rangeSize(r), 0n);
}

function renderNetBoxFree(report: FreeReport, netbox: NetBoxFree): string {
  const title = poolTitle({ kind: report.kind, namespace: report.namespace, name: report.pool });
  const place = netbox.place ? `NetBox ${netbox.place}` : "NetBox";
  const counts = netbox.reported
    ? `${netbox.free} free of ${report.total}, ${report.used} used (NetBox's count: its records of every user)`
    : "counts not known yet (the controller has not written NetBox's utilisation to the pool's status)";
  const sources = (netbox.sources ?? []).map(
    (s, i) => `  ${i === 0 ? "first" : `then`} ${s.place}: ${s.free} free of ${s.total}, ${s.used} used`,
  );
  return [
    `pool ${title} (${place}${sources.length > 0 ? ` and ${sources.length - 1} fallback(s)` : ""}): ${counts}`,
    ...sources,
    `  ${netbox.bound.length} claim(s) bound here${netbox.bound.length > 0 ? `: ${netbox.bound.join(", ")}` : ""}`,
    "next claim gets: the address NetBox hands out (available-ips)",
    `note: ${HOW_TO_KNOW}`,
  ].join("\n");
}

function nextLine(report: FreeReport): string {
  if (report.next.random) return "next claim gets: a random free address (strategy random)";
  return report.next.address
    ? `next claim gets: ${report.next.address}`
    : `next claim gets: nothing (${report.next.error ?? "no free address"})`;
}

/** The text form. */
export function renderFree(report: FreeReport): string {
  if (report.netbox) return renderNetBoxFree(report, report.netbox);
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
  if (report.netbox) return netBoxFreeDocument(report, report.netbox);
  return {
    ...kindKey(report.kind),
    namespace: isGlobalKind(report.kind) ? null : report.namespace,
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

/** The machine form of a NetBox pool's `free`: counts null until known, `next.address` null (NetBox chooses). */
function netBoxFreeDocument(report: FreeReport, netbox: NetBoxFree): object {
  const known = (n: bigint): number | string | null => (netbox.reported ? jsonCount(n) : null);
  return {
    ...kindKey(report.kind),
    namespace: isGlobalKind(report.kind) ? null : report.namespace,
    pool: report.pool,
    strategy: report.strategy,
    countedBy: "netbox",
    netbox: netbox.place ?? null,
    total: known(report.total),
    used: known(report.used),
    free: known(netbox.free),
    bound: netbox.bound,
    next: { strategy: "netbox", address: null },
    note: HOW_TO_KNOW,
  };
}
