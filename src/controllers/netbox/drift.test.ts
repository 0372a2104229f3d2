import { expect } from "chai";
import type { NetBoxAddress } from "../../netbox/client.js";
import {
  claimedCondition,
  CLAIMED_CONDITION,
  DRIFT_EXAMPLES,
  missingRecords,
  recordsCondition,
  RECORD_MISSING_REASON,
  unclaimedRecords,
  UNCLAIMED_REASON,
} from "./drift.js";

const record = (id: number, address: string, description: string): NetBoxAddress => ({
  id,
  address,
  description,
  dnsName: "",
  tags: ["metal3-ipam-ts"],
  status: "active",
});

/** Records by description, as the engine keeps them. */
function ownedOf(records: readonly NetBoxAddress[]): Map<string, NetBoxAddress[]> {
  const owned = new Map<string, NetBoxAddress[]>();
  for (const r of records) owned.set(r.description, [...(owned.get(r.description) ?? []), r]);
  return owned;
}

const describe_ = (namespace: string, claim: string): string => `IPAddressClaim ${namespace}/${claim}`;

describe("NetBox drift (pure)", () => {
  it("finds IPAddresses whose record is gone or holds another address, and none whose record is there", () => {
    const owned = ownedOf([
      record(1, "10.0.0.1/24", "IPAddressClaim ns/a"),
      record(2, "10.0.0.9/24", "IPAddressClaim ns/b"),
    ]);
    const bound = [
      { namespace: "ns", claim: "a", address: "10.0.0.1" },
      { namespace: "ns", claim: "b", address: "10.0.0.2" },
      { namespace: "ns", claim: "c", address: "10.0.0.3" },
    ];
    expect(missingRecords(owned, bound, describe_).map((m) => m.claim)).to.deep.equal(["b", "c"]);
  });

  it("finds records of ours that no live claim holds, lowest id first, duplicates included", () => {
    const owned = ownedOf([
      record(7, "10.0.0.7/24", "IPAddressClaim ns/gone"),
      record(3, "10.0.0.3/24", "IPAddressClaim ns/live"),
      record(5, "10.0.0.5/24", "IPAddressClaim ns/gone"),
    ]);
    const found = unclaimedRecords(owned, new Set(["IPAddressClaim ns/live"]));
    expect(found.map((r) => r.id)).to.deep.equal([5, 7]);
    expect(unclaimedRecords(owned, new Set(["IPAddressClaim ns/live", "IPAddressClaim ns/gone"]))).to.deep.equal([]);
  });

  it("says each kind of drift in its own condition, True when there is none", () => {
    expect(recordsCondition([]).status).to.equal("True");
    expect(claimedCondition([]).status).to.equal("True");
    const missing = recordsCondition([{ namespace: "ns", claim: "a", address: "10.0.0.1" }]);
    expect(missing).to.deep.include({ status: "False", reason: RECORD_MISSING_REASON });
    expect(missing.message).to.include("ns/a 10.0.0.1");
    const unclaimed = claimedCondition([record(9, "10.0.0.9/24", "IPAddressClaim ns/x")]);
    expect(unclaimed).to.deep.include({ type: CLAIMED_CONDITION, status: "False", reason: UNCLAIMED_REASON });
    expect(unclaimed.message).to.include('#9 10.0.0.9/24 "IPAddressClaim ns/x"');
    expect(unclaimed.message).to.include("left in NetBox");
  });

  it("names a bounded number of examples and counts the rest", () => {
    const many = Array.from({ length: 1000 }, (_, i) => record(i + 1, `10.0.${i >> 8}.${i & 255}/16`, `d-${i}`));
    const message = claimedCondition(many).message;
    expect(message.startsWith("1000 NetBox record(s)")).to.equal(true);
    expect(message.match(/#\d+ /g)).to.have.length(DRIFT_EXAMPLES);
    expect(message).to.include(`and ${1000 - DRIFT_EXAMPLES} more`);
    const bound = Array.from({ length: 1000 }, (_, i) => ({ namespace: "ns", claim: `c-${i}`, address: "10.0.0.1" }));
    expect(recordsCondition(bound).message.match(/ns\/c-/g)).to.have.length(DRIFT_EXAMPLES);
  });
});
