import { expect } from "chai";
import { parseAddress } from "./address.js";
import { PoolAllocator } from "./allocator.js";
import type { AllocationResult, Holder } from "./allocator.js";
import type { CompiledEntry } from "./entries.js";

const claim = (claimName: string): Holder => ({ kind: "claim", claimName });

/** An entry `first..last` (both addresses of one family) as another kind of pool would compile it. */
function entry(index: number, first: string, last: string, extra: Partial<CompiledEntry> = {}): CompiledEntry {
  const lo = parseAddress(first);
  const hi = parseAddress(last);
  if (!lo || !hi) throw new Error(`bad test entry ${first}-${last}`);
  const size = hi.value >= lo.value ? hi.value - lo.value + 1n : 0n;
  return {
    index,
    family: lo.family,
    first: lo.value,
    last: size === 0n ? lo.value - 1n : hi.value,
    size,
    bounded: true,
    indexSpace: size,
    prefix: 24,
    ...extra,
  };
}

function addressOf(r: AllocationResult): string {
  if (!r.ok) throw new Error(`expected success, got ${r.reason}: ${r.message}`);
  return r.address;
}

/** Allocates until exhausted (at most `limit`), reserving each result as the controller would. */
function drain(a: PoolAllocator, limit = 100): string[] {
  const out: string[] = [];
  for (let i = 0; i < limit; i++) {
    const r = a.allocate({ claimName: `c${i}` });
    if (!r.ok) break;
    a.reserve(r.address, claim(`c${i}`));
    out.push(r.address);
  }
  return out;
}

describe("PoolAllocator.fromSpace (entries compiled elsewhere)", () => {
  it("takes the entries in the given order, lowest free address of each first, then exhausts", () => {
    const a = PoolAllocator.fromSpace({
      entries: [
        entry(0, "10.0.0.2", "10.0.0.3"),
        entry(1, "10.0.0.7", "10.0.0.7"),
        entry(2, "2001:db8::1", "2001:db8::2"),
      ],
      specErrors: [],
    });
    expect(drain(a)).to.deep.equal(["10.0.0.2", "10.0.0.3", "10.0.0.7", "2001:db8::1", "2001:db8::2"]);
    expect(a.allocate({ claimName: "late" })).to.deep.equal({
      ok: false,
      reason: "PoolExhausted",
      message: "Exhausted IP Pools",
    });
  });

  it("fills holes left by releases before going on", () => {
    const a = PoolAllocator.fromSpace({ entries: [entry(0, "10.0.0.1", "10.0.0.5")], specErrors: [] });
    expect(drain(a, 3)).to.deep.equal(["10.0.0.1", "10.0.0.2", "10.0.0.3"]);
    a.release("10.0.0.2");
    expect(addressOf(a.allocate({ claimName: "x" }))).to.equal("10.0.0.2");
  });

  it("reports each entry's prefix, canonical gateway and index", () => {
    const a = PoolAllocator.fromSpace({
      entries: [entry(0, "10.0.0.1", "10.0.0.1"), entry(1, "fd00::a", "fd00::b", { prefix: 64, gateway: "FD00::1" })],
      specErrors: [],
    });
    a.reserve("10.0.0.1", claim("first"));
    expect(a.allocate({ claimName: "c" })).to.deep.equal({
      ok: true,
      address: "fd00::a",
      prefix: 64,
      gateway: "fd00::1",
      entryIndex: 1,
    });
  });

  it("keeps specErrors as given and never uses the random strategy", () => {
    const specErrors = ['spec.addresses: Invalid value: "x": provided address is not a valid IP, range, nor CIDR'];
    const a = PoolAllocator.fromSpace({ entries: [entry(0, "10.0.0.1", "10.0.0.200")], specErrors });
    expect(a.specErrors).to.deep.equal(specErrors);
    expect(drain(a, 5)).to.deep.equal(["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"]);
  });

  it("serves requested addresses, holders and capacity as for a Metal3 pool", () => {
    const a = PoolAllocator.fromSpace({ entries: [entry(0, "10.0.0.1", "10.0.0.10")], specErrors: [] });
    expect(a.allocate({ claimName: "r", requestedAddress: "10.0.0.9" })).to.deep.include({ address: "10.0.0.9" });
    expect(a.allocate({ claimName: "r", requestedAddress: "10.0.0.11" })).to.deep.include({ ok: false });
    a.reserve("10.0.0.9", claim("r"));
    a.reserve("10.0.0.50", claim("outside"));
    expect(a.holderOf("10.0.0.9")).to.deep.equal(claim("r"));
    expect(a.contains("10.0.0.50")).to.equal(false);
    expect(a.capacity()).to.deep.equal({ total: 10n, used: 1n, free: 9n });
    expect(a.preallocatedTo("10.0.0.1")).to.deep.equal([]);
  });

  it("copies the entries: later changes to the caller's array do not reach it", () => {
    const entries = [entry(0, "10.0.0.1", "10.0.0.1")];
    const a = PoolAllocator.fromSpace({ entries, specErrors: [] });
    entries.push(entry(1, "10.0.0.2", "10.0.0.2"));
    expect(drain(a)).to.deep.equal(["10.0.0.1"]);
  });

  it("decides in logarithmic work on a large, half used space", () => {
    const a = PoolAllocator.fromSpace({ entries: [entry(0, "10.0.0.0", "10.0.255.255")], specErrors: [] });
    for (let i = 0; i < 30000; i += 2) a.reserve(`10.0.${i >> 8}.${i & 255}`, claim(`h${i}`));
    const before = a.work;
    expect(addressOf(a.allocate({ claimName: "n" }))).to.equal("10.0.0.1");
    expect(a.work - before).to.be.lessThan(200);
  });

  it("leaves new PoolAllocator(spec) untouched: a spec never picks up a space", () => {
    PoolAllocator.fromSpace({ entries: [entry(0, "10.0.0.1", "10.0.0.1")], specErrors: ["x"] });
    const a = new PoolAllocator({ namePrefix: "p", pools: [{ start: "10.1.0.1", end: "10.1.0.2" }] });
    expect(a.specErrors).to.deep.equal([]);
    expect(drain(a)).to.deep.equal(["10.1.0.1", "10.1.0.2"]);
  });
});
