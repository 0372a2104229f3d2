import { expect } from "chai";
import { allocationBody } from "./records.js";

describe("NetBox allocation body", () => {
  it("sends custom fields as NetBox's custom_fields, and none when the request has none", () => {
    const fields = { owner: "team-a", rack: 12, managed: true };
    expect(allocationBody({ description: "d", customFields: fields })).to.deep.equal({
      description: "d",
      custom_fields: fields,
    });
    expect(allocationBody({ description: "d" })).to.not.have.property("custom_fields");
  });
});
