/**
 * `npm run demo` on a plane of its own: the same samples, controller and tables as the command. Every claim API is
 * shown on every pool kind it can use (IPClaim on IPPool; IPAddressClaim on IPPool, InClusterIPPool and
 * GlobalInClusterIPPool), bound to the addresses the samples' comments promise, and the pool table has every kind.
 */
import { existsSync } from "node:fs";
import { expect } from "chai";
import { Manager } from "../../src/controllers/manager.js";
import { silentLogger } from "../../src/runtime/logger.js";
import { CAPI_CRDS, INCLUSTER_POOL_CRDS, OUR_CRDS } from "../testkit/cluster.js";
import { LocalPlane } from "../testkit/plane.js";
import { POOL_KINDS, runDemo, type DemoResult } from "./run.js";
import { renderDemo } from "./table.js";

/** Every claim API with every pool kind it can use. */
const PAIRS = [
  ["IPClaim", "IPPool"],
  ["IPAddressClaim", "IPPool"],
  ["IPAddressClaim", "InClusterIPPool"],
  ["IPAddressClaim", "GlobalInClusterIPPool"],
] as const;

describe("npm run demo (hack/demo.ts)", function () {
  this.timeout(120_000);
  let plane: LocalPlane | undefined;
  let manager: Manager | undefined;
  let result: DemoResult;

  before(async function () {
    this.timeout(180_000);
    expect(existsSync(CAPI_CRDS), "Cluster API's CRDs are cached (npm run binaries)").to.equal(true);
    plane = await LocalPlane.start({ crdDirs: [OUR_CRDS, INCLUSTER_POOL_CRDS, CAPI_CRDS] });
    manager = new Manager(plane.kubeConfig, { logger: silentLogger(), serveInClusterPools: true });
    await manager.start();
    result = await runDemo(plane.kubeConfig, true);
  });

  after(async function () {
    this.timeout(60_000);
    await manager?.stop();
    await plane?.stop();
  });

  it("binds a claim of each API on each pool kind it can use", () => {
    expect(result.skipped).to.deep.equal([]);
    for (const [claimKind, poolKind] of PAIRS) {
      const bound = result.claims.filter(
        (c) => c.kind === claimKind && c.poolKind === poolKind && c.result === "Allocated" && c.address !== "-",
      );
      expect(bound.length, `${claimKind} bound on ${poolKind}`).to.be.greaterThan(0);
    }
    const got = Object.fromEntries(result.claims.map((c) => [`${c.kind}/${c.name}`, c.address]));
    expect(got).to.include({
      "IPClaim/node-prealloc": "192.168.10.15",
      "IPAddressClaim/m3-0": "10.30.0.10",
      "IPAddressClaim/m3-1": "10.30.0.11",
      "IPAddressClaim/ic-0": "172.16.10.10",
      "IPAddressClaim/ic-1": "172.16.10.11",
      "IPAddressClaim/global-0": "172.16.20.2",
      "IPAddressClaim/global-1": "172.16.20.3",
    });
    expect(result.claims.find((c) => c.name === "small-3")!.result).to.match(/^PoolExhausted: /);
  });

  it("shows every pool kind with its counts, in both the rows and the printed tables", () => {
    for (const d of POOL_KINDS) {
      const rows = result.pools.filter((p) => p.kind === d.kind);
      expect(rows.length, `${d.kind} rows`).to.be.greaterThan(0);
      expect(rows.every((p) => Number(p.used) > 0 && p.total !== "-")).to.equal(true);
    }
    const text = renderDemo(result);
    for (const [claimKind, poolKind] of PAIRS)
      expect(text).to.match(new RegExp(`\\n\\S+ +${claimKind}/\\S+ +${poolKind}/\\S+ +[0-9a-f.:]+ `));
    for (const d of POOL_KINDS) expect(text).to.match(new RegExp(`\\n\\S+ +${d.kind}/\\S+ +\\d+ +[1-9]`));
  });
});
