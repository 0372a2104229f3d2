/**
 * Sets of addresses as lists of ranges (what Go's `netipx.IPSet` is to the in-cluster provider). Pure functions.
 *
 * A NORMALIZED set is sorted (every IPv4 range before every IPv6 one, then by first address), and its ranges are
 * disjoint and not adjacent (`10.0.0.1-10.0.0.2` and `10.0.0.3` are one range). `normalizeRanges` makes one from any
 * list; the other functions take and return normalized sets.
 */
import { formatAddress } from "./address.js";
import type { Addr, Family } from "./address.js";

/** The addresses `first..last` (inclusive) of one family; `first <= last`. */
export interface IPRange {
  readonly family: Family;
  readonly first: bigint;
  readonly last: bigint;
}

function compareRanges(a: IPRange, b: IPRange): number {
  if (a.family !== b.family) return a.family - b.family;
  return a.first < b.first ? -1 : a.first > b.first ? 1 : 0;
}

/** The union of `ranges` (any order, overlaps allowed; ranges with `last < first` are dropped), normalized. */
export function normalizeRanges(ranges: Iterable<IPRange>): IPRange[] {
  const sorted = [...ranges].filter((r) => r.first <= r.last).sort(compareRanges);
  const out: IPRange[] = [];
  for (const r of sorted) {
    const top = out[out.length - 1];
    if (top && top.family === r.family && r.first <= top.last + 1n) {
      if (r.last > top.last) out[out.length - 1] = { family: top.family, first: top.first, last: r.last };
    } else {
      out.push({ family: r.family, first: r.first, last: r.last });
    }
  }
  return out;
}

/** `set` without the addresses of `remove` (both normalized). Linear in their lengths. */
export function subtractRanges(set: readonly IPRange[], remove: readonly IPRange[]): IPRange[] {
  const out: IPRange[] = [];
  let j = 0;
  for (const r of set) {
    let first = r.first;
    // Skip removals wholly before r; the ones overlapping r cut it, left to right.
    while (j < remove.length && compareEnd(remove[j]!, r) < 0) j++;
    let k = j;
    for (; k < remove.length; k++) {
      const cut = remove[k]!;
      if (cut.family !== r.family || cut.first > r.last) break;
      if (cut.first > first) out.push({ family: r.family, first, last: cut.first - 1n });
      if (cut.last >= first) first = cut.last + 1n;
    }
    if (first <= r.last) out.push({ family: r.family, first, last: r.last });
  }
  return out;
}

/** Whether range `cut` ends before range `r` starts (other family counted by family order). */
function compareEnd(cut: IPRange, r: IPRange): number {
  if (cut.family !== r.family) return cut.family - r.family;
  return cut.last < r.first ? -1 : 0;
}

/** The position in `set` (normalized) of the range holding `a`, or -1. O(log n). */
export function rangeIndexOf(set: readonly IPRange[], a: Addr): number {
  let lo = 0;
  let hi = set.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = set[mid]!;
    const c = r.family !== a.family ? r.family - a.family : r.last < a.value ? -1 : r.first > a.value ? 1 : 0;
    if (c === 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Whether `set` (normalized) holds `a`. O(log n). */
export function rangesContain(set: readonly IPRange[], a: Addr): boolean {
  return rangeIndexOf(set, a) >= 0;
}

/** Number of addresses in `set` (normalized: no address counted twice). Exact. */
export function rangesSize(set: readonly IPRange[]): bigint {
  let n = 0n;
  for (const r of set) n += r.last - r.first + 1n;
  return n;
}

/**
 * `set` as text: ranges separated by one space, each `first-last` in canonical spelling, or the address alone for a
 * one-address range (`10.0.0.5 10.0.0.7-10.0.0.9`). Consecutive addresses are one range in a normalized set.
 */
export function formatRanges(set: readonly IPRange[]): string {
  return set
    .map((r) => {
      const first = formatAddress({ family: r.family, value: r.first });
      return r.first === r.last ? first : `${first}-${formatAddress({ family: r.family, value: r.last })}`;
    })
    .join(" ");
}
