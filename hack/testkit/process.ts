/**
 * A supervised child process: output kept in a bounded ring for error messages, exit observable as a promise, and a
 * registry of every live child so a dying test run never leaves one behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";

/** The tsx loader as a URL, for `node --import` in child processes that run TypeScript whatever their cwd. */
export const TSX_LOADER = import.meta.resolve("tsx");

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Kills every child still alive, synchronously: the only thing an `exit` handler may do. */
export function killAllChildrenSync(): void {
  for (const child of live) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  live.clear();
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", killAllChildrenSync);
}

export interface Supervised {
  readonly name: string;
  readonly pid: number;
  /** Resolves with the exit code (or signal) once the process is gone. */
  readonly exited: Promise<string>;
  isRunning(): boolean;
  /** The last lines the process printed, for error messages. */
  tail(lines?: number): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL at once; resolves when the process is gone. */
  kill(): Promise<void>;
  /** Sends `signal` (e.g. SIGSTOP/SIGCONT to freeze and thaw it); false when the process is gone. */
  signal(signal: NodeJS.Signals): boolean;
}

/**
 * Starts `binary args`, logging to `logFile`, with our environment plus `env`. The process dies with us: see
 * killAllChildrenSync.
 */
export function startProcess(
  name: string,
  binary: string,
  args: string[],
  logFile: string,
  env: Readonly<Record<string, string>> = {},
  /** Run as another user (a root test run starts PostgreSQL as `postgres`: it refuses root), or in another folder. */
  as: { uid?: number; gid?: number; cwd?: string } = {},
): Supervised {
  installExitHook();
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env }, ...as });
  const log: WriteStream = createWriteStream(logFile, { flags: "a" });
  const ring: string[] = [];
  const keep = (chunk: Buffer): void => {
    log.write(chunk);
    for (const line of chunk.toString().split("\n")) if (line.trim()) ring.push(line);
    if (ring.length > 200) ring.splice(0, ring.length - 200);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  live.add(child);
  let running = true;
  const exited = new Promise<string>((resolve) => {
    const done = (how: string): void => {
      if (!running) return;
      running = false;
      live.delete(child);
      log.end();
      resolve(how);
    };
    child.on("exit", (code, signal) => done(signal ? `signal ${signal}` : `exit code ${code ?? "?"}`));
    child.on("error", (err) => {
      ring.push(`spawn error: ${err.message}`);
      done(`spawn error: ${err.message}`);
    });
  });
  const waitGone = async (): Promise<void> => {
    if (running) await exited;
  };
  return {
    name,
    pid: child.pid ?? -1,
    exited,
    isRunning: () => running,
    tail: (lines = 15) => ring.slice(-lines).join("\n"),
    async stop(graceMs = 5_000) {
      if (!running) return;
      child.kill("SIGTERM");
      // A frozen (SIGSTOPped) process acts on SIGTERM only once it runs again.
      child.kill("SIGCONT");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await waitGone();
      clearTimeout(timer);
    },
    async kill() {
      if (!running) return;
      child.kill("SIGKILL");
      await waitGone();
    },
    signal(sig) {
      return running && child.kill(sig);
    },
  };
}

/** Resolves when `proc` exits; used to race readiness waits against an early crash. */
export async function exitedWithError(proc: Supervised): Promise<never> {
  const how = await proc.exited;
  throw new Error(`${proc.name} exited during start-up (${how}). Its last output:\n${proc.tail()}`);
}
