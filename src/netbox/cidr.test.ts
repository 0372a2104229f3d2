import { expect } from "chai";
import { inRange, rangeToCidrs, usablePrefixSize } from "./cidr.js";

describe("NetBox client address arithmetic", () => {
  it("covers a range with the fewest CIDR blocks, exactly, lowest first", () => {
    expect(rangeToCidrs("10.0.1.10/24", "10.0.1.14/24")).to.deep.equal([
      "10.0.1.10/31",
      "10.0.1.12/31",
      "10.0.1.14/32",
    ]);
    expect(rangeToCidrs("10.0.0.0", "10.0.0.255")).to.deep.equal(["10.0.0.0/24"]);
    expect(rangeToCidrs("10.0.0.5", "10.0.0.5")).to.deep.equal(["10.0.0.5/32"]);
    expect(rangeToCidrs("0.0.0.0", "255.255.255.255")).to.deep.equal(["0.0.0.0/0"]);
    expect(rangeToCidrs("2001:db8::1", "2001:db8::4")).to.deep.equal([
      "2001:db8::1/128",
      "2001:db8::2/127",
      "2001:db8::4/128",
    ]);
    expect(() => rangeToCidrs("10.0.0.9", "10.0.0.1")).to.throw("not a range");
    expect(() => rangeToCidrs("10.0.0.1", "2001:db8::1")).to.throw("not a range");
  });

  it("says whether an address (mask ignored) lies within a range's bounds", () => {
    expect(inRange("10.0.1.10/24", "10.0.1.10/24", "10.0.1.14/24")).to.equal(true);
    expect(inRange("10.0.1.14/32", "10.0.1.10/24", "10.0.1.14/24")).to.equal(true);
    expect(inRange("10.0.1.15/24", "10.0.1.10/24", "10.0.1.14/24")).to.equal(false);
    expect(inRange("::a", "10.0.0.0", "10.0.0.20")).to.equal(false);
  });

  it("counts what available-ips can hand out of a prefix", () => {
    expect(usablePrefixSize("10.0.0.0/24", false)).to.equal(254);
    expect(usablePrefixSize("10.0.0.0/24", true)).to.equal(256);
    expect(usablePrefixSize("10.0.0.0/31", false)).to.equal(2);
    expect(usablePrefixSize("10.0.0.0/32", false)).to.equal(1);
    expect(usablePrefixSize("2001:db8::/120", false)).to.equal(255);
    expect(usablePrefixSize("2001:db8::/127", false)).to.equal(2);
    expect(usablePrefixSize("2001:db8::/64", false)).to.equal(Number.MAX_SAFE_INTEGER);
  });
});
