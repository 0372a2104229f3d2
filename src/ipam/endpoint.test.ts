import { expect } from "chai";
import { endpointClaimName, endpointPoolKey, parseEndpointPool, pendingClaimsRefusal } from "./endpoint.js";

const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

describe("control-plane endpoint names", () => {
  it("reads <Kind>/<name> and refuses anything else with a reason", () => {
    expect(parseEndpointPool("InClusterIPPool/vips")).to.deep.equal({ kind: "InClusterIPPool", name: "vips" });
    expect(parseEndpointPool("GlobalNetBoxIPPool/a.b-c")).to.deep.equal({ kind: "GlobalNetBoxIPPool", name: "a.b-c" });
    for (const bad of ["vips", "Secret/x", "IPPool/", "IPPool/UPPER", "IPPool/a/b", `IPPool/${"a".repeat(254)}`])
      expect(parseEndpointPool(bad)).to.have.property("error").that.is.a("string");
  });

  it("names one claim per Cluster, within 253 characters and distinct for long names", () => {
    expect(endpointClaimName("prod")).to.equal("prod-control-plane-endpoint");
    const a = endpointClaimName(`${"a".repeat(250)}x`);
    const b = endpointClaimName(`${"a".repeat(250)}y`);
    expect(a.length).to.be.at.most(253);
    expect(b.length).to.be.at.most(253);
    expect(a).to.not.equal(b);
    expect(a).to.match(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });

  it("keys a pool as a label value: readable when it fits, a digest of the name otherwise, never the same for two pools", () => {
    expect(endpointPoolKey({ kind: "IPPool", name: "vips" })).to.equal("IPPool.vips");
    expect(endpointPoolKey({ kind: "GlobalInClusterIPPool", name: "dc1.vips" })).to.equal(
      "GlobalInClusterIPPool.dc1.vips",
    );
    const long = (end: string) => endpointPoolKey({ kind: "GlobalNetBoxIPPool", name: `${"a".repeat(200)}${end}` });
    const keys = [long("x"), long("y"), endpointPoolKey({ kind: "IPPool", name: "vips-2" })];
    for (const key of keys) expect(key).to.match(LABEL_VALUE).and.have.length.at.most(63);
    expect(new Set(keys).size).to.equal(3);
    expect(long("x")).to.match(/^GlobalNetBoxIPPool_[0-9a-f]{16}$/);
  });

  it("refuses one more claim once the limit of the pool's claims wait for their Cluster, saying which pool, how many and what frees them", () => {
    const pool = { kind: "IPPool" as const, name: "vips" };
    expect(pendingClaimsRefusal({ pool, pending: 15, limit: 16, graceMs: 600_000 })).to.equal(undefined);
    expect(pendingClaimsRefusal({ pool, pending: 0, limit: 1, graceMs: 600_000 })).to.equal(undefined);
    const message = pendingClaimsRefusal({ pool, pending: 16, limit: 16, graceMs: 600_000 });
    expect(message)
      .to.contain("16 control-plane endpoint claims of pool IPPool/vips are waiting for their Cluster")
      .and.contain("--endpoint-pending-claims=16")
      .and.contain("10m after their creation (--endpoint-claim-grace)");
    expect(pendingClaimsRefusal({ pool, pending: 1, limit: 1, graceMs: 1_500 })).to.contain("1500ms after");
  });
});
