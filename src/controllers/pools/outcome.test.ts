import { expect } from "chai";
import { mergeOutcomes, NONE, REQUEUE, wakeIn, type PassOutcome } from "./outcome.js";

describe("what a pass's steps ask of the next pass, merged (mergeOutcomes, pure)", () => {
  const rows: [string, PassOutcome, PassOutcome, PassOutcome][] = [
    ["nothing and nothing: nothing", NONE, NONE, {}],
    ["nothing and a lost race: a requeue", NONE, REQUEUE, { requeue: true }],
    ["a lost race and nothing: a requeue", REQUEUE, NONE, { requeue: true }],
    ["two wakes: the earliest", wakeIn(900), wakeIn(300), { wakeInMs: 300 }],
    ["two wakes, the earliest first: still the earliest", wakeIn(300), wakeIn(900), { wakeInMs: 300 }],
    ["a wake at once is not lost to a later one", wakeIn(0), wakeIn(500), { wakeInMs: 0 }],
    ["a wake at once after a later one", wakeIn(500), wakeIn(0), { wakeInMs: 0 }],
    ["a lost race and a wake: both", REQUEUE, wakeIn(700), { requeue: true, wakeInMs: 700 }],
    ["a wake and a lost race: both", wakeIn(700), REQUEUE, { requeue: true, wakeInMs: 700 }],
    [
      "a requeue with a wake and an earlier wake: the requeue and the earlier wake",
      { requeue: true, wakeInMs: 900 },
      wakeIn(100),
      { requeue: true, wakeInMs: 100 },
    ],
  ];
  for (const [what, a, b, expected] of rows)
    it(what, () => {
      const merged = mergeOutcomes(a, b);
      expect(merged).to.deep.equal(expected);
      expect(Object.isFrozen(merged), "an outcome is immutable").to.equal(true);
    });

  it("folding nothing in, or an outcome that says no more, returns the outcome it had (no allocation)", () => {
    const wake = wakeIn(300);
    expect(mergeOutcomes(NONE, NONE)).to.equal(NONE);
    expect(mergeOutcomes(wake, NONE)).to.equal(wake);
    expect(mergeOutcomes(NONE, REQUEUE)).to.equal(REQUEUE);
    expect(mergeOutcomes(REQUEUE, REQUEUE)).to.equal(REQUEUE);
    expect(mergeOutcomes(wake, wakeIn(900))).to.equal(wake);
    expect(mergeOutcomes(wakeIn(900), wake)).to.equal(wake);
  });

  it("merges in any order and grouping to the same outcome", () => {
    const outcomes = [NONE, wakeIn(400), REQUEUE, wakeIn(50), NONE, wakeIn(50)];
    const forward = outcomes.reduce(mergeOutcomes, NONE);
    const backward = [...outcomes].reverse().reduce(mergeOutcomes, NONE);
    expect(forward).to.deep.equal({ requeue: true, wakeInMs: 50 });
    expect(backward).to.deep.equal(forward);
  });
});
