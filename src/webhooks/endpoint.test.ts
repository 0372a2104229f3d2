/** The control-plane endpoint webhook's decisions, with its reads and writes over plain data (e2e/endpoint.test.ts: through a real API server). */
import { expect } from "chai";
import type { IPAddressClaim } from "../../api/capi/types.js";
import { ENDPOINT_CLAIM_LABEL, ENDPOINT_PENDING_LABEL, ENDPOINT_POOL_ANNOTATION } from "../ipam/endpoint.js";
import { silentLogger } from "../runtime/logger.js";
import type { AdmissionRequest, AdmissionResponse } from "./admission.js";
import { endpointPatch, endpointRoute, readEndpointRequest, type EndpointAccess } from "./endpoint.js";
import { staticLookup } from "./lookup.js";

const NS = "ns";
const POOL = "InClusterIPPool/vips";

/** An access over maps; `bindTo` binds every created claim to that address at once (the leader, instantly). */
function memoryAccess(bindTo?: string): EndpointAccess & {
  claims: Map<string, IPAddressClaim>;
  clusters: Map<string, Record<string, string>>;
  creates: number;
  /** The namespace (undefined: all) of each count of pending claims. */
  counted: Array<string | undefined>;
} {
  const claims = new Map<string, IPAddressClaim>();
  const clusters = new Map<string, Record<string, string>>();
  const access = {
    claims,
    clusters,
    creates: 0,
    counted: [] as Array<string | undefined>,
    // A map's claims are all in NS; a tick between count and answer, as an API round trip has.
    pendingClaims: async (namespace: string | undefined, poolKey: string, limit: number) => {
      access.counted.push(namespace);
      await new Promise((resolve) => setImmediate(resolve));
      const labelled = [...claims.values()].filter((x) => x.metadata.labels?.[ENDPOINT_PENDING_LABEL] === poolKey);
      return labelled.slice(0, limit);
    },
    clusterAnnotations: (_ns: string, name: string) => Promise.resolve(clusters.get(name)),
    claim: (_ns: string, name: string) => Promise.resolve(claims.get(name)),
    createClaim: async (claim: IPAddressClaim) => {
      await new Promise((resolve) => setImmediate(resolve));
      access.creates++;
      const name = claim.metadata.name ?? "";
      const stored = claims.get(name) ?? {
        ...claim,
        ...(bindTo ? { status: { addressRef: { name: `addr-${bindTo}` } } } : {}),
      };
      claims.set(name, stored);
      return stored;
    },
    address: (_ns: string, name: string) => Promise.resolve(name.startsWith("addr-") ? name.slice(5) : undefined),
  };
  return access;
}

function object(kind: string, name: string, extra: { annotations?: object; labels?: object; spec?: object } = {}) {
  return {
    apiVersion: kind === "Cluster" ? "cluster.x-k8s.io/v1beta2" : "infrastructure.cluster.x-k8s.io/v1beta1",
    kind,
    metadata: { name, namespace: NS, annotations: extra.annotations, labels: extra.labels },
    spec: extra.spec ?? {},
  };
}

function request(obj: ReturnType<typeof object>, dryRun = false): AdmissionRequest {
  const cluster = obj.kind === "Cluster";
  return {
    uid: "u",
    kind: {
      group: cluster ? "cluster.x-k8s.io" : "infrastructure.cluster.x-k8s.io",
      version: "v1beta1",
      kind: obj.kind,
    },
    resource: {
      group: cluster ? "cluster.x-k8s.io" : "infrastructure.cluster.x-k8s.io",
      version: "v1beta1",
      resource: cluster ? "clusters" : "metal3clusters",
    },
    operation: "CREATE",
    name: obj.metadata.name,
    namespace: NS,
    object: obj,
    dryRun,
  };
}

const ctx = { lookup: staticLookup([]), logger: silentLogger() };

function patchOf(response: AdmissionResponse): unknown {
  return response.patch ? JSON.parse(Buffer.from(response.patch, "base64").toString()) : undefined;
}

async function answer(access: EndpointAccess, req: AdmissionRequest): Promise<AdmissionResponse> {
  return await endpointRoute({ access, kinds: ["metal3clusters.infrastructure.cluster.x-k8s.io"], waitMs: 0 }).handle(
    req,
    ctx,
  );
}

const annotated = (name: string, pool = POOL) =>
  request(object("Cluster", name, { annotations: { [ENDPOINT_POOL_ANNOTATION]: pool } }));

describe("control-plane endpoint webhook", () => {
  it("fills host and the default port from the claim it makes, named after the Cluster and labelled", async () => {
    const access = memoryAccess("10.9.0.5");
    const res = await answer(
      access,
      request(object("Metal3Cluster", "m3", { annotations: { [ENDPOINT_POOL_ANNOTATION]: POOL } })),
    );
    expect(res.allowed).to.equal(true);
    expect(patchOf(res)).to.deep.equal([
      { op: "add", path: "/spec/controlPlaneEndpoint", value: { host: "10.9.0.5", port: 6443 } },
    ]);
    const claim = access.claims.get("m3-control-plane-endpoint");
    expect(claim?.spec.poolRef).to.deep.equal({
      apiGroup: "ipam.cluster.x-k8s.io",
      kind: "InClusterIPPool",
      name: "vips",
    });
    expect(claim?.metadata.labels).to.deep.equal({
      "cluster.x-k8s.io/cluster-name": "m3",
      [ENDPOINT_CLAIM_LABEL]: "",
      [ENDPOINT_PENDING_LABEL]: "InClusterIPPool.vips",
    });
  });

  it("makes no claim while the limit of its pool's claims wait for their Cluster; finds existing ones and counts per pool", async () => {
    const access = memoryAccess("10.9.0.12");
    const route = endpointRoute({ access, kinds: [], waitMs: 0, pendingLimit: 3, graceMs: 8_000 });
    // Concurrent reviews: counted and made one at a time, so exactly the limit is made.
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => route.handle(annotated(`forged-${i}`), ctx)));
    expect(answers.filter((a) => a.allowed)).to.have.length(3);
    const refused = answers.filter((a) => !a.allowed);
    expect(refused).to.have.length(3);
    expect(refused[0]?.status?.code).to.equal(429);
    expect(refused[0]?.status?.message)
      .to.contain("InClusterIPPool/vips")
      .and.contain("3 control-plane endpoint claims")
      .and.contain("--endpoint-pending-claims=3")
      .and.contain("8s after their creation (--endpoint-claim-grace)");
    expect(access.claims.size).to.equal(3);
    // A retry of a review whose claim exists is never limited.
    expect((await route.handle(annotated("forged-0"), ctx)).allowed).to.equal(true);
    // Another pool, and a global pool counted in every namespace, have their own counts.
    expect((await route.handle(annotated("other", "InClusterIPPool/more"), ctx)).allowed).to.equal(true);
    expect((await route.handle(annotated("global", "GlobalInClusterIPPool/vips"), ctx)).allowed).to.equal(true);
    expect(access.counted.slice(-2)).to.deep.equal([NS, undefined]);
    // The controller's patch owning a claim by its Cluster removes the label: one more may be made.
    const first = access.claims.get("forged-0-control-plane-endpoint");
    if (first) first.metadata.labels = { [ENDPOINT_CLAIM_LABEL]: "" };
    expect((await route.handle(annotated("real"), ctx)).allowed).to.equal(true);
    expect((await route.handle(annotated("one-more"), ctx)).allowed).to.equal(false);
  });

  it("called twice, or for the Cluster and then its infrastructure cluster, finds the same claim", async () => {
    const access = memoryAccess("10.9.0.6");
    const annotations = { [ENDPOINT_POOL_ANNOTATION]: POOL };
    await answer(access, request(object("Cluster", "c1", { annotations })));
    const again = await answer(access, request(object("Cluster", "c1", { annotations })));
    const infra = await answer(
      access,
      request(object("Metal3Cluster", "c1-x", { annotations, labels: { "cluster.x-k8s.io/cluster-name": "c1" } })),
    );
    expect([...access.claims.keys()]).to.deep.equal(["c1-control-plane-endpoint"]);
    expect(patchOf(again)).to.deep.equal(patchOf(infra));
  });

  it("ClusterClass: an infrastructure cluster without the annotation follows its Cluster's", async () => {
    const access = memoryAccess("10.9.0.7");
    access.clusters.set("topo", { [ENDPOINT_POOL_ANNOTATION]: POOL });
    const res = await answer(
      access,
      request(object("Metal3Cluster", "topo-abc", { labels: { "cluster.x-k8s.io/cluster-name": "topo" } })),
    );
    expect(patchOf(res)).to.deep.equal([
      { op: "add", path: "/spec/controlPlaneEndpoint", value: { host: "10.9.0.7", port: 6443 } },
    ]);
    const plain = await answer(
      access,
      request(object("Metal3Cluster", "other", { labels: { "cluster.x-k8s.io/cluster-name": "none" } })),
    );
    expect(plain).to.deep.equal({ uid: "u", allowed: true });
  });

  it("never touches an explicit host, an object without the annotation, or a kind it does not serve", async () => {
    const access = memoryAccess("10.9.0.8");
    const annotations = { [ENDPOINT_POOL_ANNOTATION]: POOL };
    const explicit = object("Cluster", "c", { annotations, spec: { controlPlaneEndpoint: { host: "192.0.2.1" } } });
    const other = { ...request(object("Metal3Cluster", "c", { annotations })) };
    other.resource = { group: "infrastructure.cluster.x-k8s.io", version: "v1beta1", resource: "awsclusters" };
    for (const req of [request(explicit), request(object("Cluster", "d")), other])
      expect(await answer(access, req)).to.deep.equal({ uid: "u", allowed: true });
    expect(access.creates).to.equal(0);
  });

  it("dry run: makes nothing; uses a bound claim's address, else passes unchanged with a warning", async () => {
    const access = memoryAccess("10.9.0.9");
    const annotations = { [ENDPOINT_POOL_ANNOTATION]: POOL };
    const first = await answer(access, request(object("Cluster", "dry", { annotations }), true));
    expect(first.allowed).to.equal(true);
    expect(first.patch).to.equal(undefined);
    expect(first.warnings?.[0]).to.contain("dry run");
    expect(access.creates).to.equal(0);
    await answer(access, request(object("Cluster", "dry", { annotations })));
    const later = await answer(access, request(object("Cluster", "dry", { annotations }), true));
    expect(patchOf(later)).to.deep.equal([
      { op: "add", path: "/spec/controlPlaneEndpoint", value: { host: "10.9.0.9", port: 6443 } },
    ]);
    expect(access.creates).to.equal(1);
  });

  it("not bound in time: refused with 503 and a retry message; the claim stays for the next try", async () => {
    const access = memoryAccess();
    const res = await answer(
      access,
      request(object("Cluster", "slow", { annotations: { [ENDPOINT_POOL_ANNOTATION]: POOL } })),
    );
    expect(res.allowed).to.equal(false);
    expect(res.status?.code).to.equal(503);
    expect(res.status?.message).to.contain("slow-control-plane-endpoint").and.contain("retry");
    expect(access.claims.has("slow-control-plane-endpoint")).to.equal(true);
  });

  it("refuses, for a retry, while the claim of an earlier Cluster of that name is being released", async () => {
    const access = memoryAccess("10.9.0.11");
    access.claims.set("old-control-plane-endpoint", {
      metadata: {
        name: "old-control-plane-endpoint",
        namespace: NS,
        labels: { [ENDPOINT_CLAIM_LABEL]: "" },
        deletionTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: { poolRef: { kind: "InClusterIPPool", name: "vips" } },
      status: { addressRef: { name: "addr-10.9.0.3" } },
    });
    const res = await answer(
      access,
      request(object("Cluster", "old", { annotations: { [ENDPOINT_POOL_ANNOTATION]: POOL } })),
    );
    expect(res.allowed).to.equal(false);
    expect(res.status?.code).to.equal(503);
    expect(res.status?.message).to.contain("being released");
  });

  it("refuses a bad annotation with the parse error, and a claim of that name that is not this endpoint's", async () => {
    const access = memoryAccess("10.9.0.10");
    const bad = await answer(
      access,
      request(object("Cluster", "b", { annotations: { [ENDPOINT_POOL_ANNOTATION]: "Pool/x" } })),
    );
    expect(bad.status?.code).to.equal(422);
    expect(bad.status?.message)
      .to.contain(`metadata.annotations[${ENDPOINT_POOL_ANNOTATION}]`)
      .and.contain("pool kind must be one of");
    access.claims.set("f-control-plane-endpoint", {
      metadata: { name: "f-control-plane-endpoint", namespace: NS },
      spec: { poolRef: { kind: "InClusterIPPool", name: "vips" } },
    });
    const foreign = await answer(
      access,
      request(object("Cluster", "f", { annotations: { [ENDPOINT_POOL_ANNOTATION]: POOL } })),
    );
    expect(foreign.status?.code).to.equal(409);
    expect(access.creates).to.equal(0);
  });

  it("patches: replaces an empty host, keeps a given port, sets 6443 for a zero one, adds spec when absent", () => {
    expect(endpointPatch({ spec: { controlPlaneEndpoint: { host: "", port: 443 } } }, "10.0.0.1")).to.deep.equal([
      { op: "replace", path: "/spec/controlPlaneEndpoint/host", value: "10.0.0.1" },
    ]);
    expect(endpointPatch({ spec: { controlPlaneEndpoint: { port: 0 } } }, "10.0.0.1")).to.deep.equal([
      { op: "add", path: "/spec/controlPlaneEndpoint/host", value: "10.0.0.1" },
      { op: "replace", path: "/spec/controlPlaneEndpoint/port", value: 6443 },
    ]);
    expect(endpointPatch({}, "10.0.0.1")).to.deep.equal([
      { op: "add", path: "/spec", value: { controlPlaneEndpoint: { host: "10.0.0.1", port: 6443 } } },
    ]);
  });

  it("reads who asks: the Cluster by its name, an infrastructure cluster by its label or else its own name", () => {
    const annotations = { [ENDPOINT_POOL_ANNOTATION]: POOL };
    expect(readEndpointRequest(object("Cluster", "a", { annotations }), true, "")).to.deep.include({
      clusterName: "a",
    });
    const labelled = object("Metal3Cluster", "a-x", { annotations, labels: { "cluster.x-k8s.io/cluster-name": "a" } });
    expect(readEndpointRequest(labelled, false, "")).to.deep.include({ clusterName: "a" });
    expect(readEndpointRequest(object("Metal3Cluster", "b", { annotations }), false, "")).to.deep.include({
      clusterName: "b",
    });
    expect(readEndpointRequest(object("Metal3Cluster", "", { annotations }), false, "")).to.include({ kind: "bad" });
  });
});
