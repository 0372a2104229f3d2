/**
 * A test skipped for a missing tool is named in one line, with its install command, right above mocha's counts:
 * a child mocha runs testdata/skip-fixture.ts with this repository's .mocharc.json (whose root hooks print it).
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { expect } from "chai";
import { repoRoot } from "./cluster.js";

describe("tests skipped for a missing tool", () => {
  it("are named in one line with the command that adds the tool, right above mocha's counts", () => {
    const res = spawnSync(
      process.execPath,
      [
        join(repoRoot, "node_modules", "mocha", "bin", "mocha.js"),
        join("hack", "testkit", "testdata", "skip-fixture.ts"),
      ],
      { cwd: repoRoot, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" } },
    );
    expect(res.status, res.stderr).to.equal(0);
    const lines = res.stdout.split("\n").map((l) => l.trim());
    const notice =
      "skipped 1 test (the fixture's check): metal3-ipam-no-such-tool is not installed; " +
      "add it with: apt-get install no-such-tool";
    expect(lines.filter((l) => l.startsWith("skipped "))).to.deep.equal([notice]);
    const rest = lines.slice(lines.indexOf(notice) + 1).filter((l) => l !== "");
    expect(rest.slice(0, 2).map((l) => l.replace(/ \(\d+m?s\)$/, ""))).to.deep.equal(["1 passing", "1 pending"]);
  });
});
