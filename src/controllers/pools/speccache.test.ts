import { expect } from "chai";
import type { InClusterIPPool } from "../../../api/incluster/types.js";
import type { IPPool } from "../../../api/v1alpha1/types.js";
import { CompiledSpace, type PoolAllocator } from "../../ipam/allocator.js";
import { noMetrics } from "../../runtime/metrics.js";
import { INCLUSTER_POOL_KIND } from "../incluster/kind.js";
import { METAL3_POOL_KIND } from "../ippool/kind.js";
import type { KindContext, PoolObject } from "./kind.js";
import { SpecCache } from "./speccache.js";

const ctx = {} as KindContext;

/** How many pool specs `run` compiled (and so validated). */
async function compilations(run: () => Promise<void>): Promise<number> {
  const before = CompiledSpace.compilations;
  await run();
  return CompiledSpace.compilations - before;
}

function ipPool(generation: number, labels: Record<string, string>, pools: IPPool["spec"]["pools"]): IPPool {
  const metadata = {
    name: "p",
    namespace: "ns",
    uid: "uid-metal3",
    generation,
    labels,
    resourceVersion: `${generation}`,
  };
  return { apiVersion: "ipam.metal3.io/v1alpha1", kind: "IPPool", metadata, spec: { namePrefix: "p", pools } };
}

describe("full passes compile a pool's spec once per generation (pools/speccache.ts)", () => {
  it("Metal3: two passes on an unchanged spec (a label edited) validate it once; a changed spec again", async () => {
    const first = ipPool(1, {}, [{ start: "10.0.0.1", end: "10.0.0.9" }]);
    const relabelled = { ...ipPool(1, { team: "a" }, [{ start: "10.0.0.1", end: "10.0.0.9" }]) };
    relabelled.metadata.resourceVersion = "2";
    const changed = ipPool(2, { team: "a" }, [{ start: "10.0.1.1", end: "10.0.1.9" }]);
    let secondAllocator: PoolAllocator | undefined;
    const unchanged = await compilations(async () => {
      const firstAllocator = await METAL3_POOL_KIND.openAllocator(first, ctx);
      firstAllocator.reserve("10.0.0.1", { kind: "claim", claimName: "a" });
      secondAllocator = await METAL3_POOL_KIND.openAllocator(relabelled, ctx);
    });
    expect(unchanged).to.equal(1);
    // Each pass's allocator holds its own reservations.
    expect(secondAllocator!.allocate({ claimName: "b" })).to.deep.include({ address: "10.0.0.1" });
    let third: PoolAllocator | undefined;
    expect(await compilations(async () => void (third = await METAL3_POOL_KIND.openAllocator(changed, ctx)))).to.equal(
      1,
    );
    expect(third!.allocate({ claimName: "b" })).to.deep.include({ address: "10.0.1.1" });
  });

  it("in-cluster: two passes with their status on an unchanged spec validate it once", async () => {
    const pool = (generation: number, excluded: string[]): InClusterIPPool => ({
      apiVersion: "ipam.cluster.x-k8s.io/v1beta1",
      kind: "InClusterIPPool",
      metadata: { name: "p", namespace: "ns", uid: "uid-incluster", generation },
      spec: { addresses: ["10.0.0.0/24"], prefix: 24, excludedAddresses: excluded },
    });
    const pass = async (p: InClusterIPPool): Promise<string | undefined> => {
      const allocator = await INCLUSTER_POOL_KIND.openAllocator(p, ctx);
      const records = { addresses: [], capiAddresses: [], pending: { IPClaim: 0, IPAddressClaim: 0 } };
      const ref = { group: "ipam.cluster.x-k8s.io", kind: "InClusterIPPool", namespace: "ns", name: "p" };
      INCLUSTER_POOL_KIND.desiredStatus(p, {
        ref,
        records,
        allocator,
        collisions: [],
        now: new Date(),
        metrics: noMetrics,
      });
      const r = allocator.allocate({ claimName: "c" });
      return r.ok ? r.address : undefined;
    };
    let got: (string | undefined)[] = [];
    expect(await compilations(async () => void (got = [await pass(pool(3, [])), await pass(pool(3, []))]))).to.equal(1);
    expect(got).to.deep.equal(["10.0.0.1", "10.0.0.1"]);
    expect(await compilations(async () => void (got = [await pass(pool(4, ["10.0.0.1"]))]))).to.equal(1);
    expect(got).to.deep.equal(["10.0.0.2"]);
  });

  it("keeps a value per uid and generation, compiles pools without either every time, and is bounded", () => {
    // eslint-disable-next-line require-yield
    const cache = new SpecCache(function* (p: PoolObject) {
      return `${p.metadata.name}@${p.metadata.generation}`;
    }, 2);
    const at = (uid: string | undefined, generation: number | undefined): PoolObject => ({
      metadata: { name: uid ?? "none", ...(uid ? { uid } : {}), ...(generation !== undefined ? { generation } : {}) },
    });
    expect([cache.get(at("a", 1)), cache.get(at("a", 1)), cache.get(at("a", 2))]).to.deep.equal(["a@1", "a@1", "a@2"]);
    expect(cache.compiled).to.equal(2);
    cache.get(at(undefined, 1));
    cache.get(at("b", undefined));
    expect(cache.compiled).to.equal(4);
    cache.get(at("b", 1));
    cache.get(at("c", 1));
    // "a" was the least recently used of three: dropped.
    cache.get(at("a", 2));
    cache.get(at("c", 1));
    expect(cache.compiled).to.equal(7);
  });

  it("grows when more pools are served than it keeps: a round over them compiles each once, not every time", () => {
    // eslint-disable-next-line require-yield
    const cache = new SpecCache(function* (p: PoolObject) {
      return p.metadata.name;
    }, 2);
    const pools = ["a", "b", "c"].map((uid): PoolObject => ({ metadata: { name: uid, uid, generation: 1 } }));
    for (let round = 0; round < 4; round++) for (const p of pools) cache.get(p);
    // Three compilations, then "a" once more: dropped for "c" and asked for again, it shows the cache too small.
    expect(cache.compiled).to.equal(4);
  });

  it("load lets the event loop run between the steps of a compilation, and keeps its result for get", async () => {
    const ran: string[] = [];
    const cache = new SpecCache(function* (p: PoolObject) {
      for (let i = 0; i < 3; i++) {
        ran.push(`step ${i}`);
        yield;
      }
      return p.metadata.name;
    });
    const p: PoolObject = { metadata: { name: "p", uid: "u", generation: 1 } };
    setImmediate(() => ran.push("other work"));
    const loading = cache.load(p);
    expect(await loading).to.equal("p");
    expect(ran).to.deep.equal(["step 0", "other work", "step 1", "step 2"]);
    expect([cache.get(p), await cache.load(p), cache.compiled]).to.deep.equal(["p", "p", 1]);
  });
});
