import { expect } from "chai";
import type { ResolvedParent } from "./parent.js";
import { fillInOrder, nextSource, sourceHolding, sourcesProblem, sourceSpecsOf, usageOf } from "./sources.js";

/** A resolved source of `first..last` (as numbers) of family 4 unless said. */
const source = (id: number, first: number, last: number, family: 4 | 6 = 4): ResolvedParent => ({
  parent: { kind: "prefix", id },
  display: `prefix #${id}`,
  family,
  first: BigInt(first),
  last: BigInt(last),
  prefixLength: 30,
  size: last - first + 1,
  used: 0,
});

/**
 * NetBox in memory: each source holds `room[i]` more addresses; a request for more than that makes nothing (409).
 * Items named `gw` are answered "ask again" once (their address was a forbidden one, now reserved).
 */
function fakeSources(room: number[]): {
  ask: (source: number, batch: readonly string[]) => Promise<string[] | undefined>;
  got: Map<string, number>;
  calls: string[];
} {
  const got = new Map<string, number>();
  const calls: string[] = [];
  const reservedOnce = new Set<string>();
  const ask = (i: number, batch: readonly string[]): Promise<string[] | undefined> => {
    calls.push(`${i}:${batch.length}`);
    if (batch.length > (room[i] ?? 0)) return Promise.resolve(undefined);
    room[i] = (room[i] ?? 0) - batch.length;
    const again: string[] = [];
    for (const item of batch)
      if (item.startsWith("gw") && !reservedOnce.has(item)) {
        reservedOnce.add(item);
        again.push(item);
      } else got.set(item, i);
    return Promise.resolve(again);
  };
  return { ask, got, calls };
}

const items = (n: number, prefix = "c"): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe("NetBox pool sources: tried in order (pure)", () => {
  it("asks the first source not known full, and none when all are", () => {
    expect(nextSource(3, new Set())).to.equal(0);
    expect(nextSource(3, new Set([0]))).to.equal(1);
    expect(nextSource(3, new Set([0, 1]))).to.equal(2);
    expect(nextSource(3, new Set([0, 1, 2]))).to.equal(undefined);
  });

  it("fills the first source, then the next: the first claims get the first source's addresses", async () => {
    const nb = fakeSources([2, 5]);
    const full = new Set<number>();
    expect(await fillInOrder(items(5), 2, full, nb.ask, 50)).to.equal(false);
    expect([...nb.got.entries()]).to.deep.equal([
      ["c0", 0],
      ["c1", 0],
      ["c2", 1],
      ["c3", 1],
      ["c4", 1],
    ]);
    expect([...full]).to.deep.equal([0]);
    // The batch, one claim at a time in the first until it ran out, then the rest as one batch in the second.
    expect(nb.calls).to.deep.equal(["0:5", "0:1", "0:1", "0:1", "1:3"]);
  });

  it("skips a source known full without asking it, until the set is cleared", async () => {
    const nb = fakeSources([0, 3]);
    const full = new Set([0]);
    expect(await fillInOrder(items(2), 2, full, nb.ask, 50)).to.equal(false);
    expect(nb.calls).to.deep.equal(["1:2"]);
  });

  it("reports exhaustion when every source ran out, after giving out what was left", async () => {
    const nb = fakeSources([1, 1]);
    const full = new Set<number>();
    expect(await fillInOrder(items(3), 2, full, nb.ask, 50)).to.equal(true);
    expect([...nb.got.keys()]).to.deep.equal(["c0", "c1"]);
    expect([...full]).to.deep.equal([0, 1]);
  });

  it("asks again for a claim whose address was reserved, in the source it came from while it has room", async () => {
    const nb = fakeSources([3, 3]);
    expect(await fillInOrder(["gw", "c0"], 2, new Set(), nb.ask, 50)).to.equal(false);
    expect(nb.got.get("gw")).to.equal(0);
    expect(nb.got.get("c0")).to.equal(0);
  });

  it("keeps batches whole while a source has room, and moves on at the first claim it has none for", async () => {
    const roomy = fakeSources([150, 100]);
    expect(await fillInOrder(items(120), 2, new Set(), roomy.ask, 50)).to.equal(false);
    expect(roomy.calls).to.deep.equal(["0:50", "0:50", "0:20"]);
    expect(new Set(roomy.got.values())).to.deep.equal(new Set([0]));
    const exact = fakeSources([100, 100]);
    expect(await fillInOrder(items(120), 2, new Set(), exact.ask, 50)).to.equal(false);
    expect(exact.calls).to.deep.equal(["0:50", "0:50", "0:20", "0:1", "1:20"]);
    expect(exact.got.get("c99")).to.equal(0);
    expect(exact.got.get("c100")).to.equal(1);
  });
});

describe("NetBox pool sources: what a pool may serve (pure)", () => {
  it("lists the spec's prefix with its gateway first, then the fallbacks in order", () => {
    const specs = sourceSpecsOf({
      netbox: { credentialsRef: { name: "s" } },
      prefix: { id: 1 },
      gateway: "10.0.0.1",
      addressPrefix: 24,
      fallbacks: [{ range: { id: 2 } }, { prefix: { cidr: "10.0.9.0/24" }, gateway: "10.0.9.1" }],
    });
    expect(specs).to.deep.equal([
      { prefix: { id: 1 }, gateway: "10.0.0.1", addressPrefix: 24 },
      { range: { id: 2 } },
      { prefix: { cidr: "10.0.9.0/24" }, gateway: "10.0.9.1" },
    ]);
  });

  it("lets a pool append sources, and refuses a removed or reordered one, another family, or one named twice", () => {
    const a = { kind: "prefix" as const, id: 1, display: "prefix #1" };
    const b = { kind: "prefix" as const, id: 2, display: "prefix #2" };
    const served = { netbox: a, sources: [a, b].map((s) => ({ ...s, total: 2, used: 2, free: 0 })) };
    expect(sourcesProblem(served, [source(1, 0, 3), source(2, 4, 7), source(3, 8, 11)])).to.equal(undefined);
    expect(sourcesProblem({ netbox: a }, [source(1, 0, 3), source(2, 4, 7)])).to.equal(undefined);
    expect(sourcesProblem(served, [source(1, 0, 3)])).to.include("no longer names it");
    expect(sourcesProblem(served, [source(1, 0, 3), source(3, 8, 11), source(2, 4, 7)])).to.include(
      "would be left behind",
    );
    expect(sourcesProblem(undefined, [source(1, 0, 3), source(2, 4, 7, 6)])).to.include("is IPv6");
    expect(sourcesProblem(undefined, [source(1, 0, 3), source(1, 0, 3)])).to.include("named twice");
  });

  it("finds the source holding an address, and sums NetBox's utilisation", () => {
    const sources = [source(1, 0x0a000000, 0x0a000003), source(2, 0x0a000100, 0x0a0001ff)];
    expect(sourceHolding(sources, "10.0.0.2")).to.equal(0);
    expect(sourceHolding(sources, "10.0.1.7/24")).to.equal(1);
    expect(sourceHolding(sources, "10.0.2.1")).to.equal(undefined);
    const [first, second] = sources as [ResolvedParent, ResolvedParent];
    first.used = 6; // NetBox counts more than the size when records overlap: free never goes below 0
    second.used = 10;
    expect(usageOf(sources)).to.deep.equal({ total: 4 + 256, used: 16, free: 246 });
  });
});
