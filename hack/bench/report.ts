/** Turns the results of a run into table sections. Missing results (a run that failed half-way) are skipped. */
import type { AdmissionResult } from "./admission.js";
import type { AllocatorResult } from "./allocator.js";
import type { EntriesResult } from "./entries.js";
import type { BenchConfig } from "./config.js";
import type { ProcMemory } from "./controller.js";
import type { BurstResult, CeilingResult, LatencyResult, MemoryReading, MemoryResult } from "./scenarios.js";
import { fmt, fmtBytes, fmtMs, fmtRatio, type Summary } from "./stats.js";
import type { FloorResult, TrickleResult } from "./trickle.js";
import type { NetBoxBurstResult } from "./netbox.js";
import { netBoxSection } from "./netboxreport.js";
import { siteSections, type SiteResult } from "./site.js";
import type { Row, Section } from "./table.js";
import { machineSection, type MachineReading } from "./machine.js";

/** Everything a run measured; written as JSON as is. */
export interface BenchResults {
  startedAt: string;
  host: { node: string; platform: string; cpus: number; loadAverageAtStart: number[] };
  /** The machine over the whole run (steal, busy share); absent in runs from before it. */
  machine?: MachineReading;
  config: BenchConfig;
  allocator: AllocatorResult[];
  /** Admission validation by pool size (scenario 7). */
  admission?: AdmissionResult[];
  /** Scenario 3b: cost per decision against the number of entries; absent in runs from before it. */
  allocatorEntries?: EntriesResult[];
  /** A bare client's unavoidable writes per kind and size, with no controller: the bursts' ceiling. */
  ceilings: CeilingResult[];
  /** Bursts per kind and size, in the order they ran, on one controller process. */
  bursts: BurstResult[];
  latency?: LatencyResult;
  /** The latency scenario with Cluster API IPAddressClaims, in the same run. */
  capiLatency?: LatencyResult;
  idleMemory?: MemoryReading[];
  /** The cluster-wide controller of scenarios 1 and 2, read after them. */
  afterBurstMemory?: ProcMemory;
  memory?: MemoryResult;
  /** Claims one at a time into pools holding addresses already, per kind and pool size (scenario 5). */
  trickles?: TrickleResult[];
  /** The same trickle served by the floor client alone, per kind (scenario 5, empty pools). */
  floors?: FloorResult[];
  /** IPAddressClaims on a NetBoxIPPool of a real NetBox, and a bare client's NetBox calls (scenario 6). */
  netbox?: NetBoxBurstResult;
  /** A large site of every pool kind: trickles, restart, burst (scenario 8). */
  site?: SiteResult;
  error?: string;
}

/** The pool kind of a result; a result that names none (older runs) put every claim on an IPPool. */
const poolOf = (r: { pool?: string }): string => r.pool ?? "IPPool";

/** "IPAddressClaim on InClusterIPPool": what a row is about, and the key rows are matched by. */
export function kindName(r: { kind: string; pool?: string }): string {
  return `${r.kind} on ${poolOf(r)}`;
}

/** The path the in-cluster pools' rows are compared with: Cluster API claims on a Metal3 IPPool. */
export const REFERENCE_KIND = "IPAddressClaim on IPPool";

/** " (claims in 3 namespaces)" when a result's claims were spread over several namespaces, else "". */
function spreadOver(r: { namespaces?: number }): string {
  return (r.namespaces ?? 1) > 1 ? ` (claims in ${r.namespaces} namespaces)` : "";
}

/**
 * The controller CPU per claim of `r` over that of the {@link REFERENCE_KIND} result matched by `same` (same size or
 * same pool occupancy), or undefined when there is none or `r` is that result.
 */
export function cpuVersusReference<R extends { kind: string; pool?: string }>(
  r: R,
  results: readonly R[],
  same: (a: R, b: R) => boolean,
  cpuPerClaim: (x: R) => number,
): number | undefined {
  if (kindName(r) === REFERENCE_KIND) return undefined;
  const ref = results.find((x) => kindName(x) === REFERENCE_KIND && same(x, r));
  if (!ref) return undefined;
  const [mine, theirs] = [cpuPerClaim(r), cpuPerClaim(ref)];
  return theirs > 0 && Number.isFinite(mine) ? mine / theirs : undefined;
}

const burstCpuPerClaimMs = (b: BurstResult): number => (b.cpuSeconds * 1000) / b.count;

function spread(s: Summary): string {
  return `p90 ${fmtMs(s.p90)}, p99 ${fmtMs(s.p99)}, max ${fmtMs(s.max)}`;
}

function burstSection(b: BurstResult): Section {
  const duplicates = b.boundVerified - b.distinctAddresses;
  const check =
    duplicates === 0 && b.boundVerified === b.count
      ? "OK: all distinct"
      : duplicates > 0
        ? `FAIL: ${duplicates} duplicate(s)`
        : "INCOMPLETE";
  return {
    title: `1. Burst: ${b.count} ${b.kind}s created at once on one ${poolOf(b)}${spreadOver(b)} (${b.concurrency} creates in flight; controller = child process)`,
    rows: [
      {
        metric: "time to bind all (first create → last Ready=True)",
        value: fmtMs(b.bindAllMs),
        detail: b.timedOut ? "TIMED OUT: deadline reached" : "",
      },
      { metric: "creates submitted (first sent → last answered)", value: fmtMs(b.createAllMs) },
      {
        metric: "throughput",
        value: `${fmt(b.claimsPerSecond)}/s`,
        detail: "claims bound per second over the whole burst",
      },
      {
        metric: "per claim, create sent → seen bound: median",
        value: fmtMs(b.perClaimMs.median),
        detail: spread(b.perClaimMs),
      },
      { metric: "claims seen bound (watch)", value: `${b.boundSeen}/${b.count}` },
      { metric: "addresses verified (claim → IPAddress → spec.address)", value: `${b.boundVerified}/${b.count}` },
      { metric: "distinct addresses among them", value: `${b.distinctAddresses}/${b.boundVerified}`, detail: check },
    ],
  };
}

function latencySection(l: LatencyResult): Section {
  const rows: Row[] = [
    { metric: "create → Ready=True: median", value: fmtMs(l.bindMs.median) },
    { metric: "create → Ready=True: p90", value: fmtMs(l.bindMs.p90) },
    {
      metric: "create → Ready=True: min / mean / max",
      value: fmtMs(l.bindMs.mean),
      detail: `min ${fmtMs(l.bindMs.min)}, max ${fmtMs(l.bindMs.max)} (value column: mean)`,
    },
    {
      metric: "of which the create call itself: median",
      value: fmtMs(l.createMs.median),
      detail: `p90 ${fmtMs(l.createMs.p90)}`,
    },
  ];
  if (l.timedOut > 0) rows.push({ metric: "claims not bound before the deadline", value: String(l.timedOut) });
  return {
    title: `2. Single-claim latency: ${l.count} ${l.kind}s one at a time on a quiet pool (watch on the claims)`,
    rows,
  };
}

function allocatorSection(results: readonly AllocatorResult[]): Section | undefined {
  const first = results[0];
  if (!first) return undefined;
  const w = (c: AllocatorResult["first"]): string => `${c.from}-${c.to}`;
  return {
    title: `3. Allocator only (PoolAllocator: allocate + reserve, no API server; median of ${first.repeats} runs after a warm-up)`,
    header: [
      "pool",
      `µs/alloc ${w(first.first)}`,
      `µs/alloc ${w(first.last)}`,
      "time ratio",
      "work/alloc first",
      "work/alloc last",
      "work ratio",
      `${first.allocations} allocs`,
      "heap empty",
      `heap at ${first.allocations}`,
      "heap/addr",
    ],
    cells: results.map((r) => [
      r.label,
      fmt(r.first.microsPerAllocation),
      fmt(r.last.microsPerAllocation),
      fmtRatio(r.last.microsPerAllocation, r.first.microsPerAllocation),
      fmt(r.first.workPerAllocation),
      fmt(r.last.workPerAllocation),
      fmtRatio(r.last.workPerAllocation, r.first.workPerAllocation),
      fmtMs(r.runMs),
      r.heapEmptyBytes === undefined ? "n/a" : fmtBytes(r.heapEmptyBytes),
      r.heapFilledBytes === undefined ? "n/a" : fmtBytes(r.heapFilledBytes),
      r.heapFilledBytes === undefined ? "n/a" : `${fmt(r.heapFilledBytes / r.allocations)} B`,
    ]),
  };
}

function admissionSection(results: readonly AdmissionResult[] | undefined): Section | undefined {
  const first = results?.[0];
  if (!results || !first) return undefined;
  const perEntry = (ms: number, n: number): string => `${fmt((ms * 1000) / n)} µs`;
  return {
    title:
      `7. Admission validation only (webhook jobs, no API server; median of ${first.repeats} runs): IPPool of n ` +
      "entries, n preallocations, n in use, 3 overlapping pools of n/5; InClusterIPPool of n addresses, n excluded, n in use",
    header: ["entries n", "IPPool", "per entry", "IPPool errors", "InClusterIPPool", "per entry"],
    cells: results.map((r) => [
      String(r.entries),
      fmtMs(r.ipPoolMs),
      perEntry(r.ipPoolMs, r.entries),
      String(r.ipPoolErrors),
      fmtMs(r.inClusterMs),
      perEntry(r.inClusterMs, r.entries),
    ]),
  };
}

function entriesSection(results: readonly EntriesResult[] | undefined): Section | undefined {
  const first = results?.[0];
  if (!results || !first) return undefined;
  return {
    title: `3b. Allocator against the number of entries (${first.decisions} decisions past the full entries, allocate + reserve; median of ${first.repeats} runs after a warm-up)`,
    header: [
      "pool",
      "entries",
      "full entries before",
      "µs/decision",
      "work/decision",
      "build + hold",
      "longest build step",
    ],
    cells: results.map((r) => [
      r.label,
      String(r.entries),
      String(r.fullBefore),
      fmt(r.microsPerDecision),
      fmt(r.workPerDecision),
      fmtMs(r.buildMs),
      r.longestStepMs === undefined ? "-" : fmtMs(r.longestStepMs),
    ]),
  };
}

function memoryRow(state: string, m: ProcMemory, base?: ProcMemory): Row {
  const delta = base ? `, +${fmtBytes(m.rss - base.rss)} over idle controller` : "";
  return {
    metric: state,
    value: fmtBytes(m.rss),
    detail: `peak ${fmtBytes(m.peakRss)}, anon ${fmtBytes(m.rssAnon)}${delta}`,
  };
}

/** Claims the last bursts' and latencies' controller holds at the end: every burst of every kind, both latency runs. */
function heldAfterScenarios(r: BenchResults): number {
  const latencyRuns = [r.latency, r.capiLatency].filter((l) => l !== undefined).length;
  return r.bursts.reduce((sum, b) => sum + b.count, 0) + latencyRuns * r.config.latencyClaims;
}

function memorySection(r: BenchResults): Section | undefined {
  const idle = r.idleMemory?.find((m) => m.state.startsWith("controller"));
  const rows: Row[] = (r.idleMemory ?? []).map((m) => memoryRow(m.state, m));
  if (r.afterBurstMemory) {
    rows.push(
      memoryRow(
        `controller, all namespaces, after scenarios 1-2 (${heldAfterScenarios(r).toLocaleString("en-US")} claims)`,
        r.afterBurstMemory,
        idle,
      ),
    );
  }
  const mem = r.memory;
  if (mem) {
    rows.push(memoryRow(`controller, watching 1 namespace: 1 pool, ${mem.addresses} IPAddresses`, mem.loaded, idle));
    if (idle) {
      const perObject = (mem.loaded.rss - idle.rss) / mem.addresses;
      rows.push({
        metric: "  → RSS per IPAddress held",
        value: fmtBytes(perObject),
        detail: "(loaded − idle) / addresses",
      });
    }
    rows.push({
      metric: `  loading ${mem.addresses} IPAddresses (before the controller starts)`,
      value: fmtMs(mem.loadMs),
      detail: `${fmt(mem.addresses / (mem.loadMs / 1000))} creates/s`,
    });
    rows.push({
      metric: "  controller start → pool status used = all",
      value: fmtMs(mem.syncMs),
      detail: `used ${mem.poolUsed}; includes process start, list, first reconcile`,
    });
  }
  if (rows.length === 0) return undefined;
  return {
    title:
      "4. Controller memory (VmRSS from /proc/<pid>/status; the controller runs compiled, with the image's Node flags)",
    rows,
  };
}

/**
 * The efficiency table: per kind and size, seconds, claims/s, controller CPU, RSS, API requests per claim,
 * and the ratio of the bare client's ceiling to our time (1 = as fast as the writes alone).
 */
function efficiencySection(r: BenchResults): Section | undefined {
  if (r.bursts.length === 0) return undefined;
  const rows: Row[] = [];
  // Claims stay in the cluster, so after a burst the controller holds the claims of the earlier ones too (a size's
  // controller lists the earlier sizes' claims when it starts).
  let held = 0;
  for (const b of r.bursts) {
    held += b.count;
    const ceiling = r.ceilings.find((c) => kindName(c) === kindName(b) && c.count === b.count);
    const ratio =
      ceiling && b.bindAllMs > 0
        ? `${fmt(ceiling.ms / b.bindAllMs)} of the ceiling (${fmtMs(ceiling.ms)})`
        : "no ceiling";
    rows.push({
      metric: `${b.count} ${b.kind}s on ${poolOf(b)}${spreadOver(b)}: bound in`,
      value: fmtMs(b.bindAllMs),
      detail: `${fmt(b.claimsPerSecond)} claims/s; ${ratio}`,
    });
    rows.push({
      metric: "  controller CPU",
      value: `${fmt(b.cpuSeconds)} s`,
      detail: `${fmt(burstCpuPerClaimMs(b))} s per 1,000 claims`,
    });
    rows.push({
      metric: "  controller RSS after",
      value: fmtBytes(b.memoryAfter.rss),
      detail:
        `${fmtBytes(b.memorySettled.rss)} after ${fmt(b.settleMs / 1000)} s idle; ` +
        `holding ${held.toLocaleString("en-US")} claims and their addresses`,
    });
    rows.push({
      metric: "  API requests per claim",
      value: `${fmt(b.requests.writes)} writes`,
      detail: `${fmt(b.requests.reads)} reads`,
    });
    const verbs = Object.entries(b.requests.byVerb).sort(([a], [c]) => (a < c ? -1 : 1));
    rows.push({
      metric: "  by verb and resource",
      value: "",
      detail: verbs.map(([k, v]) => `${k} ${fmt(v)}`).join(", "),
    });
  }
  const find = (name: string, count: number): BurstResult | undefined =>
    r.bursts.find((b) => kindName(b) === name && b.count === count);
  for (const count of new Set(r.bursts.map((b) => b.count))) {
    const [m3, capi] = [find("IPClaim on IPPool", count), find(REFERENCE_KIND, count)];
    if (!m3 || !capi) continue;
    rows.push({
      metric: `IPAddressClaim / IPClaim at ${count}`,
      value: `${fmt(capi.bindAllMs / m3.bindAllMs)}× time`,
      detail: `${fmt(capi.cpuSeconds / m3.cpuSeconds)}× controller CPU`,
    });
  }
  for (const b of r.bursts) {
    if (poolOf(b) === "IPPool") continue;
    const ratio = cpuVersusReference(b, r.bursts, (x, y) => x.count === y.count, burstCpuPerClaimMs);
    const ref = find(REFERENCE_KIND, b.count);
    if (ratio === undefined || !ref) continue;
    rows.push({
      metric: `${b.pool} / IPPool at ${b.count}`,
      value: `${fmt(ratio)}× CPU per claim`,
      detail:
        `${fmt(burstCpuPerClaimMs(b))} vs ${fmt(burstCpuPerClaimMs(ref))} ms per claim (IPAddressClaims); ` +
        `${fmt(b.bindAllMs / ref.bindAllMs)}× time`,
    });
  }
  return {
    title:
      "Efficiency: bursts on one pool, compiled controller, same run (ceiling = a bare client doing the unavoidable writes; " +
      "X / IPPool = IPAddressClaims on pool kind X vs on an IPPool)",
    rows,
  };
}

function comparisonSection(r: BenchResults): Section | undefined {
  const [l, cl] = [r.latency, r.capiLatency];
  if (!l || !cl) return undefined;
  const ratio = (x: number, y: number): string => (y > 0 ? `${fmt(x / y)}×` : "-");
  return {
    title: `2 compared: Cluster API IPAddressClaim vs IPClaim latency, same run, same controller`,
    rows: [
      {
        metric: "median claim → addressRef latency",
        value: fmtMs(cl.bindMs.median),
        detail: `IPClaim → address: ${fmtMs(l.bindMs.median)}; ratio ${ratio(cl.bindMs.median, l.bindMs.median)}`,
      },
      {
        metric: "p90 claim → addressRef latency",
        value: fmtMs(cl.bindMs.p90),
        detail: `IPClaim: ${fmtMs(l.bindMs.p90)}`,
      },
    ],
  };
}

/** Scenario 5: one line per kind and held addresses; the requests by verb are in the JSON. */
function trickleSection(results: readonly TrickleResult[] | undefined): Section | undefined {
  const first = results?.[0];
  if (!results || !first) return undefined;
  const kib = (bytes: number): string => fmt(bytes / 1024);
  const versus = (t: TrickleResult): string => {
    if (kindName(t) === REFERENCE_KIND) return "ref";
    const ratio = cpuVersusReference(
      t,
      results,
      (x, y) => x.held === y.held,
      (x) => x.cpuMsPerClaim,
    );
    return ratio === undefined ? "-" : `${fmt(ratio)}×`;
  };
  return {
    title:
      `5. Trickle: ${first.claims} claims one at a time (next create ${first.gapMs} ms after the last returned) into ` +
      `a pool already holding N claims; per claim; CPU vs ref = CPU per claim over that of ${REFERENCE_KIND} ` +
      `at the same N; controller = the namespaces it watches; KiB = request/answer/watch body bytes at its API door; ` +
      `${warmupNote(first.warmup)}`,
    header: [
      "kind",
      "controller",
      "held N",
      "CPU ms",
      "CPU vs ref",
      "warm-up CPU ms",
      "writes",
      "reads",
      "KiB sent",
      "KiB recv",
      "KiB watch",
      "bound median",
      "p99",
      "check",
    ],
    cells: results.map((t) => [
      `${kindName(t)}${spreadOver(t)}`,
      t.allNamespaces ? "all ns" : "1 ns",
      t.held.toLocaleString("en-US"),
      fmt(t.cpuMsPerClaim),
      versus(t),
      t.warmup ? fmt(t.warmup.cpuMsPerClaim) : "-",
      fmt(t.requests.writes),
      fmt(t.requests.reads),
      kib(t.bytesPerClaim.sent),
      kib(t.bytesPerClaim.received),
      kib(t.bytesPerClaim.watchReceived),
      fmtMs(t.bindMs.median),
      fmtMs(t.bindMs.p99),
      t.timedOut > 0
        ? `${t.timedOut} TIMED OUT`
        : t.distinct === t.claims && t.verified === t.claims
          ? "OK"
          : `FAIL ${t.distinct}/${t.verified}/${t.claims}`,
    ]),
  };
}

/** What a trickle's warm-up column means, for the title of its table. */
function warmupNote(warmup: { claims: number } | undefined): string {
  return warmup
    ? `the window follows a warm-up of ${warmup.claims} claims served the same way by the same process right after ` +
        `its start (its CPU per claim: warm-up CPU ms)`
    : "no warm-up: the window starts right after the process's start";
}

/**
 * Scenario 5's floor: per kind, the floor client's CPU per claim beside the controller's in an empty pool of the same
 * run, and their ratio (what the controller's own work adds to a claim's messages).
 */
function floorSection(
  floors: readonly FloorResult[] | undefined,
  trickles: readonly TrickleResult[] = [],
): Section | undefined {
  const first = floors?.[0];
  if (!floors || !first) return undefined;
  const controllerOf = (f: FloorResult): TrickleResult | undefined =>
    trickles.find((t) => t.held === 0 && kindName(t) === kindName(f));
  return {
    title:
      `5b. Trickle floor: the same ${first.claims} claims one at a time into an empty pool, served by a bare Node client ` +
      `that receives each claim's events and makes its requests through our API door and does nothing else; ` +
      `controller = its figure at held 0 above; ${warmupNote(first.warmup)}`,
    header: [
      "kind",
      "floor CPU ms",
      "controller CPU ms",
      "controller / floor",
      "warm-up: floor",
      "warm-up: controller",
      "writes",
      "reads",
      "check",
    ],
    cells: floors.map((f) => {
      const controller = controllerOf(f);
      return [
        kindName(f),
        fmt(f.cpuMsPerClaim),
        controller ? fmt(controller.cpuMsPerClaim) : "-",
        controller ? `${fmt(controller.cpuMsPerClaim / f.cpuMsPerClaim)}×` : "-",
        f.warmup ? fmt(f.warmup.cpuMsPerClaim) : "-",
        controller?.warmup ? fmt(controller.warmup.cpuMsPerClaim) : "-",
        fmt(f.requests.writes),
        fmt(f.requests.reads),
        f.timedOut > 0 ? `${f.timedOut} TIMED OUT` : "OK",
      ];
    }),
  };
}

/** The table sections of `r`, in scenario order. */
export function sectionsOf(r: BenchResults): Section[] {
  const sections: (Section | undefined)[] = [
    r.machine && machineSection(r.machine),
    efficiencySection(r),
    ...r.bursts.map(burstSection),
    r.latency && latencySection(r.latency),
    comparisonSection(r),
    allocatorSection(r.allocator),
    admissionSection(r.admission),
    entriesSection(r.allocatorEntries),
    memorySection(r),
    trickleSection(r.trickles),
    floorSection(r.floors, r.trickles),
    r.netbox && netBoxSection(r.netbox),
    ...(r.site ? siteSections(r.site) : []),
  ];
  return sections.filter((s): s is Section => s !== undefined);
}
