import { setFlagsFromString, getHeapStatistics } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect } from "chai";
import { ValuePool } from "./strings.js";

/** A full collection, for heap measurements: --expose-gc turned on at run time, gc() taken from a fresh context. */
function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
  gc();
}

/** An IPAddress as the API server sends it (one JSON text per object, as a watch delivers them). */
const addressJson = (i: number): string =>
  JSON.stringify({
    apiVersion: "ipam.metal3.io/v1alpha1",
    kind: "IPAddress",
    metadata: {
      name: `pool-10-0-${i >> 8}-${i & 255}`,
      namespace: "metal3-workload-clusters-namespace",
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, "0")}`,
      finalizers: ["ipclaim.ipam.metal3.io"],
      labels: { "cluster.x-k8s.io/cluster-name": "workload-cluster-one", "ipam.metal3.io/pool": "pool" },
      ownerReferences: [
        { apiVersion: "ipam.metal3.io/v1alpha1", kind: "IPPool", name: "pool", uid: "pool-uid-4c94-9378-28c6e67bc01a" },
      ],
    },
    spec: { address: `10.0.${i >> 8}.${i & 255}`, pool: { name: "pool" }, prefix: 16, gateway: "10.0.0.254" },
  });

/** The fields of {@link addressJson}'s objects these tests read. */
interface Address {
  metadata: { finalizers: string[]; labels: Record<string, string>; ownerReferences: object[] };
  spec: { pool: object };
}

describe("ValuePool", () => {
  it("leaves every value as it was, in nested objects and arrays", () => {
    const pool = new ValuePool();
    const objects = [0, 1, 2].map((i) => JSON.parse(addressJson(i)) as unknown);
    const expected = [0, 1, 2].map((i) => JSON.parse(addressJson(i)) as unknown);
    expect(objects.map((o) => pool.internAll(o))).to.deep.equal(expected);
    expect(objects).to.deep.equal(expected);
  });

  it("shares equal small objects below the top level's fields, frozen, and leaves those fields each object's own", () => {
    const pool = new ValuePool();
    const [first, second, third] = [0, 1, 2].map((i) => pool.internAll(JSON.parse(addressJson(i)) as Address));
    // The second object's small values repeat strings already seen, so they are pooled; the third gets the same ones.
    expect(third!.metadata.finalizers).to.equal(second!.metadata.finalizers);
    expect(third!.metadata.labels).to.equal(second!.metadata.labels);
    expect(third!.metadata.ownerReferences[0]).to.equal(second!.metadata.ownerReferences[0]);
    expect(third!.spec.pool).to.equal(second!.spec.pool);
    expect(Object.isFrozen(third!.spec.pool)).to.equal(true);
    expect(() => {
      (third!.spec.pool as { name: string }).name = "other";
    }).to.throw(TypeError);
    // The first object's strings were all new: nothing of it was pooled whole.
    expect(first!.metadata.finalizers).to.not.equal(second!.metadata.finalizers);
    expect(Object.isFrozen(first!.metadata.finalizers)).to.equal(false);
    // An object's own metadata and spec are never shared or frozen, whatever they hold.
    expect(third!.metadata).to.not.equal(second!.metadata);
    expect(Object.isFrozen(third!.metadata)).to.equal(false);
    const flat = pool.internAll({ spec: { pool: "pool" } });
    expect(Object.isFrozen(flat.spec)).to.equal(false);
  });

  it("leaves a small object whole when it holds a string not seen before (a uid, a name of this object alone)", () => {
    const pool = new ValuePool();
    const owner = (uid: string) => ({ metadata: { ownerReferences: [{ kind: "IPClaim", name: "claim", uid }] } });
    pool.internAll(owner("uid-0"));
    const shared = [pool.internAll(owner("uid-0")), pool.internAll(owner("uid-0"))];
    expect(shared[0]!.metadata.ownerReferences[0]).to.equal(shared[1]!.metadata.ownerReferences[0]);
    const unique = pool.internAll(owner("uid-1"));
    expect(Object.isFrozen(unique.metadata.ownerReferences[0])).to.equal(false);
  });

  it("takes a frozen value as shared: an object interned again is left as it is", () => {
    const pool = new ValuePool();
    const objects = [0, 1, 2].map((i) => pool.internAll(JSON.parse(addressJson(i)) as Address));
    const again = pool.internAll(objects[2]!);
    expect(again.spec.pool).to.equal(objects[1]!.spec.pool);
    expect(again).to.deep.equal(JSON.parse(addressJson(2)));
  });

  it("keeps no string longer than 128 characters", () => {
    const pool = new ValuePool();
    pool.internAll({ message: "x".repeat(129), list: ["y".repeat(200)] });
    expect(pool.size).to.equal(0);
    pool.intern("x".repeat(128));
    expect(pool.size).to.equal(1);
  });

  it("does not walk a map of more than 256 entries (a pool's status.indexes), so its unique values cannot flush the pool", () => {
    const pool = new ValuePool(100);
    pool.internAll({ namespace: "shared" });
    const indexes = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, i) => [`claim-${i}`, `10.0.${i >> 8}.${i & 255}`]),
    );
    const status = { indexes, conditions: [{ reason: "PoolReady" }] };
    pool.internAll({ status });
    // The 10,000 addresses went by unpooled; the small objects around them were still walked.
    expect(pool.size).to.equal(2);
    expect(status.indexes["claim-9999"]).to.equal("10.0.39.15");
    pool.internAll({ small: Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, `v${i % 10}`])) });
    expect(pool.size).to.equal(12);
  });

  it("is bounded: at capacity it starts over, so strings seen once never pile up", () => {
    const pool = new ValuePool(100);
    for (let i = 0; i < 1_000; i++) {
      pool.intern(`unique-${i}`);
      expect(pool.size).to.be.at.most(100);
    }
    // 1,000 strings into 100 places: the pool started over at each hundred and holds the last hundred.
    expect(pool.size).to.equal(100);
    expect(pool.intern("unique-999")).to.equal("unique-999");
  });

  it("shares repeated strings: 20,000 parsed objects retain far less heap once interned", () => {
    const retained = (intern: boolean): number => {
      const pool = new ValuePool();
      collectGarbage();
      const before = getHeapStatistics().used_heap_size;
      const kept = Array.from({ length: 20_000 }, (_, i) => {
        const obj = JSON.parse(addressJson(i)) as unknown;
        return intern ? pool.internAll(obj) : obj;
      });
      collectGarbage();
      const bytes = getHeapStatistics().used_heap_size - before;
      expect(kept).to.have.length(20_000);
      return bytes;
    };
    const plain = retained(false);
    const interned = retained(true);
    // Each object repeats about 300 characters of strings (namespace, apiVersion twice, finalizer, labels, owner uid,
    // gateway): at least 4 MiB over 20,000 objects that interning must give back, whatever V8's object layout.
    expect(plain - interned).to.be.greaterThan(4 * 1024 * 1024);
  });
});
