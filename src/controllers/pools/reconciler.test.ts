import { expect } from "chai";
import { MAX_STATUS_WRITE_INTERVAL_MS, STATUS_WRITE_INTERVAL_MS, statusWriteInterval } from "./reconciler.js";

describe("a pool's status write interval", () => {
  it("is 2 s up to 1,000 records, then two milliseconds per record, at most 30 s", () => {
    expect(STATUS_WRITE_INTERVAL_MS).to.equal(2_000);
    expect(MAX_STATUS_WRITE_INTERVAL_MS).to.equal(30_000);
    expect([0, 1, 1_000].map(statusWriteInterval)).to.deep.equal([2_000, 2_000, 2_000]);
    expect([1_001, 2_000, 10_000].map(statusWriteInterval)).to.deep.equal([2_002, 4_000, 20_000]);
    expect([15_000, 100_000].map(statusWriteInterval)).to.deep.equal([30_000, 30_000]);
  });
});
