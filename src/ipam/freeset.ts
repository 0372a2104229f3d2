/**
 * Free space of one address family as a data structure (not a scan).
 *
 * Used values are kept as maximal runs `[lo, hi]` (disjoint and never adjacent: adjacent runs are merged) in an AVL
 * tree ordered by `lo`, each node also carrying the number of used values in its subtree. Because runs are maximal,
 * the first free value at or after `x` is `x` itself or one past the run containing `x`: one descent. Every operation
 * is O(log r) in the number r of runs (r ≤ number of used values), independent of the size of the space: a /64 costs
 * memory only for what is used, and the 10,000th allocation of a /16 costs what the first did.
 */

interface Node {
  lo: bigint;
  hi: bigint;
  left: Node | undefined;
  right: Node | undefined;
  height: number;
  /** Used values in this subtree. */
  count: bigint;
}

function height(n: Node | undefined): number {
  return n ? n.height : 0;
}

function count(n: Node | undefined): bigint {
  return n ? n.count : 0n;
}

function update(n: Node): void {
  n.height = 1 + Math.max(height(n.left), height(n.right));
  n.count = count(n.left) + count(n.right) + (n.hi - n.lo + 1n);
}

function rotateRight(y: Node): Node {
  const x = y.left as Node;
  y.left = x.right;
  x.right = y;
  update(y);
  update(x);
  return x;
}

function rotateLeft(x: Node): Node {
  const y = x.right as Node;
  x.right = y.left;
  y.left = x;
  update(x);
  update(y);
  return y;
}

function rebalance(n: Node): Node {
  update(n);
  const balance = height(n.left) - height(n.right);
  if (balance > 1) {
    const l = n.left as Node;
    if (height(l.left) < height(l.right)) n.left = rotateLeft(l);
    return rotateRight(n);
  }
  if (balance < -1) {
    const r = n.right as Node;
    if (height(r.right) < height(r.left)) n.right = rotateRight(r);
    return rotateLeft(n);
  }
  return n;
}

/**
 * A set of used values (bigint) with "next free" queries. Values are arbitrary bigints; callers keep them within a
 * family's range. No method throws.
 *
 * `work` counts tree nodes visited, so tests (and benchmarks) can check the logarithmic cost without timing.
 */
export class FreeSet {
  private root: Node | undefined;
  private runs = 0;
  /** Tree nodes visited since construction. Monotone; for cost assertions only. */
  work = 0;

  /** Number of maximal runs of used values (the number of tree nodes). */
  get runCount(): number {
    return this.runs;
  }

  /** Number of used values. */
  get size(): bigint {
    return count(this.root);
  }

  /** Whether `v` is used. O(log r). */
  isUsed(v: bigint): boolean {
    return this.find(v) !== undefined;
  }

  /** Marks `v` used, merging it with neighbouring runs. @returns false when it already was. O(log r). */
  markUsed(v: bigint): boolean {
    if (this.find(v)) return false;
    const before = this.find(v - 1n);
    const after = this.find(v + 1n);
    let lo = v;
    let hi = v;
    if (before) {
      lo = before.lo;
      this.removeRun(before.lo);
    }
    if (after) {
      hi = after.hi;
      this.removeRun(after.lo);
    }
    this.insertRun(lo, hi);
    return true;
  }

  /** Marks `v` free, splitting its run. @returns false when it already was free. O(log r). */
  unmark(v: bigint): boolean {
    const run = this.find(v);
    if (!run) return false;
    const { lo, hi } = run;
    this.removeRun(lo);
    if (lo < v) this.insertRun(lo, v - 1n);
    if (v < hi) this.insertRun(v + 1n, hi);
    return true;
  }

  /** The smallest free value in `[from, last]`, or `undefined` when all are used or `from > last`. O(log r). */
  nextFree(from: bigint, last: bigint): bigint | undefined {
    if (from > last) return undefined;
    const run = this.find(from);
    // Runs are maximal, so the value after a run is free.
    const candidate = run ? run.hi + 1n : from;
    return candidate <= last ? candidate : undefined;
  }

  /**
   * The first free value found walking forward from `from` through `[first, last]` and wrapping around to `first`
   * once (Metal3's random walk, spec §3.2.3). `from` outside `[first, last]` starts at `first`.
   * @returns `undefined` only when every value of `[first, last]` is used. O(log r).
   */
  nextFreeWrapping(from: bigint, first: bigint, last: bigint): bigint | undefined {
    const start = from < first || from > last ? first : from;
    return this.nextFree(start, last) ?? this.nextFree(first, start - 1n);
  }

  /** Number of used values in `[first, last]` (all used values when omitted). O(log r). */
  countUsed(first?: bigint, last?: bigint): bigint {
    if (first === undefined || last === undefined) return this.size;
    if (first > last) return 0n;
    return this.usedAtOrBelow(last) - this.usedAtOrBelow(first - 1n);
  }

  /** The runs in ascending order, as `[lo, hi]` pairs. O(r); for tests and diagnostics. */
  *usedRuns(): Generator<[bigint, bigint]> {
    const stack: Node[] = [];
    let n = this.root;
    while (n || stack.length > 0) {
      while (n) {
        stack.push(n);
        n = n.left;
      }
      const top = stack.pop() as Node;
      yield [top.lo, top.hi];
      n = top.right;
    }
  }

  private find(v: bigint): Node | undefined {
    let n = this.root;
    while (n) {
      this.work++;
      if (v < n.lo) n = n.left;
      else if (v > n.hi) n = n.right;
      else return n;
    }
    return undefined;
  }

  private usedAtOrBelow(x: bigint): bigint {
    let total = 0n;
    let n = this.root;
    while (n) {
      this.work++;
      if (x < n.lo) {
        n = n.left;
        continue;
      }
      total += count(n.left) + ((x < n.hi ? x : n.hi) - n.lo + 1n);
      if (x <= n.hi) break;
      n = n.right;
    }
    return total;
  }

  private insertRun(lo: bigint, hi: bigint): void {
    this.root = this.insert(this.root, lo, hi);
    this.runs++;
  }

  private removeRun(lo: bigint): void {
    this.root = this.remove(this.root, lo);
    this.runs--;
  }

  private insert(n: Node | undefined, lo: bigint, hi: bigint): Node {
    if (!n) return { lo, hi, left: undefined, right: undefined, height: 1, count: hi - lo + 1n };
    this.work++;
    if (lo < n.lo) n.left = this.insert(n.left, lo, hi);
    else n.right = this.insert(n.right, lo, hi);
    return rebalance(n);
  }

  private remove(n: Node | undefined, lo: bigint): Node | undefined {
    if (!n) return undefined;
    this.work++;
    if (lo < n.lo) n.left = this.remove(n.left, lo);
    else if (lo > n.lo) n.right = this.remove(n.right, lo);
    else {
      if (!n.left) return n.right;
      if (!n.right) return n.left;
      let successor = n.right;
      while (successor.left) {
        this.work++;
        successor = successor.left;
      }
      successor.right = this.removeMin(n.right);
      successor.left = n.left;
      return rebalance(successor);
    }
    return rebalance(n);
  }

  private removeMin(n: Node): Node | undefined {
    this.work++;
    if (!n.left) return n.right;
    n.left = this.removeMin(n.left);
    return rebalance(n);
  }
}
