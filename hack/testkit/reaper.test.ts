/**
 * The reaper against what a dead run really leaves: a plane folder whose owner is gone, with a mount still below it
 * (a kubelet killed with its run keeps its root folder bind-mounted; removing the folder then fails with EBUSY).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { mountsUnder, PLANE_DIR_PREFIX, processAlive, reapOrphanedPlanes } from "./reaper.js";
import { skipWithout, type ExternalTool } from "./skips.js";

const ROOT: ExternalTool = {
  command: "mount",
  checks: "the reaper detaches mounts left below a dead run's folder",
  install: "run the tests as root",
  missing: () =>
    process.platform !== "linux" || process.getuid?.() !== 0 ? "mounting a folder needs root on Linux" : undefined,
};

describe("reaping a dead run's plane folder", () => {
  it("detaches what is still mounted below it, then removes it", function () {
    skipWithout(this, ROOT);
    const owner = spawnSync("true").pid;
    expect(processAlive(owner)).to.equal(false);
    const dir = mkdtempSync(join(tmpdir(), PLANE_DIR_PREFIX));
    const kubeletRoot = join(dir, "node", "kubelet");
    mkdirSync(kubeletRoot, { recursive: true });
    writeFileSync(join(dir, "owner.json"), JSON.stringify({ owner, children: [] }));
    execFileSync("mount", ["--bind", kubeletRoot, kubeletRoot]);
    try {
      expect(mountsUnder([`${dir}/`])).to.deep.equal([kubeletRoot]);
      expect(reapOrphanedPlanes()).to.include(dir);
      expect(mountsUnder([`${dir}/`])).to.deep.equal([]);
      expect(existsSync(dir)).to.equal(false);
    } finally {
      for (const m of mountsUnder([`${dir}/`])) spawnSync("umount", ["-l", m]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
