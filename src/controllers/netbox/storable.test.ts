import { expect } from "chai";
import { MAX_DESCRIPTION, MAX_DNS_NAME, unstorableReason } from "./storable.js";

describe("NetBox records a claim would get: what NetBox can store (pure)", () => {
  it("takes a description up to NetBox's 200 characters, counted as code points", () => {
    expect(unstorableReason({ description: "d".repeat(MAX_DESCRIPTION) })).to.equal(undefined);
    expect(unstorableReason({ description: "é".repeat(MAX_DESCRIPTION) })).to.equal(undefined);
    expect(unstorableReason({ description: "d".repeat(MAX_DESCRIPTION + 1) })).to.include(
      "201 characters and NetBox stores at most 200",
    );
  });

  it("takes no DNS name, or one of NetBox's DNS characters up to 255", () => {
    const ok = (dnsName: string): string | undefined => unstorableReason({ description: "d", dnsName });
    for (const name of ["", "m-0.c1.example.com", "m_0.example.com.", "*.example.com", "a".repeat(MAX_DNS_NAME)])
      expect(ok(name), name).to.equal(undefined);
    expect(ok("a".repeat(MAX_DNS_NAME + 1))).to.include("256 characters");
    for (const name of ["m 0.example.com", "m..example.com", ".example.com", "m.*.example.com", "ḿ.example.com"])
      expect(ok(name), name).to.include("is not one NetBox accepts");
  });
});
