import { expect } from "chai";
import type { ExternalEngine, PoolKind, PoolObject } from "./kind.js";
import { NONE, REQUEUE, wakeIn, type PassOutcome } from "./outcome.js";
import {
  engineRetry,
  LOST_RACE_REQUEUE_MS,
  MAX_STATUS_WRITE_INTERVAL_MS,
  requeueOf,
  runLimited,
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

describe("the writes of a pass, run side by side (runLimited)", () => {
  const after = (ticks: number, outcome: PassOutcome) => async (): Promise<PassOutcome> => {
    for (let i = 0; i < ticks; i++) await Promise.resolve();
    return outcome;
  };
  // Each row: writes as (ticks until it settles, its outcome); the merged outcome expected with 2 in flight.
  const rows: [string, [number, PassOutcome][], PassOutcome][] = [
    ["no write: nothing", [], NONE],
    [
      "a wake that settles first is kept when a slower write reports nothing",
      [
        [0, wakeIn(50)],
        [3, NONE],
      ],
      wakeIn(50),
    ],
    [
      "a wake that settles last is kept",
      [
        [3, wakeIn(50)],
        [0, NONE],
      ],
      wakeIn(50),
    ],
    [
      "a requeue and a wake from writes in flight together: both",
      [
        [0, REQUEUE],
        [2, wakeIn(40)],
        [1, NONE],
      ],
      {
        requeue: true,
        wakeInMs: 40,
      },
    ],
  ];
  for (const [what, writes, expected] of rows)
    it(what, async () => {
      const merged = await runLimited(
        writes.map(([ticks, outcome]) => after(ticks, outcome)),
        2,
      );
      expect({ ...merged }).to.deep.equal({ ...expected });
    });

  it("rejects with the first error once every write has settled", async () => {
    let settled = 0;
    const failing = async (): Promise<PassOutcome> => {
      await Promise.resolve();
      throw new Error("first");
    };
    const slow = async (): Promise<PassOutcome> => {
      for (let i = 0; i < 5; i++) await Promise.resolve();
      settled++;
      return NONE;
    };
    const error = await runLimited([failing, slow], 2).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((error as Error).message).to.equal("first");
    expect(settled).to.equal(1);
  });
});
