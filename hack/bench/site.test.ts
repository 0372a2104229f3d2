import { expect } from "chai";
import type { Row, Section } from "./table.js";
import {
  claimAndRecordWrites,
  claimsPerPool,
  heldAddresses,
  heldClaim,
  poolStatusWrites,
  preAllocations,
  siteCensus,
  siteChecks,
  siteLayout,
  siteSections,
  SITE_STAGES,
  stageClaim,
  type SiteResult,
  type SiteStage,
} from "./site.js";
import { summarize } from "./stats.js";

const SMOKE = { addresses: 2_000, pools: 20, namespaces: 10, newClaims: 5_601 };

/** 10.a.b.c as a number, for block arithmetic. */
const numeric = (address: string): number => address.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);

describe("bench site: layout", () => {
  it("mixes the pool kinds 5:3:2, preallocations on 2 IPPools of 5, and holds every address once", () => {
    const layout = siteLayout(SMOKE);
    expect(siteCensus(layout)).to.deep.equal({
      IPPool: 10,
      InClusterIPPool: 6,
      GlobalInClusterIPPool: 4,
      preallocating: 4,
    });
    expect(layout.pools.reduce((sum, p) => sum + p.held, 0)).to.equal(2_000);
    expect(new Set(layout.pools.map((p) => p.name)).size).to.equal(20);
    expect(layout.pools.map((p) => p.name).slice(0, 3)).to.deep.equal(["site-m3-00", "site-m3-01", "site-m3-02"]);
    expect(layout.pools[8]?.name).to.equal("site-gic-08");
    // A remainder goes one by one to the first pools.
    expect(
      siteLayout({ ...SMOKE, addresses: 2_003 })
        .pools.map((p) => p.held)
        .slice(0, 5),
    ).to.deep.equal([101, 101, 101, 100, 100]);
    // Global pools spread their claims over 3 namespaces; namespaced pools keep to theirs; all 10 are used.
    expect(layout.pools[9]?.claimNamespaces).to.deep.equal([9, 0, 1]);
    expect(layout.pools[5]?.claimNamespaces).to.deep.equal([5]);
    expect(new Set(layout.pools.map((p) => p.claimNamespaces[0])).size).to.equal(10);
  });

  it("gives each pool a block of its own with room for its share of the new claims, its gateway in its /16", () => {
    const layout = siteLayout({ addresses: 100_000, pools: 1_000, namespaces: 10, newClaims: 5_601 });
    expect(layout.blockBits).to.equal(8);
    const blocks = layout.pools.map((p) => {
      const [network, length] = p.subnet.split("/") as [string, string];
      return { start: numeric(network), size: 2 ** (32 - Number(length)), gateway: numeric(p.gateway) };
    });
    for (const [i, b] of blocks.entries()) {
      expect(b.start % b.size, `block ${i} aligned`).to.equal(0);
      expect(b.start >= numeric("10.0.0.0") && b.start + b.size <= numeric("11.0.0.0"), `block ${i}`).to.equal(true);
      expect(b.gateway, `gateway ${i}`).to.equal((b.start & ~0xffff) + 1);
      if (i > 0) expect(b.start, `block ${i} after the last`).to.equal((blocks[i - 1]?.start ?? 0) + b.size);
    }
    // Smoke: 100 held and 281 new ones per pool need 512 addresses.
    expect(siteLayout(SMOKE).blockBits).to.equal(9);
  });

  it("refuses a site that does not fit 10.0.0.0/8, and an empty one", () => {
    expect(() => siteLayout({ addresses: 10_000_000, pools: 100_000, namespaces: 10, newClaims: 0 })).to.throw(
      "do not fit 10.0.0.0/8",
    );
    expect(() => siteLayout({ ...SMOKE, pools: 0 })).to.throw("at least one pool");
  });
});

describe("bench site: held addresses and new claims", () => {
  const layout = siteLayout(SMOKE);

  it("preallocated claims hold their preallocation; the others skip what records hold already", () => {
    const pool = layout.pools[0]!;
    const pre = preAllocations(layout, pool);
    expect(Object.keys(pre)).to.have.length(10);
    expect(pre[heldClaim(pool, 0).name]).to.equal("10.0.0.2");
    const taken = new Set(["10.0.0.12", "10.0.0.14"]);
    const held = heldAddresses(layout, pool, taken);
    expect(held).to.have.length(pool.held);
    expect(held.slice(0, 10)).to.deep.equal(Object.values(pre));
    expect(held.slice(10, 14)).to.deep.equal(["10.0.0.13", "10.0.0.15", "10.0.0.16", "10.0.0.17"]);
    expect(new Set(held).size).to.equal(held.length);
    expect(held.some((a) => taken.has(a) || a === pool.gateway)).to.equal(false);
    // A pool without preallocations starts past the gateway of its /16.
    const inCluster = layout.pools[5]!;
    expect(preAllocations(layout, inCluster)).to.deep.equal({});
    expect(heldAddresses(layout, inCluster, new Set())[0]).to.equal("10.0.10.2");
  });

  it("runs out of room loudly instead of writing an address twice", () => {
    const pool = { ...layout.pools[5]!, held: 2 ** layout.blockBits - 3 };
    expect(() => heldAddresses(layout, pool, new Set())).not.to.throw();
    expect(() => heldAddresses(layout, pool, new Set(["10.0.10.2"]))).to.throw("no room");
  });

  it("alternates the claim APIs on IPPools only; a stage's claims go round robin over the pools", () => {
    const ipPool = layout.pools[0]!;
    const global = layout.pools[9]!;
    expect([0, 1, 2].map((j) => heldClaim(ipPool, j).api)).to.deep.equal(["IPClaim", "IPAddressClaim", "IPClaim"]);
    expect([0, 1, 2].map((j) => heldClaim(global, j).api)).to.deep.equal(Array(3).fill("IPAddressClaim"));
    expect([0, 1, 2, 3].map((j) => heldClaim(global, j).namespace)).to.deep.equal([9, 0, 1, 9]);
    const burst = Array.from({ length: 45 }, (_, t) => stageClaim(layout, "burst", t));
    expect(burst.map((c) => c.pool.index).slice(18, 23)).to.deep.equal([18, 19, 0, 1, 2]);
    expect(burst[0]?.name).to.equal("burst-000000");
    // Both APIs on the IPPools within one pass over the pools, and each IPPool gets both over two passes.
    const ipClaims = burst.filter((c) => c.pool.kind === "IPPool");
    expect(new Set(ipClaims.slice(0, 10).map((c) => c.api))).to.deep.equal(new Set(["IPClaim", "IPAddressClaim"]));
    expect([burst[0]?.api, burst[20]?.api]).to.deep.equal(["IPClaim", "IPAddressClaim"]);
    expect(burst.filter((c) => c.pool.kind !== "IPPool").every((c) => c.api === "IPAddressClaim")).to.equal(true);
    // claimsPerPool counts what stageClaim places.
    const counted = claimsPerPool(layout, 45);
    expect(counted.reduce((a, b) => a + b, 0)).to.equal(45);
    expect(counted.map((n, i) => n - burst.filter((c) => c.pool.index === i).length)).to.deep.equal(Array(20).fill(0));
  });
});

describe("bench site: report", () => {
  const MiB = 1024 * 1024;
  // As read: a stage's end leaves freed heap pages and garbage on top of what the settled reading holds.
  const stage = (name: string, claims: number, cpu: number, rss: number, heap: number): SiteStage => ({
    stage: name,
    claims,
    wallMs: claims * 200,
    cpu: { controller: cpu, apiServer: 2, etcd: 1 },
    requests: { writes: 3, reads: 0, byVerb: {} },
    ...(claims > 0 ? { bindMs: summarize([20, 30]) } : {}),
    timedOut: 0,
    memory: { rss: rss + 2_000 * 2 * 1024, peakRss: rss + 10 * MiB, rssAnon: rss },
    heapUsed: heap + 2_000 * 1024,
    settled: { rss, heapUsed: heap, released: true },
    monotonicWindowMs: [1_000, 1_000 + claims * 200],
    gc: { majorS: cpu / 2, minorS: cpu / 10, incrementalS: 0.01, releases: claims > 0 ? 3 : 1, releaseS: cpu / 4 },
    server: {
      systemCpuS: 0.25,
      minorFaults: 1_000,
      gcCpuS: 0.5,
      gcCycles: 2,
      allocatedBytes: 300 * MiB,
      cacheLists: claims + 10,
      cacheObjects: claims * 500,
      etcdLists: 1,
      etcdObjects: claims,
      liveHeapBytes: 900 * MiB,
    },
  });
  const result: SiteResult = {
    addresses: 2_000,
    pools: 20,
    namespaces: 10,
    census: { IPPool: 10, InClusterIPPool: 6, GlobalInClusterIPPool: 4, preallocating: 4 },
    loadMs: 5_000,
    loadConcurrency: 200,
    releaseIntervalS: 2,
    stages: [
      stage(SITE_STAGES.idle, 0, 0.5, 80 * MiB, 20 * MiB),
      stage(SITE_STAGES.emptyTrickle, 300, 1.5, 82 * MiB, 22 * MiB),
      stage(SITE_STAGES.restart, 0, 3, 80 * MiB + 2_000 * 6 * 1024, 20 * MiB + 2_000 * 2 * 1024),
      stage(SITE_STAGES.trickle, 300, 2.4, 90 * MiB, 30 * MiB),
      stage(SITE_STAGES.burst, 5_000, 10, 120 * MiB, 60 * MiB),
    ],
    restart: {
      readyMs: 900,
      firstBoundMs: 1_200,
      poolsCurrentMs: 3_000,
      writes: {
        "PATCH ipam.metal3.io/ippools/status": 10,
        "PATCH ipam.cluster.x-k8s.io/inclusterippools/status": 6,
        "PATCH ipam.cluster.x-k8s.io/globalinclusterippools/status": 4,
        "PATCH ipam.metal3.io/ipclaims": 1,
        "PATCH ipam.metal3.io/ipclaims/status": 1,
        "POST ipam.metal3.io/ipaddresses": 1,
        "POST events": 2,
      },
    },
  };
  const rows = (sections: Section[]): Row[] => {
    const derived = sections[1];
    return derived && "rows" in derived ? derived.rows : [];
  };
  const value = (sections: Section[], metric: string): string | undefined =>
    rows(sections).find((r) => r.metric.startsWith(metric))?.value;

  it("one grid line per stage with CPU per claim; the restart's writes split into claims/records and pool statuses", () => {
    const sections = siteSections(result);
    const grid = sections[0]!;
    expect(grid.title).to.include("2,000 addresses held across 20 pools").and.include("4 of them with preallocations");
    if (!("cells" in grid)) throw new Error("the stages are a grid");
    expect(grid.cells.map((c) => c[0])).to.deep.equal(Object.values(SITE_STAGES));
    expect(grid.cells[1]?.[4]).to.equal("5.00");
    expect(grid.cells[0]?.[4]).to.equal("-");
    expect(claimAndRecordWrites(result.restart.writes)).to.equal(3);
    expect(poolStatusWrites(result.restart.writes)).to.equal(20);
    expect(value(sections, "(c) restart: writes to claims and records")).to.equal("3");
    expect(value(sections, "(c) restart: pool status writes")).to.equal("20");
    expect(value(sections, "(c) restart: start → new claim bound, last pool")).to.equal("1.20 s");
    expect(value(sections, "(c) restart: start → new claim bound, namespace listed first")).to.equal(undefined);
  });

  it("the restart's claim of the namespace listed first, and its writes bound per claim made while down", () => {
    const two = {
      ...result,
      restart: {
        ...result.restart,
        listedFirstBoundMs: 400,
        claims: 2,
        writes: { ...result.restart.writes, "PATCH ipam.cluster.x-k8s.io/ipaddressclaims/status": 3 },
      },
    };
    expect(value(siteSections(two), "(c) restart: start → new claim bound, namespace listed first")).to.equal("400 ms");
    expect(value(siteSections(two), "(c) restart: writes to claims and records")).to.equal("6");
    const startup = (r: typeof two): boolean | undefined =>
      siteChecks(r).find((c) => c.check === "start-up writes to claims and records")?.ok;
    expect(startup(two), "6 writes for 2 claims").to.equal(true);
    expect(startup({ ...two, restart: { ...two.restart, claims: 1 } }), "6 writes for 1 claim").to.equal(false);
  });

  /** The per-stage grid titled `prefix`: one line per stage, in the stages' order. */
  const stageGrid = (prefix: string): { title: string; cells: string[][] } => {
    const section = siteSections(result).find((s) => s.title.startsWith(prefix));
    if (!section || !("cells" in section)) throw new Error(`no grid "${prefix}"`);
    expect(section.cells.map((c) => c[0])).to.deep.equal(Object.values(SITE_STAGES));
    return section;
  };

  it("one collections line per stage: V8's own collections, the memory releases apart, and the window", () => {
    const collections = stageGrid("8 collections");
    expect(collections.title).to.include("memory release every 2 s");
    // The trickle into the held site: 2.4 CPU-s; 1.2 s major, 0.24 minor, 0.01 incremental; 3 releases, 0.6 s in all.
    expect(collections.cells[3]).to.deep.equal([
      SITE_STAGES.trickle,
      "2.40",
      "1.20",
      "0.240",
      "0.0100",
      "3",
      "0.600",
      "1000,61000",
    ]);
  });

  it("one API server line per stage: its CPU and collections, its live heap, its lists from cache and etcd", () => {
    const server = stageGrid("8 API server");
    // The trickle into the held site: 300 claims.
    expect(server.cells[3]).to.deep.equal([
      SITE_STAGES.trickle,
      "2.00",
      "0.250",
      "1000",
      "0.500",
      "2",
      "300 MiB",
      "900 MiB",
      "310",
      "150000",
      "1",
      "300",
    ]);
  });

  it("the site's trickle over the empty site's, and memory per held address beyond the idle floor", () => {
    const sections = siteSections(result);
    expect(value(sections, "(a) trickle: CPU per claim, site held / empty site")).to.equal("1.60×");
    expect(value(sections, "(d) per held address beyond the idle floor: RSS, settled")).to.equal("6.00 KiB");
    // The restart's as-read figures carry the same surplus as the idle one's: beyond the floor they agree.
    expect(rows(sections).find((r) => r.metric.startsWith("(d)"))?.detail)
      .to.include("heap used 2.00 KiB, settled")
      .and.include("as read at the stage's end: RSS 6.00 KiB, heap used 2.00 KiB");
    expect(value(sections, "(b) burst: 5000 claims bound in")).to.equal("1,000 s");
    // A run that failed before the held site has no derived rows about it.
    const partial = siteSections({ ...result, stages: result.stages.slice(0, 2) });
    expect(value(partial, "(a) trickle")).to.equal(undefined);
    expect(value(partial, "(d)")).to.equal(undefined);
  });

  it("checks a run against the bounds: no rewrite at start-up beyond the new claim's, memory per held address", () => {
    const verdicts = (r: SiteResult): Record<string, boolean> =>
      Object.fromEntries(siteChecks(r).map((c) => [c.check, c.ok]));
    // 2,000 addresses: the heap is held to the bound, RSS (6 KiB per address here) is not.
    expect(verdicts(result)).to.deep.equal({
      "start-up writes to claims and records": true,
      "start-up pool status writes": true,
      "heap used per held address beyond the idle floor (settled), KiB": true,
      "claims not bound": true,
    });
    const restartWith = (r: SiteResult, settled: { rss?: number; heapUsed?: number }): SiteResult => ({
      ...r,
      stages: r.stages.map((s) =>
        s.stage === SITE_STAGES.restart ? { ...s, settled: { ...s.settled, ...settled } } : s,
      ),
    });
    const heavy = restartWith(result, { heapUsed: 20 * MiB + 2_000 * 4 * 1024 });
    expect(verdicts(heavy)["heap used per held address beyond the idle floor (settled), KiB"]).to.equal(false);
    // From 50,000 addresses on, RSS too: 6 KiB per address is over, 3 is not.
    const large = { ...result, addresses: 100_000 };
    const rss = (perAddressKiB: number): boolean | undefined =>
      verdicts(restartWith(large, { rss: 80 * MiB + 100_000 * perAddressKiB * 1024 }))[
        "RSS per held address beyond the idle floor (settled), KiB"
      ];
    expect([rss(6), rss(3)]).to.deep.equal([false, true]);
    expect(siteChecks(result).every((c) => c.ok)).to.equal(true);
    // The check reads the settled figure: the restart's stage-end reading, over the bound, does not count.
    const readHigh = {
      ...large,
      stages: restartWith(large, { rss: 80 * MiB + 100_000 * 2 * 1024 }).stages.map((s) =>
        s.stage === SITE_STAGES.restart ? { ...s, memory: { ...s.memory, rss: 80 * MiB + 100_000 * 8 * 1024 } } : s,
      ),
    };
    expect(siteChecks(readHigh).every((c) => c.ok)).to.equal(true);
    const rewrote = {
      ...result,
      restart: {
        ...result.restart,
        writes: { ...result.restart.writes, "PATCH ipam.cluster.x-k8s.io/ipaddressclaims/status": 1 },
      },
    };
    expect(
      siteChecks(rewrote)
        .filter((c) => !c.ok)
        .map((c) => c.check),
    ).to.deep.equal(["start-up writes to claims and records"]);
    const twice = {
      ...result,
      restart: { ...result.restart, writes: { ...result.restart.writes, "PATCH ipam.metal3.io/ippools/status": 11 } },
    };
    expect(
      siteChecks(twice)
        .filter((c) => !c.ok)
        .map((c) => c.check),
    ).to.deep.equal(["start-up pool status writes"]);
    const unbound = { ...result, stages: result.stages.map((s) => ({ ...s, timedOut: 1 })) };
    expect(
      siteChecks(unbound)
        .filter((c) => !c.ok)
        .map((c) => c.check),
    ).to.deep.equal(["claims not bound"]);
    const table = siteSections(heavy)[2];
    expect(table && "rows" in table ? table.rows.map((r) => r.detail) : []).to.include("OVER: at most 3");
  });

  it("the handover to a warm standby: its figures, and its rewrites held to the start-up's bound", () => {
    const handover = {
      readyMs: 4_000,
      leaderGoneMs: 600,
      firstBoundMs: 2_500,
      writes: {
        "POST ipam.metal3.io/ipclaims": 1,
        "PATCH ipam.metal3.io/ipclaims": 1,
        "PATCH ipam.metal3.io/ipclaims/status": 1,
        "POST ipam.metal3.io/ipaddresses": 1,
        "PATCH ipam.metal3.io/ippools/status": 1,
        "PATCH coordination.k8s.io/leases": 2,
      },
    };
    const sections = siteSections({ ...result, handover });
    expect(value(sections, "(c) handover: leader's SIGTERM → first new claim bound")).to.equal("2.50 s");
    expect(value(sections, "(c) handover: writes to claims and records, pool status writes")).to.equal("4, 1");
    const verdict = (r: SiteResult): boolean | undefined =>
      siteChecks(r).find((c) => c.check === "handover writes to claims and records")?.ok;
    expect(verdict({ ...result, handover })).to.equal(true);
    const rewrote = { ...handover, writes: { ...handover.writes, "PATCH ipam.metal3.io/ipclaims": 2 } };
    expect(verdict({ ...result, handover: rewrote })).to.equal(false);
    expect(verdict(result), "a result without a handover is not held to it").to.equal(undefined);
  });
});
