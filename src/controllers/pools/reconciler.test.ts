import { expect } from "chai";
import type { ExternalEngine, PoolKind, PoolObject } from "./kind.js";
import { NONE, REQUEUE, wakeIn, type PassOutcome } from "./outcome.js";
import {
  engineRetry,
  LOST_RACE_REQUEUE_MS,
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
  const rows: [string, PassOutcome, number | undefined][] = [
    ["nothing waits: no requeue", NONE, undefined],
    ["a lost race (a write conflicted, a new record was not confirmed): soon", REQUEUE, LOST_RACE_REQUEUE_MS],
    ["a wake (a held-back status write, a grace period, an engine's backoff): then", wakeIn(9_000), 9_000],
    ["a wake at once is not lost", wakeIn(0), 0],
    ["a lost race and a later wake: soon", { requeue: true, wakeInMs: 5_000 }, 200],
    ["a lost race and an earlier wake: the wake", { requeue: true, wakeInMs: 100 }, 100],
  ];
  for (const [what, outcome, expected] of rows)
    it(what, () => expect(requeueOf(outcome)?.requeueAfterMs).to.equal(expected));
});

describe("what a failing engine asks of the next pass (engineRetry, pure)", () => {
  const pool: PoolObject = { metadata: { name: "p" } };
  const engine = (retryMs: number | undefined): Pick<PoolKind, "external"> => ({
    external: { retryAfterMs: () => retryMs } as unknown as ExternalEngine,
  });
  const rows: [string, Pick<PoolKind, "external">, PoolObject | undefined, PassOutcome][] = [
    ["a kind without an engine: nothing", {}, pool, NONE],
    ["an engine that did not fail: nothing", engine(undefined), pool, NONE],
    ["a failing engine: a wake after its backoff", engine(5_000), pool, { wakeInMs: 5_000 }],
    ["a pool that is gone: nothing to retry", engine(5_000), undefined, NONE],
  ];
  for (const [what, kind, p, expected] of rows) it(what, () => expect(engineRetry(kind, p)).to.deep.equal(expected));
});
