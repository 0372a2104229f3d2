/** Run by skips.test.ts in a child mocha: one test skips for a tool that is not installed, one finds its tool. */
import { skipWithout } from "../skips.js";

describe("a suite needing tools", function () {
  it("needs a tool that is not installed", function () {
    skipWithout(this, {
      command: "metal3-ipam-no-such-tool",
      checks: "the fixture's check",
      install: "apt-get install no-such-tool",
    });
  });

  it("needs a tool that is installed", function () {
    skipWithout(this, { command: process.execPath, checks: "node runs", install: "-" });
  });
});
