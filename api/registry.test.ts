import { expect } from "chai";
import { CRDS } from "./v1alpha1/schema.js";
import { INCLUSTER_CRDS } from "./incluster/schema.js";
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
  MACHINE,
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
];

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
});
