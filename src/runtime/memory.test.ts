import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { eventLoopQuiet, MemoryReleaser, memoryReducingCollection, type Release } from "./memory.js";

const MiB = 1024 * 1024;

/** A releaser on a scripted RSS: each read takes the next value; `collect` counts its calls. */
function scripted(rss: number[], minGrowthBytes = 2 * MiB, quiet?: boolean[]) {
  const reads = [...rss];
  const quietness = quiet ? [...quiet] : undefined;
  const released: Release[] = [];
  let collections = 0;
  const releaser = new MemoryReleaser({
    intervalMs: 60_000,
    minGrowthBytes,
    collect: () => void collections++,
    readRss: () => {
      const next = reads.shift();
      if (next === undefined) throw new Error("read more RSS than the script holds");
      return next * MiB;
    },
    onRelease: (r) => released.push(r),
    ...(quietness
      ? {
          quiet: () => {
            const next = quietness.shift();
            if (next === undefined) throw new Error("asked whether quiet more often than the script says");
            return next;
          },
          maxDeferredChecks: 2,
        }
      : {}),
  });
  return { releaser, released, collections: () => collections };
}

describe("MemoryReleaser", () => {
  it("collects only when RSS has grown by the minimum over the floor, and reports what the collection gave back", () => {
    // start 100, then checks at 101 (below the minimum), 103 (collect: 103 → 96), 97 (the first check after a
    // release: the new floor), 99 (collect: 99 → 96)
    const { releaser, released, collections } = scripted([100, 101, 103, 96, 97, 99, 96]);
    releaser.start();
    releaser.stop();
    expect(releaser.check()).to.equal(undefined);
    expect(releaser.check()).to.deep.include({ beforeBytes: 103 * MiB, afterBytes: 96 * MiB });
    expect(releaser.check()).to.equal(undefined);
    expect(releaser.check()).to.deep.include({ beforeBytes: 99 * MiB, afterBytes: 96 * MiB });
    expect(collections()).to.equal(2);
    expect(released.map((r) => r.beforeBytes - r.afterBytes)).to.deep.equal([7 * MiB, 3 * MiB]);
  });

  it("takes its floor from the first check after a release, not from the compacted heap right after it", () => {
    // A busy process at a steady size: RSS falls to 96 in the collection and is back at its working size, 99, by the
    // next check. Measured from 96 that would be growth, and a collection every interval; from 99 it is not.
    const { releaser, collections } = scripted([100, 103, 96, 99, 99.5, 99, 100.9, 101.5, 96, 99]);
    releaser.start();
    releaser.stop();
    expect(releaser.check()).to.deep.include({ beforeBytes: 103 * MiB, afterBytes: 96 * MiB });
    for (let i = 0; i < 4; i++) expect(releaser.check()).to.equal(undefined);
    expect(releaser.check()).to.deep.include({ beforeBytes: 101.5 * MiB, afterBytes: 96 * MiB });
    expect(releaser.check()).to.equal(undefined);
    expect(collections()).to.equal(2);
  });

  it("waits for a quiet interval before a due release, through at most maxDeferredChecks busy ones", () => {
    // start 100; 103 due but busy, 103.5 busy, 104 quiet: collect (→ 96); 99 settles; 102 due, busy three times in a
    // row (the limit is two): collected at the third; 97 settles.
    const { releaser, released } = scripted([100, 103, 103.5, 104, 96, 99, 102, 102, 102.5, 96, 97], 2 * MiB, [
      false,
      false,
      true,
      false,
      false,
      false,
      false,
      true,
    ]);
    releaser.start();
    releaser.stop();
    expect(releaser.check(), "due, busy").to.equal(undefined);
    expect(releaser.check(), "due, busy").to.equal(undefined);
    expect(releaser.check(), "due, quiet").to.deep.include({ beforeBytes: 104 * MiB, afterBytes: 96 * MiB });
    expect(releaser.check(), "settling").to.equal(undefined);
    expect(releaser.check(), "due, busy once").to.equal(undefined);
    expect(releaser.check(), "due, busy twice").to.equal(undefined);
    expect(releaser.check(), "due, busy a third time: runs anyway").to.deep.include({ beforeBytes: 102.5 * MiB });
    expect(releaser.check(), "settling").to.equal(undefined);
    expect(released).to.have.length(2);
  });

  it("forgets a deferred release when RSS fell back below the minimum growth meanwhile", () => {
    // 103 due but busy; 101 no longer due (the count starts over); 103 due, busy, busy: the limit of two is not reached.
    const { releaser, collections } = scripted([100, 103, 101, 103, 103, 103, 96], 2 * MiB, [
      false,
      false,
      false,
      false,
      false,
    ]);
    releaser.start();
    releaser.stop();
    for (let i = 0; i < 4; i++) expect(releaser.check()).to.equal(undefined);
    expect(collections()).to.equal(0);
    expect(releaser.check(), "the third busy check of the second due release").to.not.equal(undefined);
  });

  it("lowers its floor when RSS falls on its own, so growth is measured from the lowest point", () => {
    // start 100, RSS falls to 90, then 92 is 2 MiB above the new floor: collect
    const { releaser, collections } = scripted([100, 90, 92, 91]);
    releaser.start();
    releaser.stop();
    expect(releaser.check()).to.equal(undefined);
    expect(releaser.check()).to.deep.include({ beforeBytes: 92 * MiB });
    expect(collections()).to.equal(1);
  });

  it("never collects while RSS stays flat (an idle controller pays nothing)", () => {
    const { releaser, collections } = scripted([100, 101, 100.5, 101.9, 100, 101]);
    releaser.start();
    releaser.stop();
    for (let i = 0; i < 5; i++) releaser.check();
    expect(collections()).to.equal(0);
  });

  it("stops, and reports instead of throwing, when a collection fails", () => {
    const errors: unknown[] = [];
    const releaser = new MemoryReleaser({
      intervalMs: 60_000,
      minGrowthBytes: 0,
      collect: () => {
        throw new TypeError("gc() options not understood");
      },
      readRss: () => 100 * MiB,
      onError: (err) => errors.push(err),
    });
    releaser.start();
    expect(releaser.running).to.equal(true);
    expect(releaser.check()).to.equal(undefined);
    expect(errors).to.have.length(1);
    expect(String(errors[0])).to.include("gc() options not understood");
    expect(releaser.running).to.equal(false);
  });

  it("has no collection to run when Node runs without --expose-gc", () => {
    expect(memoryReducingCollection({})).to.equal(undefined);
    const calls: unknown[] = [];
    memoryReducingCollection({ gc: (options: unknown) => calls.push(options) })?.();
    expect(calls).to.deep.equal([{ type: "major", execution: "sync", flavor: "last-resort" }]);
  });
});

describe("eventLoopQuiet", () => {
  it("says busy after the loop was held for most of the interval, and quiet after it waited", async () => {
    // A tenth: the test's own runner wakes the loop now and then, which a 300 ms sample sees.
    const quiet = eventLoopQuiet(0.1);
    const until = performance.now() + 100;
    while (performance.now() < until) {
      // Holds the event loop, as a pass over many claims would.
    }
    expect(quiet(), "after 100 ms of work").to.equal(false);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(quiet(), "after 300 ms of waiting").to.equal(true);
  });
});

describe("memory release on this Node (a child process with --expose-gc and the Deployment's 2 MiB semi-space)", function () {
  this.timeout(60_000);
  const moduleUrl = new URL("./memory.ts", import.meta.url).href;
  // Grows the heap by about 60 MiB of objects, drops them, runs a plain major collection and then a release; prints
  // RSS after each step, in MiB.
  const script = `
    import { memoryReducingCollection, MemoryReleaser } from ${JSON.stringify(moduleUrl)};
    const rss = () => process.memoryUsage.rss() / ${MiB};
    let garbage = [];
    for (let i = 0; i < 400000; i++) garbage.push({ i, text: "x" + i, pair: [i, i + 1] });
    const grown = rss();
    garbage = undefined;
    gc({ type: "major" });
    const afterMajor = rss();
    const releaser = new MemoryReleaser({ intervalMs: 60000, minGrowthBytes: 0, collect: memoryReducingCollection() });
    const release = releaser.check();
    console.log(JSON.stringify({ grown, afterMajor, before: release.beforeBytes / ${MiB}, after: release.afterBytes / ${MiB} }));
  `;

  function run(): { grown: number; afterMajor: number; before: number; after: number } {
    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", "--expose-gc", "--max-semi-space-size=2", "--input-type=module", "--eval", script],
      { encoding: "utf8" },
    );
    expect(child.status, child.stderr).to.equal(0);
    return JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "") as ReturnType<typeof run>;
  }

  it("gives back the pages a plain major collection keeps pooled", () => {
    const m = run();
    // The reason for the releaser: the plain collection freed the objects but left most of their pages resident.
    expect(m.grown - m.afterMajor, JSON.stringify(m)).to.be.below(20);
    // The release hands them back.
    expect(m.before - m.after, JSON.stringify(m)).to.be.above(30);
  });
});
