import { expect } from "chai";
import type { BenchConfig } from "./config.js";
import type { EntriesResult } from "./entries.js";
import { cpuVersusReference, kindName, sectionsOf, type BenchResults } from "./report.js";
import type { BurstResult } from "./scenarios.js";
import { fmtMs, summarize } from "./stats.js";
import type { Row, Section } from "./table.js";
import type { FloorResult, TrickleResult } from "./trickle.js";

const MEMORY = { rss: 100e6, peakRss: 120e6, rssAnon: 80e6 };
const REQUESTS = { writes: 2, reads: 0, byVerb: {} };

function burst(
  kind: string,
  pool: string | undefined,
  cpuSeconds: number,
  extra: Partial<BurstResult> = {},
): BurstResult {
  return {
    kind,
    ...(pool ? { pool } : {}),
    count: 1_000,
    concurrency: 50,
    createAllMs: 1_000,
    bindAllMs: 2_000,
    claimsPerSecond: 500,
    perClaimMs: summarize([10, 20]),
    timedOut: false,
    boundSeen: 1_000,
    boundVerified: 1_000,
    distinctAddresses: 1_000,
    cpuSeconds,
    memoryAfter: MEMORY,
    memorySettled: MEMORY,
    settleMs: 20_000,
    requests: REQUESTS,
    ...extra,
  };
}

function trickle(kind: string, pool: string | undefined, held: number, cpuMsPerClaim: number): TrickleResult {
  return {
    kind,
    ...(pool ? { pool } : {}),
    ...(pool === "GlobalInClusterIPPool" ? { namespaces: 3, allNamespaces: true } : {}),
    held,
    claims: 100,
    gapMs: 100,
    preloadMs: 0,
    windowMs: 12_000,
    monotonicWindowMs: [0, 12_000],
    cpuMsPerClaim,
    requests: REQUESTS,
    bytesPerClaim: { sent: 1024, received: 2048, watchReceived: 4096 },
    bindMs: summarize([15, 25]),
    timedOut: 0,
    verified: 100,
    distinct: 100,
  };
}

function results(bursts: BurstResult[], trickles?: TrickleResult[]): BenchResults {
  return {
    startedAt: "2026-01-01T00:00:00Z",
    host: { node: "v24", platform: "linux/x64", cpus: 2, loadAverageAtStart: [0, 0, 0] },
    config: { latencyClaims: 50 } as BenchConfig,
    allocator: [],
    ceilings: [],
    bursts,
    ...(trickles ? { trickles } : {}),
  };
}

const rowsOf = (sections: Section[], title: string): Row[] => {
  const section = sections.find((s) => s.title.startsWith(title));
  return section && "rows" in section ? section.rows : [];
};

describe("bench report: the in-cluster pools against the Metal3 pool path", () => {
  it("names a row by claim kind and pool kind; results from before the pools were kinds are on IPPools", () => {
    expect(kindName({ kind: "IPAddressClaim", pool: "InClusterIPPool" })).to.equal("IPAddressClaim on InClusterIPPool");
    expect(kindName({ kind: "IPClaim" })).to.equal("IPClaim on IPPool");
  });

  it("CPU per claim over that of IPAddressClaims on an IPPool matched by `same`; none for the reference itself", () => {
    const all = [trickle("IPAddressClaim", "IPPool", 0, 8), trickle("IPAddressClaim", "IPPool", 2_000, 50)];
    const global = trickle("IPAddressClaim", "GlobalInClusterIPPool", 2_000, 60);
    const ratio = (t: TrickleResult): number | undefined =>
      cpuVersusReference(
        t,
        [...all, global],
        (a, b) => a.held === b.held,
        (x) => x.cpuMsPerClaim,
      );
    expect(ratio(global)).to.equal(1.2);
    expect(ratio(trickle("IPClaim", undefined, 0, 4))).to.equal(0.5);
    expect(ratio(all[0]!)).to.equal(undefined);
    expect(ratio(trickle("IPAddressClaim", "InClusterIPPool", 10_000, 60))).to.equal(undefined);
  });

  it("the burst table has a row per pool kind and their CPU per claim against IPAddressClaims on an IPPool", () => {
    const sections = sectionsOf(
      results([
        burst("IPClaim", "IPPool", 2),
        burst("IPAddressClaim", "IPPool", 2.5),
        burst("IPAddressClaim", "InClusterIPPool", 2.75, { bindAllMs: 3_000 }),
        burst("IPAddressClaim", "GlobalInClusterIPPool", 3.5, { namespaces: 3 }),
      ]),
    );
    const rows = rowsOf(sections, "Efficiency");
    const metrics = rows.map((r) => r.metric);
    expect(metrics).to.include.members([
      "1000 IPClaims on IPPool: bound in",
      "1000 IPAddressClaims on InClusterIPPool: bound in",
      "1000 IPAddressClaims on GlobalInClusterIPPool (claims in 3 namespaces): bound in",
    ]);
    expect(rows.find((r) => r.metric === "IPAddressClaim / IPClaim at 1000")?.detail).to.equal("1.25× controller CPU");
    expect(rows.find((r) => r.metric === "InClusterIPPool / IPPool at 1000")).to.deep.equal({
      metric: "InClusterIPPool / IPPool at 1000",
      value: "1.10× CPU per claim",
      detail: "2.75 vs 2.50 ms per claim (IPAddressClaims); 1.50× time",
    });
    expect(rows.find((r) => r.metric === "GlobalInClusterIPPool / IPPool at 1000")?.value).to.equal(
      "1.40× CPU per claim",
    );
    expect(
      sections.some((s) =>
        s.title.startsWith(
          "1. Burst: 1000 IPAddressClaims created at once on one GlobalInClusterIPPool (claims in 3 namespaces)",
        ),
      ),
    ).to.equal(true);
  });

  it("a run whose results name no pool kind keeps its rows and its IPAddressClaim / IPClaim comparison", () => {
    const rows = rowsOf(
      sectionsOf(results([burst("IPClaim", undefined, 2), burst("IPAddressClaim", undefined, 3)])),
      "Efficiency",
    );
    expect(rows.map((r) => r.metric)).to.include("IPAddressClaim / IPClaim at 1000");
    expect(rows.some((r) => r.metric.includes("/ IPPool"))).to.equal(false);
  });

  it("the trickle grid says which namespaces the controller watched and the CPU against the same pool size", () => {
    const sections = sectionsOf(
      results(
        [],
        [
          trickle("IPAddressClaim", "IPPool", 0, 8),
          trickle("IPAddressClaim", "InClusterIPPool", 0, 9),
          trickle("IPAddressClaim", "GlobalInClusterIPPool", 0, 10),
        ],
      ),
    );
    const grid = sections.find((s) => s.title.startsWith("5. Trickle"));
    if (!grid || !("cells" in grid)) throw new Error("no trickle grid");
    const column = (name: string): string[] => grid.cells.map((line) => line[grid.header.indexOf(name)] ?? "");
    expect(column("kind")).to.deep.equal([
      "IPAddressClaim on IPPool",
      "IPAddressClaim on InClusterIPPool",
      "IPAddressClaim on GlobalInClusterIPPool (claims in 3 namespaces)",
    ]);
    expect(column("controller")).to.deep.equal(["1 ns", "1 ns", "all ns"]);
    expect(column("CPU vs ref")).to.deep.equal(["ref", "1.13×", "1.25×"]);
    expect(column("warm-up CPU ms")).to.deep.equal(["-", "-", "-"]);
    expect(grid.title).to.include("no warm-up");
  });

  it("the trickle floor sets the controller's empty-pool CPU beside the floor client's, per kind", () => {
    const floor = (kind: string, pool: string, cpuMsPerClaim: number): FloorResult => ({
      kind,
      pool,
      claims: 100,
      gapMs: 100,
      cpuMsPerClaim,
      warmup: { claims: 200, cpuMsPerClaim: cpuMsPerClaim + 1 },
      requests: { writes: 3, reads: 1, byVerb: {} },
      timedOut: kind === "IPClaim" ? 0 : 2,
    });
    const sections = sectionsOf({
      ...results(
        [],
        [
          { ...trickle("IPClaim", "IPPool", 0, 6), warmup: { claims: 200, cpuMsPerClaim: 7.5 } },
          trickle("IPClaim", "IPPool", 2_000, 9),
          trickle("IPAddressClaim", "IPPool", 2_000, 10),
        ],
      ),
      floors: [floor("IPClaim", "IPPool", 2.5), floor("IPAddressClaim", "IPPool", 3)],
    });
    const grid = sections.find((s) => s.title.startsWith("5b. Trickle floor"));
    if (!grid || !("cells" in grid)) throw new Error("no floor grid");
    const column = (name: string): string[] => grid.cells.map((line) => line[grid.header.indexOf(name)] ?? "");
    expect(column("floor CPU ms")).to.deep.equal(["2.50", "3.00"]);
    // Only a held-0 trickle of the same kind counts: IPAddressClaim ran at 2,000 only.
    expect(column("controller CPU ms")).to.deep.equal(["6.00", "-"]);
    expect(column("controller / floor")).to.deep.equal(["2.40×", "-"]);
    expect(column("check")).to.deep.equal(["OK", "2 TIMED OUT"]);
    // The warm-up after each start, floor's and controller's, beside the window's figures.
    expect(column("warm-up: floor")).to.deep.equal(["3.50", "4.00"]);
    expect(column("warm-up: controller")).to.deep.equal(["7.50", "-"]);
    expect(grid.title).to.include("a warm-up of 200 claims");
  });

  it("the allocator's cost against the number of entries is a grid row per case and count; older runs have none", () => {
    expect(sectionsOf(results([])).some((s) => s.title.startsWith("3b."))).to.equal(false);
    const row = (entries: number, micros: number): EntriesResult => ({
      label: "InClusterIPPool, excluded addresses",
      entries,
      fullBefore: entries - 1,
      decisions: 1_000,
      repeats: 3,
      buildMs: 12,
      ...(entries > 10 ? { longestStepMs: 3 } : {}),
      microsPerDecision: micros,
      workPerDecision: 50,
    });
    const grid = sectionsOf({ ...results([]), allocatorEntries: [row(10, 4), row(100_000, 9.5)] }).find((s) =>
      s.title.startsWith("3b."),
    );
    if (!grid || !("cells" in grid)) throw new Error("no entries grid");
    expect(grid.cells.map((line) => [line[1], line[2], line[3], line[6]])).to.deep.equal([
      ["10", "9", "4.00", "-"],
      ["100000", "99999", "9.50", fmtMs(3)],
    ]);
  });
});
