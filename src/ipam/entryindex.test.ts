/**
 * The sorted indexes of validation against the plain scans they replace: Metal3's bounds check entry by entry
 * (`withinMetal3Bounds`) and overlaps compared pair by pair, on random entries of both families, unparsable fields
 * and boxes that cross from IPv4 to IPv6 (Metal3 orders every IPv4 address first).
 */
import { expect } from "chai";
import type { Pool } from "../../api/v1alpha1/types.js";
import { formatAddress, parseAddress } from "./address.js";
import type { Addr, Family } from "./address.js";
import { compileEntries, entryContains, withinMetal3Bounds } from "./entries.js";
import type { CompiledEntry } from "./entries.js";
import { AddressIndex, OverlapCounter } from "./entryindex.js";
import { seededRng } from "./random.js";

const rng = seededRng(42_042);
const int = (n: number): number => Math.floor(rng() * n);

/** Addresses packed near each other so that boxes, subnets and probes meet often. */
function addr(): Addr {
  const family: Family = rng() < 0.7 ? 4 : 6;
  return { family, value: BigInt(int(64)) };
}

function text(): string {
  const r = rng();
  if (r < 0.05) return "junk";
  return formatAddress(addr());
}

function entry(): Pool {
  const e: Pool = {};
  if (rng() < 0.6) e.start = text();
  if (rng() < 0.6) e.end = text();
  if (rng() < 0.4) {
    const a = addr();
    e.subnet = `${formatAddress(a)}/${a.family === 4 ? 27 + int(6) : 123 + int(6)}`;
  }
  return e;
}

function overlapPairs(mine: readonly CompiledEntry[], theirs: readonly CompiledEntry[]): number {
  let n = 0;
  for (const e of mine) {
    for (const f of theirs) {
      const meet = e.family === f.family && e.size > 0n && f.size > 0n && e.first <= f.last && f.first <= e.last;
      if (meet) n++;
    }
  }
  return n;
}

describe("entry indexes", () => {
  it("Metal3's bounds: the index answers as the entry-by-entry box test, 300 random pools", () => {
    for (let round = 0; round < 300; round++) {
      const pools = Array.from({ length: int(6) }, entry);
      const index = AddressIndex.metal3Bounds(pools);
      for (let probe = 0; probe < 40; probe++) {
        const a = addr();
        expect(index.has(a), `${formatAddress(a)} in ${JSON.stringify(pools)}`).to.equal(withinMetal3Bounds(pools, a));
      }
    }
  });

  it("a box from an IPv4 start to an IPv6 end holds the IPv4 addresses above start and IPv6 ones up to end", () => {
    const index = AddressIndex.metal3Bounds([{ start: "10.0.0.5", end: "2001:db8::5" }, null, {}]);
    for (const [a, inside] of [
      ["10.0.0.4", false],
      ["10.0.0.5", true],
      ["255.255.255.255", true],
      ["::", true],
      ["2001:db8::5", true],
      ["2001:db8::6", false],
    ] as const) {
      expect(index.has(parseAddress(a)!), a).to.equal(inside);
    }
  });

  it("yielded addresses and overlaps: as entry by entry and pair by pair, 300 random pairs of pools", () => {
    for (let round = 0; round < 300; round++) {
      const mine = compileEntries({ pools: Array.from({ length: int(8) }, entry) }).entries;
      const theirs = compileEntries({ pools: Array.from({ length: int(8) }, entry) }).entries;
      const yielded = AddressIndex.yielded(theirs);
      const counter = new OverlapCounter(mine);
      expect(theirs.reduce((n, f) => n + counter.overlapping(f), 0)).to.equal(overlapPairs(mine, theirs));
      for (const e of mine) {
        expect(
          yielded.meets(e) && e.size > 0n,
          JSON.stringify(e, (_, v: unknown) => String(v)),
        ).to.equal(overlapPairs([e], theirs) > 0);
      }
      for (let probe = 0; probe < 20; probe++) {
        const a = addr();
        expect(yielded.has(a)).to.equal(theirs.some((f) => entryContains(f, a)));
      }
    }
  });
});
