import { expect } from "chai";
import { changedParent, type ResolvedParent } from "./parent.js";

const resolved = (kind: "prefix" | "ip-range", id: number, display: string): ResolvedParent => ({
  parent: { kind, id },
  display,
  family: 4,
  first: 0n,
  last: 255n,
  prefixLength: 24,
  size: 254,
  used: 0,
});

describe("NetBox pool parent: a pool keeps the prefix or range it served (pure)", () => {
  it("lets a pool use its parent when it served none yet, or that one", () => {
    expect(changedParent(undefined, resolved("prefix", 7, "prefix 10.0.0.0/24 (#7)"))).to.equal(undefined);
    expect(changedParent({ kind: "prefix", id: 7 }, resolved("prefix", 7, "prefix 10.0.0.0/24 (#7)"))).to.equal(
      undefined,
    );
  });

  it("refuses another prefix, or a range of the same id, naming both", () => {
    const served = { kind: "prefix", id: 7, display: "prefix 10.0.0.0/24 (#7)" };
    expect(changedParent(served, resolved("prefix", 8, "prefix 10.0.1.0/24 (#8)")))
      .to.include("served NetBox prefix 10.0.0.0/24 (#7)")
      .and.include("now names prefix 10.0.1.0/24 (#8)")
      .and.include("create a new pool");
    expect(changedParent(served, resolved("ip-range", 7, "ip-range 10.0.0.10-10.0.0.20 (#7)"))).to.include(
      "would be left behind",
    );
  });
});
