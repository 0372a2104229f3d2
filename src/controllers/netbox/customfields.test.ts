import { expect } from "chai";
import { customFieldsProblem, MAX_CUSTOM_FIELDS, MAX_CUSTOM_FIELD_VALUE } from "./customfields.js";

describe("NetBox pool custom fields (pure)", () => {
  it("takes strings, numbers and booleans under NetBox custom field names", () => {
    expect(customFieldsProblem(undefined)).to.equal(undefined);
    expect(customFieldsProblem({ owner: "team-a", Rack_12: 12, ratio: 0.5, managed: false })).to.equal(undefined);
    expect(customFieldsProblem({ long: "x".repeat(MAX_CUSTOM_FIELD_VALUE) })).to.equal(undefined);
  });

  it("refuses names NetBox refuses, other value types, long strings and too many fields, naming the field", () => {
    expect(customFieldsProblem({ "bad-name": "x" })).to.include('"bad-name"');
    expect(customFieldsProblem({ a__b: "x" })).to.include("custom field name");
    expect(customFieldsProblem({ ["n".repeat(51)]: "x" })).to.include("custom field name");
    expect(customFieldsProblem({ "": "x" })).to.include("custom field name");
    expect(customFieldsProblem({ nested: { x: 1 } })).to.include("a string, a number or a boolean");
    expect(customFieldsProblem({ none: null })).to.include("a string, a number or a boolean");
    expect(customFieldsProblem({ inf: Number.POSITIVE_INFINITY })).to.include("finite");
    expect(customFieldsProblem({ long: "x".repeat(MAX_CUSTOM_FIELD_VALUE + 1) })).to.include("longer than");
    const many = Object.fromEntries(Array.from({ length: MAX_CUSTOM_FIELDS + 1 }, (_, i) => [`f${i}`, i]));
    expect(customFieldsProblem(many)).to.include(`at most ${MAX_CUSTOM_FIELDS}`);
    expect(customFieldsProblem(["x"] as unknown as Record<string, unknown>)).to.include("must map");
  });

  it("bounds what it quotes of a hostile name", () => {
    expect(customFieldsProblem({ ["-".repeat(10_000)]: "x" })?.length).to.be.below(200);
  });
});
