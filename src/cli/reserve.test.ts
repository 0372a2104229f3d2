import { expect } from "chai";
import { ENDPOINT_CLAIM_LABEL } from "../ipam/endpoint.js";
import { capiAddress, capiClaim, inventory, NS } from "./fixtures.testutil.js";
import {
  claimRole,
  parseOwnerArgument,
  renderReservation,
  reservationClaim,
  reservationDocument,
  RESERVATION_LABEL,
} from "./reserve.js";
import { renderWho, targetsForAddress, whoDocument } from "./who.js";

const owner = { apiVersion: "v1", kind: "Service", name: "ingress", uid: "u-1" };

describe("cli/reserve", () => {
  it("builds a labelled claim of the pool's group, owned (not controlled) by the owner, asking for the address", () => {
    const c = reservationClaim(
      "ipam.cluster.x-k8s.io/v1beta2",
      NS,
      "vip",
      { kind: "IPPool", name: "p" },
      owner,
      "10.0.0.7",
    );
    expect(c.metadata).to.deep.equal({
      name: "vip",
      namespace: NS,
      labels: { [RESERVATION_LABEL]: "" },
      annotations: { ipAddress: "10.0.0.7" },
      ownerReferences: [{ ...owner, blockOwnerDeletion: false }],
    });
    expect(c.spec.poolRef).to.deep.equal({ apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" });
    const bare = reservationClaim("v", NS, "vip", { kind: "GlobalNetBoxIPPool", name: "g" }, undefined, undefined);
    expect(bare.metadata).to.not.have.any.keys("ownerReferences", "annotations");
    expect(bare.spec.poolRef.apiGroup).to.equal("netbox.ipam.cluster.x-k8s.io");
  });

  it("says when a reservation has no owner and how it is released", () => {
    const r = {
      namespace: NS,
      name: "vip",
      pool: { kind: "InClusterIPPool" as const, name: "vips" },
      address: "10.0.0.7",
    };
    expect(renderReservation(r)).to.equal(
      `10.0.0.7\nheld by IPAddressClaim ${NS}/vip from InClusterIPPool ${NS}/vips\nno owner: it stays held until "kubectl ipam release vip -n ${NS}" (give --owner to tie it to an object)`,
    );
    expect(renderReservation({ ...r, owner })).to.contain("owned by Service ingress: released when it is deleted");
    expect(reservationDocument({ ...r, owner })).to.deep.include({
      address: "10.0.0.7",
      owner: { apiVersion: "v1", kind: "Service", name: "ingress" },
    });
  });

  it("reads --owner as KIND/NAME only", () => {
    expect(parseOwnerArgument("service/ingress")).to.deep.equal({ resource: "service", name: "ingress" });
    for (const bad of ["ingress", "/x", "svc/", "a/b/c"]) expect(parseOwnerArgument(bad), bad).to.equal(undefined);
  });

  it("who marks reservations and control-plane endpoint claims", () => {
    expect(claimRole({ [RESERVATION_LABEL]: "" })).to.equal("reservation");
    expect(claimRole({ [ENDPOINT_CLAIM_LABEL]: "" })).to.equal("control-plane-endpoint");
    expect(claimRole({})).to.equal(undefined);
    const inv = inventory({
      capiClaims: [
        capiClaim("vip", "p", { metadata: { labels: { [RESERVATION_LABEL]: "" } } }),
        capiClaim("c1-control-plane-endpoint", "p", { metadata: { labels: { [ENDPOINT_CLAIM_LABEL]: "" } } }),
      ],
      capiAddresses: [capiAddress("p", "10.0.0.7", "vip"), capiAddress("p", "10.0.0.8", "c1-control-plane-endpoint")],
    });
    const reservation = {
      query: "10.0.0.7",
      by: "address" as const,
      freeIn: [],
      entries: targetsForAddress("10.0.0.7", inv).map((t) => ({ ...t, owners: [] })),
    };
    expect(renderWho(reservation)).to.match(/^role\s+reservation \(kubectl ipam reserve/m);
    expect(whoDocument(reservation)).to.have.nested.property("holders[0].role", "reservation");
    const endpoint = {
      ...reservation,
      query: "10.0.0.8",
      entries: targetsForAddress("10.0.0.8", inv).map((t) => ({ ...t, owners: [] })),
    };
    expect(renderWho(endpoint)).to.match(/^role\s+control-plane endpoint$/m);
    const plain = inventory({ capiClaims: [capiClaim("x", "p")], capiAddresses: [capiAddress("p", "10.0.0.9", "x")] });
    const none = {
      ...reservation,
      query: "10.0.0.9",
      entries: targetsForAddress("10.0.0.9", plain).map((t) => ({ ...t, owners: [] })),
    };
    expect(renderWho(none)).to.not.match(/^role/m);
    expect(whoDocument(none)).to.not.have.nested.property("holders[0].role");
  });
});
