import { expect } from "chai";
import { poolRows, poolsDocument, renderPools } from "./pools.js";
import { PLAIN } from "./output.js";
import { capiAddress, capiClaim, inventory, ipClaim, m3Address, pool } from "./fixtures.testutil.js";

const now = "2024-01-01T00:00:00Z";
const failedCondition = (reason: string) => [
  { type: "Ready", status: "False" as const, reason, message: "m", lastTransitionTime: now },
];

describe("cli/pools", () => {
  const a = pool("a", { clusterName: "c1", pools: [{ start: "10.0.0.1", end: "10.0.0.10" }] });
  const b = pool("b", { allocationStrategy: "random", pools: [{ subnet: "fd00::/64" }] });
  const inv = inventory({
    pools: [b, a],
    addresses: [m3Address("a", "10.0.0.1", "bound")],
    capiAddresses: [capiAddress("a", "10.0.0.2", "capi-bound"), capiAddress("a", "10.0.0.3", "capi-bound2")],
    claims: [
      ipClaim("bound", "a", { status: { address: { name: "a-10-0-0-1" } } }),
      ipClaim("waiting", "a"),
      ipClaim("exhausted", "b", {
        status: { errorMessage: "Exhausted IP Pools", conditions: failedCondition("PoolExhausted") },
      }),
      ipClaim("paused", "a", { status: { conditions: failedCondition("Paused") } }),
    ],
    capiClaims: [
      capiClaim("capi-bound", "a", { status: { addressRef: { name: "a-10-0-0-2" } } }),
      capiClaim("capi-waiting", "a"),
      capiClaim("capi-failed", "a", { status: { conditions: failedCondition("AllocationFailed") } }),
    ],
  });

  it("counts use from both kinds of records, and pending and failed claims of both kinds", () => {
    const [ra, rb] = poolRows(inv);
    expect(ra).to.deep.include({ name: "a", cluster: "c1", strategy: "sequential", total: 10n, used: 3n, free: 7n });
    expect(ra!.pending).to.deep.equal({ ipClaims: 2, ipAddressClaims: 1 });
    expect(ra!.failed).to.deep.equal({ ipClaims: 0, ipAddressClaims: 1 });
    expect(rb).to.deep.include({ name: "b", strategy: "random", total: (1n << 64n) - 1n, used: 0n });
    expect(rb!.failed).to.deep.equal({ ipClaims: 1, ipAddressClaims: 0 });
  });

  it("renders plain columns when piped, and bars with colour on a terminal", () => {
    const rows = poolRows(inv);
    expect(renderPools(rows, PLAIN, false)).to.equal(
      [
        "NAME  CLUSTER  STRATEGY                USED/TOTAL      %  PENDING     FAILED",
        "a     c1       sequential                    3/10  30.0%  3 (1 capi)  1 (1 capi)",
        "b     -        random      0/18446744073709551615   0.0%  0           1",
      ].join("\n"),
    );
    const tty = renderPools(rows, { bars: true, color: true }, true);
    expect(tty).to.include("NAMESPACE").and.to.include("USAGE").and.to.include("\u001b[32m██████░");
    expect(renderPools([], PLAIN, false)).to.equal("No pools found.");
  });

  it("gives scripts exact counts", () => {
    const doc = poolsDocument(poolRows(inv)) as { pools: { total: unknown; used: unknown }[] };
    expect(doc.pools.map((p) => [p.total, p.used])).to.deep.equal([
      [10, 3],
      ["18446744073709551615", 0],
    ]);
  });
});
