/**
 * Planes record their owner and children in `<dir>/owner.json`. A run that died without cleaning up (SIGKILL, a
 * crashed runner) leaves that file behind; the next plane to start kills the orphans and removes the folder.
 *
 * Reaping never fails the run that does it: a folder it cannot remove is reported on stderr and left for the next
 * try, since a leftover of a dead run is no reason to fail every suite of a live one.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const PLANE_DIR_PREFIX = "metal3-ipam-localplane-";

interface OwnerRecord {
  owner: number;
  children: number[];
}

/** Whether a process with this pid exists (EPERM counts: it exists, it just is not ours to signal). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A pid is only ours if its command line mentions the plane folder: pids get reused. */
function belongsTo(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir);
  } catch {
    return false;
  }
}

/** The pids (ours aside) whose command line mentions `dir`, and `also` when given (Linux: read from /proc). */
export function processesMentioning(dir: string, also?: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    if (cmdline.includes(dir) && (also === undefined || cmdline.includes(also))) found.push(Number(entry));
  }
  return found;
}

/**
 * SIGKILLs every process whose command line mentions `dir` (and `also`, when given), whether or not we started it
 * directly: a server's forked workers (gunicorn's) share their parent's command line and keep its listening socket
 * open after the parent died. Returns how many were signalled.
 */
export function killProcessesMentioning(dir: string, also?: string): number {
  let killed = 0;
  for (const pid of processesMentioning(dir, also)) {
    try {
      process.kill(pid, "SIGKILL");
      killed += 1;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

/** Mount points at or below any of `prefixes` (Linux: read from /proc/mounts; elsewhere none). */
export function mountsUnder(prefixes: string[]): string[] {
  if (process.platform !== "linux") return [];
  return readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .map((line) => (line.split(" ")[1] ?? "").replace(/\\040/g, " "))
    .filter((m) => m !== "" && prefixes.some((p) => m.startsWith(p)));
}

/**
 * Removes a dead run's folder, first detaching what is still mounted below it (a killed kubelet leaves its root folder
 * bind-mounted, and rm then fails with EBUSY). Returns whether the folder is gone; a failure is reported on stderr.
 */
function removeLeftover(dir: string): boolean {
  const deepestFirst = mountsUnder([`${dir}/`])
    .sort()
    .reverse();
  for (const m of deepestFirst) spawnSync("umount", ["-l", m], { stdio: "ignore" });
  try {
    rmSync(dir, { recursive: true, force: true });
    return true;
  } catch (err) {
    process.stderr.write(`testkit: left ${dir} of a dead run in place: ${(err as Error).message}\n`);
    return false;
  }
}

export function recordOwnership(dir: string, children: number[]): void {
  const record: OwnerRecord = { owner: process.pid, children };
  writeFileSync(join(dir, "owner.json"), JSON.stringify(record));
}

/**
 * Kills the children of planes whose owner is gone and deletes their folders. Returns the folders removed. Other
 * throwaway servers (a test NetBox: netbox.ts) keep the same record in folders of their own prefix.
 */
export function reapOrphanedPlanes(prefix = PLANE_DIR_PREFIX): string[] {
  const removed: string[] = [];
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(prefix)) continue;
    const dir = join(tmpdir(), entry);
    const file = join(dir, "owner.json");
    if (!existsSync(file)) continue;
    let record: OwnerRecord;
    try {
      record = JSON.parse(readFileSync(file, "utf8")) as OwnerRecord;
    } catch {
      continue;
    }
    if (processAlive(record.owner)) continue;
    for (const pid of record.children) if (processAlive(pid) && belongsTo(pid, dir)) process.kill(pid, "SIGKILL");
    if (process.platform === "linux") killProcessesMentioning(dir);
    if (removeLeftover(dir)) removed.push(dir);
  }
  return removed;
}
