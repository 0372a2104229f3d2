/** Tables for the type drift reader and comparison: tiny inline sources that differ by one field or one `?`. */
import { expect } from "chai";
import {
  collectFields,
  compareField,
  compareFields,
  isBelow,
  parseSource,
  type Field,
  type FieldTable,
} from "./typedrift.js";

const LABELS = { ours: "ours.ts", theirs: "the CRD" };

/** The fields of `root` in an inline source. */
function fields(text: string, root = "Thing"): FieldTable {
  return collectFields(parseSource("inline.ts", text), root);
}

/** The report for two inline sources. */
function drift(ours: string, theirs: string): string[] {
  return compareFields(fields(ours), fields(theirs), LABELS);
}

describe("typedrift: reading declared fields", () => {
  it("walks spec and status, skips the envelope, and records required-ness", () => {
    const table = fields(`
      interface Ref { name: string; namespace?: string }
      interface Thing { apiVersion?: string; kind?: string; metadata: object; spec: { pool: Ref }; status?: { address?: Ref } }
    `);
    expect(Object.fromEntries(table)).to.deep.equal({
      "Thing.spec": { required: true, shape: "object" },
      "Thing.spec.pool": { required: true, shape: "object" },
      "Thing.spec.pool.name": { required: true, shape: "value" },
      "Thing.spec.pool.namespace": { required: false, shape: "value" },
      "Thing.status": { required: false, shape: "object" },
      "Thing.status.address": { required: false, shape: "object" },
      "Thing.status.address.name": { required: true, shape: "value" },
      "Thing.status.address.namespace": { required: false, shape: "value" },
    });
  });

  const shapes: [string, string, Record<string, Field>][] = [
    [
      "a list of objects",
      "e?: Entry[]",
      { "Thing.e": { required: false, shape: "list" }, "Thing.e[].x": { required: true, shape: "value" } },
    ],
    [
      "Array<T>",
      "e: Array<Entry>",
      { "Thing.e": { required: true, shape: "list" }, "Thing.e[].x": { required: true, shape: "value" } },
    ],
    ["a list of strings", "e?: string[]", { "Thing.e": { required: false, shape: "list" } }],
    ["Record<string, T>", "m?: Record<string, string>", { "Thing.m": { required: false, shape: "map" } }],
    ["an index signature", "m?: { [key: string]: string }", { "Thing.m": { required: false, shape: "map" } }],
    [
      "a map of objects",
      "m: Record<string, Entry>",
      { "Thing.m": { required: true, shape: "map" }, "Thing.m[*].x": { required: true, shape: "value" } },
    ],
    ["an alias of literals", "s?: Strategy", { "Thing.s": { required: false, shape: "value" } }],
    ["an alias or empty", 's?: Strategy | ""', { "Thing.s": { required: false, shape: "value" } }],
    ["an enum", "s: Color", { "Thing.s": { required: true, shape: "value" } }],
    ["a type of another file", "d: Date", { "Thing.d": { required: true, shape: "value" } }],
    [
      "T | undefined",
      "e: Entry | undefined",
      { "Thing.e": { required: true, shape: "object" }, "Thing.e.x": { required: true, shape: "value" } },
    ],
    ["a quoted name", '"x-y"?: string', { "Thing.x-y": { required: false, shape: "value" } }],
  ];
  for (const [what, member, expected] of shapes) {
    it(`reads ${what}`, () => {
      const text = `interface Entry { x: string } type Strategy = "a" | "b"; enum Color { Red = "red" } interface Thing { ${member} }`;
      expect(Object.fromEntries(fields(text))).to.deep.equal(expected);
    });
  }

  it("reads a generated class (declare, extends an imported base) like an interface", () => {
    const text = `import { GenericKind } from "x"; interface Spec { a: string } export class Thing extends GenericKind {
      declare kind?: string; declare metadata?: { [key: string]: unknown }; spec?: Spec; static plural = "things"; }`;
    expect([...fields(text).keys()]).to.deep.equal(["Thing.spec", "Thing.spec.a"]);
  });

  it("follows extends inside the file, a redeclared member winning", () => {
    const text =
      "interface Base { name?: string; uid?: string } interface Named extends Base { name: string } interface Thing { r: Named }";
    expect(Object.fromEntries(fields(text))).to.deep.equal({
      "Thing.r": { required: true, shape: "object" },
      "Thing.r.name": { required: true, shape: "value" },
      "Thing.r.uid": { required: false, shape: "value" },
    });
  });

  it("stops at a self-referencing type", () => {
    expect([...fields("interface Node { children?: Node[] } interface Thing { root: Node }").keys()]).to.deep.equal([
      "Thing.root",
      "Thing.root.children",
    ]);
  });

  it("throws when the root is not declared", () => {
    expect(() => fields("interface Other { a: string }")).to.throw("inline.ts: no interface or class Thing");
  });
});

describe("typedrift: comparing", () => {
  const base =
    "interface Ref { name: string; namespace?: string } interface Thing { spec: { pool: Ref; list?: Ref[] }; status?: { n?: number } }";
  const cases: [string, string, string[]][] = [
    ["identical sources", base, []],
    [
      "a field only in theirs",
      base.replace("n?: number", "n?: number; extra?: string"),
      ["Thing.status.extra: in the CRD, missing in ours.ts"],
    ],
    [
      "a field only in ours",
      base.replace("status?: { n?: number }", "status?: { }"),
      ["Thing.status.n: in ours.ts, missing in the CRD"],
    ],
    [
      "a field optional in theirs",
      base.replace("name: string", "name?: string"),
      [
        "Thing.spec.list[].name: required in ours.ts, optional in the CRD",
        "Thing.spec.pool.name: required in ours.ts, optional in the CRD",
      ],
    ],
    [
      "a field required in theirs",
      base.replace("namespace?: string", "namespace: string"),
      [
        "Thing.spec.list[].namespace: required in the CRD, optional in ours.ts",
        "Thing.spec.pool.namespace: required in the CRD, optional in ours.ts",
      ],
    ],
    [
      "a missing object, reported once",
      base.replace("status?: { n?: number }", ""),
      ["Thing.status: in ours.ts, missing in the CRD"],
    ],
    [
      "a map instead of a list, reported once",
      base.replace("list?: Ref[]", "list?: Record<string, Ref>"),
      ["Thing.spec.list: a list in ours.ts, a map in the CRD"],
    ],
  ];
  for (const [what, theirs, expected] of cases) {
    it(`reports ${what}`, () => {
      expect(drift(base, theirs)).to.deep.equal(expected);
    });
  }

  it("compares one field", () => {
    const req: Field = { required: true, shape: "value" };
    const opt: Field = { required: false, shape: "value" };
    expect(compareField("a.b", req, req, LABELS)).to.equal(undefined);
    expect(compareField("a.b", opt, req, LABELS)).to.equal("a.b: required in the CRD, optional in ours.ts");
    expect(compareField("a.b", { required: true, shape: "object" }, req, LABELS)).to.equal(
      "a.b: an object in ours.ts, a value in the CRD",
    );
    expect(compareField("a.b", undefined, undefined, LABELS)).to.equal(undefined);
  });

  it("knows what lies below a field", () => {
    expect(isBelow("a.b.c", "a.b")).to.equal(true);
    expect(isBelow("a.b[].c", "a.b")).to.equal(true);
    expect(isBelow("a.bc", "a.b")).to.equal(false);
    expect(isBelow("a.b", "a.b")).to.equal(false);
  });
});
