import { expect } from "chai";
import { ENDPOINT_POOL_ANNOTATION } from "../ipam/endpoint.js";
import { MAX_HOLDERS_NAMED, MAX_NAMESPACE_POOLS, type Holder, type OwnClaim } from "../ipam/endpoint-guard.js";
import { silentLogger } from "../runtime/logger.js";
import type { AdmissionRequest, AdmissionResponse, Operation } from "./admission.js";
import { ENDPOINT_GUARD_PATHS, ENDPOINT_GUARD_ROUTES } from "./endpointguard.js";
import type { EndpointReads } from "./endpointreads.js";
import { staticLookup } from "./lookup.js";

const NS = "team";

/** Reads over fixed data; every call is counted, so tests see what a review read. */
function reads(
  holders: Record<string, Holder[]> = {},
  claims: Record<string, OwnClaim> = {},
  rule?: string,
): EndpointReads & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    holders: (address) => {
      calls.push(`holders ${address}`);
      return Promise.resolve(holders[address] ?? []);
    },
    endpointClaim: (namespace, name) => {
      calls.push(`claim ${namespace}/${name}`);
      return Promise.resolve(claims[`${namespace}/${name}`]);
    },
    namespaceRule: (namespace) => {
      calls.push(`namespace ${namespace}`);
      return Promise.resolve(rule);
    },
  };
}

const failing: EndpointReads = {
  holders: () => Promise.reject(new Error("the index of held addresses is not in sync yet")),
  endpointClaim: () => Promise.reject(new Error("connection refused")),
  namespaceRule: () => Promise.reject(new Error("connection refused")),
};

function object(name: string, host: string, meta: Record<string, unknown> = {}): unknown {
  return { metadata: { name, namespace: NS, ...meta }, spec: { controlPlaneEndpoint: { host, port: 6443 } } };
}

function request(
  kind: "Cluster" | "Metal3Cluster",
  operation: Operation,
  obj: unknown,
  old?: unknown,
): AdmissionRequest {
  const group = kind === "Cluster" ? "cluster.x-k8s.io" : "infrastructure.cluster.x-k8s.io";
  return {
    uid: "u1",
    kind: { group, version: "v1beta2", kind },
    namespace: NS,
    operation,
    object: obj,
    ...(old ? { oldObject: old } : {}),
  };
}

async function review(req: AdmissionRequest, r: EndpointReads | undefined): Promise<AdmissionResponse> {
  const path =
    req.kind.kind === "Cluster"
      ? ENDPOINT_GUARD_PATHS.validateClusterEndpoint
      : ENDPOINT_GUARD_PATHS.validateMetal3ClusterEndpoint;
  const route = ENDPOINT_GUARD_ROUTES.get(path)!;
  return await route.handle(req, {
    lookup: staticLookup([]),
    logger: silentLogger(),
    ...(r ? { endpoints: r } : {}),
  });
}

const endpointOf = (cluster: string): Holder => ({
  claimKind: "IPAddressClaim",
  namespace: NS,
  claimName: `${cluster}-control-plane-endpoint`,
  pool: "InClusterIPPool/vips",
});
const nic: Holder = { claimKind: "IPClaim", namespace: "machines", claimName: "worker-0-nic", pool: "IPPool/nics" };

describe("control-plane endpoint guard (handlers)", () => {
  it("refuses a host another claim holds, naming the holder, in the API server's Invalid shape", async () => {
    const r = reads({ "10.0.0.10": [endpointOf("first")], "10.0.0.20": [nic] });
    const second = await review(request("Cluster", "CREATE", object("second", "10.0.0.10")), r);
    expect(second.allowed).to.equal(false);
    expect(second.status?.code).to.equal(422);
    expect(second.status?.message).to.match(
      /^Cluster\.cluster\.x-k8s\.io "second" is invalid: spec\.controlPlaneEndpoint\.host: Invalid value: "10\.0\.0\.10": address 10\.0\.0\.10 is already held by IPAddressClaim team\/first-control-plane-endpoint \(pool InClusterIPPool\/vips\)/,
    );
    const onNic = await review(request("Metal3Cluster", "CREATE", object("m3", "10.0.0.20")), r);
    expect(onNic.status?.message).to.contain("IPClaim machines/worker-0-nic (pool IPPool/nics)");
  });

  it("compares addresses in canonical form", async () => {
    const r = reads({ "fd00::a": [endpointOf("first")] });
    const res = await review(request("Cluster", "CREATE", object("second", "fd00:0:0::A")), r);
    expect(res.allowed).to.equal(false);
    expect(r.calls).to.include("holders fd00::a");
  });

  it("names at most a few holders and counts the rest", async () => {
    const many = Array.from({ length: MAX_HOLDERS_NAMED + 3 }, (_, i) => endpointOf(`c${i}`));
    const res = await review(request("Cluster", "CREATE", object("x", "10.0.0.1")), reads({ "10.0.0.1": many }));
    expect(res.status?.message).to.contain("and 3 more");
    expect(res.status?.message).to.not.contain(`c${MAX_HOLDERS_NAMED}-control`);
  });

  it("admits the cluster's own endpoint claim's address: Cluster by name, Metal3Cluster by label or owner", async () => {
    const r = reads({ "10.0.0.10": [endpointOf("first")] });
    expect((await review(request("Cluster", "CREATE", object("first", "10.0.0.10")), r)).allowed).to.equal(true);
    const labelled = object("first-m3", "10.0.0.10", { labels: { "cluster.x-k8s.io/cluster-name": "first" } });
    expect((await review(request("Metal3Cluster", "CREATE", labelled), r)).allowed).to.equal(true);
    const owned = object("first-m3", "10.0.0.10", { ownerReferences: [{ kind: "Cluster", name: "first" }] });
    expect((await review(request("Metal3Cluster", "CREATE", owned), r)).allowed).to.equal(true);
    const stranger = object("first-m3", "10.0.0.10");
    expect((await review(request("Metal3Cluster", "CREATE", stranger), r)).allowed).to.equal(false);
  });

  it("leaves DNS hosts alone, reading nothing", async () => {
    const r = reads({}, {}, "InClusterIPPool/vips");
    const res = await review(request("Cluster", "CREATE", object("c", "api.example.test")), r);
    expect(res.allowed).to.equal(true);
    expect(r.calls).to.deep.equal([]);
  });

  it("fails closed: a failed read refuses with 500 and retry later; without reads too", async () => {
    for (const r of [failing, undefined]) {
      const res = await review(request("Cluster", "CREATE", object("c", "10.0.0.1")), r);
      expect(res.allowed).to.equal(false);
      expect(res.status?.code).to.equal(500);
      expect(res.status?.message).to.match(/retry later$/);
    }
  });

  it("allows an UPDATE that keeps the host at once, even one held elsewhere (Cluster API's own writes never bounce)", async () => {
    const r = reads({ "10.0.0.10": [endpointOf("first")] });
    const old = object("legacy", "10.0.0.10");
    const res = await review(
      request("Cluster", "UPDATE", object("legacy", "10.0.0.10", { labels: { a: "b" } }), old),
      r,
    );
    expect(res.allowed).to.equal(true);
    expect(r.calls).to.deep.equal([]);
  });

  it("refuses a host change while the endpoint claim is bound to the old host, saying how to move", async () => {
    const bound: OwnClaim = { deleting: false, pool: "InClusterIPPool/vips", address: "10.0.0.10" };
    const claims = { [`${NS}/first-control-plane-endpoint`]: bound };
    const old = object("first", "10.0.0.10");
    const moved = await review(request("Cluster", "UPDATE", object("first", "10.0.0.11"), old), reads({}, claims));
    expect(moved.allowed).to.equal(false);
    expect(moved.status?.message).to.contain(
      `first remove its annotation ${ENDPOINT_POOL_ANNOTATION} and delete IPAddressClaim team/first-control-plane-endpoint, then change the host`,
    );
    const emptied = await review(request("Cluster", "UPDATE", object("first", ""), old), reads({}, claims));
    expect(emptied.allowed).to.equal(false);
    const releasing = { [`${NS}/first-control-plane-endpoint`]: { ...bound, deleting: true } };
    expect(
      (await review(request("Cluster", "UPDATE", object("first", "10.0.0.11"), old), reads({}, releasing))).allowed,
    ).to.equal(true);
    expect(
      (await review(request("Cluster", "UPDATE", object("first", "10.0.0.11"), old), reads({}, {}))).allowed,
    ).to.equal(true);
    // Cluster API copies the infrastructure cluster's endpoint into an empty one: not a move.
    const filled = await review(
      request("Cluster", "UPDATE", object("first", "10.0.0.10"), object("first", "")),
      reads({}, claims),
    );
    expect(filled.allowed).to.equal(true);
  });

  describe("the namespace's endpoint rule", () => {
    const rule = "InClusterIPPool/vips, GlobalInClusterIPPool/dc1";
    const own = (pool: string, address: string): Record<string, OwnClaim> => ({
      [`${NS}/c-control-plane-endpoint`]: { deleting: false, pool, address },
    });

    it("admits a host its own claim holds from a listed pool, refuses one from another pool or typed in", async () => {
      const listed = reads({}, own("GlobalInClusterIPPool/dc1", "10.0.0.5"), rule);
      expect((await review(request("Cluster", "CREATE", object("c", "10.0.0.5")), listed)).allowed).to.equal(true);
      const other = reads({}, own("InClusterIPPool/other", "10.0.0.5"), rule);
      const refused = await review(request("Cluster", "CREATE", object("c", "10.0.0.5")), other);
      expect(refused.allowed).to.equal(false);
      expect(refused.status?.message).to.contain(
        "takes control-plane endpoints only from InClusterIPPool/vips, GlobalInClusterIPPool/dc1",
      );
      const typed = await review(request("Cluster", "CREATE", object("c", "10.0.0.6")), listed);
      expect(typed.allowed).to.equal(false);
    });

    it("with no host yet, requires the pool annotation to name a listed pool when it names one", async () => {
      const r = reads({}, {}, rule);
      const asks = (pool: string) => object("c", "", { annotations: { [ENDPOINT_POOL_ANNOTATION]: pool } });
      expect((await review(request("Cluster", "CREATE", asks("InClusterIPPool/vips")), r)).allowed).to.equal(true);
      const other = await review(request("Cluster", "CREATE", asks("IPPool/other")), r);
      expect(other.allowed).to.equal(false);
      expect((await review(request("Cluster", "CREATE", object("c", "")), r)).allowed).to.equal(true);
    });

    it("refuses every endpoint while the rule is malformed or too long, saying so", async () => {
      const tooMany = Array.from({ length: MAX_NAMESPACE_POOLS + 1 }, (_, i) => `IPPool/p${i}`).join(",");
      for (const bad of ["vips", "Secret/x", "", tooMany, `IPPool/${"a".repeat(20_000)}`]) {
        const res = await review(request("Cluster", "CREATE", object("c", "10.0.0.5")), reads({}, {}, bad));
        expect(res.allowed, bad.slice(0, 20)).to.equal(false);
        expect(res.status?.message, bad.slice(0, 20)).to.contain("no endpoint is admitted there until it is fixed");
      }
    });
  });

  it("denies with 400 what is not its kind or not an object, and allows DELETE", async () => {
    const wrong = {
      ...request("Cluster", "CREATE", object("c", "10.0.0.1")),
      kind: { group: "", version: "v1", kind: "Pod" },
    };
    expect((await review(wrong, reads())).status?.code).to.equal(400);
    expect((await review(request("Cluster", "CREATE", "not an object"), reads())).status?.code).to.equal(400);
    expect((await review(request("Cluster", "DELETE", undefined), reads())).allowed).to.equal(true);
  });
});
