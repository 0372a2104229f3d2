import { expect } from "chai";
import { checkOf, describeCalls, meanBareMs } from "./netboxreport.js";
import type { BareRun, NetBoxBurstResult } from "./netbox.js";

const bare = (ms: number, distinct = 1000): BareRun => ({
  count: 1000,
  ms,
  calls: {},
  prefix: "p",
  distinct,
  netboxCpu: 1,
});
const result = (check: NetBoxBurstResult["check"], runs = [bare(10), bare(20)]) =>
  ({ burst: { count: 1000 }, check, bare: runs }) as unknown as NetBoxBurstResult;

describe("bench: the NetBox section", () => {
  it("names each route by its last segment, with its calls (per claim when asked) and mean wait", () => {
    const calls = {
      "POST /api/ipam/prefixes/{id}/available-ips/": { count: 20, seconds: 16, codes: { "201": 20 } },
      "GET /api/extras/tags/": { count: 1, seconds: 0.02, codes: { "200": 1 } },
    };
    expect(describeCalls(calls)).to.equal("GET tags 1.00 (20.0 ms each), POST available-ips 20.0 (800 ms each)");
    expect(describeCalls(calls, 1000)).to.equal(
      "GET tags 0.00100 (20.0 ms each), POST available-ips 0.0200 (800 ms each)",
    );
  });

  it("is OK only when NetBox holds one record per claim at its address, every address once, bare runs too", () => {
    expect(checkOf(result({ records: 1000, matching: 1000, distinct: 1000 }))).to.equal("OK");
    expect(checkOf(result({ records: 1001, matching: 1000, distinct: 1001 }))).to.equal("FAIL");
    expect(checkOf(result({ records: 1000, matching: 999, distinct: 1000 }))).to.equal("FAIL");
    expect(checkOf(result({ records: 1000, matching: 1000, distinct: 1000 }, [bare(1, 999)]))).to.equal("FAIL");
    expect(meanBareMs(result({ records: 0, matching: 0, distinct: 0 }))).to.equal(15);
  });
});
