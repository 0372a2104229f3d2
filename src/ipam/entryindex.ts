/**
 * Sorted indexes over the entries of IPPools, so that validation costs O(n log n) in the entries, preallocations and
 * addresses it is given (admission reviews come from anyone who can reach the webhook port, spec §6): each entry is
 * parsed once, membership is a binary search in merged ranges, and overlaps between two pools are counted by binary
 * search in sorted bounds. Pure functions, no I/O.
 */
import type { Pool } from "../../api/v1alpha1/types.js";
import { maxValue, parseAddress, parseSubnet } from "./address.js";
import type { Addr } from "./address.js";
import type { CompiledEntry } from "./entries.js";
import { normalizeRanges, rangesContain } from "./ipset.js";
import type { IPRange } from "./ipset.js";

/** A set of addresses as normalized ranges (ipset.ts), answering membership in O(log n). */
export class AddressIndex {
  private constructor(private readonly ranges: readonly IPRange[]) {}

  /** The addresses the entries yield (entries that yield nothing add nothing). */
  static yielded(entries: readonly CompiledEntry[]): AddressIndex {
    return new AddressIndex(normalizeRanges(entries.map((e) => ({ family: e.family, first: e.first, last: e.last }))));
  }

  /**
   * The addresses inside Metal3's bounds check of some entry: the union of the boxes of `withinMetal3Bounds`
   * (entries.ts), which it answers the same for every address.
   */
  static metal3Bounds(pools: readonly (Pool | null | undefined)[] | null | undefined): AddressIndex {
    return new AddressIndex(normalizeRanges((pools ?? []).flatMap((p) => (p ? metal3Box(p) : []))));
  }

  has(a: Addr): boolean {
    return rangesContain(this.ranges, a);
  }

  /** Whether some address of `e` (non-empty) is in the set. */
  meets(e: CompiledEntry): boolean {
    const i = this.firstEndingAtOrAfter(e);
    const r = this.ranges[i];
    return r !== undefined && r.family === e.family && r.first <= e.last;
  }

  /** The position of the first range of `e`'s family that ends at or after `e.first` (or of a later family). */
  private firstEndingAtOrAfter(e: CompiledEntry): number {
    let lo = 0;
    let hi = this.ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const r = this.ranges[mid]!;
      if (r.family < e.family || (r.family === e.family && r.last < e.first)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

function isSet<T>(v: T | null | undefined): v is T {
  return v !== undefined && v !== null;
}

const LOWEST: Addr = { family: 4, value: 0n };
const HIGHEST: Addr = { family: 6, value: maxValue(6) };

/** Orders addresses as Go's `netip.Addr.Compare` does (every IPv4 address first), as Metal3's bounds check does. */
function compareAddr(a: Addr, b: Addr): number {
  if (a.family !== b.family) return a.family - b.family;
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

/**
 * The box of one entry in Metal3's order of addresses: `start <= a <= end`, `a` in `subnet`, each bound only when set.
 * That is one interval of the order, written as ranges per family. Nothing when a set bound does not parse or when
 * none is set (Metal3's check skips such entries).
 */
function metal3Box(entry: Pool): IPRange[] {
  if (!isSet(entry.start) && !isSet(entry.end) && !isSet(entry.subnet)) return [];
  let lo = LOWEST;
  let hi = HIGHEST;
  if (isSet(entry.start)) {
    const start = parseAddress(entry.start);
    if (!start) return [];
    lo = start;
  }
  if (isSet(entry.end)) {
    const end = parseAddress(entry.end);
    if (!end) return [];
    hi = end;
  }
  if (isSet(entry.subnet)) {
    const subnet = parseSubnet(entry.subnet);
    if (!subnet) return [];
    const family = subnet.network.family;
    const first: Addr = { family, value: subnet.first };
    const last: Addr = { family, value: subnet.last };
    if (compareAddr(first, lo) > 0) lo = first;
    if (compareAddr(last, hi) < 0) hi = last;
  }
  if (compareAddr(lo, hi) > 0) return [];
  if (lo.family === hi.family) return [{ family: lo.family, first: lo.value, last: hi.value }];
  return [
    { family: 4, first: lo.value, last: maxValue(4) },
    { family: 6, first: 0n, last: hi.value },
  ];
}

/** Ascending bigints, and how many of them lie strictly below or strictly above a value, in O(log n). */
class SortedBounds {
  private readonly values: bigint[];

  constructor(values: bigint[]) {
    this.values = values.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** How many values are `< v`. */
  below(v: bigint): number {
    let lo = 0;
    let hi = this.values.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.values[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** How many values are `> v`. */
  above(v: bigint): number {
    let lo = 0;
    let hi = this.values.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.values[mid]! <= v) lo = mid + 1;
      else hi = mid;
    }
    return this.values.length - lo;
  }
}

/**
 * The non-empty entries of one pool, counting in O(log n) how many of them overlap an interval: of one family, the
 * entries that neither start after it ends nor end before it starts.
 */
export class OverlapCounter {
  private readonly byFamily: Record<4 | 6, { firsts: SortedBounds; lasts: SortedBounds; count: number }>;

  constructor(entries: readonly CompiledEntry[]) {
    const of = (family: 4 | 6) => {
      const mine = entries.filter((e) => e.family === family && e.size > 0n);
      return {
        firsts: new SortedBounds(mine.map((e) => e.first)),
        lasts: new SortedBounds(mine.map((e) => e.last)),
        count: mine.length,
      };
    };
    this.byFamily = { 4: of(4), 6: of(6) };
  }

  /** How many entries overlap `e` (0 for an empty `e`). */
  overlapping(e: CompiledEntry): number {
    if (e.size === 0n) return 0;
    const f = this.byFamily[e.family];
    return f.count - f.firsts.above(e.last) - f.lasts.below(e.first);
  }
}
