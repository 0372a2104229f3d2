/**
 * The controller under test as a child process (the compiled build, as it runs in a pod; started by
 * hack/testkit/controller.ts), plus memory readings from /proc. Every process started here is registered so the
 * benchmark can stop them all on error or Ctrl-C, and the testkit's exit hook (process.ts) kills any that survive.
 */
import { existsSync, mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import {
  deploymentNodeFlags,
  imageEnv,
  imageNodeFlags,
  startControllerProcess,
  type ControllerProcess,
} from "../testkit/controller.js";
import { repoRoot } from "../testkit/cluster.js";
import { poll } from "../testkit/wait.js";
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
  /** The port of its /metrics, when it was started with one ({@link BenchControllerOptions.ports}). */
  readonly metricsPort: number | undefined;
  /** The port of its /healthz and /readyz, when it was started with one. */
  readonly healthPort: number | undefined;
  /** Resolves with `work`, or rejects with the controller's last output if it exits first. */
  guard<T>(work: Promise<T>): Promise<T>;
  memory(): Promise<ProcMemory>;
  /** SIGTERM (drains in-flight reconciles), SIGKILL after 10 s. Idempotent. */
  stop(): Promise<void>;
}

/** Registers `proc` so stopAllControllers reaches it, and adds memory readings. */
function track(proc: ControllerProcess, ports: { metrics?: number; health?: number }): BenchController {
  running.add(proc);
  return {
    pid: proc.pid,
    logFile: proc.logFile,
    metricsPort: ports.metrics,
    healthPort: ports.health,
    guard: (work) => proc.guard(work),
    memory: () => readProcMemory(proc.pid),
    async stop() {
      await proc.stop(10_000);
      running.delete(proc);
    },
  };
}

/** A TCP port free on 127.0.0.1 right now (the OS picks it; another process could take it before we bind it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Options of {@link startBenchController}. */
export interface BenchControllerOptions {
  /** Namespace to watch; all when undefined. */
  namespace?: string;
  /** Serve /metrics and /readyz on free loopback ports (otherwise neither is served, as before). */
  ports?: boolean;
  /**
   * Whether BENCH_CPU_PROF profiles this controller (default true), and the profile's file name (node's default,
   * with timestamp and pid, when undefined).
   */
  profile?: boolean;
  profileName?: string;
  /** Controller flags added after the bench's own. */
  flags?: readonly string[];
}

/**
 * BENCH_NODE_FLAGS: more Node flags for every measured process (controllers and the floor client), space-separated:
 * `--perf-basic-prof` for `perf`, `--trace-opt --trace-deopt` (say) to see the JIT at work, a V8 flag to try.
 */
function extraNodeFlags(): string[] {
  return process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? [];
}

/** V8's sampling interval of a profiled controller, in microseconds. */
const CPU_PROF_INTERVAL_US = 20_000;

/**
 * Starts the compiled controller (`dist/src/main.js` with the image's ENTRYPOINT flags and the Deployment's
 * NODE_OPTIONS, as a pod runs it) against `kubeconfigPath` with `--log-level warn` (or BENCH_LOG_LEVEL); its log goes to `logDir`. Throws
 * when the build is missing.
 */
export async function startBenchController(
  kubeconfigPath: string,
  logDir: string,
  options: BenchControllerOptions = {},
): Promise<BenchController> {
  // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each controller there when it stops (`node --cpu-prof`).
  const dir = process.env.BENCH_CPU_PROF;
  const profile =
    dir && options.profile !== false
      ? [
          "--cpu-prof",
          `--cpu-prof-dir=${dir}`,
          // V8's default sampling (every millisecond) alone costs an idle controller more CPU than waitIdle allows
          // (trickle.ts), so a profiled run would never find it idle; a sample every 20 ms still shows where time goes.
          `--cpu-prof-interval=${CPU_PROF_INTERVAL_US}`,
          ...(options.profileName ? [`--cpu-prof-name=${options.profileName}`] : []),
        ]
      : [];
  const ports = options.ports ? { metrics: await freePort(), health: await freePort() } : {};
  const proc = startControllerProcess({
    build: "compiled",
    kubeconfigPath,
    logDir,
    ...(options.namespace ? { namespace: options.namespace } : {}),
    ...(ports.metrics ? { diagnosticsAddress: `127.0.0.1:${ports.metrics}`, insecureDiagnostics: true } : {}),
    ...(ports.health ? { healthProbeBindAddress: `127.0.0.1:${ports.health}` } : {}),
    // BENCH_LOG_LEVEL=info puts the start-up's steps (each cache filled, kinds served, reconciling) in the log.
    logLevel: process.env.BENCH_LOG_LEVEL ?? "warn",
    nodeFlags: [...profile, ...extraNodeFlags()],
    ...(options.flags ? { flags: options.flags } : {}),
  });
  return track(proc, ports);
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

/** The trickle's floor client (floorclient.ts), as {@link startFloorClient} returns it. */
export interface FloorClient {
  readonly pid: number;
  /** Resolves with `work`, or rejects with the client's last output if it exits first. */
  guard<T>(work: Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

/** The floor client compiled as the controller is (tsc, no loader), by `npm run bench` (hack/bench/tsconfig.floor.json). */
const FLOOR_CLIENT = join(repoRoot, ".cache", "bench", "floor", "hack", "bench", "floorclient.js");

/**
 * Starts the trickle's floor client with `args` (after the kubeconfig) compiled and under the controller's Node flags
 * and ENV, as the controller runs (tsx's transpiled code would cost more: it names every closure it creates); resolves
 * once it printed `ready` (its watches are connected). Throws when the build is missing.
 */
export async function startFloorClient(
  kubeconfigPath: string,
  logDir: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<FloorClient> {
  mkdirSync(logDir, { recursive: true });
  if (!existsSync(FLOOR_CLIENT))
    throw new Error(`${FLOOR_CLIENT} is missing: run the bench with \`npm run bench\`, which builds it`);
  const nodeArgs = [...imageNodeFlags(), ...deploymentNodeFlags(), ...extraNodeFlags(), FLOOR_CLIENT];
  const proc = startProcess(
    "floor client",
    process.execPath,
    [...nodeArgs, kubeconfigPath, ...args],
    join(logDir, `floor-${process.pid}-${++counter}.log`),
    imageEnv(),
  );
  running.add(proc);
  // Whenever it exits before being stopped, whatever the bench awaits fails with its last output.
  const exited = proc.exited.then((how): never => {
    throw new Error(`the floor client exited (${how}); its last output:\n${proc.tail()}`);
  });
  exited.catch(() => undefined);
  const guard = <T>(work: Promise<T>): Promise<T> => Promise.race([work, exited]);
  const client = {
    pid: proc.pid,
    guard,
    async stop() {
      await proc.stop(10_000);
      running.delete(proc);
    },
  };
  if (!(await guard(poll(() => Promise.resolve(proc.tail().includes("ready")), timeoutMs, 50)))) {
    await client.stop();
    throw new Error(`the floor client was not ready within ${timeoutMs / 1000} s:\n${proc.tail()}`);
  }
  return client;
}

/** Stops every process started here that is still running; never rejects. */
export async function stopAllControllers(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop(5_000).catch(() => undefined)));
  running.clear();
}
