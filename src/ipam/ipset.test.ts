import { expect } from "chai";
import type { Family } from "./address.js";
import { formatRanges, normalizeRanges, rangeIndexOf, rangesContain, rangesSize, subtractRanges } from "./ipset.js";
import type { IPRange } from "./ipset.js";
import { seededRng } from "./random.js";

const v4 = (first: number, last: number): IPRange => ({ family: 4, first: BigInt(first), last: BigInt(last) });
const v6 = (first: number, last: number): IPRange => ({ family: 6, first: BigInt(first), last: BigInt(last) });

/** The members of a set as "family/value" strings: the brute-force oracle. */
function members(ranges: readonly IPRange[]): Set<string> {
  const out = new Set<string>();
  for (const r of ranges) for (let v = r.first; v <= r.last; v++) out.add(`${r.family}/${v}`);
  return out;
}

function isNormalized(set: readonly IPRange[]): boolean {
  return set.every((r, i) => {
    const prev = set[i - 1];
    if (r.first > r.last) return false;
    return !prev || prev.family < r.family || (prev.family === r.family && prev.last + 1n < r.first);
  });
}

function randomRanges(rng: () => number, n: number): IPRange[] {
  const out: IPRange[] = [];
  for (let i = 0; i < n; i++) {
    const family: Family = rng() < 0.3 ? 6 : 4;
    const first = Math.floor(rng() * 60);
    out.push({ family, first: BigInt(first), last: BigInt(first + Math.floor(rng() * 8) - 1) });
  }
  return out;
}

describe("ipset: address sets as ranges", () => {
  it("normalizes: sorts IPv4 before IPv6, merges overlapping and adjacent ranges, drops empty ones", () => {
    expect(normalizeRanges([v6(1, 2), v4(5, 9), v4(1, 3), v4(4, 4), v4(20, 19), v4(8, 12)])).to.deep.equal([
      v4(1, 12),
      v6(1, 2),
    ]);
  });

  it("subtracts ranges that cut, cover, span and miss", () => {
    const set = normalizeRanges([v4(0, 10), v4(20, 30), v6(0, 5)]);
    expect(subtractRanges(set, normalizeRanges([v4(0, 0), v4(5, 6), v4(9, 22), v6(5, 9)]))).to.deep.equal([
      v4(1, 4),
      v4(7, 8),
      v4(23, 30),
      v6(0, 4),
    ]);
    expect(subtractRanges(set, [])).to.deep.equal(set);
    expect(subtractRanges(set, normalizeRanges([v4(0, 100), v6(0, 100)]))).to.deep.equal([]);
  });

  it("agrees with a brute-force oracle on random sets", () => {
    const rng = seededRng(24);
    for (let round = 0; round < 300; round++) {
      const a = normalizeRanges(randomRanges(rng, 1 + Math.floor(rng() * 5)));
      const b = normalizeRanges(randomRanges(rng, Math.floor(rng() * 5)));
      expect(
        isNormalized(a),
        JSON.stringify(a, (_, v: unknown) => String(v)),
      ).to.equal(true);
      const diff = subtractRanges(a, b);
      expect(isNormalized(diff)).to.equal(true);
      const expected = [...members(a)].filter((m) => !members(b).has(m));
      expect([...members(diff)].sort()).to.deep.equal(expected.sort());
      expect(rangesSize(diff)).to.equal(BigInt(expected.length));
      for (let v = 0; v < 70; v++) {
        for (const family of [4, 6] as const) {
          const inside = members(diff).has(`${family}/${v}`);
          expect(rangesContain(diff, { family, value: BigInt(v) })).to.equal(inside);
        }
      }
    }
  });

  it("finds the range holding an address", () => {
    const set = normalizeRanges([v4(1, 2), v4(10, 20), v6(10, 20)]);
    expect(rangeIndexOf(set, { family: 4, value: 15n })).to.equal(1);
    expect(rangeIndexOf(set, { family: 6, value: 10n })).to.equal(2);
    expect(rangeIndexOf(set, { family: 6, value: 2n })).to.equal(-1);
    expect(rangeIndexOf([], { family: 4, value: 0n })).to.equal(-1);
  });

  it("formats single addresses alone and longer runs as first-last, canonical", () => {
    const set = normalizeRanges([v4(0x0a000005, 0x0a000005), v4(0x0a000007, 0x0a000009), v6(1, 0xff)]);
    expect(formatRanges(set)).to.equal("10.0.0.5 10.0.0.7-10.0.0.9 ::1-::ff");
    expect(formatRanges([])).to.equal("");
  });
});
