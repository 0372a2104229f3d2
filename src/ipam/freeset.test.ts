import { expect } from "chai";
import { FreeSet } from "./freeset.js";
import { randomBelow, seededRng } from "./random.js";

function runs(s: FreeSet): Array<[number, number]> {
  return [...s.usedRuns()].map(([lo, hi]) => [Number(lo), Number(hi)]);
}

/** An AVL tree of r nodes is at most ~1.44·log2(r+2) high. */
function heightBound(r: number): number {
  return Math.ceil(1.45 * Math.log2(r + 2)) + 1;
}

describe("FreeSet", () => {
  describe("runs are maximal (merged on mark, split on unmark)", () => {
    const cases: Array<{ name: string; mark: number[]; unmark?: number[]; runs: Array<[number, number]> }> = [
      { name: "single", mark: [5], runs: [[5, 5]] },
      { name: "adjacent ascending", mark: [1, 2, 3], runs: [[1, 3]] },
      { name: "adjacent descending", mark: [3, 2, 1], runs: [[1, 3]] },
      { name: "bridge two runs", mark: [1, 2, 4, 5, 3], runs: [[1, 5]] },
      {
        name: "gaps",
        mark: [1, 3, 5],
        runs: [
          [1, 1],
          [3, 3],
          [5, 5],
        ],
      },
      { name: "duplicate mark", mark: [1, 1, 2], runs: [[1, 2]] },
      {
        name: "split middle",
        mark: [1, 2, 3, 4, 5],
        unmark: [3],
        runs: [
          [1, 2],
          [4, 5],
        ],
      },
      { name: "trim ends", mark: [1, 2, 3], unmark: [1, 3], runs: [[2, 2]] },
      { name: "remove all", mark: [7], unmark: [7, 7, 8], runs: [] },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const s = new FreeSet();
        for (const v of c.mark) s.markUsed(BigInt(v));
        for (const v of c.unmark ?? []) s.unmark(BigInt(v));
        expect(runs(s)).to.deep.equal(c.runs);
        expect(s.runCount).to.equal(c.runs.length);
        expect(s.size).to.equal(BigInt(c.runs.reduce((n, [lo, hi]) => n + hi - lo + 1, 0)));
      });
    }
    it("markUsed/unmark report changes", () => {
      const s = new FreeSet();
      expect(s.markUsed(1n)).to.equal(true);
      expect(s.markUsed(1n)).to.equal(false);
      expect(s.unmark(1n)).to.equal(true);
      expect(s.unmark(1n)).to.equal(false);
    });
  });

  describe("nextFree and nextFreeWrapping", () => {
    const s = new FreeSet();
    for (const v of [10, 11, 12, 15, 20]) s.markUsed(BigInt(v));
    const cases: Array<[string, () => bigint | undefined, number | undefined]> = [
      ["free start", () => s.nextFree(9n, 30n), 9],
      ["skips a run", () => s.nextFree(10n, 30n), 13],
      ["inside a run", () => s.nextFree(11n, 30n), 13],
      ["bounded by last", () => s.nextFree(10n, 12n), undefined],
      ["from > last", () => s.nextFree(5n, 4n), undefined],
      ["exact last", () => s.nextFree(20n, 21n), 21],
      ["wrap not needed", () => s.nextFreeWrapping(15n, 10n, 20n), 16],
      ["wraps to first", () => s.nextFreeWrapping(20n, 13n, 20n), 13],
      ["wraps past a run at first", () => s.nextFreeWrapping(20n, 10n, 20n), 13],
      ["all used", () => s.nextFreeWrapping(11n, 10n, 12n), undefined],
      ["from outside starts at first", () => s.nextFreeWrapping(99n, 10n, 20n), 13],
    ];
    for (const [name, f, expected] of cases) {
      it(name, () => {
        expect(f()).to.equal(expected === undefined ? undefined : BigInt(expected));
      });
    }
  });

  describe("countUsed", () => {
    const s = new FreeSet();
    for (const v of [1, 2, 3, 7, 8, 20]) s.markUsed(BigInt(v));
    const cases: Array<[number | undefined, number | undefined, number]> = [
      [undefined, undefined, 6],
      [0, 100, 6],
      [2, 7, 3],
      [4, 6, 0],
      [3, 3, 1],
      [8, 20, 2],
      [21, 30, 0],
      [5, 4, 0],
    ];
    for (const [a, b, n] of cases) {
      it(`[${a}, ${b}] → ${n}`, () => {
        const got = a === undefined || b === undefined ? s.countUsed() : s.countUsed(BigInt(a), BigInt(b));
        expect(got).to.equal(BigInt(n));
      });
    }
  });

  it("property: agrees with a naive set under random operations", () => {
    const rng = seededRng(7);
    const s = new FreeSet();
    const naive = new Set<number>();
    for (let step = 0; step < 5000; step++) {
      const v = Math.floor(rng() * 200);
      if (rng() < 0.6) {
        expect(s.markUsed(BigInt(v))).to.equal(!naive.has(v));
        naive.add(v);
      } else {
        expect(s.unmark(BigInt(v))).to.equal(naive.has(v));
        naive.delete(v);
      }
      const from = Math.floor(rng() * 200);
      const last = from + Math.floor(rng() * 50);
      let expected: number | undefined;
      for (let x = from; x <= last; x++) {
        if (!naive.has(x)) {
          expected = x;
          break;
        }
      }
      expect(s.nextFree(BigInt(from), BigInt(last))).to.equal(expected === undefined ? undefined : BigInt(expected));
      const count = [...naive].filter((x) => x >= from && x <= last).length;
      expect(s.countUsed(BigInt(from), BigInt(last))).to.equal(BigInt(count));
      expect(s.isUsed(BigInt(v))).to.equal(naive.has(v));
    }
    expect(s.size).to.equal(BigInt(naive.size));
  });

  it("works with huge values (a /64 costs memory only for what is used)", () => {
    const s = new FreeSet();
    const base = 0x20010db8n << 96n;
    const top = base | 0xffffffffffffffffn;
    s.markUsed(base + 1n);
    s.markUsed(top);
    expect(s.nextFree(base + 1n, top)).to.equal(base + 2n);
    expect(s.nextFreeWrapping(top, base + 1n, top)).to.equal(base + 2n);
    expect(s.runCount).to.equal(2);
  });

  describe("cost is logarithmic (counted tree visits, no timing)", () => {
    it("fragmented set: every operation visits O(log r) nodes", () => {
      const s = new FreeSet();
      // every other value used: 10,000 runs, the worst case for run merging
      for (let v = 0; v < 20_000; v += 2) s.markUsed(BigInt(v));
      expect(s.runCount).to.equal(10_000);
      const bound = heightBound(s.runCount);
      const rng = seededRng(3);
      for (let i = 0; i < 200; i++) {
        const x = BigInt(Math.floor(rng() * 20_000));
        let before = s.work;
        s.nextFree(x, 30_000n);
        expect(s.work - before).to.be.at.most(bound);
        before = s.work;
        s.nextFreeWrapping(x, 0n, 19_999n);
        expect(s.work - before).to.be.at.most(2 * bound);
        before = s.work;
        s.countUsed(x, x + 500n);
        expect(s.work - before).to.be.at.most(2 * bound);
        before = s.work;
        s.markUsed(x);
        s.unmark(x);
        // mark: 3 finds + 2 removals + 1 insertion; unmark: 1 find + 1 removal + 2 insertions
        expect(s.work - before).to.be.at.most(14 * bound);
      }
    });

    it("the 10,000th random allocation in a /16 costs about what the first did", () => {
      const s = new FreeSet();
      const rng = seededRng(11);
      const first = 1n;
      const last = 65_535n;
      const costs: number[] = [];
      for (let i = 0; i < 10_000; i++) {
        const before = s.work;
        const v = s.nextFreeWrapping(first + randomBelow(last - first + 1n, rng), first, last)!;
        s.markUsed(v);
        costs.push(s.work - before);
      }
      const bound = 8 * heightBound(s.runCount);
      expect(costs[9_999]).to.be.at.most(bound);
      expect(Math.max(...costs)).to.be.at.most(bound);
      expect(s.size).to.equal(10_000n);
    });
  });
});

describe("randomBelow", () => {
  const cases: Array<[bigint, number]> = [
    [1n, 0.99],
    [10n, 0],
    [10n, 0.999999],
    [10n, 1],
    [1n << 64n, 0.5],
    [(1n << 128n) - 1n, 0.999],
  ];
  for (const [n, r] of cases) {
    it(`n=${n} rng=${r} stays in [0, n)`, () => {
      const v = randomBelow(n, () => r);
      expect(v >= 0n && v < n).to.equal(true);
    });
  }
  it("covers a large space (high bits vary)", () => {
    const rng = seededRng(5);
    const n = 1n << 100n;
    const highs = new Set<bigint>();
    for (let i = 0; i < 64; i++) highs.add(randomBelow(n, rng) >> 96n);
    expect(highs.size).to.be.greaterThan(8);
  });
});
