/**
 * Planes record their owner and children in `<dir>/owner.json`. A run that died without cleaning up (SIGKILL, a
 * crashed runner) leaves that file behind; the next plane to start kills the orphans and removes the folder.
 */
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

export function recordOwnership(dir: string, children: number[]): void {
  const record: OwnerRecord = { owner: process.pid, children };
  writeFileSync(join(dir, "owner.json"), JSON.stringify(record));
}

/** Kills the children of planes whose owner is gone and deletes their folders. Returns the folders removed. */
export function reapOrphanedPlanes(): string[] {
  const removed: string[] = [];
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(PLANE_DIR_PREFIX)) continue;
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
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
