/**
 * The controller under test as a child process (`node dist/src/main.js`), as it runs in a pod, plus
 * memory readings from /proc. Every process started here is registered so the benchmark can stop them all on error
 * or Ctrl-C, and localplane's exit hook kills any that survive.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startProcess, TSX_LOADER, type Supervised } from "../testkit/process.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
/** The compiled controller, as the image runs it (`npm run bench` builds it first with tsconfig.build.json). */
const COMPILED_MAIN = join(repoRoot, "dist", "src", "main.js");
const MANAGER_MANIFEST = join(repoRoot, "config", "manager", "manager.yaml");

/**
 * The Node flags the Deployment gives the controller (`NODE_OPTIONS` in config/manager/manager.yaml), so the bench
 * measures the heap settings that ship, not Node's defaults.
 */
export function deploymentNodeFlags(manifest = readFileSync(MANAGER_MANIFEST, "utf8")): string[] {
  const value = /- name: NODE_OPTIONS\s+value: "?([^"\n]+)"?/.exec(manifest)?.[1];
  return value ? value.trim().split(/\s+/) : [];
}
/** The tsx loader as a file URL, so the child finds it whatever its working directory. */

const running = new Set<Supervised>();
let counter = 0;

/** Memory of a process, from /proc/<pid>/status, in bytes. */
export interface ProcMemory {
  /** Resident set size now (VmRSS). */
  rss: number;
  /** Peak resident set size so far (VmHWM). */
  peakRss: number;
  /** Anonymous resident memory (RssAnon): heap and stacks, without mapped files such as the node binary. */
  rssAnon: number;
}

/** Reads VmRSS, VmHWM and RssAnon of `pid`. Linux only; rejects elsewhere or when the process is gone. */
export async function readProcMemory(pid: number): Promise<ProcMemory> {
  const text = await readFile(`/proc/${pid}/status`, "utf8");
  const field = (name: string): number => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m").exec(text);
    return m?.[1] ? Number(m[1]) * 1024 : Number.NaN;
  };
  return { rss: field("VmRSS"), peakRss: field("VmHWM"), rssAnon: field("RssAnon") };
}

/** A running controller child process. */
export interface ControllerProcess {
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with `work`, or rejects with the controller's last output if it exits first. */
  guard<T>(work: Promise<T>): Promise<T>;
  memory(): Promise<ProcMemory>;
  /** SIGTERM (drains in-flight reconciles), SIGKILL after 10 s. Idempotent. */
  stop(): Promise<void>;
}

function track(proc: Supervised, logFile: string): ControllerProcess {
  running.add(proc);
  let stopping = false;
  return {
    pid: proc.pid,
    logFile,
    async guard<T>(work: Promise<T>): Promise<T> {
      const crash = proc.exited.then((how) => {
        throw new Error(
          `${proc.name} exited (${how})${stopping ? " while stopping" : ""}; log ${logFile}; last output:\n${proc.tail()}`,
        );
      });
      // The losing side of the race must not become an unhandled rejection when the process stops later.
      crash.catch(() => undefined);
      return await Promise.race([work, crash]);
    },
    memory: () => readProcMemory(proc.pid),
    async stop() {
      stopping = true;
      await proc.stop(10_000);
      running.delete(proc);
    },
  };
}

/**
 * Starts the compiled controller (`dist/src/main.js`, what the image runs, on this process's Node) against
 * `kubeconfigPath` with `--log-level warn`, watching `namespace` (all when undefined). Its output goes to
 * `<logDir>/controller-<n>.log`. Throws when the build is missing.
 */
export function startControllerProcess(kubeconfigPath: string, logDir: string, namespace?: string): ControllerProcess {
  if (!existsSync(COMPILED_MAIN))
    throw new Error(`${COMPILED_MAIN} is missing: build it first (npm run build), as npm run bench does`);
  mkdirSync(logDir, { recursive: true });
  const logFile = join(logDir, `controller-${++counter}.log`);
  // Probe and metrics ports off: two runs (or a run beside a deployed controller) must not collide on :8080/:8081.
  // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each controller there when it stops (`node --cpu-prof`).
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const args = [
    ...deploymentNodeFlags(),
    ...profile,
    COMPILED_MAIN,
    "--kubeconfig",
    kubeconfigPath,
    "--log-level",
    "warn",
    "--metrics-bind-address",
    "0",
    "--health-probe-bind-address",
    "0",
    ...(namespace ? ["--namespace", namespace] : []),
  ];
  const proc = startProcess("controller", process.execPath, args, logFile);
  return track(proc, logFile);
}

/**
 * Resident memory of a node process doing nothing, with or without the tsx loader: the floor under the controller's
 * figure. Starts it, waits `settleMs`, reads /proc, kills it.
 */
export async function idleNodeMemory(withTsx: boolean, logDir: string, settleMs = 2_000): Promise<ProcMemory> {
  mkdirSync(logDir, { recursive: true });
  const args = [...(withTsx ? ["--import", TSX_LOADER] : []), "-e", "setInterval(() => undefined, 1 << 30)"];
  const proc = startProcess(
    withTsx ? "node+tsx" : "node",
    process.execPath,
    args,
    join(logDir, `idle-node-${++counter}.log`),
  );
  const ctl = track(proc, "(idle node)");
  try {
    await ctl.guard(new Promise((r) => setTimeout(r, settleMs)));
    return await ctl.memory();
  } finally {
    await ctl.stop();
  }
}

/** Stops every process started here that is still running; never rejects. */
export async function stopAllControllers(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop(5_000).catch(() => undefined)));
  running.clear();
}
