import { expect } from "chai";
import type { IPAddressClaim, V1Beta1Condition } from "../../../api/capi/types.js";
import type { Condition, IPAddress, IPClaim, IPPool } from "../../../api/v1alpha1/types.js";
import { capiAddressToPool, capiClaimClusterName, claimStatus, desiredCapiAddress, desiredIPClaim, ownedBy, readyFromIPClaim, servesClaim } from "./translate.js";

const NOW = new Date("2026-11-22T10:00:00Z");
const claim = (over: Partial<IPAddressClaim["spec"]> = {}, meta: Partial<IPAddressClaim["metadata"]> = {}): IPAddressClaim => ({
  apiVersion: "ipam.cluster.x-k8s.io/v1beta2",
  kind: "IPAddressClaim",
  metadata: { name: "c1", namespace: "ns", uid: "uid-c1", ...meta },
  spec: { poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" }, ...over },
});
const pool = (clusterName?: string): IPPool => ({ metadata: { name: "p", namespace: "ns", uid: "uid-p" }, spec: { namePrefix: "p", ...(clusterName ? { clusterName } : {}) } });
const ipClaim = (status?: IPClaim["status"]): IPClaim => ({ metadata: { name: "c1", namespace: "ns" }, spec: { pool: { name: "p" } }, ...(status ? { status } : {}) });
const cond = (status: "True" | "False", reason: string, message = ""): Condition => ({ type: "Ready", status, reason, message, lastTransitionTime: "2026-01-01T00:00:00Z" });

describe("Cluster API translation", () => {
  describe("servesClaim (group and kind, not just the name)", () => {
    const rows: [string, IPAddressClaim["spec"]["poolRef"], boolean][] = [
      ["our pool", { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" }, true],
      ["in-cluster provider's pool of the same name", { apiGroup: "ipam.cluster.x-k8s.io", kind: "InClusterIPPool", name: "p" }, false],
      ["right group, other kind", { apiGroup: "ipam.metal3.io", kind: "GlobalIPPool", name: "p" }, false],
      ["no group", { kind: "IPPool", name: "p" }, false],
      ["empty name", { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "" }, false],
    ];
    for (const [what, poolRef, expected] of rows) it(what, () => expect(servesClaim(claim({ poolRef }))).to.equal(expected));
  });

  describe("capiClaimClusterName: spec.clusterName, else label, else pool", () => {
    const rows: [string, IPAddressClaim, IPPool | undefined, string | undefined][] = [
      ["field wins", claim({ clusterName: "a" }, { labels: { "cluster.x-k8s.io/cluster-name": "b" } }), pool("c"), "a"],
      ["label next", claim({}, { labels: { "cluster.x-k8s.io/cluster-name": "b" } }), pool("c"), "b"],
      ["pool last", claim(), pool("c"), "c"],
      ["none", claim(), pool(), undefined],
      ["no pool", claim(), undefined, undefined],
    ];
    for (const [what, c, p, expected] of rows) it(what, () => expect(capiClaimClusterName(c, p)).to.equal(expected));
  });

  it("desiredIPClaim carries name, labels, the ipAddress annotation and a controller owner reference", () => {
    const ip = desiredIPClaim(claim({}, { labels: { x: "y" }, annotations: { ipAddress: "10.0.0.5", other: "no" } }));
    expect(ip.metadata).to.deep.include({ name: "c1", namespace: "ns", labels: { x: "y" }, annotations: { ipAddress: "10.0.0.5" } });
    expect(ip.metadata.ownerReferences).to.deep.equal([
      { apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim", name: "c1", uid: "uid-c1", controller: true, blockOwnerDeletion: true },
    ]);
    expect(ip.spec).to.deep.equal({ pool: { name: "p" } });
    expect(ownedBy(ip, claim())).to.equal(true);
    expect(ownedBy(ip, claim({}, { uid: "another-incarnation" }))).to.equal(false);
    expect(desiredIPClaim(claim()).metadata.annotations).to.equal(undefined);
  });

  describe("desiredCapiAddress", () => {
    const address = (spec: Partial<IPAddress["spec"]>): IPAddress => ({ metadata: { name: "p-10-0-0-1" }, spec: { address: "10.0.0.1", pool: { name: "p" }, claim: { name: "c1" }, ...spec } });
    const rows: [string, Partial<IPAddress["spec"]>, object][] = [
      ["with gateway", { prefix: 24, gateway: "10.0.0.254", dnsServers: ["8.8.8.8"] }, { address: "10.0.0.1", prefix: 24, gateway: "10.0.0.254" }],
      ["without gateway (no DNS field exists)", { prefix: 26, dnsServers: ["8.8.8.8"] }, { address: "10.0.0.1", prefix: 26 }],
      ["no prefix becomes 0", {}, { address: "10.0.0.1", prefix: 0 }],
    ];
    for (const [what, spec, expected] of rows) {
      it(what, () => {
        const out = desiredCapiAddress(claim({}, { labels: { "cluster.x-k8s.io/cluster-name": "wl" } }), address(spec), pool(), "ipam.cluster.x-k8s.io/v1beta2");
        expect(out.spec).to.deep.equal({ claimRef: { name: "c1" }, poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" }, ...expected });
        expect(out.metadata.name).to.equal("c1");
        expect(out.metadata.finalizers).to.deep.equal(["ipam.metal3.io/ipaddress"]);
        expect(out.metadata.labels).to.deep.equal({ "cluster.x-k8s.io/cluster-name": "wl" });
        expect(out.metadata.ownerReferences?.map((o) => [o.kind, o.controller === true, o.blockOwnerDeletion])).to.deep.equal([["IPAddressClaim", true, true], ["IPPool", false, true]]);
      });
    }
  });

  describe("readyFromIPClaim maps our reasons onto the contract's", () => {
    const rows: [string, IPClaim | undefined, string, string][] = [
      ["no IPClaim yet", undefined, "False", "WaitingForIPClaim"],
      ["no condition yet", ipClaim(), "False", "WaitingForAddress"],
      ["allocated", ipClaim({ address: { name: "a" }, conditions: [cond("True", "Allocated", "Allocated 10.0.0.1")] }), "True", "Allocated"],
      ["exhausted", ipClaim({ errorMessage: "Exhausted IP Pools", conditions: [cond("False", "PoolExhausted")] }), "False", "PoolExhausted"],
      ["pool missing", ipClaim({ errorMessage: "IPPool p not found", conditions: [cond("False", "PoolNotFound")] }), "False", "PoolNotReady"],
      ["cluster missing", ipClaim({ conditions: [cond("False", "ClusterNotFound", "Cluster x not found")] }), "False", "PoolNotReady"],
      ["pool deleting", ipClaim({ conditions: [cond("False", "PoolNotReady", "deleting")] }), "False", "PoolNotReady"],
      ["requested address taken", ipClaim({ errorMessage: "Requested IP not available", conditions: [cond("False", "AllocationFailed")] }), "False", "AllocationFailed"],
    ];
    for (const [what, input, status, reason] of rows) {
      it(what, () => {
        const r = readyFromIPClaim(input);
        expect([r.status, r.reason]).to.deep.equal([status, reason]);
        expect(r.reason).to.match(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/);
        expect(r.message).to.not.equal("");
      });
    }
    it("carries the IPClaim's error message", () => {
      expect(readyFromIPClaim(ipClaim({ errorMessage: "Exhausted IP Pools", conditions: [cond("False", "PoolExhausted", "x")] })).message).to.equal("Exhausted IP Pools");
    });
  });

  describe("claimStatus per served version", () => {
    it("v1beta2: metav1 conditions in status.conditions", () => {
      const s = claimStatus(claim(), "v1beta2", "c1", { status: "True", reason: "Allocated", message: "ok" }, NOW);
      expect(s.addressRef).to.deep.equal({ name: "c1" });
      expect(s.conditions).to.deep.equal([{ type: "Ready", status: "True", reason: "Allocated", message: "ok", lastTransitionTime: "2026-11-22T10:00:00Z" }]);
      expect(s.v1beta2).to.equal(undefined);
    });
    it("v1beta1: Cluster API v1beta1 conditions, with metav1 ones under v1beta2", () => {
      const s = claimStatus(claim(), "v1beta1", undefined, { status: "False", reason: "PoolExhausted", message: "Exhausted IP Pools" }, NOW);
      expect(s.addressRef).to.equal(undefined);
      expect(s.conditions).to.deep.equal([{ type: "Ready", status: "False", severity: "Warning", reason: "PoolExhausted", message: "Exhausted IP Pools", lastTransitionTime: "2026-11-22T10:00:00Z" }]);
      expect(s.v1beta2?.conditions?.[0]).to.include({ type: "Ready", status: "False", reason: "PoolExhausted" });
    });
    it("keeps lastTransitionTime while the status does not flip", () => {
      const earlier = claim();
      earlier.status = { conditions: [{ type: "Ready", status: "False", reason: "PoolExhausted", message: "m", lastTransitionTime: "2026-01-01T00:00:00Z" }] };
      const s = claimStatus(earlier, "v1beta2", undefined, { status: "False", reason: "AllocationFailed", message: "n" }, NOW);
      expect((s.conditions as Condition[])[0]?.lastTransitionTime).to.equal("2026-01-01T00:00:00Z");
      const v1 = claimStatus({ ...earlier, status: { conditions: [{ type: "Ready", status: "False", lastTransitionTime: "2026-01-01T00:00:00Z" } satisfies V1Beta1Condition] } }, "v1beta1", "c1", { status: "True", reason: "Allocated", message: "ok" }, NOW);
      expect((v1.conditions as V1Beta1Condition[])[0]?.lastTransitionTime).to.equal("2026-11-22T10:00:00Z");
    });
  });

  it("capiAddressToPool maps only addresses of our pools", () => {
    const a = (apiGroup: string, kind: string) => ({ metadata: { namespace: "ns", name: "x" }, spec: { claimRef: { name: "x" }, poolRef: { apiGroup, kind, name: "p" }, address: "10.0.0.1", prefix: 24 } });
    expect(capiAddressToPool(a("ipam.metal3.io", "IPPool"))).to.deep.equal(["ns/p"]);
    expect(capiAddressToPool(a("ipam.cluster.x-k8s.io", "InClusterIPPool"))).to.deep.equal([]);
  });
});
