import { expect } from "chai";
import type { IPAddress, IPClaim } from "../../../api/v1alpha1/types.js";
import { claimKindOf, pendingClaimsByKind } from "./status.js";

function ipClaim(name: string, extra: Partial<IPClaim["metadata"]> = {}): IPClaim {
  return { apiVersion: "ipam.metal3.io/v1alpha1", kind: "IPClaim", metadata: { name, namespace: "ns", ...extra }, spec: { pool: { name: "p" } } };
}

function mirror(name: string): IPClaim {
  return ipClaim(name, { ownerReferences: [{ apiVersion: "ipam.cluster.x-k8s.io/v1beta2", kind: "IPAddressClaim", name, uid: "u", controller: true }] });
}

function addressFor(claimName: string, address: string): IPAddress {
  return {
    apiVersion: "ipam.metal3.io/v1alpha1",
    kind: "IPAddress",
    metadata: { name: `p-${address}`, namespace: "ns" },
    spec: { address, prefix: 24, pool: { name: "p", namespace: "ns" }, claim: { name: claimName, namespace: "ns" } },
  };
}

describe("pending claims of a pool", () => {
  it("tells IPClaims from the IPClaims that carry a Cluster API IPAddressClaim", () => {
    expect(claimKindOf(ipClaim("a"))).to.equal("IPClaim");
    expect(claimKindOf(mirror("b"))).to.equal("IPAddressClaim");
    // Only the controller owner decides: a claim merely owned by an IPAddressClaim is still an IPClaim.
    expect(claimKindOf(ipClaim("c", { ownerReferences: [{ apiVersion: "v", kind: "IPAddressClaim", name: "c", uid: "u" }] }))).to.equal("IPClaim");
  });

  it("counts live claims that no IPAddress names, per kind", () => {
    const claims = [ipClaim("bound"), ipClaim("waiting-1"), ipClaim("waiting-2"), mirror("capi-waiting"), mirror("capi-bound"), ipClaim("leaving", { deletionTimestamp: "2025-01-01T00:00:00Z" })];
    const addresses = [addressFor("bound", "10.0.0.1"), addressFor("capi-bound", "10.0.0.2")];
    expect(pendingClaimsByKind(claims, addresses)).to.deep.equal({ IPClaim: 2, IPAddressClaim: 1 });
    expect(pendingClaimsByKind([], addresses)).to.deep.equal({ IPClaim: 0, IPAddressClaim: 0 });
  });
});
