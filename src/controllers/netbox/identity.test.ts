import { expect } from "chai";
import { mayUseSecret } from "./connect.js";
import { dnsNameOf, ownerComments, ownerDescription, splitCidr } from "./identity.js";

describe("NetBox record identity (pure)", () => {
  it("names the claim by namespace and name only: what clusterctl move keeps", () => {
    expect(ownerDescription({ namespace: "ns", name: "m-0" })).to.equal("IPAddressClaim ns/m-0");
    // Distinct claims never share a description, even when one name is a prefix of the other.
    expect(ownerDescription({ namespace: "ns", name: "m" })).to.not.equal(
      ownerDescription({ namespace: "ns", name: "m-0" }),
    );
  });

  it("puts the Cluster and the pool in the comments, for people", () => {
    expect(ownerComments({ namespace: "ns", name: "m", cluster: "c1" }, "NetBoxIPPool p")).to.equal(
      "Allocated by metal3-ipam-ts for IPAddressClaim ns/m (Cluster c1, pool NetBoxIPPool p).",
    );
    expect(ownerComments({ namespace: "ns", name: "m", cluster: undefined }, "NetBoxIPPool p")).to.not.include(
      "Cluster",
    );
  });

  it("fills the DNS name template, lower-cased; none without a template", () => {
    const owner = { namespace: "NS", name: "Node-1", cluster: "c1" };
    expect(dnsNameOf("{name}.{cluster}.{namespace}.example.com", owner)).to.equal("node-1.c1.ns.example.com");
    expect(dnsNameOf("{name}.{cluster}.example.com", { ...owner, cluster: undefined })).to.equal("node-1..example.com");
    expect(dnsNameOf(undefined, owner)).to.equal(undefined);
    expect(dnsNameOf("", owner)).to.equal(undefined);
  });

  it("splits NetBox's address/length", () => {
    expect(splitCidr("10.0.0.5/24")).to.deep.equal({ address: "10.0.0.5", length: 24 });
    expect(splitCidr("2001:db8::5/64")).to.deep.equal({ address: "2001:db8::5", length: 64 });
    expect(splitCidr("10.0.0.5")).to.deep.equal({ address: "10.0.0.5", length: undefined });
    expect(splitCidr("10.0.0.5/x")).to.deep.equal({ address: "10.0.0.5", length: undefined });
  });
});

describe("which pools may use a token Secret (pure)", () => {
  const ctl = "metal3-ipam-system";
  const allow = (v: string) => ({ "netbox.ipam.cluster.x-k8s.io/allowed-namespaces": v });
  for (const [annotations, pool, expected] of [
    [undefined, "", true],
    [undefined, ctl, true],
    [undefined, "team-a", false],
    [allow("team-a"), "team-a", true],
    [allow("team-a, team-b"), "team-b", true],
    [allow("team-a"), "team-ab", false],
    [allow("*"), "anyone", true],
    [allow(""), "team-a", false],
  ] as const) {
    it(`${JSON.stringify(annotations ?? null)}: a pool of ${pool || "(global)"} ${expected ? "may" : "may not"}`, () => {
      expect(mayUseSecret(annotations, pool, ctl)).to.equal(expected);
    });
  }
});
