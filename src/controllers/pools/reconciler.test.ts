import { expect } from "chai";
import {
  MAX_STATUS_WRITE_INTERVAL_MS,
  requeueOf,
  STATUS_WRITE_INTERVAL_MS,
  statusWriteInterval,
} from "./reconciler.js";

describe("a pool's status write interval", () => {
  it("is 2 s up to 1,000 records, then two milliseconds per record, at most 30 s", () => {
    expect(STATUS_WRITE_INTERVAL_MS).to.equal(2_000);
    expect(MAX_STATUS_WRITE_INTERVAL_MS).to.equal(30_000);
    expect([0, 1, 1_000].map(statusWriteInterval)).to.deep.equal([2_000, 2_000, 2_000]);
    expect([1_001, 2_000, 10_000].map(statusWriteInterval)).to.deep.equal([2_002, 4_000, 20_000]);
    expect([15_000, 100_000].map(statusWriteInterval)).to.deep.equal([30_000, 30_000]);
  });
});

describe("when a pass asks to run the pool again (requeueOf, pure)", () => {
  const rows: [string, Parameters<typeof requeueOf>[0], number | undefined][] = [
    ["nothing waits: no requeue", { requeue: false }, undefined],
    ["a lost race (a write conflicted, a new record was not confirmed): soon", { requeue: true }, 200],
    ["a held-back status write: when it is due", { requeue: false, statusDueInMs: 1_500 }, 1_500],
    ["a reuse grace period: when it ends", { requeue: false, wakeInMs: 9_000 }, 9_000],
    ["a failing engine: after its backoff", { requeue: false, retryAfterMs: 5_000 }, 5_000],
    ["a status due at once is not lost", { requeue: false, statusDueInMs: 0 }, 0],
    ["several: the soonest", { requeue: true, statusDueInMs: 1_500, wakeInMs: 100, retryAfterMs: 5_000 }, 100],
    ["a lost race does not wait for an engine's backoff", { requeue: true, retryAfterMs: 5_000 }, 200],
  ];
  for (const [what, ctx, expected] of rows) it(what, () => expect(requeueOf(ctx)?.requeueAfterMs).to.equal(expected));
});
