import { expect } from "chai";
import { canonicalAddress, formatAddress, maxValue, parseAddress, parseSubnet, sameAddress } from "./address.js";

describe("address", () => {
  describe("parseAddress accepts the CRD grammar", () => {
    const valid: Array<[string, 4 | 6, bigint]> = [
      ["0.0.0.0", 4, 0n],
      ["255.255.255.255", 4, 0xffffffffn],
      ["192.168.0.15", 4, 0xc0a8000fn],
      ["10.0.0.1", 4, 0x0a000001n],
      ["::", 6, 0n],
      ["::1", 6, 1n],
      ["1::", 6, 1n << 112n],
      ["2001:db8::1", 6, 0x20010db8000000000000000000000001n],
      ["2001:db8::0005", 6, 0x20010db8000000000000000000000005n],
      ["2001:DB8::ABCD", 6, 0x20010db800000000000000000000abcdn],
      ["1:2:3:4:5:6:7:8", 6, 0x00010002000300040005000600070008n],
      ["1:2:3:4:5:6:7::", 6, 0x00010002000300040005000600070000n],
      ["::2:3:4:5:6:7:8", 6, 0x00000002000300040005000600070008n],
      ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 6, maxValue(6)],
      ["::ffff:c000:201", 6, 0xffffc0000201n],
    ];
    for (const [text, family, value] of valid) {
      it(`${text} → IPv${family} ${value.toString(16)}`, () => {
        expect(parseAddress(text)).to.deep.equal({ family, value });
      });
    }
  });

  describe("parseAddress rejects what the CRD rejects", () => {
    const invalid = [
      "",
      " 10.0.0.1",
      "10.0.0.1 ",
      "010.0.0.1",
      "10.0.0.01",
      "256.0.0.1",
      "10.0.0",
      "10.0.0.0.1",
      "1.2.3.-4",
      "10.0.0.1/24",
      "::ffff:1.2.3.4",
      "2001:db8::1.2.3.4",
      "fe80::1%eth0",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3:4:5:6:7",
      "1::2::3",
      ":::",
      "1:::2",
      ":1:2:3:4:5:6:7",
      "1:2:3:4:5:6:7:",
      "12345::",
      "g::1",
      "1:2:3:4:5:6:7:8::",
      "::1:2:3:4:5:6:7:8",
      "0x0a.0.0.1",
    ];
    for (const text of invalid) {
      it(JSON.stringify(text), () => {
        expect(parseAddress(text)).to.equal(undefined);
      });
    }
  });

  describe("formatAddress is canonical (spec §1.4)", () => {
    const cases: Array<[string, string]> = [
      ["192.168.0.1", "192.168.0.1"],
      ["2001:DB8::0005", "2001:db8::5"],
      ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
      // longest run wins
      ["2001:0:0:1:0:0:0:1", "2001:0:0:1::1"],
      // leftmost on ties
      ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
      // a single zero group is not compressed
      ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"],
      ["0:0:0:0:0:0:0:0", "::"],
      ["0:0:0:0:0:0:0:1", "::1"],
      ["1:0:0:0:0:0:0:0", "1::"],
      ["1:0:1:0:1:0:1:0", "1:0:1:0:1:0:1:0"],
      ["0:1:0:1:0:1:0:1", "0:1:0:1:0:1:0:1"],
      ["::ffff:c000:201", "::ffff:c000:201"],
      ["FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    ];
    for (const [input, expected] of cases) {
      it(`${input} → ${expected}`, () => {
        const a = parseAddress(input);
        expect(a).to.not.equal(undefined);
        expect(formatAddress(a!)).to.equal(expected);
        expect(canonicalAddress(input)).to.equal(expected);
      });
    }
    it("round-trips", () => {
      for (const [, canonical] of cases) expect(canonicalAddress(canonical)).to.equal(canonical);
    });
    it("canonicalAddress of garbage is undefined", () => {
      expect(canonicalAddress("nope")).to.equal(undefined);
    });
  });

  it("compares as numbers", () => {
    expect(sameAddress(parseAddress("2001:db8::0005")!, parseAddress("2001:db8::5")!)).to.equal(true);
    expect(sameAddress(parseAddress("0.0.0.1")!, parseAddress("::1")!)).to.equal(false);
  });

  it("maxValue", () => {
    expect(maxValue(4)).to.equal(4294967295n);
    expect(maxValue(6)).to.equal((1n << 128n) - 1n);
  });

  describe("parseSubnet", () => {
    const cases: Array<[string, string, number, bigint, bigint]> = [
      ["192.168.0.0/30", "192.168.0.0", 30, 0xc0a80000n, 0xc0a80003n],
      ["192.168.0.10/24", "192.168.0.10", 24, 0xc0a80000n, 0xc0a800ffn],
      ["10.0.0.7/32", "10.0.0.7", 32, 0x0a000007n, 0x0a000007n],
      ["10.1.2.3/0", "10.1.2.3", 0, 0n, 0xffffffffn],
      ["2001:db8::/64", "2001:db8::", 64, 0x20010db8n << 96n, (0x20010db8n << 96n) | 0xffffffffffffffffn],
      ["2001:db8::1/128", "2001:db8::1", 128, (0x20010db8n << 96n) | 1n, (0x20010db8n << 96n) | 1n],
      ["2001:db8::/08", "2001:db8::", 8, 0x20n << 120n, (0x21n << 120n) - 1n],
    ];
    for (const [text, written, len, first, last] of cases) {
      it(text, () => {
        const s = parseSubnet(text);
        expect(s).to.not.equal(undefined);
        expect(formatAddress(s!.network)).to.equal(written);
        expect(s!.prefixLength).to.equal(len);
        expect(s!.first).to.equal(first);
        expect(s!.last).to.equal(last);
      });
    }
    for (const bad of [
      "10.0.0.0",
      "10.0.0.0/33",
      "10.0.0.0/024",
      "10.0.0.0/08",
      "10.0.0.0/-1",
      "2001:db8::/129",
      "2001:db8::/0128",
      "10.0.0.0/24/1",
      "10.0.0.0/",
      "/24",
      "010.0.0.0/8",
      "10.0.0.0 /8",
    ]) {
      it(`rejects ${JSON.stringify(bad)}`, () => {
        expect(parseSubnet(bad)).to.equal(undefined);
      });
    }
  });
});
