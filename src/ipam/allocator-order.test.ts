import { expect } from "chai";
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import type { IPPoolSpec, Pool } from "../../api/v1alpha1/types.js";
import { formatAddress, parseAddress } from "./address.js";
import type { Family } from "./address.js";
import { EntryLayout, FreePieces } from "./allocator-order.js";
import { PoolAllocator } from "./allocator.js";
import type { AllocationResult, Holder } from "./allocator.js";
import type { CompiledEntry } from "./entries.js";
import { inClusterSpace } from "./incluster.js";
import { seededRng } from "./random.js";
import type { Rng } from "./random.js";

const claim = (claimName: string): Holder => ({ kind: "claim", claimName });
const keyOf = (family: Family, value: bigint): string => `${family}/${value}`;

/**
 * The reference: Metal3's sequential scan written plainly (every entry in order, every candidate from the first up),
 * over a set of values in use (held and preallocated).
 */
function naiveFirstFree(
  entries: readonly CompiledEntry[],
  inUse: ReadonlySet<string>,
): { address: string; entryIndex: number } | undefined {
  for (const e of entries) {
    for (let v = e.first; v <= e.last; v++) {
      if (!inUse.has(keyOf(e.family, v)))
        return { address: formatAddress({ family: e.family, value: v }), entryIndex: e.index };
    }
  }
  return undefined;
}

/** The first entry (array order) that yields the address, as Metal3's scan meets it. */
function naiveOwner(entries: readonly CompiledEntry[], address: string): number | undefined {
  const a = parseAddress(address);
  return a && entries.find((e) => e.family === a.family && a.value >= e.first && a.value <= e.last)?.index;
}

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)]!;
}

const BASES: Record<Family, bigint> = { 4: 0x0a000000n, 6: 0x20010db8000000000000000000000000n };

/** An address near the family's base: entries built from these overlap a lot. */
function near(rng: Rng, family: Family, spread = 300): bigint {
  return BASES[family] + BigInt(Math.floor(rng() * spread));
}

function text(family: Family, value: bigint): string {
  return formatAddress({ family, value });
}

/** A random Metal3 entry: start/end, subnet only, or start inside a subnet; small, overlapping. */
function metal3Entry(rng: Rng, family: Family): Pool {
  const start = near(rng, family);
  const bits = family === 4 ? 32 : 128;
  const len = bits - 1 - Math.floor(rng() * 5);
  const subnet = `${text(family, near(rng, family))}/${len}`;
  const kind = Math.floor(rng() * 3);
  if (kind === 0) return { start: text(family, start), end: text(family, start + BigInt(Math.floor(rng() * 20))) };
  if (kind === 1) return { subnet };
  return { start: text(family, start), subnet };
}

/** Values of every entry, so operations can name addresses inside and just outside the pool. */
function candidates(entries: readonly CompiledEntry[]): { family: Family; value: bigint }[] {
  return entries.flatMap((e) => {
    const out = [];
    for (let v = e.first - 1n; v <= e.last + 1n && v <= e.first + 40n; v++) out.push({ family: e.family, value: v });
    return out;
  });
}

/**
 * Drives the allocator and the reference through the same random operations (allocate and reserve, release, reserve
 * an address for someone else, request an address, serve a preallocated claim) and compares every decision.
 */
function compareRandomly(a: PoolAllocator, rng: Rng, steps: number, preallocated: ReadonlyMap<string, string>): number {
  const entries = a.entries;
  const inUse = new Set<string>();
  const held = new Map<string, string>();
  for (const address of preallocated.values()) {
    const p = parseAddress(address);
    if (p) inUse.add(keyOf(p.family, p.value));
  }
  const preKeys = new Set(inUse);
  const pool = candidates(entries);
  let decisions = 0;
  const hold = (address: string, holder: string): void => {
    const p = parseAddress(address)!;
    a.reserve(address, claim(holder));
    held.set(address, holder);
    inUse.add(keyOf(p.family, p.value));
  };
  for (let step = 0; step < steps; step++) {
    const roll = rng();
    if (roll < 0.55 || pool.length === 0) {
      const name = `c${step}`;
      const got: AllocationResult = a.allocate({ claimName: name });
      const want = naiveFirstFree(entries, inUse);
      decisions++;
      if (!want) {
        expect(got).to.deep.include({ ok: false, reason: "PoolExhausted" });
        continue;
      }
      expect(got.ok && { address: got.address, entryIndex: got.entryIndex }, `step ${step}`).to.deep.equal(want);
      hold(want.address, name);
    } else if (roll < 0.7 && held.size > 0) {
      const [address, holder] = pick(rng, [...held]);
      a.release(address, claim(holder));
      held.delete(address);
      const p = parseAddress(address)!;
      if (!preKeys.has(keyOf(p.family, p.value))) inUse.delete(keyOf(p.family, p.value));
    } else if (roll < 0.8) {
      const c = pick(rng, pool);
      const address = text(c.family, c.value);
      if (!held.has(address)) hold(address, `other${step}`);
    } else if (roll < 0.9) {
      const c = pick(rng, pool);
      const address = text(c.family, c.value);
      const got = a.allocate({ claimName: `r${step}`, requestedAddress: address });
      const owner = naiveOwner(entries, address);
      if (owner === undefined) expect(got.ok).to.equal(false);
      else if (got.ok) expect(got.entryIndex).to.equal(owner);
      expect(a.entryOf(address)?.index).to.equal(owner);
    } else if (preallocated.size > 0) {
      const [name, address] = pick(rng, [...preallocated]);
      const got = a.allocate({ claimName: name });
      const owner = naiveOwner(entries, address);
      if (owner === undefined) expect(got).to.deep.include({ ok: false, message: "Pre-allocated IP out of bounds" });
      else if (got.ok) expect([got.address, got.entryIndex]).to.deep.equal([address, owner]);
    }
  }
  return decisions;
}

describe("allocation in Metal3's scan order, as a structure (allocator-order.ts)", () => {
  describe("decides as a plain scan does (seeded random pools)", () => {
    it("Metal3 pools: many overlapping entries of both families, preallocations, reserve and release", () => {
      let decisions = 0;
      for (let round = 0; round < 60; round++) {
        const rng = seededRng(1000 + round);
        const pools = Array.from({ length: 1 + Math.floor(rng() * 40) }, () => metal3Entry(rng, rng() < 0.6 ? 4 : 6));
        const preAllocations: Record<string, string> = {};
        for (let i = 0; i < Math.floor(rng() * 12); i++) {
          const family = rng() < 0.6 ? 4 : 6;
          preAllocations[`pre${i}`] = text(family, near(rng, family, 320));
        }
        const spec: IPPoolSpec = { namePrefix: "t", pools, preAllocations };
        const a = new PoolAllocator(spec);
        decisions += compareRandomly(a, rng, 400, new Map(Object.entries(preAllocations)));
      }
      expect(decisions).to.be.greaterThan(10_000);
    });

    it("in-cluster pools: many ranges, many excluded addresses, IPv4 and IPv6", () => {
      for (let round = 0; round < 40; round++) {
        const rng = seededRng(2000 + round);
        const family: Family = round % 2 === 0 ? 4 : 6;
        const addresses = Array.from({ length: 1 + Math.floor(rng() * 6) }, () => {
          const lo = near(rng, family, 2000);
          return `${text(family, lo)}-${text(family, lo + BigInt(Math.floor(rng() * 200)))}`;
        });
        const excludedAddresses = Array.from({ length: Math.floor(rng() * 400) }, () => {
          const v = near(rng, family, 2200);
          return rng() < 0.8
            ? text(family, v)
            : `${text(family, v)}-${text(family, v + BigInt(Math.floor(rng() * 4)))}`;
        });
        const spec: InClusterIPPoolSpec = { addresses, excludedAddresses, prefix: family === 4 ? 16 : 64 };
        const a = PoolAllocator.fromSpace(inClusterSpace(spec));
        compareRandomly(a, rng, 600, new Map());
      }
    });

    it("random strategy: the address comes from the first entry with a free one, and is free", () => {
      for (let round = 0; round < 30; round++) {
        const rng = seededRng(3000 + round);
        const pools = Array.from({ length: 2 + Math.floor(rng() * 20) }, () => metal3Entry(rng, 4));
        const a = new PoolAllocator({ namePrefix: "t", pools, allocationStrategy: "random" }, { rng });
        const inUse = new Set<string>();
        for (let i = 0; ; i++) {
          const got = a.allocate({ claimName: `c${i}` });
          const want = naiveFirstFree(a.entries, inUse);
          if (!want) {
            expect(got.ok).to.equal(false);
            break;
          }
          if (!got.ok) throw new Error(got.message);
          expect(got.entryIndex).to.equal(want.entryIndex);
          const p = parseAddress(got.address)!;
          expect(inUse.has(keyOf(4, p.value))).to.equal(false);
          expect(naiveOwner(a.entries, got.address)).to.equal(got.entryIndex);
          inUse.add(keyOf(4, p.value));
          a.reserve(got.address, claim(`c${i}`));
        }
      }
    });
  });

  describe("EntryLayout", () => {
    it("cuts overlapping entries into pieces owned by the first entry yielding them", () => {
      const entry = (index: number, first: bigint, last: bigint): CompiledEntry => ({
        index,
        family: 4,
        first,
        last,
        size: last - first + 1n,
        bounded: true,
        indexSpace: last - first + 1n,
        prefix: 24,
      });
      const layout = new EntryLayout([entry(0, 10n, 20n), entry(1, 5n, 30n), entry(2, 0n, 40n), entry(3, 12n, 14n)]);
      const pieces = layout.pieces.map((p) => [p.entry.index, p.lo, p.hi]);
      expect(pieces).to.deep.equal([
        [0, 10n, 20n],
        [1, 5n, 9n],
        [1, 21n, 30n],
        [2, 0n, 4n],
        [2, 31n, 40n],
      ]);
      expect([4n, 5n, 13n, 31n, 41n].map((v) => layout.rankOf(4, v))).to.deep.equal([3, 1, 0, 4, -1]);
      expect(layout.rankOf(6, 13n)).to.equal(-1);
    });

    it("FreePieces finds the first piece with a free address", () => {
      const free = new FreePieces(5);
      expect(free.first()).to.equal(0);
      free.set(0, false);
      free.set(1, false);
      expect(free.first()).to.equal(2);
      free.set(2, false);
      free.set(3, false);
      free.set(4, false);
      expect(free.first()).to.equal(-1);
      free.set(1, true);
      expect(free.first()).to.equal(1);
      expect(new FreePieces(0).first()).to.equal(-1);
    });
  });

  describe("cost per decision does not grow with the entries (counted work, no timing)", () => {
    /** Work of each of `n` sequential decisions (allocate, then reserve as the controller does). */
    function costs(a: PoolAllocator, n: number): number[] {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const before = a.work;
        const r = a.allocate({ claimName: `c${i}` });
        if (!r.ok) throw new Error(r.message);
        a.reserve(r.address, claim(`c${i}`));
        out.push(a.work - before);
      }
      return out;
    }

    it("an in-cluster pool with 100,000 excluded addresses: 5,000 decisions, each O(log n)", () => {
      // Every other address of a /14 excluded: 100,000 single-address ranges, lowest first.
      const excludedAddresses = Array.from({ length: 100_000 }, (_, i) => text(4, BASES[4] + BigInt(2 * i + 1)));
      const spec: InClusterIPPoolSpec = { addresses: ["10.0.0.0/14"], excludedAddresses, prefix: 14 };
      const a = PoolAllocator.fromSpace(inClusterSpace(spec));
      expect(a.entries.length).to.equal(100_000);
      const work = costs(a, 5_000);
      // A descent of the piece tree, a lookup and a few free-set descents per decision: a small multiple of log2(n).
      expect(Math.max(...work)).to.be.at.most(20 * Math.log2(100_000));
      expect(a.allocate({ claimName: "next" })).to.deep.include({ address: text(4, BASES[4] + 10_002n) });
    });

    it("a Metal3 pool of 20,000 entries, 2,000 of them with a preallocation: each decision O(log n)", () => {
      const pools = Array.from({ length: 20_000 }, (_, i) => {
        const v = BASES[4] + BigInt(4 * i);
        return { start: text(4, v), end: text(4, v + 2n) };
      });
      const preAllocations = Object.fromEntries(pools.slice(0, 2_000).map((p, i) => [`pre${i}`, p.start]));
      const a = new PoolAllocator({ namePrefix: "t", pools, preAllocations });
      // Two free addresses in each preallocated entry, then the next entry's first.
      const work = costs(a, 4_000);
      expect(Math.max(...work)).to.be.at.most(20 * Math.log2(20_000));
      expect(a.allocate({ claimName: "next" })).to.deep.include({ address: text(4, BASES[4] + 4n * 2_000n) });
    });
  });
});
