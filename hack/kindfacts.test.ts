/**
 * A pool kind's facts (its name, scope, engine, group) are stated in `api/registry.ts`; `kubectl ipam` (src/cli/)
 * reads them from there. Checked on the text of every production file under src/cli/ (tests and fixtures are data):
 * - no string literal spells a pool kind's name: the names come from the registry's descriptors;
 * - only `poolkind.ts` compares a value with one kind's name (`kind === IPPOOL.kind`, `case NETBOX_POOL_KIND:`),
 *   where a switch picks each kind's spec type and address space; elsewhere a fact is asked of the registry
 *   (`poolDescriptor(kind).namespaced`, `isNetBoxKind(kind)`), so a new kind cannot be missed by a stray comparison.
 * Pure reads of the working tree: no server.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { POOL_DESCRIPTORS, type PoolKindName } from "../api/registry.js";
import type { AnyPool } from "../src/cli/poolkind.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = "src/cli";
/** The files that may compare with one kind's name: the CLI's per-kind spec switch. */
const ALLOWED = new Set([`${CLI}/poolkind.ts`]);

/** Names of the registry's pool descriptors and of the api/ constants holding a pool kind's name. */
const KIND_CONSTANTS =
  /\b(?:(?:GLOBAL_)?(?:INCLUSTER_|NETBOX_)?IPPOOL\.kind|(?:GLOBAL_)?(?:INCLUSTER_|NETBOX_)?(?:IP)?POOL_KIND)\b/;
const COMPARED = new RegExp(
  String.raw`(?:[!=]==|\bcase)\s*(?:${KIND_CONSTANTS.source})|(?:${KIND_CONSTANTS.source})\s*[!=]==`,
  "g",
);

/** The text with comments blanked, lines kept (a comment may quote a kind's name). */
const code = (text: string): string =>
  text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " ")).replace(/^(\s*)\/\/.*$/gm, "$1");

function productionFiles(): string[] {
  return readdirSync(join(ROOT, CLI))
    .filter((f) => f.endsWith(".ts") && !/\.(test|testutil)\.ts$/.test(f))
    .map((f) => `${CLI}/${f}`);
}

const lineAt = (text: string, index: number): number => text.slice(0, index).split("\n").length;

describe("hack/kindfacts: kubectl ipam takes pool kinds' facts from api/registry.ts", () => {
  const names = POOL_DESCRIPTORS.map((d) => d.kind);

  it("spells no pool kind's name in a string literal", () => {
    const literal = new RegExp(String.raw`(["'\`])(?:${names.join("|")})\1`, "g");
    const found = productionFiles().flatMap((file) => {
      const text = code(readFileSync(join(ROOT, file), "utf8"));
      return [...text.matchAll(literal)].map((m) => `${file}:${lineAt(text, m.index)} ${m[0]}`);
    });
    expect(found).to.deep.equal([]);
  });

  it("compares with one kind's name only in poolkind.ts's spec switch", () => {
    const found = productionFiles()
      .filter((file) => !ALLOWED.has(file))
      .flatMap((file) => {
        const text = code(readFileSync(join(ROOT, file), "utf8"));
        return [...text.matchAll(COMPARED)].map((m) => `${file}:${lineAt(text, m.index)} ${m[0]}`);
      });
    expect(found).to.deep.equal([]);
  });

  it("recognises the forms it forbids", () => {
    const literal = new RegExp(String.raw`(["'\`])(?:${names.join("|")})\1`);
    expect(literal.test(`p.kind === "GlobalNetBoxIPPool"`)).to.equal(true);
    expect(literal.test(`p.kind === "GlobalNetBoxIPPoolX"`)).to.equal(false);
    for (const form of [
      "kind === IPPOOL.kind",
      "GLOBAL_INCLUSTER_IPPOOL.kind !== k",
      "case NETBOX_POOL_KIND:",
      "ref.kind === IPPOOL_KIND",
      "k === GLOBAL_NETBOX_POOL_KIND",
    ])
      expect(new RegExp(COMPARED.source).test(form), form).to.equal(true);
    expect(new RegExp(COMPARED.source).test("{ kind: IPPOOL.kind, object }")).to.equal(false);
    expect(code('a\n  // "IPPool"\n/* "IPPool" */b')).to.not.include("IPPool");
  });

  it("gives every pool kind of the registry a spec type in the CLI's AnyPool (checked by tsc)", () => {
    const everyKindTyped: [Exclude<PoolKindName, AnyPool["kind"]>] extends [never] ? true : false = true;
    expect(everyKindTyped).to.equal(true);
  });
});
