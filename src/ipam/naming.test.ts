import { expect } from "chai";
import { ipAddressName } from "./naming.js";

describe("ipAddressName (spec §3.1)", () => {
  const cases: Array<[string, string, string]> = [
    ["abc", "192.168.0.15", "abc-192-168-0-15"],
    ["pfx", "2001:db8::1", "pfx-2001-db8--1"],
    ["pfx", "2001:DB8::0001", "pfx-2001-db8--1"],
    ["pfx", "2001:db8::", "pfx-2001-db8"],
    ["pfx", "::", "pfx"],
    ["pfx", "::1", "pfx---1"],
    ["p-", "10.0.0.1", "p--10-0-0-1"],
    ["pfx", "not-an-ip:", "pfx-not-an-ip"],
  ];
  for (const [prefix, address, expected] of cases) {
    it(`${prefix} + ${address} → ${expected}`, () => {
      expect(ipAddressName(prefix, address)).to.equal(expected);
    });
  }
});
