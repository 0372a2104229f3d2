import { expect } from "chai";
import { parsePoolKey, poolKeyOf, type PoolLocation } from "./indexes.js";

describe("pool keys carry group, kind and scope (pure)", () => {
  const rows: [string, PoolLocation, string][] = [
    [
      "a namespaced Metal3 pool",
      { group: "ipam.metal3.io", kind: "IPPool", namespace: "ns", name: "p" },
      "IPPool.ipam.metal3.io/ns/p",
    ],
    [
      "a cluster-scoped pool: empty namespace",
      { group: "ipam.cluster.x-k8s.io", kind: "GlobalInClusterIPPool", namespace: "", name: "p" },
      "GlobalInClusterIPPool.ipam.cluster.x-k8s.io//p",
    ],
    [
      "a dotted name",
      { group: "ipam.cluster.x-k8s.io", kind: "InClusterIPPool", namespace: "ns", name: "a.b" },
      "InClusterIPPool.ipam.cluster.x-k8s.io/ns/a.b",
    ],
  ];
  for (const [what, ref, key] of rows) {
    it(`${what}: ${key}`, () => {
      expect(poolKeyOf(ref)).to.equal(key);
      expect(parsePoolKey(key)).to.deep.equal(ref);
    });
  }

  it("pools of one name in different kinds and scopes get different keys", () => {
    const keys = new Set(
      [
        { group: "ipam.metal3.io", kind: "IPPool", namespace: "ns", name: "p" },
        { group: "ipam.cluster.x-k8s.io", kind: "InClusterIPPool", namespace: "ns", name: "p" },
        { group: "ipam.cluster.x-k8s.io", kind: "GlobalInClusterIPPool", namespace: "", name: "p" },
      ].map(poolKeyOf),
    );
    expect(keys.size).to.equal(3);
  });

  it("refuses what is not a pool key", () => {
    for (const text of ["ns/p", "", "IPPool.g/ns", "noslash"]) expect(parsePoolKey(text), text).to.equal(undefined);
  });
});
