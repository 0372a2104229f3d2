/**
 * `npm run soak`: a soak benchmark, not a test. Runs the compiled controller as a child process (as a pod runs it,
 * with the image's Node flags) against a local plane of its own and churns claims on several pools for
 * SOAK_WARMUP_MINUTES (default 5) and then SOAK_MINUTES (default 10), the window memory is judged over: per pool,
 * SOAK_WORKERS loops create a claim, wait until it is bound and delete it, next to SOAK_RESIDENT claims per pool that
 * live throughout. Then it lets everything settle and checks, through the API:
 *   - duplicates: two IPAddresses with one address in a pool, or one claim named by two IPAddresses;
 *   - leaks: IPAddresses no live claim is bound to (their claim gone, or never bound), claims left without an address,
 *     claims stuck deleting.
 * It prints allocations per second, create→bound latency, the controller's memory (RSS from /proc) after the
 * resident claims were bound and again after the churn settled, and whether memory grew during the churn: RSS, the
 * V8 heap in use and committed, V8's external memory and the RSS right after each memory release (from the
 * controller's own /metrics) are sampled every 15 s and fitted by hack/soak/trend.ts, which calls each series over the
 * window after the warm-up flat, growing or shrinking against its own noise. Figures go to .cache/soak/last.json.
 * Exit code 1 when a duplicate or a leak was found. Short run: `SOAK_WARMUP_MINUTES=0 SOAK_MINUTES=1 npm run soak`.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { freshNamespace, OUR_CRDS, repoRoot } from "./testkit/cluster.js";
import { startControllerProcess, type ControllerProcess } from "./testkit/controller.js";
import { auditAllocations, createClaimsRetrying, type AllocationAudit } from "./testkit/faults.js";
import { clients, pool, type Clients } from "./testkit/ipam.js";
import { describeError } from "../src/kube/errors.js";
import { readProcMemory, type ProcMemory } from "./bench/controller.js";
import { fmt, fmtBytes, fmtMs, summarize } from "./bench/stats.js";
import { renderTable, type Row } from "./bench/table.js";
import { LocalPlane } from "./testkit/plane.js";
import { metricSample, scrapeMetrics } from "./testkit/metrics.js";
import { claimPort } from "./testkit/ports.js";
import { poll, sleep } from "./testkit/wait.js";
import { BindingWatch, churn, type ChurnResult } from "./soak/churn.js";
import { readSoakConfig, type SoakConfig } from "./soak/config.js";
import { memoryTrend, type MemoryTrend } from "./soak/trend.js";

const SOAK_DIR = join(repoRoot, ".cache", "soak");

let plane: LocalPlane | undefined;
let controller: ControllerProcess | undefined;
let watch: BindingWatch | undefined;

function progress(message: string): void {
  process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function cleanup(): Promise<void> {
  watch?.stop();
  watch = undefined;
  await controller?.stop().catch(() => undefined);
  controller = undefined;
  const p = plane;
  plane = undefined;
  await p?.stop();
}

/** Creates the pools (one /24 each) and their resident claims; resolves when every resident claim is bound. */
async function seed(c: Clients, ns: string, config: SoakConfig): Promise<string[]> {
  const pools = Array.from({ length: config.pools }, (_, i) => `pool-${i}`);
  for (const [i, name] of pools.entries())
    await c.pools.create(ns, pool(ns, name, { pools: [{ subnet: `10.100.${i}.0/24` }], prefix: 24 }));
  for (const name of pools) {
    const residents = Array.from({ length: config.residentPerPool }, (_, i) => `${name}-resident-${i}`);
    await createClaimsRetrying(c, ns, name, residents);
  }
  const expected = config.pools * config.residentPerPool;
  await settle(c, ns, expected, 180_000);
  return pools;
}

/** Waits until `expected` claims are bound, nothing is deleting and no IPAddress is stray; returns the last audit. */
async function settle(c: Clients, ns: string, expected: number, timeoutMs: number): Promise<AllocationAudit> {
  let last: AllocationAudit | undefined;
  const clean = (audit: AllocationAudit): boolean =>
    audit.bound === expected &&
    audit.deleting.length === 0 &&
    audit.unbound.length === 0 &&
    audit.strayAddresses.length === 0;
  // A timeout is not an error here: the last audit is the report.
  await poll(
    async () => {
      last = await auditAllocations(c, ns);
      return clean(last);
    },
    timeoutMs,
    1_000,
  );
  if (!last) throw new Error("no audit was made");
  return last;
}

/**
 * One memory reading during the churn: ms since the churn started, RSS, the V8 heap in use and committed (its
 * total size), and the memory outside the heap that JavaScript objects hold (Buffers' backing stores: V8's
 * "external" memory, freed only when the objects are collected). RSS that grows while all three stay flat sits in
 * malloc (arenas, native buffers).
 */
interface SoakSample {
  atMs: number;
  rss: number;
  heapUsed?: number;
  heapTotal?: number;
  external?: number;
  /** Memory releases so far (src/runtime/memory.ts), and RSS right after the last one. */
  releases?: number;
  rssAfterRelease?: number;
}

type HeapFigures = Omit<SoakSample, "atMs" | "rss">;

/** The series of the controller's /metrics behind each figure (prom-client's default metrics and ours). */
const GAUGES: Record<keyof HeapFigures, string> = {
  heapUsed: "nodejs_heap_size_used_bytes",
  heapTotal: "nodejs_heap_size_total_bytes",
  external: "nodejs_external_memory_bytes",
  releases: "memory_releases_total",
  rssAfterRelease: "memory_rss_after_release_bytes",
};

/** The controller's V8 heap, external memory and memory releases, from its /metrics; {} when that fails. */
async function scrapeHeap(metricsPort: number): Promise<HeapFigures> {
  try {
    const text = await scrapeMetrics(metricsPort);
    const figures: HeapFigures = {};
    for (const [field, name] of Object.entries(GAUGES) as [keyof HeapFigures, string][]) {
      const value = metricSample(text, `metal3_ipam_${name}`);
      if (value !== undefined) figures[field] = value;
    }
    return figures;
  } catch {
    return {};
  }
}

/** Samples the controller's RSS and V8 heap every 15 s while `work` runs. */
async function sampled<T>(
  pid: number,
  metricsPort: number,
  work: Promise<T>,
): Promise<{ value: T; peakRss: number; samples: SoakSample[] }> {
  const samples: SoakSample[] = [];
  const started = Date.now();
  const timer = setInterval(() => {
    const atMs = Date.now() - started;
    Promise.all([readProcMemory(pid), scrapeHeap(metricsPort)]).then(
      ([m, heap]) => samples.push({ atMs, rss: m.rss, ...heap }),
      () => undefined,
    );
  }, 15_000);
  try {
    const value = await work;
    const last = await readProcMemory(pid);
    return { value, peakRss: last.peakRss, samples };
  } finally {
    clearInterval(timer);
  }
}

/** The trend of each memory series of the churn. */
interface SoakTrends {
  rss: MemoryTrend;
  /** RSS right after each memory release (one reading per release): the floor a leak would lift. */
  rssAfterRelease: MemoryTrend;
  heapUsed: MemoryTrend;
  heapTotal: MemoryTrend;
  external: MemoryTrend;
}

/** The trends of the memory series over the window after the warm-up. */
/**
 * A picker of the RSS after a release that keeps only the first sample to see each release: a sample repeats the
 * reading of the last release until the next one (a failed scrape in between does not make it new again).
 */
function newReleaseReading(): (s: SoakSample) => number | undefined {
  let seen = 0;
  return (s) => {
    if (s.releases === undefined || s.releases <= seen) return undefined;
    seen = s.releases;
    return s.rssAfterRelease;
  };
}

function trendsOf(unsorted: readonly SoakSample[], warmupMs: number): SoakTrends {
  const samples = [...unsorted].sort((x, y) => x.atMs - y.atMs);
  // Every series counts its warm-up from the first sample of the churn, whenever its own first reading came.
  const startMs = samples[0]?.atMs ?? 0;
  const trend = (pick: (s: SoakSample) => number | undefined): MemoryTrend =>
    memoryTrend(
      samples.flatMap((s) => {
        const bytes = pick(s);
        return bytes === undefined ? [] : [{ atMs: s.atMs, bytes }];
      }),
      warmupMs,
      startMs,
    );
  return {
    rss: trend((s) => s.rss),
    rssAfterRelease: trend(newReleaseReading()),
    heapUsed: trend((s) => s.heapUsed),
    heapTotal: trend((s) => s.heapTotal),
    external: trend((s) => s.external),
  };
}

function controllerLogCounts(logFile: string): { errors: number; warnings: number; duplicatesReleased: number } {
  let text = "";
  try {
    text = readFileSync(logFile, "utf8");
  } catch {
    // no log yet
  }
  const count = (needle: string): number => text.split("\n").filter((l) => l.includes(needle)).length;
  return {
    errors: count('"level":"error"'),
    warnings: count('"level":"warn"'),
    duplicatesReleased: count("Releasing duplicate IPAddress"),
  };
}

interface SoakFigures {
  config: SoakConfig;
  machine: { cpus: number; loadavg: number[] };
  churn: Omit<ChurnResult, "latenciesMs" | "errors"> & {
    allocationsPerSecond: number;
    latencyMs: ReturnType<typeof summarize>;
    errors: Record<string, number>;
  };
  memory: {
    start: ProcMemory;
    end: ProcMemory;
    peakRss: number;
    samples: SoakSample[];
    trend: SoakTrends;
  };
  audit: AllocationAudit;
  duplicates: number;
  leaks: number;
  controllerLog: ReturnType<typeof controllerLogCounts>;
}

function trendRow(metric: string, t: MemoryTrend): Row {
  const perTen = (t.bytesPerMinute * 10) / (1024 * 1024);
  const detail =
    t.verdict === "too few samples"
      ? `${t.samples} samples after the warm-up`
      : `${perTen >= 0 ? "+" : ""}${fmt(perTen)} MiB per 10 min (fitted line), noise band ${fmtBytes(t.noiseBytes)}, ` +
        `${fmtBytes(t.minBytes)}–${fmtBytes(t.maxBytes)} over ${t.samples} samples after a ${fmt(t.warmupMs / 1000)} s warm-up`;
  return { metric, value: t.verdict, detail };
}

function render(f: SoakFigures): string {
  const rows: Row[] = [
    {
      metric: "churn",
      value: `${fmt(f.churn.durationMs / 60_000)} min`,
      detail:
        `${f.config.pools} pools × ${f.config.workersPerPool} loops, ${f.config.residentPerPool} resident claims ` +
        `per pool; memory judged after ${fmt(f.config.warmupMinutes)} min of warm-up`,
    },
    {
      metric: "claims created / bound",
      value: `${f.churn.created} / ${f.churn.bound}`,
      detail: `${f.churn.slow} not bound within 60 s`,
    },
    {
      metric: "allocations per second",
      value: fmt(f.churn.allocationsPerSecond),
      detail: "claims bound (and then deleted) per second of churn",
    },
    {
      metric: "create → bound",
      value: fmtMs(f.churn.latencyMs.median),
      detail: `p90 ${fmtMs(f.churn.latencyMs.p90)}, p99 ${fmtMs(f.churn.latencyMs.p99)}, max ${fmtMs(f.churn.latencyMs.max)}`,
    },
    {
      metric: "controller RSS at start",
      value: fmtBytes(f.memory.start.rss),
      detail: `anonymous ${fmtBytes(f.memory.start.rssAnon)}; resident claims bound, before the churn`,
    },
    {
      metric: "controller RSS at end",
      value: fmtBytes(f.memory.end.rss),
      detail: `anonymous ${fmtBytes(f.memory.end.rssAnon)}; after the churn settled; peak ${fmtBytes(f.memory.peakRss)}`,
    },
    trendRow("RSS during the churn", f.memory.trend.rss),
    trendRow("RSS after each memory release", f.memory.trend.rssAfterRelease),
    trendRow("V8 heap in use during the churn", f.memory.trend.heapUsed),
    trendRow("V8 heap committed", f.memory.trend.heapTotal),
    trendRow("V8 external memory (Buffers)", f.memory.trend.external),
    {
      metric: "duplicates",
      value: String(f.duplicates),
      detail: `addresses held twice ${f.audit.duplicateAddresses.length}, claims with several IPAddresses ${f.audit.claimsWithSeveral.length}`,
    },
    {
      metric: "leaks",
      value: String(f.leaks),
      detail: `stray IPAddresses ${f.audit.strayAddresses.length} (orphans ${f.audit.orphans.length}), unbound claims ${f.audit.unbound.length}, stuck deleting ${f.audit.deleting.length}`,
    },
    {
      metric: "controller log",
      value: `${f.controllerLog.errors} errors`,
      detail: `${f.controllerLog.warnings} warnings, ${f.controllerLog.duplicatesReleased} duplicates released`,
    },
    {
      metric: "churn API errors",
      value: String(Object.values(f.churn.errors).reduce((a, b) => a + b, 0)),
      detail: Object.entries(f.churn.errors)
        .map(([m, n]) => `${n}× ${m}`)
        .join("; "),
    },
  ];
  return renderTable([
    { title: `Soak (${f.machine.cpus} CPUs, load ${f.machine.loadavg.map((l) => fmt(l)).join(" ")})`, rows },
  ]);
}

async function run(config: SoakConfig): Promise<SoakFigures> {
  progress("starting the local plane (etcd, kube-apiserver) with our CRDs");
  plane = await LocalPlane.start({ crdDirs: [OUR_CRDS], controllerManager: false });
  const kc = plane.kubeConfig;
  const c = clients(kc);
  const ns = await freshNamespace(kc, "soak");
  progress(`starting the controller (namespace ${ns})`);
  // The compiled build with the image's Node flags (npm run soak builds it), so the memory figures are the image's;
  // info logging, which waitSynced reads; metrics on a free loopback port, for the heap series.
  const metricsPort = await claimPort();
  const ctl = startControllerProcess({
    build: "compiled",
    kubeconfigPath: plane.kubeconfigPath,
    namespace: ns,
    logDir: join(SOAK_DIR, "logs"),
    diagnosticsAddress: `127.0.0.1:${metricsPort}`,
    insecureDiagnostics: true,
  });
  controller = ctl;
  await ctl.waitSynced();
  watch = await BindingWatch.start(kc, c, ns);
  progress(`seeding ${config.pools} pools with ${config.residentPerPool} resident claims each`);
  const pools = await seed(c, ns, config);
  await sleep(5_000);
  const start = await readProcMemory(ctl.pid);
  progress(
    `churning for ${config.warmupMinutes} min of warm-up and ${config.minutes} min judged; ` +
      `controller RSS ${fmtBytes(start.rss)}`,
  );
  const run = await sampled(
    ctl.pid,
    metricsPort,
    churn(c, watch, {
      namespace: ns,
      pools,
      workersPerPool: config.workersPerPool,
      durationMs: (config.warmupMinutes + config.minutes) * 60_000,
      onProgress: (bound, elapsed) => progress(`${bound} claims bound in ${fmt(elapsed / 1000)} s`),
    }),
  );
  progress("settling: waiting for deletions to finish and every resident claim to stay bound");
  const audit = await settle(c, ns, config.pools * config.residentPerPool, config.settleSeconds * 1000);
  await sleep(5_000);
  const end = await readProcMemory(ctl.pid);
  const result = run.value;
  return {
    config,
    machine: { cpus: cpus().length, loadavg: loadavg() },
    churn: {
      created: result.created,
      bound: result.bound,
      slow: result.slow,
      durationMs: result.durationMs,
      allocationsPerSecond: result.bound / (result.durationMs / 1000),
      latencyMs: summarize(result.latenciesMs),
      errors: Object.fromEntries(result.errors),
    },
    memory: {
      start,
      end,
      peakRss: Math.max(run.peakRss, end.peakRss),
      samples: run.samples,
      trend: trendsOf(run.samples, config.warmupMinutes * 60_000),
    },
    audit,
    duplicates: audit.duplicateAddresses.length + audit.claimsWithSeveral.length,
    leaks: audit.strayAddresses.length + audit.unbound.length + audit.deleting.length,
    controllerLog: controllerLogCounts(ctl.logFile),
  };
}

async function main(): Promise<number> {
  const config = readSoakConfig(process.env, join(SOAK_DIR, "last.json"));
  process.on("SIGINT", () => {
    progress("interrupted; stopping everything");
    void cleanup().finally(() => process.exit(130));
  });
  try {
    const figures = await run(config);
    process.stdout.write(`${render(figures)}\n`);
    mkdirSync(dirname(config.outFile), { recursive: true });
    writeFileSync(config.outFile, `${JSON.stringify(figures, null, 2)}\n`);
    progress(`figures written to ${config.outFile}`);
    if (figures.duplicates > 0 || figures.leaks > 0) {
      progress(`FAILED: ${figures.duplicates} duplicates, ${figures.leaks} leaks`);
      return 1;
    }
    return 0;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    progress(`soak failed: ${describeError(err)}`);
    if (err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    void cleanup().finally(() => process.exit(1));
  },
);
