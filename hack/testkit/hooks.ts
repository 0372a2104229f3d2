/**
 * Mocha root hooks: the shared local plane and the shared NetBox are stopped once, after every suite of the run, and
 * tests skipped for a missing tool are named, one line per tool with its install command (skips.ts), right above
 * mocha's counts. A controller of this process that a test leaves running is stopped when the test ends, so it cannot
 * serve the suites after it, and the run fails at its end naming the test (leaks.ts); a failing afterEach hook would
 * skip every test after it instead.
 */
import { stopSharedCluster } from "./cluster.js";
import { setCurrentTest, stopLeftRunning } from "./leaks.js";
import { stopSharedNetBox } from "./netbox.js";
import { skippedToolLines } from "./skips.js";

/** Tests that left a controller running, with how many. */
const leftRunning: string[] = [];

export const mochaHooks = {
  beforeEach(this: Mocha.Context): void {
    setCurrentTest(this.currentTest?.fullTitle());
  },
  async afterEach(this: Mocha.Context): Promise<void> {
    const left = await stopLeftRunning();
    if (left > 0) leftRunning.push(`${this.currentTest?.fullTitle() ?? "?"} (${left})`);
    setCurrentTest(undefined);
  },
  async afterAll(): Promise<void> {
    try {
      await Promise.all([stopSharedCluster(), stopSharedNetBox()]);
      if (leftRunning.length > 0)
        throw new Error(
          `tests left controllers of this process running (stopped when each ended; stop each in a finally):\n${leftRunning.join("\n")}`,
        );
    } finally {
      const lines = skippedToolLines();
      if (lines.length > 0) process.stdout.write(`\n${lines.map((l) => `  ${l}\n`).join("")}`);
    }
  },
};
