import { expect } from "chai";
import { CRDS } from "./v1alpha1/schema.js";
import { INCLUSTER_CRDS } from "./incluster/schema.js";
import { NETBOX_CRDS } from "./netbox/schema.js";
import {
  apiVersionOf,
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CLUSTER,
  CLUSTER_API_VERSIONS,
  GLOBAL_INCLUSTER_IPPOOL,
  INCLUSTER_IPPOOL,
  IPADDRESS,
  IPCLAIM,
  IPPOOL,
  isNetBoxKind,
  kubectlSpellings,
  MACHINE,
  POOL_DESCRIPTORS,
  poolDescriptor,
  poolKindOfRef,
  qualifiedName,
  resourceType,
  type ResourceDescriptor,
} from "./registry.js";

const ALL: readonly ResourceDescriptor[] = [
  IPPOOL,
  IPCLAIM,
  IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CAPI_IPADDRESS,
  CLUSTER,
  MACHINE,
  INCLUSTER_IPPOOL,
  GLOBAL_INCLUSTER_IPPOOL,
  ...POOL_DESCRIPTORS,
].filter((d, i, all) => all.indexOf(d) === i);

describe("api/registry.ts", () => {
  it("names every kind once", () => {
    expect(new Set(ALL.map(qualifiedName)).size).to.equal(ALL.length);
  });

  it("lists each kind's versions without repeats, preferred first", () => {
    for (const d of ALL) expect(new Set(d.versions).size, d.kind).to.equal(d.versions.length);
    expect(CAPI_IPADDRESSCLAIM.versions[0]).to.equal(CLUSTER_API_VERSIONS[0]);
  });

  it("agrees with the CRDs we generate for our own kinds", () => {
    for (const d of [IPPOOL, IPCLAIM, IPADDRESS]) {
      const crd = CRDS.find((c) => c.kind === d.kind);
      expect([crd?.group, crd?.plural, [crd?.version]], d.kind).to.deep.equal([d.group, d.plural, d.versions]);
    }
  });

  it("agrees with the in-cluster provider's pool CRDs we ship", () => {
    for (const d of [INCLUSTER_IPPOOL, GLOBAL_INCLUSTER_IPPOOL]) {
      const crd = INCLUSTER_CRDS.find((c) => c.kind === d.kind);
      const actual = [crd?.group, crd?.plural, [crd?.version], (crd?.scope ?? "Namespaced") === "Namespaced"];
      expect(actual, d.kind).to.deep.equal([d.group, d.plural, d.versions, d.namespaced]);
    }
  });

  it("gives the REST address and apiVersion of a version, the preferred one by default", () => {
    expect(resourceType(CAPI_IPADDRESSCLAIM)).to.deep.equal({
      group: "ipam.cluster.x-k8s.io",
      version: "v1beta2",
      plural: "ipaddressclaims",
      kind: "IPAddressClaim",
      namespaced: true,
    });
    expect(resourceType(CLUSTER, "v1beta1").version).to.equal("v1beta1");
    expect(apiVersionOf(IPPOOL)).to.equal("ipam.metal3.io/v1alpha1");
    expect(qualifiedName(CAPI_IPADDRESS)).to.equal("ipaddresses.ipam.cluster.x-k8s.io");
  });

  it("states each pool kind's scope and engine, and the NetBox CRDs agree on the scope", () => {
    const facts = POOL_DESCRIPTORS.map((d) => [d.kind, d.namespaced, d.engine, isNetBoxKind(d.kind)]);
    expect(facts).to.deep.equal([
      ["IPPool", true, "allocator", false],
      ["InClusterIPPool", true, "allocator", false],
      ["GlobalInClusterIPPool", false, "allocator", false],
      ["NetBoxIPPool", true, "netbox", true],
      ["GlobalNetBoxIPPool", false, "netbox", true],
    ]);
    for (const d of POOL_DESCRIPTORS) expect(poolDescriptor(d.kind)).to.equal(d);
    for (const crd of NETBOX_CRDS)
      expect((crd.scope ?? "Namespaced") === "Namespaced", crd.kind).to.equal(
        POOL_DESCRIPTORS.find((d) => d.kind === crd.kind)?.namespaced,
      );
  });

  it("names a pool kind by a reference's API group and kind, and nothing else", () => {
    expect(poolKindOfRef({ apiGroup: "ipam.metal3.io", kind: "IPPool" })).to.equal("IPPool");
    expect(poolKindOfRef({ apiGroup: "ipam.cluster.x-k8s.io", kind: "GlobalInClusterIPPool" })).to.equal(
      "GlobalInClusterIPPool",
    );
    expect(poolKindOfRef({ apiGroup: "netbox.ipam.cluster.x-k8s.io", kind: "NetBoxIPPool" })).to.equal("NetBoxIPPool");
    expect(poolKindOfRef({ apiGroup: "ipam.cluster.x-k8s.io", kind: "IPPool" })).to.equal(undefined);
    expect(poolKindOfRef({ apiGroup: "ipam.metal3.io", kind: "InClusterIPPool" })).to.equal(undefined);
    expect(poolKindOfRef({ kind: "IPPool" })).to.equal(undefined);
    expect(poolKindOfRef(undefined)).to.equal(undefined);
  });

  it("spells a resource as kubectl does: kind and plural, alone and with the group", () => {
    expect(kubectlSpellings(GLOBAL_INCLUSTER_IPPOOL)).to.deep.equal([
      "globalinclusterippool",
      "globalinclusterippools",
      "globalinclusterippool.ipam.cluster.x-k8s.io",
      "globalinclusterippools.ipam.cluster.x-k8s.io",
    ]);
  });
});
