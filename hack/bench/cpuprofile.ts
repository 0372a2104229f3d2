/**
 * Summary of a V8 CPU profile (`.cpuprofile`, as `BENCH_CPU_PROF` writes them): where a controller spent its CPU,
 * by function and source line, so a profile can be read in a terminal and quoted in an issue.
 *
 *   npx tsx hack/bench/cpuprofile.ts <file.cpuprofile> [top=25] [--window=<fromMs>,<toMs>]
 *
 * `--window` counts only the samples taken between two readings of the monotonic clock (ms, as `process.hrtime` and
 * V8's profiler both read it on Linux): the trickle records its measured window so (`monotonicWindowMs` in the JSON),
 * which leaves the controller's start-up on the held claims out.
 * Times are shares of the CPU the process spent: V8's `(idle)` samples are left out of the total, `(program)` (native
 * code outside JavaScript) and `(garbage collector)` stay in. Each sample counts for the profile's median sampling
 * interval, not for the time until the next sample: on a loaded machine a sample taken after the process waited for a
 * core would otherwise count that wait as the CPU of whatever function it caught (the 0-held trickle's profile put
 * 1.9 s of its 4.1 s in such samples, while /proc counted 1.8 s of CPU in all).
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** The parts of a `.cpuprofile` this reads (Chrome DevTools protocol, Profiler.Profile). */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  samples: number[];
  /** Microseconds since the previous sample, one per sample. */
  timeDeltas: number[];
  /** Monotonic clock at the start, µs. */
  startTime: number;
}

/** One function (name and place) with its self time, and its total time (itself and what it called). */
export interface Entry {
  key: string;
  selfMs: number;
  totalMs: number;
}

/** What {@link summarizeProfile} finds. */
export interface ProfileSummary {
  /** CPU time of the process: every sample but `(idle)`. */
  cpuMs: number;
  /** Functions by self time, heaviest first. */
  bySelf: Entry[];
  /** Functions by total time, heaviest first (a function counted once per stack, recursion or not). */
  byTotal: Entry[];
  /** The heaviest call paths (innermost frame last), by the self time of the frame they end in. */
  paths: { path: string[]; ms: number }[];
}

function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** `name file:line` with the file shortened to what follows dist/ or node_modules/ (1-based line, as editors count). */
function keyOf(frame: CpuProfile["nodes"][number]["callFrame"]): string {
  const name = frame.functionName || "(anonymous)";
  if (!frame.url) return name;
  const url = frame.url.replace(/^file:\/\//, "").replace(/^.*\/(dist|node_modules)\//, "$1/");
  return `${name} ${url}:${frame.lineNumber + 1}`;
}

/**
 * Self and total time by function, and the heaviest paths of `depth` frames; see {@link ProfileSummary}. With
 * `window` ([from, to] in ms of the monotonic clock), only the samples taken in it count.
 */
export function summarizeProfile(profile: CpuProfile, depth = 6, window?: readonly [number, number]): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const paths = new Map<string, { path: string[]; ms: number }>();
  let cpuMs = 0;
  let atUs = profile.startTime;
  const ms = medianOf(profile.timeDeltas.slice(1)) / 1000;
  profile.samples.forEach((id, i) => {
    atUs += profile.timeDeltas[i] ?? 0;
    const node = byId.get(id);
    if (window && (atUs / 1000 < window[0] || atUs / 1000 >= window[1])) return;
    if (!node || node.callFrame.functionName === "(idle)") return;
    cpuMs += ms;
    const stack: string[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (frame && frame.functionName !== "(root)") stack.push(keyOf(frame));
    }
    const leaf = stack[0] ?? "(root)";
    self.set(leaf, (self.get(leaf) ?? 0) + ms);
    for (const key of new Set(stack)) total.set(key, (total.get(key) ?? 0) + ms);
    const path = stack.slice(0, depth).reverse();
    const pathKey = path.join(" > ");
    const entry = paths.get(pathKey) ?? { path, ms: 0 };
    entry.ms += ms;
    paths.set(pathKey, entry);
  });
  const entries = [...new Set([...self.keys(), ...total.keys()])].map((key) => ({
    key,
    selfMs: self.get(key) ?? 0,
    totalMs: total.get(key) ?? 0,
  }));
  return {
    cpuMs,
    bySelf: [...entries].sort((a, b) => b.selfMs - a.selfMs),
    byTotal: [...entries].sort((a, b) => b.totalMs - a.totalMs),
    paths: [...paths.values()].sort((a, b) => b.ms - a.ms),
  };
}

function print(file: string, top: number, window: [number, number] | undefined): void {
  const s = summarizeProfile(JSON.parse(readFileSync(file, "utf8")) as CpuProfile, 6, window);
  const pct = (ms: number): string => `${((100 * ms) / s.cpuMs).toFixed(1).padStart(5)}%`;
  const ms = (x: number): string => `${x.toFixed(0).padStart(7)} ms`;
  const part = window ? `, samples in the window only` : "";
  console.log(`${file}: ${s.cpuMs.toFixed(0)} ms of CPU (idle left out${part})\n\nself time`);
  for (const e of s.bySelf.slice(0, top)) console.log(`${pct(e.selfMs)} ${ms(e.selfMs)}  ${e.key}`);
  console.log("\ntotal time (self + callees), functions of dist/ only");
  for (const e of s.byTotal.filter((x) => x.key.includes(" dist/")).slice(0, top))
    console.log(`${pct(e.totalMs)} ${ms(e.totalMs)}  ${e.key}`);
  console.log("\nheaviest call paths (last 6 frames, innermost last)");
  for (const p of s.paths.slice(0, Math.ceil(top / 2)))
    console.log(`${pct(p.ms)} ${ms(p.ms)}\n    ${p.path.join("\n      > ")}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const [file, top] = args.filter((a) => !a.startsWith("--"));
  if (!file) {
    console.error("usage: npx tsx hack/bench/cpuprofile.ts <file.cpuprofile> [top=25] [--window=<fromMs>,<toMs>]");
    process.exit(2);
  }
  const bounds = args
    .find((a) => a.startsWith("--window="))
    ?.slice("--window=".length)
    .split(",")
    .map(Number);
  const window = bounds?.length === 2 ? ([bounds[0] ?? 0, bounds[1] ?? 0] as [number, number]) : undefined;
  print(file, Number(top ?? 25), window);
}
