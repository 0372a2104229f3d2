/**
 * The controller under test as a child process (the compiled build, as it runs in a pod; started by
 * hack/testkit/controller.ts), plus memory readings from /proc. Every process started here is registered so the
 * benchmark can stop them all on error or Ctrl-C, and the testkit's exit hook (process.ts) kills any that survive.
 */
import { mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { startControllerProcess, type ControllerProcess } from "../testkit/controller.js";
import { exitedWithError, startProcess, TSX_LOADER, type Supervised } from "../testkit/process.js";

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

/** A controller child process of the bench: guarded work, memory readings, a stop that forgets it. */
export interface BenchController {
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with `work`, or rejects with the controller's last output if it exits first. */
  guard<T>(work: Promise<T>): Promise<T>;
  memory(): Promise<ProcMemory>;
  /** SIGTERM (drains in-flight reconciles), SIGKILL after 10 s. Idempotent. */
  stop(): Promise<void>;
}

/** Registers `proc` so stopAllControllers reaches it, and adds memory readings. */
function track(proc: ControllerProcess): BenchController {
  running.add(proc);
  return {
    pid: proc.pid,
    logFile: proc.logFile,
    guard: (work) => proc.guard(work),
    memory: () => readProcMemory(proc.pid),
    async stop() {
      await proc.stop(10_000);
      running.delete(proc);
    },
  };
}

/**
 * Starts the compiled controller (`dist/src/main.js` with the image's ENTRYPOINT flags and the Deployment's NODE_OPTIONS, as a pod runs it) against
 * `kubeconfigPath` with `--log-level warn`, watching `namespace` (all when undefined); its log goes to `logDir`.
 * Throws when the build is missing.
 */
export function startBenchController(kubeconfigPath: string, logDir: string, namespace?: string): BenchController {
  // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each controller there when it stops (`node --cpu-prof`).
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const proc = startControllerProcess({
    build: "compiled",
    kubeconfigPath,
    logDir,
    ...(namespace ? { namespace } : {}),
    logLevel: "warn",
    nodeFlags: profile,
  });
  return track(proc);
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
  running.add(proc);
  try {
    // A node that dies while idling would read someone else's /proc entry later (pids get reused): fail instead.
    await Promise.race([new Promise((r) => setTimeout(r, settleMs)), exitedWithError(proc)]);
    return await readProcMemory(proc.pid);
  } finally {
    await proc.stop(10_000);
    running.delete(proc);
  }
}

/** Stops every process started here that is still running; never rejects. */
export async function stopAllControllers(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop(5_000).catch(() => undefined)));
  running.clear();
}
