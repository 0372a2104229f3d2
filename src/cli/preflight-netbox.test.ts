import { expect } from "chai";
import type { NetBoxIPPoolSpec } from "../../api/netbox/types.js";
import { netBoxPoolFindings, type NetBoxPoolUse } from "./preflight-netbox.js";

const spec = (prefixId: number): NetBoxIPPoolSpec => ({
  netbox: { url: "https://netbox.example.com", credentialsRef: { name: "nb-token" } },
  prefix: { id: prefixId },
});
const use = (kind: NetBoxPoolUse["kind"], elsewhere = 0): NetBoxPoolUse => ({
  kind,
  name: "p",
  spec: spec(7),
  moving: ["10.0.0.1"],
  elsewhere,
});

describe("preflight-move: NetBox pools", () => {
  it("a NetBoxIPPool: a warning naming the token Secret, with the allowed-namespaces annotation for the namespace", () => {
    const [f] = netBoxPoolFindings([use("NetBoxIPPool")], "ns1", undefined);
    expect(f?.severity).to.equal("warning");
    expect(f?.problem).to.include("Secret nb-token in the controller's namespace");
    expect(f?.fix).to.include("create secret generic nb-token --from-literal=token=");
    expect(f?.fix).to.include("--from-literal=url=https://netbox.example.com");
    expect(f?.fix).to.include("netbox.ipam.cluster.x-k8s.io/allowed-namespaces=ns1");
  });

  it("a shared GlobalNetBoxIPPool is a warning (NetBox is the one allocator), unlike a shared GlobalInClusterIPPool", () => {
    const [f] = netBoxPoolFindings([use("GlobalNetBoxIPPool", 3)], "ns1", new Map());
    expect(f?.severity).to.equal("warning");
    expect(f?.problem).to.match(/^is missing on the target: clusterctl copies it there/);
    expect(f?.problem).to.include("shared with 3 claim(s)");
    expect(f?.fix).to.not.include("allowed-namespaces");
  });

  it("a target pool of that name pointing elsewhere in NetBox is a blocker; one naming the same place is not", () => {
    const elsewhere = netBoxPoolFindings([use("GlobalNetBoxIPPool")], "ns1", new Map([["p", spec(8)]]));
    expect(elsewhere[0]?.severity).to.equal("blocker");
    expect(elsewhere[0]?.problem).to.include("prefix #8 of https://netbox.example.com");
    const same = netBoxPoolFindings([use("GlobalNetBoxIPPool")], "ns1", new Map([["p", spec(7)]]));
    expect(same[0]?.severity).to.equal("warning");
  });

  it("a target pool without the source's fallbacks is a blocker; one that appended more is not", () => {
    const fallbacks = [{ prefix: { id: 9 } }];
    const source: NetBoxPoolUse = { ...use("GlobalNetBoxIPPool"), spec: { ...spec(7), fallbacks } };
    const without = netBoxPoolFindings([source], "ns1", new Map([["p", spec(7)]]));
    expect(without[0]?.severity).to.equal("blocker");
    expect(without[0]?.problem).to.include("prefix #7, then prefix #9 of");
    const more = { ...spec(7), fallbacks: [...fallbacks, { range: { id: 3 } }] };
    expect(netBoxPoolFindings([source], "ns1", new Map([["p", more]]))[0]?.severity).to.equal("warning");
  });
});

describe("preflight-move: NetBox pools whose Secret names the NetBox", () => {
  const bySecret = (prefixId: number, secret: string, url?: string): NetBoxIPPoolSpec => ({
    netbox: { ...(url ? { url } : {}), credentialsRef: { name: secret } },
    prefix: { id: prefixId },
  });
  const global = (s: NetBoxIPPoolSpec): NetBoxPoolUse => ({
    kind: "GlobalNetBoxIPPool",
    name: "p",
    spec: s,
    moving: ["10.0.0.1"],
    elsewhere: 0,
  });

  it("compares the token Secrets when a pool has no url, and never prints a url's userinfo", () => {
    const other = netBoxPoolFindings([global(bySecret(7, "a"))], "ns1", new Map([["p", bySecret(7, "b")]]));
    expect(other[0]?.severity).to.equal("blocker");
    expect(other[0]?.problem).to.include("the NetBox of Secret b");
    const same = netBoxPoolFindings([global(bySecret(7, "a"))], "ns1", new Map([["p", bySecret(7, "a")]]));
    expect(same[0]?.severity).to.equal("warning");
    const leaky = bySecret(7, "a", "https://admin:hunter2@netbox.example.com/");
    const shown = netBoxPoolFindings([global(leaky)], "ns1", new Map([["p", bySecret(8, "a")]]));
    expect(JSON.stringify(shown)).to.not.include("hunter2");
    expect(shown[0]?.problem).to.include("prefix #7 of https://netbox.example.com");
  });
});
