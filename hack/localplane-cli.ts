/**
 * `npm run localplane -- up|down|status`: a local control plane to use by hand.
 *
 *   up      starts a plane in the background with our CRDs and Cluster API's installed, prints the KUBECONFIG to export
 *   up --node  the same with a real node (hack/testkit/node.ts; Linux, root): a kubelet that runs pods of images
 *           loaded with `import IMAGE.tar` (a `docker save` tarball, e.g. from hack/local-image.sh)
 *   import  loads an image tarball into the node's containerd
 *   down    stops it (the node's pods first) and removes its files; prints what the node left on the host, if anything
 *   status  says whether one runs
 *
 * `up` first runs `hack/localplane-binaries.sh plane` (`plane-node` with --node): a no-op when the binaries are cached
 * and Cluster API's CRDs copied, and what a fresh clone needs before its first plane.
 *
 * State lives in `.localplane/` (git-ignored): `state.json` (daemon pid) and a copy of the admin kubeconfig.
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalPlane } from "./testkit/plane.js";
import { importImage } from "./testkit/nodeimages.js";
import { processAlive } from "./testkit/reaper.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const stateDir = join(repoRoot, ".localplane");
const stateFile = join(stateDir, "state.json");
const kubeconfigCopy = join(stateDir, "kubeconfig");
const logFile = join(stateDir, "daemon.log");
export const DEFAULT_CRD_DIRS = [
  join(repoRoot, "config", "crd", "bases"),
  join(repoRoot, "config", "crd", "incluster"),
  join(repoRoot, ".cache", "crds", "cluster-api"),
];

interface State {
  pid: number;
  kubeconfig: string;
  /** The node's containerd socket, when the plane has a node. */
  containerdSocket?: string;
}

function readState(): State | undefined {
  if (!existsSync(stateFile)) return undefined;
  try {
    return JSON.parse(readFileSync(stateFile, "utf8")) as State;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs in the background process: owns the plane until SIGTERM. */
async function serve(node: boolean): Promise<void> {
  const plane = await LocalPlane.start({ crdDirs: DEFAULT_CRD_DIRS, node });
  copyFileSync(plane.kubeconfigPath, kubeconfigCopy);
  const state: State = { pid: process.pid, kubeconfig: kubeconfigCopy };
  if (plane.node) state.containerdSocket = plane.node.containerdSocket;
  writeFileSync(stateFile, JSON.stringify(state));
  const shutdown = (): void => {
    void plane.stop().finally(() => {
      for (const line of plane.nodeResidue) console.error(`left on the host: ${line}`);
      rmSync(stateFile, { force: true });
      rmSync(kubeconfigCopy, { force: true });
      process.exit(0);
    });
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
  setInterval(() => undefined, 1 << 30);
}

/**
 * Builds (or finds cached) what the plane runs and copies Cluster API's CRDs into .cache/, showing the script's
 * progress; false when it fails (it said why on stderr).
 */
function prepare(node: boolean): boolean {
  const script = join(repoRoot, "hack", "localplane-binaries.sh");
  const result = spawnSync(script, [node ? "plane-node" : "plane"], { stdio: ["ignore", "ignore", "inherit"] });
  return result.status === 0;
}

async function up(node: boolean): Promise<number> {
  const state = readState();
  if (state && processAlive(state.pid)) {
    console.log(`A local plane already runs (pid ${state.pid}).\nexport KUBECONFIG=${state.kubeconfig}`);
    return 0;
  }
  if (!prepare(node)) {
    console.error("The local plane's binaries or Cluster API's CRDs could not be prepared (see above).");
    return 1;
  }
  mkdirSync(stateDir, { recursive: true });
  rmSync(stateFile, { force: true });
  const out = openSync(logFile, "w");
  const args = [...process.execArgv, fileURLToPath(import.meta.url), "serve", ...(node ? ["--node"] : [])];
  const daemon = spawn(process.execPath, args, {
    detached: true,
    stdio: ["ignore", out, out],
  });
  daemon.unref();
  const deadline = Date.now() + 240_000;
  while (Date.now() < deadline) {
    const s = readState();
    if (s) {
      console.log(
        `Local plane is up (pid ${s.pid}). Use it with:\n\nexport KUBECONFIG=${s.kubeconfig}\n\nStop it with: npm run localplane -- down`,
      );
      return 0;
    }
    if (daemon.pid === undefined || !processAlive(daemon.pid)) break;
    await sleep(250);
  }
  console.error(`The local plane did not start. Its log (${logFile}):\n${readFileSync(logFile, "utf8").slice(-4000)}`);
  if (daemon.pid !== undefined && processAlive(daemon.pid)) process.kill(daemon.pid, "SIGTERM");
  return 1;
}

async function down(): Promise<number> {
  const state = readState();
  if (!state || !processAlive(state.pid)) {
    rmSync(stateFile, { force: true });
    console.log("No local plane is running.");
    return 0;
  }
  process.kill(state.pid, "SIGTERM");
  // A node drains its pods first (up to a minute and a half), then cleans the host.
  for (let i = 0; i < 480 && processAlive(state.pid); i++) await sleep(250);
  if (processAlive(state.pid)) process.kill(state.pid, "SIGKILL");
  const left = readFileSync(logFile, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("left on the host: "));
  for (const line of left) console.error(line);
  console.log(left.length === 0 ? "Local plane stopped." : "Local plane stopped; see above what the node left.");
  return left.length === 0 ? 0 : 1;
}

function importTarball(tarball: string | undefined): number {
  const state = readState();
  if (!tarball || !state?.containerdSocket || !processAlive(state.pid)) {
    console.error("usage: npm run localplane -- import IMAGE.tar (with a plane started by `up --node`)");
    return 2;
  }
  for (const name of importImage(state.containerdSocket, resolve(tarball))) console.log(name);
  return 0;
}

async function main(): Promise<number> {
  const command = process.argv[2] ?? "status";
  switch (command) {
    case "serve":
      await serve(process.argv.includes("--node"));
      return -1;
    case "up":
      return await up(process.argv.includes("--node"));
    case "import":
      return importTarball(process.argv[3]);
    case "down":
      return await down();
    case "status": {
      const s = readState();
      console.log(
        s && processAlive(s.pid) ? `running (pid ${s.pid}); export KUBECONFIG=${s.kubeconfig}` : "not running",
      );
      return 0;
    }
    default:
      console.error("usage: npm run localplane -- up [--node]|import IMAGE.tar|down|status");
      return 2;
  }
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
