/**
 * Mocha root hooks: the shared local plane and the shared NetBox are stopped once, after every suite of the run, and
 * tests skipped for a missing tool are named, one line per tool with its install command (skips.ts), right above
 * mocha's counts.
 */
import { stopSharedCluster } from "./cluster.js";
import { stopSharedNetBox } from "./netbox.js";
import { skippedToolLines } from "./skips.js";

export const mochaHooks = {
  async afterAll(): Promise<void> {
    try {
      await Promise.all([stopSharedCluster(), stopSharedNetBox()]);
    } finally {
      const lines = skippedToolLines();
      if (lines.length > 0) process.stdout.write(`\n${lines.map((l) => `  ${l}\n`).join("")}`);
    }
  },
};
