/**
 * `npm run localplane -- up` and `down` in a fresh clone: no `.cache/` (Cluster API's CRDs), no `.localplane/`, only
 * the shared node_modules linked in. `up` must prepare what it needs itself. The clone is this tree's files that git
 * tracks or would track (ignored ones left out), as they are in the working tree, so uncommitted changes count. The
 * plane's binaries come from the per-user cache `npm run binaries` fills (`npm test` runs it first).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "chai";
import { ApiextensionsV1Api, KubeConfig } from "@kubernetes/client-node";
import { repoRoot } from "./testkit/cluster.js";

/** This tree as a fresh clone would have it, in `dir`. */
function cloneInto(dir: string): void {
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repoRoot,
    encoding: "utf8",
    maxBuffer: 16 << 20,
  });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  for (const file of listed.stdout.split("\0")) {
    // A tracked file deleted in the working tree is not part of it; node_modules (a link here) is linked below.
    if (!file || file === "node_modules" || !existsSync(join(repoRoot, file))) continue;
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(repoRoot, file), join(dir, file));
  }
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
}

function localplane(clone: string, command: string): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync("npm", ["run", "--silent", "localplane", "--", command], {
    cwd: clone,
    encoding: "utf8",
    timeout: 400_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("npm run localplane in a fresh clone", function () {
  // Binaries cached: seconds; the CRD copy reads Go's module cache.
  this.timeout(600_000);
  let clone = "";

  before(function () {
    if (spawnSync("git", ["--version"]).status !== 0) this.skip();
    clone = mkdtempSync(join(tmpdir(), "metal3-ipam-clone-"));
    cloneInto(clone);
  });

  after(() => {
    if (!clone) return;
    if (existsSync(join(clone, ".localplane", "state.json"))) localplane(clone, "down");
    rmSync(clone, { recursive: true, force: true });
  });

  it("`up` copies Cluster API's CRDs itself and serves them; `down` stops the plane", async () => {
    expect(existsSync(join(clone, ".cache"))).to.equal(false);
    const up = localplane(clone, "up");
    expect(up.status, `up: ${up.stdout}${up.stderr}`).to.equal(0);
    const kubeconfig = /export KUBECONFIG=(\S+)/.exec(up.stdout)?.[1];
    expect(kubeconfig).to.equal(join(clone, ".localplane", "kubeconfig"));
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig!);
    const crds = await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition();
    expect(crds.items.map((c) => c.metadata?.name)).to.include.members([
      "ipaddressclaims.ipam.cluster.x-k8s.io",
      "ippools.ipam.metal3.io",
    ]);
    const down = localplane(clone, "down");
    expect(down.status, `down: ${down.stdout}${down.stderr}`).to.equal(0);
    expect(down.stdout).to.contain("Local plane stopped.");
    expect(existsSync(join(clone, ".localplane", "state.json"))).to.equal(false);
  });
});
