import { expect } from "chai";
import { NONE, REQUEUE, wakeIn, type PassOutcome } from "./outcome.js";
import { WriteRunner } from "./writes.js";

describe("the writes of a pass, run side by side (WriteRunner)", () => {
  it("runs writes as they come, at most `limit` at a time, and drains with the first error after all ran", async () => {
    const runner = new WriteRunner(2);
    let running = 0;
    let most = 0;
    const done: number[] = [];
    const write =
      (i: number, fail = false) =>
      async (): Promise<PassOutcome> => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        done.push(i);
        if (fail) throw new Error(`write ${i} failed`);
        return NONE;
      };
    runner.add(write(1));
    runner.add(write(2, true));
    runner.add(write(3));
    await new Promise((r) => setTimeout(r, 1));
    runner.add(write(4, true));
    let error: unknown;
    await runner.drain().catch((err: unknown) => (error = err));
    expect(most).to.equal(2);
    expect(done.sort()).to.deep.equal([1, 2, 3, 4]);
    expect((error as Error).message).to.equal("write 2 failed");
    await new WriteRunner(2).drain();
  });

  it("drains to the writes' outcomes merged: a requeue if any asks for one, the earliest wake", async () => {
    const runner = new WriteRunner(2);
    const outcomes = [NONE, wakeIn(900), REQUEUE, wakeIn(300), NONE];
    for (const [i, outcome] of outcomes.entries())
      runner.add(async () => {
        await new Promise((r) => setTimeout(r, outcomes.length - i));
        return outcome;
      });
    expect(await runner.drain()).to.deep.equal({ requeue: true, wakeInMs: 300 });
    const quiet = new WriteRunner(2);
    for (let i = 0; i < 3; i++) quiet.add(() => Promise.resolve(NONE));
    expect(await quiet.drain()).to.equal(NONE);
  });

  it("counts a write that throws before its first await as failed, and still drains", async () => {
    const runner = new WriteRunner(1);
    runner.add(() => {
      throw new Error("thrown at once");
    });
    runner.add(() => Promise.resolve(NONE));
    let error: unknown;
    await runner.drain().catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal("thrown at once");
  });

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
      const runner = new WriteRunner(2);
      for (const [ticks, outcome] of writes) runner.add(after(ticks, outcome));
      const merged = await runner.drain();
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
    const runner = new WriteRunner(2);
    runner.add(failing);
    runner.add(slow);
    const error = await runner.drain().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((error as Error).message).to.equal("first");
    expect(settled).to.equal(1);
  });
});
