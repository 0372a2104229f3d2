import { expect } from "chai";
import { endpointClaimName, parseEndpointPool } from "./endpoint.js";

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
});
