import { expect } from "chai";
import { decideWithEngine, type ClaimStep } from "./external.js";
import type { ExternalEngine } from "./kind.js";
import { NONE } from "./outcome.js";
import type { ClaimApi, Pass } from "./pass.js";
import { DecisionSlicer, decideInSlices } from "./slices.js";

/** A clock the decisions advance: each takes 4 ms of it, so a 10 ms slice holds three. */
function fakeTime(): { now: () => number; spend: (ms: number) => void } {
  let t = 0;
  return { now: () => t, spend: (ms) => void (t += ms) };
}

/** Busy for `ms` of real time, as a long decision is. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe("a pass decides in slices (pools/slices.ts)", () => {
  it("another task queued before the pass runs between its decisions, not after them", async () => {
    const time = fakeTime();
    const log: string[] = [];
    const steps = Array.from({ length: 8 }, (_, i) => ({
      decide: () => {
        time.spend(4);
        log.push(`d${i}`);
        return i;
      },
    }));
    setImmediate(() => log.push("other"));
    const results = await decideInSlices(steps, new DecisionSlicer(10, time.now));
    expect(results).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
    // d0..d2 fill the first slice (12 ms of the clock); the pass pauses before d3 and the other task runs there.
    expect(log).to.deep.equal(["d0", "d1", "d2", "other", "d3", "d4", "d5", "d6", "d7"]);
  });

  it("a timer due during a long pass fires before the pass's last decision (real clock, default slice)", async () => {
    const log: string[] = [];
    const steps = Array.from({ length: 40 }, (_, i) => ({
      decide: () => {
        spin(2);
        log.push(`d${i}`);
      },
    }));
    setTimeout(() => log.push("timer"), 5);
    await decideInSlices(steps);
    const at = log.indexOf("timer");
    expect(at, log.join(" ")).to.be.greaterThan(0);
    expect(at, log.join(" ")).to.be.lessThan(log.length - 1);
  });

  it("a pool with an external engine pauses inside a segment too", async () => {
    const time = fakeTime();
    const log: string[] = [];
    const api = { externalClaim: () => undefined } as unknown as ClaimApi;
    const steps: ClaimStep[] = Array.from({ length: 6 }, (_, i) => ({
      api,
      claim: { metadata: { name: `bound-${i}` } },
      decide: () => {
        time.spend(4);
        log.push(`d${i}`);
        return () => Promise.resolve(NONE);
      },
    }));
    const engine = {
      obtain: () => Promise.resolve(new Map()),
      retryAfterMs: () => undefined,
    } as unknown as ExternalEngine;
    setImmediate(() => log.push("other"));
    await decideWithEngine(
      {} as Pass,
      { metadata: {} },
      engine,
      steps,
      {} as never,
      4,
      new DecisionSlicer(10, time.now),
    );
    expect(log).to.deep.equal(["d0", "d1", "d2", "other", "d3", "d4", "d5"]);
  });
});
