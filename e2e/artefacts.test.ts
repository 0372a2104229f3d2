/**
 * The shipping artefacts that cannot run here (no Docker engine): their scripts pass shellcheck (and the Dockerfile
 * hadolint) where installed, the production build the image runs starts with the image's Node flags, and clusterctl accepts the rendered
 * release components through a local providers entry.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { NETBOX_CRDS } from "../api/netbox/schema.js";
import { CRDS } from "../api/v1alpha1/schema.js";
import { resolveClusterctl } from "../hack/testkit/binaries.js";
import { repoRoot } from "../hack/testkit/cluster.js";
import { SHELLCHECK, skipWithout } from "../hack/testkit/skips.js";
import { deploymentNodeFlags, imageEnv, imageNodeFlags } from "../hack/testkit/controller.js";

const has = (tool: string, ...args: string[]): boolean =>
  spawnSync(tool, args.length > 0 ? args : ["--version"], { stdio: "ignore" }).status === 0;

describe("shipping artefacts", function () {
  this.timeout(180_000);

  it("shell scripts pass shellcheck", function () {
    skipWithout(this, SHELLCHECK);
    const scripts = [
      ...readdirSync(join(repoRoot, "hack"))
        .filter((f) => f.endsWith(".sh"))
        .map((f) => join(repoRoot, "hack", f)),
      join(repoRoot, ".ci", "run"),
    ];
    expect(scripts.length).to.be.greaterThan(2);
    const res = spawnSync("shellcheck", scripts, { encoding: "utf8" });
    expect(res.stdout + res.stderr).to.equal("");
    expect(res.status).to.equal(0);
  });

  it("the Dockerfile is multi-stage, installs production dependencies only and runs as non-root (and passes hadolint if installed)", function () {
    const text = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
    expect(text.match(/^FROM /gm)?.length).to.be.greaterThanOrEqual(2);
    expect(text).to.match(/npm ci --omit=dev/);
    const users = text.match(/^USER (\S+)/gm) ?? [];
    expect(users.at(-1)).to.match(/^USER [1-9]\d*:[1-9]\d*$/);
    if (has("hadolint")) expect(spawnSync("hadolint", [join(repoRoot, "Dockerfile")]).status).to.equal(0);
  });

  it("the production build (what the image runs) compiles and starts with the image's and the Deployment's Node flags", () => {
    // Inside the repository, so that the output resolves node_modules as the image's /app does.
    mkdirSync(join(repoRoot, ".cache"), { recursive: true });
    const out = mkdtempSync(join(repoRoot, ".cache", "build-"));
    try {
      execFileSync(
        process.execPath,
        [
          join(repoRoot, "node_modules", "typescript", "bin", "tsc"),
          "-p",
          join(repoRoot, "tsconfig.build.json"),
          "--outDir",
          out,
        ],
        { cwd: repoRoot },
      );
      // As a pod starts it: the ENTRYPOINT's Node flags on the command line, the image's ENV, the Deployment's flags in
      // NODE_OPTIONS (which refuses most V8 flags: a flag put in the wrong place stops the pod at start).
      const help = spawnSync(process.execPath, [...imageNodeFlags(), join(out, "src", "main.js"), "--help"], {
        encoding: "utf8",
        cwd: repoRoot,
        env: { ...process.env, ...imageEnv(), NODE_OPTIONS: deploymentNodeFlags().join(" ") },
      });
      expect(help.status).to.equal(0);
      expect(help.stderr + help.stdout).to.include("--leader-elect");
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("clusterctl accepts the rendered release components through a providers entry", async function () {
    if (!has("kubectl", "version", "--client")) this.skip();
    let clusterctl: string;
    try {
      clusterctl = await resolveClusterctl();
    } catch {
      this.skip();
    }
    const work = mkdtempSync(join(tmpdir(), "release-"));
    try {
      const rendered = execFileSync(join(repoRoot, "hack", "release-components.sh"), ["v0.1.0", "example.test/ipam"], {
        env: { ...process.env, OUT_DIR: join(work, "out") },
        encoding: "utf8",
      }).trim();
      const repo = join(work, "repo", "ipam-metal3-ts", "v0.1.0");
      mkdirSync(repo, { recursive: true });
      copyFileSync(rendered, join(repo, "ipam-components.yaml"));
      copyFileSync(join(repoRoot, "metadata.yaml"), join(repo, "metadata.yaml"));
      writeFileSync(
        join(work, "clusterctl.yaml"),
        `providers:\n  - name: metal3-ts\n    url: file://${join(repo, "ipam-components.yaml")}\n    type: IPAMProvider\n`,
      );
      const out = execFileSync(
        clusterctl,
        ["generate", "provider", "--ipam", "metal3-ts:v0.1.0", "--config", join(work, "clusterctl.yaml")],
        { encoding: "utf8", env: { ...process.env, HOME: work } },
      );
      expect(out).to.include("kind: Deployment").and.include("image: example.test/ipam:v0.1.0");
      // Metal3's three kinds and the two NetBox pool kinds (the in-cluster CRDs are an optional component).
      expect(out.match(/^kind: CustomResourceDefinition$/gm)?.length).to.equal(CRDS.length + NETBOX_CRDS.length);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
