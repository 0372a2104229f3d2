import { expect } from "chai";
import { inClusterSpace } from "../../src/ipam/incluster.js";
import { GLOBAL_INCLUSTER_POOL, INCLUSTER_POOL, inClusterSpec, METAL3_POOL, namespaceOf, subnetFor } from "./pools.js";

describe("bench pools", () => {
  it("an in-cluster pool has room for its claims: a CIDR of 10.0.0.0 and its own length as prefix", () => {
    expect(inClusterSpec(1_000)).to.deep.equal({ addresses: ["10.0.0.0/16"], prefix: 16, gateway: "10.0.0.1" });
    expect(inClusterSpec(100_000)).to.deep.include({ addresses: ["10.0.0.0/15"], prefix: 15 });
    // The provider hands out neither the network, the broadcast nor the gateway: 2^17 - 3 fit in a /15, not one more.
    expect(inClusterSpec(2 ** 17 - 3).addresses).to.deep.equal(["10.0.0.0/15"]);
    expect(inClusterSpec(2 ** 17 - 2).addresses).to.deep.equal(["10.0.0.0/14"]);
    for (const count of [1, 10_000, 2 ** 17 - 3]) {
      const space = inClusterSpace(inClusterSpec(count));
      expect(space.specErrors, `${count}`).to.deep.equal([]);
      expect(space.size >= BigInt(count), `${count}`).to.equal(true);
    }
    // Metal3's pools keep their /16 at least, network + 1 up to the broadcast.
    expect(subnetFor(1_000)).to.equal("10.0.0.0/16");
    expect(subnetFor(2 ** 16)).to.equal("10.0.0.0/15");
  });

  it("a global pool's claims go round robin over its namespaces under a name unique to the scenario", () => {
    const namespaces = ["a", "b", "c"];
    expect([0, 1, 2, 3, 4].map((i) => namespaceOf(namespaces, i))).to.deep.equal(["a", "b", "c", "a", "b"]);
    expect(namespaceOf(["only"], 7)).to.equal("only");
    expect(() => namespaceOf([], 0)).to.throw("at least one namespace");
    expect(GLOBAL_INCLUSTER_POOL.claimNamespaces).to.be.within(2, 3);
    expect(GLOBAL_INCLUSTER_POOL.poolName("bench-burst-1-2-abcde", "burst")).to.equal("bench-burst-1-2-abcde-burst");
    expect([METAL3_POOL, INCLUSTER_POOL].map((p) => [p.claimNamespaces, p.poolName("ns", "burst")])).to.deep.equal([
      [1, "burst"],
      [1, "burst"],
    ]);
  });

  it("the ceiling's records are named and held as the controller's are for each pool kind", () => {
    expect(INCLUSTER_POOL.capiRecord).to.deep.include({
      claimFinalizer: "ipam.cluster.x-k8s.io/ReleaseAddress",
      recordFinalizer: "ipam.cluster.x-k8s.io/ProtectAddress",
    });
    expect(GLOBAL_INCLUSTER_POOL.capiRecord.name("pool", "claim-1", "10.0.0.2")).to.equal("claim-1");
    expect(METAL3_POOL.capiRecord.name("pool", "claim-1", "10.0.0.2")).to.equal("pool-10-0-0-2");
    expect(GLOBAL_INCLUSTER_POOL.ref("g")).to.deep.equal({
      apiGroup: "ipam.cluster.x-k8s.io",
      kind: "GlobalInClusterIPPool",
      name: "g",
    });
    expect([METAL3_POOL, INCLUSTER_POOL, GLOBAL_INCLUSTER_POOL].map((p) => p.getRequest)).to.deep.equal([
      "GET ipam.metal3.io/ippools",
      "GET ipam.cluster.x-k8s.io/inclusterippools",
      "GET ipam.cluster.x-k8s.io/globalinclusterippools",
    ]);
  });
});
