import { expect } from "chai";
import { gatewayAmong, subnetOf } from "./gateway.js";

describe("NetBox gateway rule (pure)", () => {
  it("takes the lowest address of the pool's family among the tagged records, masks ignored", () => {
    const records = [{ address: "10.0.0.254/24" }, { address: "2001:db8::1/64" }, { address: "10.0.0.129/25" }];
    expect(gatewayAmong(records, 4)).to.equal("10.0.0.129");
    expect(gatewayAmong(records, 6)).to.equal("2001:db8::1");
    expect(gatewayAmong([], 4)).to.equal(undefined);
    expect(gatewayAmong([{ address: "garbage" }], 4)).to.equal(undefined);
  });

  it("names the subnet a range lies in by its first address and the range's mask", () => {
    expect(subnetOf({ family: 4, first: (10n << 24n) | (1n << 8n) | 10n, prefixLength: 24 })).to.equal("10.0.1.0/24");
    expect(subnetOf({ family: 4, first: (10n << 24n) | 77n, prefixLength: 28 })).to.equal("10.0.0.64/28");
    expect(subnetOf({ family: 6, first: (0x20010db8n << 96n) | 0x10n, prefixLength: 64 })).to.equal("2001:db8::/64");
  });
});
