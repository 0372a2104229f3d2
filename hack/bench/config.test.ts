import { expect } from "chai";
import { DEFAULT_SCENARIOS, POOL_LABELS, readConfig } from "./config.js";

describe("bench configuration (trickle knobs)", () => {
  it("defaults: 100 trickle claims into pools holding 0 and 2,000, 100 ms apart, every scenario but netbox", () => {
    const c = readConfig({}, "out.json");
    expect([c.trickleClaims, c.trickleHeld, c.trickleGapMs, c.trickleWarmup]).to.deep.equal([
      100,
      [0, 2_000],
      100,
      200,
    ]);
    expect(c.scenarios).to.deep.equal([...DEFAULT_SCENARIOS]);
    expect(c.scenarios).to.deep.equal(["allocator", "burst", "memory", "trickle", "admission"]);
    expect(readConfig({ BENCH_SCENARIOS: "netbox" }, "o").scenarios).to.deep.equal(["netbox"]);
  });

  it("--large adds a pool of 10,000; the environment sets sizes, count, gap (0 allowed) and scenarios", () => {
    expect(readConfig({}, "out.json", ["--large"]).trickleHeld).to.deep.equal([0, 2_000, 10_000]);
    const c = readConfig(
      {
        BENCH_TRICKLE_HELD: "2000",
        BENCH_TRICKLE_CLAIMS: "30",
        BENCH_TRICKLE_GAP_MS: "0",
        BENCH_TRICKLE_WARMUP: "0",
        BENCH_SCENARIOS: "trickle",
      },
      "out.json",
    );
    expect([c.trickleHeld, c.trickleClaims, c.trickleGapMs, c.trickleWarmup, c.scenarios]).to.deep.equal([
      [2_000],
      30,
      0,
      0,
      ["trickle"],
    ]);
  });

  it("refuses malformed values with the variable's name", () => {
    expect(() => readConfig({ BENCH_TRICKLE_HELD: "0,,2000" }, "o")).to.throw("BENCH_TRICKLE_HELD");
    expect(() => readConfig({ BENCH_TRICKLE_HELD: "-1" }, "o")).to.throw("BENCH_TRICKLE_HELD");
    expect(() => readConfig({ BENCH_TRICKLE_GAP_MS: "1.5" }, "o")).to.throw("BENCH_TRICKLE_GAP_MS");
    expect(() => readConfig({ BENCH_TRICKLE_WARMUP: "-5" }, "o")).to.throw("BENCH_TRICKLE_WARMUP");
    expect(() => readConfig({ BENCH_SCENARIOS: "trickle,bursts" }, "o")).to.throw('unknown scenario "bursts"');
    expect(() => readConfig({ BENCH_POOLS: "IPPool,Pool" }, "o")).to.throw('unknown pool kind "Pool"');
  });

  it("runs every pool kind by default; BENCH_POOLS picks some", () => {
    expect(readConfig({}, "o").pools).to.deep.equal([...POOL_LABELS]);
    expect(readConfig({ BENCH_POOLS: "IPPool, InClusterIPPool" }, "o").pools).to.deep.equal([
      "IPPool",
      "InClusterIPPool",
    ]);
  });

  it("the site scenario: only when named; 100,000 addresses, 1,000 pools, 300 and 5,000 claims unless set", () => {
    const c = readConfig({}, "o");
    expect(c.scenarios).not.to.include("site");
    expect([c.siteAddresses, c.sitePools, c.siteTrickle, c.siteBurst, c.siteConcurrency]).to.deep.equal([
      100_000, 1_000, 300, 5_000, 200,
    ]);
    const smoke = readConfig(
      { BENCH_SCENARIOS: "site", BENCH_SITE_ADDRESSES: "2000", BENCH_SITE_POOLS: "20", BENCH_SITE_BURST: "500" },
      "o",
    );
    expect([smoke.scenarios, smoke.siteAddresses, smoke.sitePools, smoke.siteBurst]).to.deep.equal([
      ["site"],
      2_000,
      20,
      500,
    ]);
    expect(() => readConfig({ BENCH_SITE_POOLS: "0" }, "o")).to.throw("BENCH_SITE_POOLS");
    expect([c.siteCheck, readConfig({ BENCH_SITE_CHECK: "1" }, "o").siteCheck]).to.deep.equal([false, true]);
    expect([
      c.siteReleaseIntervalS,
      readConfig({ BENCH_SITE_RELEASE_INTERVAL: "60" }, "o").siteReleaseIntervalS,
    ]).to.deep.equal([2, 60]);
    expect(() => readConfig({ BENCH_SITE_RELEASE_INTERVAL: "0" }, "o")).to.throw("BENCH_SITE_RELEASE_INTERVAL");
  });
});
