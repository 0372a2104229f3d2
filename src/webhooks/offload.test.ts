/**
 * The validation worker: large jobs answer as in the caller's thread while its event loop keeps turning, a job over
 * its time budget is refused and its worker stopped, the waiting line is bounded, and an idle worker goes away.
 */
import { expect } from "chai";
import type { IPPool } from "../../api/v1alpha1/types.js";
import { silentLogger } from "../runtime/logger.js";
import { JOBS } from "./jobs.js";
import type { IPPoolInput } from "./jobs.js";
import { WorkerValidator } from "./offload.js";
import type { WorkerValidatorOptions } from "./offload.js";

function ten(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

/** A pool of `n` entries and `n` preallocations outside them, among three pools of 20,000 overlapping entries. */
function large(n: number): IPPoolInput {
  const preAllocations: Record<string, string> = {};
  for (let i = 0; i < n; i++) preAllocations[`c${i}`] = `11.${ten(i).slice(3)}`;
  const object: IPPool = {
    metadata: { name: "big", namespace: "ns" },
    spec: {
      namePrefix: "big",
      pools: Array.from({ length: n }, (_, i) => ({ start: ten(i * 4 + 1), end: ten(i * 4 + 2) })),
      preAllocations,
    },
  };
  const others = [0, 1, 2].map((k): IPPool => ({
    metadata: { name: `o${k}`, namespace: "ns" },
    spec: { namePrefix: "big", pools: Array.from({ length: 20_000 }, () => ({ subnet: "10.0.0.0/8" })) },
  }));
  return { object, old: undefined, inUse: [], others };
}

function rejection(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => "resolved",
    (err: unknown) => (err instanceof Error ? err.message : String(err)),
  );
}

describe("validation worker", () => {
  const validators: WorkerValidator[] = [];
  function validator(options: WorkerValidatorOptions): WorkerValidator {
    const v = new WorkerValidator(silentLogger(), { inlineItems: 10, ...options });
    validators.push(v);
    return v;
  }
  afterEach(async () => {
    await Promise.all(validators.splice(0).map((v) => v.stop()));
  });

  it("answers a large job as the caller's thread does, while the caller's event loop keeps turning", async () => {
    const input = large(20_000);
    const v = validator({ budgetMs: 120_000 });
    let turns = 0;
    let turning = true;
    const turn = (): void => {
      turns++;
      if (turning) setImmediate(turn);
    };
    setImmediate(turn);
    const verdict = await v.run("ipPool", input);
    turning = false;
    expect(v.hasWorker()).to.equal(true);
    // The loop turned while the worker validated: the job did not hold it.
    expect(turns).to.be.greaterThan(10);
    expect(verdict).to.deep.equal(JOBS.ipPool(input));
    expect(verdict.errors).to.have.length(20_000);
    expect(verdict.warnings[19]).to.equal(`and ${3 * 20_000 * 20_000 + 3 - 19} more warnings`);
  });

  it("small jobs run in the caller's thread and start no worker", async () => {
    const v = validator({ inlineItems: 1_000 });
    const verdict = await v.run("ipPool", { ...large(3), others: [] });
    expect(verdict.errors).to.have.length(3);
    expect(v.hasWorker()).to.equal(false);
  });

  it("refuses a job over its time budget, stops its worker, and serves the next job with a new one", async () => {
    const v = validator({ budgetMs: 1 });
    expect(await rejection(v.run("ipPool", large(50_000)))).to.equal(
      "the validation did not finish within 0.001 s of its arrival, the time its review had left",
    );
    expect(v.hasWorker()).to.equal(false);
    const roomy = validator({ budgetMs: 120_000 });
    expect(
      (
        await roomy.run("inClusterSpec", {
          pool: { metadata: {}, spec: { addresses: [], prefix: 24 } },
          old: undefined,
        })
      ).length,
    ).to.equal(1);
  });

  it("names the time a job had when its review's deadline comes before the budget", async () => {
    const v = validator({ budgetMs: 120_000 });
    const input = large(50_000);
    // Due before a new worker has even loaded its modules, let alone validated 100,000 items.
    const message = await rejection(v.run("ipPool", input, performance.now() + 200));
    const seconds =
      /^the validation did not finish within ([0-9.]+) s of its arrival, the time its review had left$/.exec(
        message,
      )?.[1];
    expect(Number(seconds), message).to.be.within(0.001, 0.2);
  });

  it("bounds the jobs waiting for the worker", async () => {
    const v = validator({ budgetMs: 120_000, maxWaiting: 1 });
    const input = large(20_000);
    const first = v.run("ipPool", input);
    const second = v.run("ipPool", input);
    expect(await rejection(v.run("ipPool", input))).to.equal(
      "too many large admission reviews are waiting (1); retry later",
    );
    expect((await first).errors).to.have.length(20_000);
    expect((await second).errors).to.have.length(20_000);
  });

  it("stops an idle worker, and refuses what waits when stopped", async () => {
    const v = validator({ budgetMs: 120_000, idleMs: 10 });
    await v.run("ipPool", large(100));
    expect(v.hasWorker()).to.equal(true);
    for (let i = 0; i < 500 && v.hasWorker(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(v.hasWorker()).to.equal(false);
    const pending = rejection(v.run("ipPool", large(20_000)));
    await v.stop();
    expect(await pending).to.equal("the webhook server is stopping");
  });
});
