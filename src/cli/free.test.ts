import { expect } from "chai";
import { freeDocument, freeReport, rangeText, renderFree, subtract } from "./free.js";
import type { NetBoxIPPool } from "../../api/netbox/types.js";
import { capiAddress, inventory, m3Address, metal3, pool } from "./fixtures.testutil.js";

describe("cli/free", () => {
  it("subtracts used values from spans", () => {
    expect(subtract([[10n, 20n]], [])).to.deep.equal([[10n, 20n]]);
    expect(subtract([[10n, 20n]], [10n, 11n, 15n, 20n])).to.deep.equal([
      [12n, 14n],
      [16n, 19n],
    ]);
    expect(
      subtract(
        [
          [1n, 3n],
          [7n, 9n],
        ],
        [0n, 2n, 5n, 9n, 12n],
      ),
    ).to.deep.equal([
      [1n, 1n],
      [3n, 3n],
      [7n, 8n],
    ]);
    expect(subtract([[1n, 2n]], [1n, 2n])).to.deep.equal([]);
  });

  it("lists free ranges around both kinds of records and preallocations, and the next sequential address", () => {
    const p = pool("p", {
      pools: [{ start: "10.0.0.10", end: "10.0.0.40" }],
      preAllocations: { later: "10.0.0.13", done: "10.0.0.20" },
    });
    const inv = inventory({
      pools: [p],
      addresses: [
        m3Address("p", "10.0.0.10", "a"),
        m3Address("p", "10.0.0.20", "done"),
        m3Address("other", "10.0.0.11", "x"),
      ],
      capiAddresses: [capiAddress("p", "10.0.0.11", "b")],
    });
    const r = freeReport(metal3(p), inv);
    expect(r.ranges.map(rangeText)).to.deep.equal(["10.0.0.12", "10.0.0.14-10.0.0.19", "10.0.0.21-10.0.0.40"]);
    expect(r.reserved).to.deep.equal([{ address: "10.0.0.13", claim: "later" }]);
    expect(r.next).to.deep.equal({ address: "10.0.0.12", random: false });
    expect(renderFree(r)).to.equal(
      [
        "pool ns1/p (sequential): 27 free of 31, 3 used",
        "  10.0.0.12             1",
        "  10.0.0.14-10.0.0.19   6",
        "  10.0.0.21-10.0.0.40  20",
        "  reserved: 10.0.0.13 for claim later (preallocated, not yet claimed)",
        "next claim gets: 10.0.0.12",
      ].join("\n"),
    );
  });

  it("counts IPv6 pools exactly and names no address for random pools", () => {
    const p = pool("v6", { allocationStrategy: "random", pools: [{ subnet: "2001:db8::/56" }] });
    const r = freeReport(metal3(p), inventory({ pools: [p], addresses: [m3Address("v6", "2001:db8::0001", "a")] }));
    expect(r.ranges.map(rangeText)).to.deep.equal(["2001:db8::2-2001:db8:0:ff:ffff:ffff:ffff:ffff"]);
    const doc = freeDocument(r) as { total: unknown; free: unknown; next: unknown };
    expect(doc.total).to.equal(((1n << 72n) - 1n).toString());
    expect(doc.free).to.equal(((1n << 72n) - 2n).toString());
    expect(doc.next).to.deep.equal({ strategy: "random", address: null });
    expect(renderFree(r)).to.match(/next claim gets: a random free address \(strategy random\)$/);
  });

  it("says why nothing is next on a full pool", () => {
    const p = pool("tiny", { pools: [{ subnet: "192.168.0.0/31" }] });
    const r = freeReport(metal3(p), inventory({ pools: [p], addresses: [m3Address("tiny", "192.168.0.1", "a")] }));
    expect(r.ranges).to.deep.equal([]);
    expect(renderFree(r)).to.equal(
      "pool ns1/tiny (sequential): 0 free of 1, 1 used\nnext claim gets: nothing (Exhausted IP Pools)",
    );
  });
});

describe("cli/free of a NetBox pool with fallbacks", () => {
  const source = (display: string, total: number, used: number) => ({
    kind: "prefix" as const,
    id: 1,
    display,
    total,
    used,
    free: total - used,
  });

  it("shows every prefix or range in the order they are tried, with NetBox's counts of each", () => {
    const object: NetBoxIPPool = {
      metadata: { name: "nb", namespace: "default", uid: "uid-nb" },
      spec: { netbox: { credentialsRef: { name: "t" } }, prefix: { id: 7 }, fallbacks: [{ prefix: { id: 9 } }] },
      status: {
        ipAddresses: { total: 8, used: 3, free: 5 },
        netbox: { kind: "prefix", id: 7, display: "prefix 10.0.0.0/30 (#7)" },
        sources: [source("prefix 10.0.0.0/30 (#7)", 2, 2), source("prefix 10.0.1.0/29 (#9)", 6, 1)],
      },
    };
    const text = renderFree(freeReport({ kind: "NetBoxIPPool", object }, inventory({ netBoxPools: [object] })));
    expect(text.split("\n").slice(0, 3)).to.deep.equal([
      "pool NetBoxIPPool default/nb (NetBox prefix 10.0.0.0/30 (#7) and 1 fallback(s)): 5 free of 8, 3 used (NetBox's count: its records of every user)",
      "  first prefix 10.0.0.0/30 (#7): 0 free of 2, 2 used",
      "  then prefix 10.0.1.0/29 (#9): 5 free of 6, 1 used",
    ]);
  });
});
