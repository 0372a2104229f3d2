/** Decisions over control-plane endpoint claims (e2e/endpoint.test.ts runs them against a real API server). */
import { expect } from "chai";
import type { IPAddressClaim } from "../../../api/capi/types.js";
import { ENDPOINT_CLAIM_LABEL, ENDPOINT_PENDING_LABEL } from "../../ipam/endpoint.js";
import type { Cluster } from "../clusters.js";
import { endpointAllocationPause, planEndpointClaim, type EndpointClaimInput } from "./endpoint.js";

const CREATED = "2026-01-01T00:00:00Z";
const GRACE = 600_000;

function claim(meta: Partial<IPAddressClaim["metadata"]> = {}): IPAddressClaim {
  return {
    metadata: {
      name: "c-control-plane-endpoint",
      namespace: "ns",
      creationTimestamp: CREATED,
      labels: { "cluster.x-k8s.io/cluster-name": "c", [ENDPOINT_CLAIM_LABEL]: "" },
      ...meta,
    },
    spec: { poolRef: { kind: "IPPool", name: "p" } },
  };
}

const cluster = (spec: Cluster["spec"] = {}, meta: Partial<Cluster["metadata"]> = {}): Cluster => ({
  metadata: { name: "c", namespace: "ns", uid: "cluster-uid", ...meta },
  spec,
});

function plan(input: Partial<EndpointClaimInput>, afterMs = 0): ReturnType<typeof planEndpointClaim> {
  return planEndpointClaim({
    claim: claim(),
    cluster: undefined,
    clusterApiVersion: "cluster.x-k8s.io/v1beta2",
    now: new Date(Date.parse(CREATED) + afterMs),
    graceMs: GRACE,
    ...input,
  });
}

describe("control-plane endpoint claims", () => {
  it("owned by their Cluster once it exists, once", () => {
    expect(plan({ cluster: cluster() })).to.deep.equal({
      kind: "own",
      owner: { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: "c", uid: "cluster-uid" },
    });
    const owned = claim({
      ownerReferences: [{ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: "c", uid: "cluster-uid" }],
    });
    expect(plan({ claim: owned, cluster: cluster() }).kind).to.equal("none");
  });

  it("owned and no longer pending: a claim that came owned but still carries the pending label is owned again without a second owner", () => {
    const labels = {
      "cluster.x-k8s.io/cluster-name": "c",
      [ENDPOINT_CLAIM_LABEL]: "",
      [ENDPOINT_PENDING_LABEL]: "IPPool.p",
    };
    const ownerReferences = [
      { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: "c", uid: "cluster-uid" },
    ];
    expect(plan({ claim: claim({ labels, ownerReferences }), cluster: cluster() })).to.deep.equal({ kind: "own" });
    expect(plan({ claim: claim({ labels }), cluster: cluster() })).to.have.property("owner");
  });

  it("untouched while the Cluster is paused (spec or annotation) or deleting, or the claim is leaving", () => {
    expect(plan({ cluster: cluster({ paused: true }) }).kind).to.equal("none");
    expect(plan({ cluster: cluster({}, { annotations: { "cluster.x-k8s.io/paused": "" } }) }).kind).to.equal("none");
    expect(plan({ cluster: cluster({}, { deletionTimestamp: CREATED }) }).kind).to.equal("none");
    expect(plan({ claim: claim({ deletionTimestamp: CREATED }) }, GRACE * 2).kind).to.equal("none");
  });

  it("without its Cluster: waits out the grace from its creation, then deleted", () => {
    expect(plan({}, 1_000)).to.deep.equal({ kind: "wait", ms: GRACE - 1_000 });
    expect(plan({}, GRACE)).to.deep.equal({ kind: "delete" });
  });

  it("left to the garbage collector when its owning Cluster is gone; other claims are not ours", () => {
    const owned = claim({ ownerReferences: [{ apiVersion: "v", kind: "Cluster", name: "c", uid: "old" }] });
    expect(plan({ claim: owned }, GRACE * 2).kind).to.equal("none");
    expect(plan({ claim: claim({ labels: { "cluster.x-k8s.io/cluster-name": "c" } }) }, GRACE * 2).kind).to.equal(
      "none",
    );
  });

  it("allocation: a missing Cluster holds an ordinary claim, not an endpoint claim; a paused one holds both", () => {
    const missing = { paused: false as const, clusterMissing: "c" };
    expect(endpointAllocationPause(claim(), missing)).to.deep.equal({ paused: false });
    const plain = claim({ labels: { "cluster.x-k8s.io/cluster-name": "c" } });
    expect(endpointAllocationPause(plain, missing)).to.equal(missing);
    const paused = { paused: true as const, why: "Cluster c is paused" };
    expect(endpointAllocationPause(claim(), paused)).to.equal(paused);
  });
});
