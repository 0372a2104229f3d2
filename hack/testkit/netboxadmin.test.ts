/** The admin's fresh address blocks: never overlapping, aligned so NetBox takes them as prefixes. No NetBox needed. */
import { expect } from "chai";
import { NetBoxAdmin } from "./netboxadmin.js";

describe("NetBoxAdmin's fresh blocks", () => {
  const admin = (): NetBoxAdmin => new NetBoxAdmin("http://127.0.0.1:1", () => "");

  it("aligns a /22 on its boundary and never hands out a /24 twice", () => {
    const a = admin();
    expect(a.fresh24().cidr).to.equal("10.0.1.0/24");
    expect(a.freshBlock(22)).to.equal("10.0.4.0/22");
    expect(a.fresh24().cidr).to.equal("10.0.8.0/24");
    expect(a.freshBlock(22)).to.equal("10.0.12.0/22");
    expect(a.freshBlock(24)).to.equal("10.0.16.0/24");
    expect(a.freshBlock(16)).to.equal("10.1.0.0/16");
    expect(a.fresh24().cidr).to.equal("10.2.0.0/24");
  });

  it("refuses lengths it cannot align", () => {
    expect(() => admin().freshBlock(25)).to.throw(/16 to 24/);
    expect(() => admin().freshBlock(15)).to.throw(/16 to 24/);
  });
});
