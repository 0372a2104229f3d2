import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim } from "../../../api/capi/types.js";
import type { IPAddress, IPClaim } from "../../../api/v1alpha1/types.js";
import { pendingClaimsByKind } from "./status.js";

const LEAVING = { deletionTimestamp: "2025-01-01T00:00:00Z" };

function ipClaim(name: string, extra: Partial<IPClaim["metadata"]> = {}): IPClaim {
  return { metadata: { name, namespace: "ns", ...extra }, spec: { pool: { name: "p" } } };
}

function capiClaim(name: string, extra: Partial<IPAddressClaim["metadata"]> = {}): IPAddressClaim {
  return { metadata: { name, namespace: "ns", ...extra }, spec: { poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" } } };
}

function addressFor(claimName: string, address: string): IPAddress {
  return { metadata: { name: `p-${address}`, namespace: "ns" }, spec: { address, prefix: 24, pool: { name: "p", namespace: "ns" }, claim: { name: claimName, namespace: "ns" } } };
}

function capiAddressFor(claimName: string, address: string): CapiIPAddress {
  return { metadata: { name: `p-${address}`, namespace: "ns" }, spec: { address, prefix: 24, poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" }, claimRef: { name: claimName } } };
}

describe("pending claims of a pool", () => {
  it("counts live claims that no record of their own kind names, per kind", () => {
    const counts = pendingClaimsByKind({
      claims: [ipClaim("bound"), ipClaim("waiting-1"), ipClaim("waiting-2"), ipClaim("leaving", LEAVING), ipClaim("shared")],
      addresses: [addressFor("bound", "10.0.0.1")],
      capiClaims: [capiClaim("capi-bound"), capiClaim("capi-waiting"), capiClaim("capi-leaving", LEAVING), capiClaim("shared")],
      capiAddresses: [capiAddressFor("capi-bound", "10.0.0.2"), capiAddressFor("shared", "10.0.0.3")],
    });
    // "shared" is two claims: the IPAddressClaim is bound, the IPClaim of the same name still waits.
    expect(counts).to.deep.equal({ IPClaim: 3, IPAddressClaim: 1 });
  });

  it("counts nothing for an empty pool", () => {
    expect(pendingClaimsByKind({ claims: [], addresses: [addressFor("x", "10.0.0.1")], capiClaims: [], capiAddresses: [] })).to.deep.equal({ IPClaim: 0, IPAddressClaim: 0 });
  });
});
