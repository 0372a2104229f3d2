/**
 * The scan order of a pool's entries as a data structure, so that the sequential decision (spec §3.2) and "which entry
 * yields this address" cost O(log n) in the number n of entries, whatever the entries and whatever is in use.
 *
 * Metal3 scans the entries in declaration order, each from its first candidate up, and takes the first free one. An
 * address several entries yield is met first in the earliest of them: if it is free it is taken there, if it is used
 * it is used everywhere. So the scan finds what a scan of PIECES finds: each entry's interval minus the intervals of
 * the entries before it, in entry order and ascending within an entry. Pieces are disjoint, and the entry of a piece
 * is the first entry that yields its addresses (the entry a result reports). There are fewer than 2n pieces per
 * family: they are the segments between consecutive interval ends, neighbours of one entry merged.
 *
 * {@link EntryLayout} (immutable, shared by every allocator of an unchanged spec) holds the pieces in scan order and,
 * per family, in address order for lookups. {@link FreePieces} (one per allocator) is a segment tree over the scan
 * order telling which pieces still have a free address: the first one is one descent from the root.
 */
import type { Addr, Family } from "./address.js";
import type { CompiledEntry } from "./entries.js";

/** Addresses `lo..hi` of one family, all yielded first by `entry`. */
export interface Piece {
  readonly entry: CompiledEntry;
  readonly family: Family;
  readonly lo: bigint;
  readonly hi: bigint;
}

/** Pieces of one family in address order, as parallel arrays (binary search on `lo`). */
interface ByValue {
  readonly lo: readonly bigint[];
  readonly hi: readonly bigint[];
  /** Position of each piece in {@link EntryLayout.pieces}. */
  readonly rank: readonly number[];
}

interface Segment {
  /** Position in the entries array of the entry the segment belongs to. */
  owner: number;
  lo: bigint;
  hi: bigint;
}

/** A binary min-heap of entry positions. */
class MinHeap {
  private readonly items: number[] = [];

  get top(): number | undefined {
    return this.items[0];
  }

  push(v: number): void {
    const a = this.items;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (a[parent]! <= v) break;
      a[i] = a[parent]!;
      i = parent;
    }
    a[i] = v;
  }

  pop(): void {
    const a = this.items;
    const last = a.pop();
    if (last === undefined || a.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const c = l + 1 < a.length && a[l + 1]! < a[l]! ? l + 1 : l;
      if (a[c]! >= last) break;
      a[i] = a[c]!;
      i = c;
    }
    a[i] = last;
  }
}

/**
 * The segments of one family's value line, each with its first entry (lowest position) yielding it, ascending, with
 * neighbouring segments of one entry merged. A sweep over the interval ends with a heap of the open entries: O(n log n).
 */
function segmentsOf(entries: readonly CompiledEntry[], family: Family): Segment[] {
  const points: { at: bigint; pos: number; open: boolean }[] = [];
  entries.forEach((e, pos) => {
    if (e.family !== family || e.size <= 0n) return;
    points.push({ at: e.first, pos, open: true }, { at: e.last + 1n, pos, open: false });
  });
  points.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const closed = new Uint8Array(entries.length);
  const open = new MinHeap();
  const out: Segment[] = [];
  for (let i = 0; i < points.length;) {
    const at = points[i]!.at;
    for (; i < points.length && points[i]!.at === at; i++) {
      const p = points[i]!;
      if (p.open) open.push(p.pos);
      else closed[p.pos] = 1;
    }
    while (open.top !== undefined && closed[open.top] === 1) open.pop();
    const owner = open.top;
    // The last point closes every interval, so an open entry always has a next point.
    if (owner === undefined || i >= points.length) continue;
    const hi = points[i]!.at - 1n;
    const prev = out[out.length - 1];
    if (prev && prev.owner === owner && prev.hi + 1n === at) prev.hi = hi;
    else out.push({ owner, lo: at, hi });
  }
  return out;
}

/** The pieces of a list of entries (see the file header); immutable. Built in O(n log n). */
export class EntryLayout {
  /** Every piece, in scan order: by entry position, then ascending. */
  readonly pieces: readonly Piece[];
  private readonly byValue: Record<Family, ByValue>;

  /** `entries` in scan order (their position, not their `index`, is the order). */
  constructor(entries: readonly CompiledEntry[]) {
    const perFamily = { 4: segmentsOf(entries, 4), 6: segmentsOf(entries, 6) };
    const all = [
      ...perFamily[4].map((s) => ({ s, family: 4 as const })),
      ...perFamily[6].map((s) => ({ s, family: 6 as const })),
    ];
    // Stable: within an entry, families and addresses stay ascending.
    const order = all.map((_, i) => i).sort((a, b) => all[a]!.s.owner - all[b]!.s.owner || a - b);
    const rankOf = new Int32Array(all.length);
    order.forEach((at, rank) => (rankOf[at] = rank));
    this.pieces = order.map((at) => {
      const { s, family } = all[at]!;
      return { entry: entries[s.owner]!, family, lo: s.lo, hi: s.hi };
    });
    const v4 = perFamily[4].length;
    this.byValue = {
      4: {
        lo: perFamily[4].map((s) => s.lo),
        hi: perFamily[4].map((s) => s.hi),
        rank: perFamily[4].map((_, i) => rankOf[i]!),
      },
      6: {
        lo: perFamily[6].map((s) => s.lo),
        hi: perFamily[6].map((s) => s.hi),
        rank: perFamily[6].map((_, i) => rankOf[v4 + i]!),
      },
    };
  }

  /** The position in {@link pieces} of the piece holding `value` of `family`, or -1 when no entry yields it. O(log n). */
  rankOf(family: Family, value: bigint): number {
    const { lo, hi, rank } = this.byValue[family];
    let a = 0;
    let b = lo.length - 1;
    // The last piece starting at or below `value`.
    let found = -1;
    while (a <= b) {
      const mid = (a + b) >> 1;
      if (lo[mid]! <= value) {
        found = mid;
        a = mid + 1;
      } else b = mid - 1;
    }
    return found >= 0 && value <= hi[found]! ? rank[found]! : -1;
  }

  /** The first entry (scan order) that yields `a`, as Metal3's in-order scan finds it. O(log n). */
  ownerOf(a: Addr): CompiledEntry | undefined {
    const rank = this.rankOf(a.family, a.value);
    return rank >= 0 ? this.pieces[rank]!.entry : undefined;
  }
}

/**
 * Which pieces of a layout have a free address: a segment tree over the scan order counting them. The owner updates a
 * piece whenever what is in use inside it changes; `first` finds the first piece with a free address.
 */
export class FreePieces {
  private readonly leaves: number;
  private readonly tree: Int32Array;
  /** Tree nodes visited since construction; for cost assertions only. */
  work = 0;

  /** Every piece starts with a free address (pieces are never empty). O(n). */
  constructor(count: number) {
    let leaves = 1;
    while (leaves < count) leaves *= 2;
    this.leaves = leaves;
    this.tree = new Int32Array(2 * leaves);
    for (let i = 0; i < count; i++) this.tree[leaves + i] = 1;
    for (let i = leaves - 1; i >= 1; i--) this.tree[i] = this.tree[2 * i]! + this.tree[2 * i + 1]!;
  }

  /** Records whether piece `rank` has a free address. O(log n). */
  set(rank: number, hasFree: boolean): void {
    let i = this.leaves + rank;
    const value = hasFree ? 1 : 0;
    if (this.tree[i] === value) return;
    this.tree[i] = value;
    for (i >>= 1; i >= 1; i >>= 1) {
      this.work++;
      this.tree[i] = this.tree[2 * i]! + this.tree[2 * i + 1]!;
    }
  }

  /** The first piece (scan order) with a free address, or -1. O(log n). */
  first(): number {
    if (this.tree[1] === 0) return -1;
    let i = 1;
    while (i < this.leaves) {
      this.work++;
      i = this.tree[2 * i]! > 0 ? 2 * i : 2 * i + 1;
    }
    return i - this.leaves;
  }
}
