/**
 * `kubectl-ipam` through npx exactly as the README shows it, run the way a person runs it: from a shell whose PATH
 * starts with the machine's own Node (20 here, older than the pinned 24) and with an empty npx cache (a fresh machine,
 * or the first run in a checkout). npm then checks `engines` against its own Node while it links the checkout into
 * its npx cache and warns EBADENGINE (ten lines on stderr) although the tool runs on the pinned Node from
 * node_modules/.bin. The README's command must print the tool's output and nothing else.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { expect } from "chai";
import { freshNamespace, repoRoot, sharedCluster } from "../../hack/testkit/cluster.js";
import { clients, pool } from "../../hack/testkit/ipam.js";
import type { CliRun } from "../../hack/testkit/cli.js";

/** The command the README's kubectl ipam section shows (asserted below to still be there). */
const README_COMMAND = ["npx", "--loglevel=error", "kubectl-ipam"] as const;

/** The Node that runs npm itself: npm names it to its children; else the first `node` on the PATH outside node_modules. */
function systemNode(): string {
  const fromNpm = process.env.npm_node_execpath;
  if (fromNpm && existsSync(fromNpm)) return fromNpm;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir.includes("node_modules") && existsSync(join(dir, "node"))) return join(dir, "node");
  }
  throw new Error("no node outside node_modules on the PATH: npx cannot run the way a person runs it");
}

/** A shell's environment: no npm_* variables of the npm running this test, the machine's Node first on the PATH. */
function personEnv(node: string, npmCache: string, kubeconfig: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toLowerCase().startsWith("npm_")) env[k] = v;
  const path = (process.env.PATH ?? "").split(delimiter).filter((d) => !d.includes("node_modules"));
  return {
    ...env,
    PATH: [dirname(node), ...path].join(delimiter),
    npm_config_cache: npmCache,
    KUBECONFIG: kubeconfig,
    NO_COLOR: "",
    FORCE_COLOR: "",
  };
}

/** `bin` as the shell of `env` finds it: the first match on its PATH (absolute paths as they are). */
function which(bin: string, env: NodeJS.ProcessEnv): string {
  if (isAbsolute(bin)) return bin;
  const dir = (env.PATH ?? "").split(delimiter).find((d) => existsSync(join(d, bin)));
  if (!dir) throw new Error(`${bin} is not on the PATH ${env.PATH ?? ""}`);
  return join(dir, bin);
}

function run(command: readonly string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const [bin = "", ...args] = command;
  const executable = which(bin, env);
  return new Promise<CliRun>((resolve, reject) => {
    const child = spawn(executable, args, {
      cwd: repoRoot,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("kubectl-ipam through npx as the README shows it, under the machine's own Node", function () {
  this.timeout(180_000);
  const tmp = mkdtempSync(join(tmpdir(), "npx-test-"));
  let node = "";
  let kubeconfig = "";
  let ns = "";

  before(async () => {
    node = systemNode();
    const cluster = await sharedCluster();
    kubeconfig = cluster.kubeconfigPath;
    ns = await freshNamespace(cluster.kubeConfig, "npx");
    await clients(cluster.kubeConfig).pools.create(ns, pool(ns, "npx-pool", { pools: [{ subnet: "10.77.0.0/29" }] }));
  });

  after(() => rmSync(tmp, { recursive: true, force: true }));

  it("is the command the README shows", () => {
    expect(readFileSync(join(repoRoot, "README.md"), "utf8")).to.include(`\`${README_COMMAND.join(" ")} ...\``);
  });

  it("prints the pools table and nothing else, on an empty npx cache", async () => {
    const res = await run([...README_COMMAND, "pools", "-n", ns], personEnv(node, join(tmp, "readme"), kubeconfig));
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr).to.equal("");
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines[0]).to.match(/^NAME\s+CLUSTER\s+STRATEGY\s+USED\/TOTAL\s+%\s+PENDING\s+FAILED$/);
    expect(lines.slice(1)).to.have.length(1);
    expect(lines[1]).to.match(/^npx-pool\s+-\s+sequential\s+0\/7\s/);
  });

  it("plain npx warns EBADENGINE there when the machine's Node is older than engines (what the README avoids)", async function () {
    const version = await run([node, "--version"], personEnv(node, join(tmp, "version"), kubeconfig));
    const [major = 0, minor = 0] = version.stdout.trim().replace(/^v/, "").split(".").map(Number);
    // Only a Node older than package.json's engines (>=24.11) makes npm warn; on a newer one there is nothing to show.
    if (major > 24 || (major === 24 && minor >= 11)) this.skip();
    const res = await run(["npx", "kubectl-ipam", "pools", "-n", ns], personEnv(node, join(tmp, "plain"), kubeconfig));
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr).to.match(/^npm warn EBADENGINE Unsupported engine/m);
    expect(res.stdout.split("\n")[0]).to.match(/^NAME\s+CLUSTER/);
  });
});
