import { expect } from "chai";
import type { KubeObject } from "../../kube/resource.js";
import { segmentsOf, WriteRunner, type ClaimStep } from "./external.js";
import type { ClaimApi, Pass } from "./pass.js";

/** Claims named `asks-*` want an address; the others (bound, say) do not. Pure: nothing is decided or written. */
const api = {
  externalClaim: (_pass: Pass, claim: KubeObject) => {
    const name = claim.metadata.name ?? "";
    return name.startsWith("asks-") ? { holder: name, claim, cluster: undefined } : undefined;
  },
} as unknown as ClaimApi;
const step = (name: string): ClaimStep => ({ api, claim: { metadata: { name } }, decide: () => async () => {} });
const names = (segment: { steps: ClaimStep[] }): string[] => segment.steps.map((s) => s.claim.metadata.name ?? "");

describe("a pass with an external engine (pure)", () => {
  it("cuts the claims in decision order into segments of at most `size` claims to ask for, others riding along", () => {
    const steps = ["bound-0", "asks-1", "asks-2", "bound-3", "asks-3", "asks-4", "bound-5"].map(step);
    const segments = segmentsOf({} as Pass, steps, 2);
    expect(segments.map(names)).to.deep.equal([
      ["bound-0", "asks-1", "asks-2", "bound-3"],
      ["asks-3", "asks-4", "bound-5"],
    ]);
    expect(segments.map((s) => s.asked.map((a) => a.holder))).to.deep.equal([
      ["asks-1", "asks-2"],
      ["asks-3", "asks-4"],
    ]);
    expect(segmentsOf({} as Pass, [], 2)).to.deep.equal([]);
    expect(segmentsOf({} as Pass, ["bound-0"].map(step), 2).map(names)).to.deep.equal([["bound-0"]]);
  });

  it("runs writes as they come, at most `limit` at a time, and drains with the first error after all ran", async () => {
    const runner = new WriteRunner(2);
    let running = 0;
    let most = 0;
    const done: number[] = [];
    const write =
      (i: number, fail = false) =>
      async (): Promise<void> => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        done.push(i);
        if (fail) throw new Error(`write ${i} failed`);
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

  it("counts a write that throws before its first await as failed, and still drains", async () => {
    const runner = new WriteRunner(1);
    runner.add(() => {
      throw new Error("thrown at once");
    });
    runner.add(async () => {});
    let error: unknown;
    await runner.drain().catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal("thrown at once");
  });
});
