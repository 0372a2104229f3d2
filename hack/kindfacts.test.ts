/**
 * A pool kind's facts (its name, scope, engine, group) are stated in `api/registry.ts`; `kubectl ipam` (src/cli/),
 * the webhooks (src/webhooks/), the controller (src/controllers/) and the pure domain (src/ipam/) read them from
 * there. Checked on the text of every production file under those folders (tests and fixtures are data):
 * - no string literal spells a pool kind's name, and no table is keyed by one (`{ IPPool: ..., NetBoxIPPool: ... }`):
 *   the names come from the registry's descriptors, a kind's facts from `poolDescriptor(kind)`;
 * - only a kind's own module (OWN_MODULES) compares a value with one kind's name (`kind === IPPOOL.kind`,
 *   `case NETBOX_IPPOOL_KIND:`) or lists kinds by name (`[INCLUSTER_IPPOOL_KIND, GLOBAL_INCLUSTER_IPPOOL_KIND]`);
 *   elsewhere a fact is asked of the registry (`isGlobalKind(kind)`, `isNetBoxKind(kind)`, `poolKindOfRef(ref)`), so a
 *   new kind cannot be missed by a stray comparison.
 * - only a kind's own modules and the registration list (src/controllers/kinds.ts) import a kind's controller module:
 *   the manager, RBAC generation (src/rbac.ts) and the metrics (src/runtime/) iterate that list, so they cannot hold
 *   a kind's wiring, rules or names.
 * Pure reads of the working tree: no server.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { POOL_DESCRIPTORS, type PoolKindName } from "../api/registry.js";
import type { AnyPool } from "../src/cli/poolkind.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The folders and files whose production code takes pool kinds' facts from the registry. */
const FOLDERS = ["src/cli", "src/webhooks", "src/controllers", "src/ipam", "src/runtime"];
const TOP_FILES = ["src/rbac.ts"];

/** The controller modules of the pool kinds: only they and KIND_IMPORTERS import them. */
const KIND_FOLDERS = ["src/controllers/ippool/", "src/controllers/incluster/", "src/controllers/netbox/"];
/** Files outside KIND_FOLDERS that may import a kind's controller module, each with why. */
const KIND_IMPORTERS: Readonly<Record<string, string>> = {
  "src/controllers/kinds.ts": "the registration list: one line per kind module",
  "src/flags.ts": "the pattern of the --netbox-installation-id flag's value, checked at start",
};

/**
 * A kind's own modules, as path prefixes (a file, a folder, or a file-name stem), each with why it may single out
 * a kind: these are where that kind's behaviour is written.
 */
const OWN_MODULES: Readonly<Record<string, string>> = {
  "src/cli/poolkind.ts": "the CLI's per-kind switch: each kind's spec type and address space",
  "src/webhooks/handlers.ts": "Metal3's kinds' admission rules",
  "src/webhooks/incluster.ts": "the in-cluster pools' admission rules",
  "src/webhooks/lookup.ts": "the reads behind Metal3's and the in-cluster pools' admission rules",
  "src/controllers/ippool/": "the Metal3 IPPool kind",
  "src/controllers/incluster/": "the in-cluster pool kinds",
  "src/controllers/netbox/": "the NetBox pool kinds",
  "src/ipam/incluster": "the in-cluster pools' spec, validation and conversion",
};

/** Names of the registry's pool descriptors and of the api/ constants holding a pool kind's name. */
const KIND_CONSTANTS =
  /\b(?:(?:GLOBAL_)?(?:INCLUSTER_|NETBOX_)?IPPOOL\.kind|(?:METAL3_|GLOBAL_)?(?:INCLUSTER_|NETBOX_)?(?:IP)?POOL_KIND)\b/;
const K = KIND_CONSTANTS.source;
/** A comparison or case with one kind's name, or a list of two or more of them. */
const SINGLED_OUT = new RegExp(
  String.raw`(?:[!=]==|\bcase)\s*(?:${K})|(?:${K})\s*[!=]==|\[\s*(?:${K})\s*,\s*(?:${K})`,
  "g",
);

const names = POOL_DESCRIPTORS.map((d) => d.kind);
/** A pool kind's name as a whole string literal. */
const LITERAL = new RegExp(String.raw`(["'\`])(?:${names.join("|")})\1`, "g");
/** A pool kind's name as a property key of an object or type literal. */
const KEYED = new RegExp(String.raw`(?<=(?:^|[{,])\s*)(["']?)(?:${names.join("|")})\1\s*:`, "gm");

/** The text with comments blanked, lines kept (a comment may quote a kind's name). */
const code = (text: string): string =>
  text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " ")).replace(/^(\s*)\/\/.*$/gm, "$1");

/** The production .ts files under `dir`, relative to the repository root. */
function productionFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return productionFiles(path);
    return entry.name.endsWith(".ts") && !/\.(test|testutil)\.ts$/.test(entry.name) ? [path] : [];
  });
}

const FILES = [...FOLDERS.flatMap(productionFiles), ...TOP_FILES];
const SRC_FILES = productionFiles("src");
const isOwnModule = (file: string): boolean => Object.keys(OWN_MODULES).some((prefix) => file.startsWith(prefix));
const lineAt = (text: string, index: number): number => text.slice(0, index).split("\n").length;

/** Every match of `pattern` in the code of `files`, as `file:line match`. */
function found(files: readonly string[], pattern: RegExp): string[] {
  return files.flatMap((file) => {
    const text = code(readFileSync(join(ROOT, file), "utf8"));
    return [...text.matchAll(pattern)].map((m) => `${file}:${lineAt(text, m.index)} ${m[0].replace(/\s+/g, " ")}`);
  });
}

/** The repository paths `file` imports (relative specifiers only, `.js` read as `.ts`). */
function importsOf(file: string): string[] {
  const text = code(readFileSync(join(ROOT, file), "utf8"));
  return [...text.matchAll(/\bfrom\s*"(\.[^"]+)"|\bimport\(\s*"(\.[^"]+)"\s*\)/g)].map((m) =>
    posix.normalize(posix.join(posix.dirname(file), m[1] ?? m[2] ?? "")).replace(/\.js$/, ".ts"),
  );
}

/** Every import of a kind's controller module by a file outside KIND_FOLDERS, as `file imports target`. */
function kindImports(files: readonly string[]): string[] {
  const outside = (path: string): boolean => !KIND_FOLDERS.some((f) => path.startsWith(f));
  return files
    .filter(outside)
    .flatMap((file) => importsOf(file).flatMap((target) => (outside(target) ? [] : [`${file} imports ${target}`])));
}

describe("hack/kindfacts: pool kinds' facts come from api/registry.ts", () => {
  it("spells no pool kind's name in a string literal", () => {
    expect(found(FILES, LITERAL)).to.deep.equal([]);
  });

  it("keys no table by a pool kind's name", () => {
    expect(found(FILES, KEYED)).to.deep.equal([]);
  });

  it("compares with or lists one kind's name only in that kind's own modules", () => {
    expect(
      found(
        FILES.filter((f) => !isOwnModule(f)),
        SINGLED_OUT,
      ),
    ).to.deep.equal([]);
  });

  it("imports a kind's controller module only from the kind's own modules and KIND_IMPORTERS", () => {
    expect(SRC_FILES, "sees the manager, RBAC and metrics").to.include.members([
      "src/controllers/manager.ts",
      "src/rbac.ts",
      "src/runtime/metrics.ts",
    ]);
    const importers = kindImports(SRC_FILES).map((line) => line.split(" ")[0] ?? "");
    expect([...new Set(importers)], "KIND_IMPORTERS names only files that import a kind").to.include.members(
      Object.keys(KIND_IMPORTERS),
    );
    const stray = kindImports(SRC_FILES).filter(
      (line) => !Object.keys(KIND_IMPORTERS).includes(line.split(" ")[0] ?? ""),
    );
    expect(stray).to.deep.equal([]);
  });

  it("names in OWN_MODULES only modules that exist", () => {
    const stale = Object.keys(OWN_MODULES).filter((prefix) => !FILES.some((f) => f.startsWith(prefix)));
    expect(stale).to.deep.equal([]);
  });

  it("recognises the forms it forbids", () => {
    const once = (pattern: RegExp) => new RegExp(pattern.source, pattern.flags.replace("g", ""));
    expect(once(LITERAL).test(`p.kind === "GlobalNetBoxIPPool"`)).to.equal(true);
    expect(once(LITERAL).test(`p.kind === "GlobalNetBoxIPPoolX"`)).to.equal(false);
    for (const form of [
      "kind === IPPOOL.kind",
      "GLOBAL_INCLUSTER_IPPOOL.kind !== k",
      "case NETBOX_IPPOOL_KIND:",
      "ref.kind === IPPOOL_KIND",
      "k === GLOBAL_NETBOX_IPPOOL_KIND",
      "new Set([GLOBAL_INCLUSTER_IPPOOL_KIND, GLOBAL_NETBOX_IPPOOL_KIND])",
      "[ GLOBAL_INCLUSTER_IPPOOL.kind,\n  GLOBAL_NETBOX_IPPOOL.kind ]",
    ])
      expect(once(SINGLED_OUT).test(form), form).to.equal(true);
    expect(once(SINGLED_OUT).test("{ kind: IPPOOL.kind, object }")).to.equal(false);
    expect(once(SINGLED_OUT).test("kind !== METAL3_POOL_KIND")).to.equal(true);
    expect(once(SINGLED_OUT).test("[METAL3_POOL_KIND, INCLUSTER_POOL_KIND]")).to.equal(true);
    expect(once(SINGLED_OUT).test("new PoolKinds(kinds)")).to.equal(false);
    expect(kindImports(["src/controllers/kinds.ts"])).to.include(
      "src/controllers/kinds.ts imports src/controllers/ippool/module.ts",
    );
    for (const form of ["const G = {\n  IPPool: GROUP,", "{ InClusterIPPool: 1 }", `{ a: 1, "NetBoxIPPool": 2 }`])
      expect(once(KEYED).test(form), form).to.equal(true);
    for (const form of ["(pool: NetBoxIPPool)", "a ? IPPool : b", "{ kind: IPPool }"])
      expect(once(KEYED).test(form), form).to.equal(false);
    expect(code('a\n  // "IPPool"\n/* "IPPool" */b')).to.not.include("IPPool");
  });

  it("gives every pool kind of the registry a spec type in the CLI's AnyPool (checked by tsc)", () => {
    const everyKindTyped: [Exclude<PoolKindName, AnyPool["kind"]>] extends [never] ? true : false = true;
    expect(everyKindTyped).to.equal(true);
  });
});
