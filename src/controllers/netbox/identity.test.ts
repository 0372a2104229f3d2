import { expect } from "chai";
import {
  dnsNameOf,
  installationOfUid,
  keySuffix,
  legacyKey,
  mayTakeOver,
  ownerComments,
  parseKey,
  RECORD_ID_ANNOTATION,
  recordIdOf,
  recordKey,
  splitCidr,
} from "./identity.js";

describe("NetBox record identity (pure)", () => {
  it("keys a record by the claim's namespace and name and the installation", () => {
    expect(recordKey({ namespace: "ns", name: "m-0" }, "0a1b2c3d4e5f")).to.equal("IPAddressClaim ns/m-0 @0a1b2c3d4e5f");
    expect(legacyKey({ namespace: "ns", name: "m-0" })).to.equal("IPAddressClaim ns/m-0");
    // Distinct claims never share a key, even when one name is a prefix of the other; nor do two installations.
    const keys = [
      recordKey({ namespace: "ns", name: "m" }, "a"),
      recordKey({ namespace: "ns", name: "m-0" }, "a"),
      recordKey({ namespace: "ns", name: "m" }, "b"),
      recordKey({ namespace: "ns", name: "m" }, "ab"),
      legacyKey({ namespace: "ns", name: "m" }),
    ];
    expect(new Set(keys).size).to.equal(keys.length);
    // The suffix NetBox is asked to filter on ends every key of the installation and no other's.
    expect(keys.filter((k) => k.endsWith(keySuffix("b")))).to.deep.equal([keys[2]]);
  });

  it("parses keys back, with or without an installation; anything else is not a key", () => {
    expect(parseKey("IPAddressClaim ns/m-0 @0a1b2c3d4e5f")).to.deep.equal({
      namespace: "ns",
      name: "m-0",
      installation: "0a1b2c3d4e5f",
    });
    expect(parseKey("IPAddressClaim ns/m.0")).to.deep.equal({ namespace: "ns", name: "m.0" });
    for (const text of [
      "",
      "IPAddressClaim ns/m @",
      "IPAddressClaim ns/m @a b",
      "IPAddressClaim ns/m @a @b",
      "IPAddressClaim ns/m  @a",
      "ipaddressclaim ns/m",
      "IPAddressClaim ns/M",
      "IPAddressClaim ns/m/x",
      "IPAddressClaim /m",
      "IPAddressClaim ns/m extra",
      `IPAddressClaim ns/m @${"a".repeat(33)}`,
      `IPAddressClaim ns/${"m".repeat(100_000)}`,
    ])
      expect(parseKey(text), JSON.stringify(text.slice(0, 40))).to.equal(undefined);
    const key = recordKey({ namespace: "team-a", name: "node-1.x" }, "inst_1.A-b");
    expect(parseKey(key)).to.deep.equal({ namespace: "team-a", name: "node-1.x", installation: "inst_1.A-b" });
  });

  it("derives the installation from the kube-system uid: twelve hex digits, lower-cased", () => {
    expect(installationOfUid("3F1C9A0B-2D4E-4f60-8a7b-0123456789ab")).to.equal("3f1c9a0b2d4e");
    expect(installationOfUid("")).to.equal(undefined);
    expect(installationOfUid("not-a-uid-at-all")).to.equal(undefined);
  });

  it("reads the record id an IPAddress names; anything but a positive integer is none", () => {
    expect(recordIdOf({ [RECORD_ID_ANNOTATION]: "1234" })).to.equal(1234);
    for (const v of ["", "0", "-1", "1.5", "12a", " 12", "01", "9".repeat(17)])
      expect(recordIdOf({ [RECORD_ID_ANNOTATION]: v }), v).to.equal(undefined);
    expect(recordIdOf(undefined)).to.equal(undefined);
    expect(recordIdOf({})).to.equal(undefined);
  });

  describe("which records a bound claim may take over", () => {
    const me = "mine";
    const claim = { namespace: "ns", name: "m", address: "10.0.0.5", recordId: 7 as number | undefined };
    const record = (description: string, address = "10.0.0.5/24", id = 7) => ({ id, address, description });
    it("the record its IPAddress names, with its address and claim, whatever installation made it (a move)", () => {
      expect(mayTakeOver(record("IPAddressClaim ns/m @other"), claim, me)).to.equal(true);
      expect(mayTakeOver(record("IPAddressClaim ns/m"), claim, me)).to.equal(true);
    });
    it("never another record, another address, another claim, a record of ours, or a description not a key", () => {
      expect(mayTakeOver(record("IPAddressClaim ns/m @other", "10.0.0.5/24", 8), claim, me)).to.equal(false);
      expect(mayTakeOver(record("IPAddressClaim ns/m @other", "10.0.0.6/24"), claim, me)).to.equal(false);
      expect(mayTakeOver(record("IPAddressClaim ns/n @other"), claim, me)).to.equal(false);
      expect(mayTakeOver(record("IPAddressClaim other/m @other"), claim, me)).to.equal(false);
      expect(mayTakeOver(record("IPAddressClaim ns/m @mine"), claim, me)).to.equal(false);
      expect(mayTakeOver(record("made by hand for ns/m"), claim, me)).to.equal(false);
    });
    it("an IPAddress naming no record (made before ids): the legacy key or another installation's, same address", () => {
      const unnamed = { ...claim, recordId: undefined };
      expect(mayTakeOver(record("IPAddressClaim ns/m", "10.0.0.5/24", 99), unnamed, me)).to.equal(true);
      expect(mayTakeOver(record("IPAddressClaim ns/m @other", "10.0.0.5/24", 99), unnamed, me)).to.equal(true);
      expect(mayTakeOver(record("IPAddressClaim ns/m", "10.0.0.9/24", 99), unnamed, me)).to.equal(false);
    });
  });

  it("puts the Cluster and the pool in the comments, for people", () => {
    expect(ownerComments({ namespace: "ns", name: "m", cluster: "c1" }, "NetBoxIPPool p")).to.equal(
      "Allocated by metal3-ipam-ts for IPAddressClaim ns/m (Cluster c1, pool NetBoxIPPool p).",
    );
    expect(ownerComments({ namespace: "ns", name: "m", cluster: undefined }, "NetBoxIPPool p")).to.not.include(
      "Cluster",
    );
  });

  it("fills the DNS name template, lower-cased; none without a template", () => {
    const owner = { namespace: "NS", name: "Node-1", cluster: "c1" };
    expect(dnsNameOf("{name}.{cluster}.{namespace}.example.com", owner)).to.equal("node-1.c1.ns.example.com");
    expect(dnsNameOf("{name}.{cluster}.example.com", { ...owner, cluster: undefined })).to.equal("node-1..example.com");
    expect(dnsNameOf(undefined, owner)).to.equal(undefined);
    expect(dnsNameOf("", owner)).to.equal(undefined);
  });

  it("splits NetBox's address/length", () => {
    expect(splitCidr("10.0.0.5/24")).to.deep.equal({ address: "10.0.0.5", length: 24 });
    expect(splitCidr("2001:db8::5/64")).to.deep.equal({ address: "2001:db8::5", length: 64 });
    expect(splitCidr("10.0.0.5")).to.deep.equal({ address: "10.0.0.5", length: undefined });
    expect(splitCidr("10.0.0.5/x")).to.deep.equal({ address: "10.0.0.5", length: undefined });
  });
});
