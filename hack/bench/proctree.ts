/**
 * CPU time of whole process trees, from /proc (Linux): a NetBox is PostgreSQL (a backend forked per connection),
 * Redis and gunicorn with its workers; the plane is etcd and kube-apiserver. Used to say where a burst's CPU went on
 * a machine whose cores are the limit. Clock ticks of 1/100 s, as efficiency.cpuSeconds.
 */
import { readdirSync, readFileSync } from "node:fs";

/** One /proc/<pid>/stat line's parent and CPU times in ticks (own, and of the children it waited for). */
export interface ProcStat {
  pid: number;
  ppid: number;
  ticks: number;
}

/** Parses a /proc/<pid>/stat line; undefined when malformed. */
export function parseStat(line: string): ProcStat | undefined {
  const close = line.lastIndexOf(")");
  const pid = Number(line.slice(0, line.indexOf(" ")));
  if (close < 0 || !Number.isInteger(pid)) return undefined;
  // After the command name: state (0), ppid (1), … utime (11), stime (12), cutime (13), cstime (14).
  const f = line.slice(close + 2).split(" ");
  const ppid = Number(f[1]);
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i]), 0);
  return Number.isFinite(ticks) && Number.isInteger(ppid) ? { pid, ppid, ticks } : undefined;
}

/**
 * CPU seconds of `roots` and every live descendant, each counted with the children it reaped (a PostgreSQL backend
 * that ended is in its postmaster's count). Processes not found (gone) count nothing.
 */
export function treeCpuSecondsOf(stats: readonly ProcStat[], roots: readonly number[]): number {
  const children = new Map<number, ProcStat[]>();
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const seen = new Set<number>();
  const queue = roots.filter((pid) => byPid.has(pid));
  let ticks = 0;
  while (queue.length > 0) {
    const pid = queue.pop() as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    ticks += byPid.get(pid)?.ticks ?? 0;
    for (const child of children.get(pid) ?? []) queue.push(child.pid);
  }
  return ticks / 100;
}

/** Every process's stat line now (processes that end while read are skipped). */
export function readAllStats(): ProcStat[] {
  const stats: ProcStat[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = parseStat(readFileSync(`/proc/${entry}/stat`, "utf8"));
      if (stat) stats.push(stat);
    } catch {
      // gone meanwhile
    }
  }
  return stats;
}

/** CPU seconds so far of the trees under `roots`. */
export function treeCpuSeconds(roots: readonly number[]): number {
  return treeCpuSecondsOf(readAllStats(), roots);
}
