/**
 * The layer rules of the source tree, checked on the import statements of every .ts file under api/, src/, hack/
 * and e2e/ (a regular expression per statement form, relative paths resolved). Data flows downhill, e2e → hack → src
 * → api; inside src/, each folder's README says what it may import ("May import: ..."), and RULES below is that list,
 * compared with the READMEs so the two cannot drift apart.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const TREES = ["api", "src", "hack", "e2e"];
const SRC_FOLDERS = ["kube", "runtime", "ipam", "controllers", "webhooks", "certs", "cli", "netbox"] as const;
type SrcFolder = (typeof SRC_FOLDERS)[number];

/** One import statement: who imports what, and whether it survives compilation. */
interface Import {
  /** Importing file, relative to the repository root, with `/`. */
  file: string;
  /** A repository path (`src/kube/resource.ts`) for relative imports, else the module name as written. */
  target: string;
  /** True when the target is a file of this repository. */
  local: boolean;
  /** `import type` / `export type`: erased at compile time. */
  typeOnly: boolean;
  line: number;
}

/**
 * What each src/ folder may import besides itself, as its README says ("May import: ..."). An entry is a path
 * prefix: a folder (`api/`, `src/kube/`) or one file (`api/v1alpha1/types.ts`).
 */
const RULES: Readonly<Record<SrcFolder, readonly string[]>> = {
  ipam: ["api/v1alpha1/types.ts", "api/incluster/types.ts", "api/registry.ts"],
  kube: ["api/"],
  runtime: ["src/kube/", "api/registry.ts"],
  controllers: ["api/", "src/ipam/", "src/kube/", "src/netbox/", "src/runtime/"],
  webhooks: ["api/", "src/ipam/", "src/certs/", "src/kube/", "src/runtime/"],
  certs: ["src/kube/", "src/runtime/"],
  cli: ["api/", "src/ipam/", "src/kube/kubeconfig-file.ts"],
  netbox: [],
};

/** Packages the production files of a folder may import (`node:` built-ins aside), where the README limits them. */
const PACKAGES: Partial<Readonly<Record<SrcFolder | "api", readonly string[]>>> = {
  api: [],
  ipam: ["lodash"],
  netbox: ["ipaddr.js"],
};

/**
 * The HTTP client surface of node:http(s): only src/kube may use it for the API server (src/cli goes through
 * kubernetes-fluent-client), and src/netbox for NetBox, an external IPAM that is no API server.
 */
const HTTP_CLIENT_NAMES = new Set(["request", "get", "Agent"]);

const STATIC = /^[ \t]*(import|export)(\s+type)?\b([^;=()"'`]*?)\bfrom\s*"([^"]+)"/gm;
const SIDE_EFFECT = /^[ \t]*import\s*"([^"]+)"/gm;
const DYNAMIC = /\bimport\(\s*"([^"]+)"\s*\)/g;

/** Every .ts file (declaration files aside) under `dir`, relative to the repository root. */
function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : tsFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** A specifier as a repository path (relative ones resolved, `.js` written for `.ts`) or a module name. */
function resolveTarget(file: string, spec: string): { target: string; local: boolean } {
  if (!spec.startsWith(".")) return { target: spec, local: false };
  return { target: posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, ".ts"), local: true };
}

const lineAt = (text: string, index: number): number => text.slice(0, index).split("\n").length;

/** The import statements of one file's text. */
function parseImports(file: string, text: string): Import[] {
  const found: Import[] = [];
  const add = (spec: string, typeOnly: boolean, index: number): void => {
    found.push({ file, ...resolveTarget(file, spec), typeOnly, line: lineAt(text, index) });
  };
  for (const m of text.matchAll(STATIC)) add(m[4] ?? "", Boolean(m[2]), m.index);
  for (const m of text.matchAll(SIDE_EFFECT)) add(m[1] ?? "", false, m.index);
  for (const m of text.matchAll(DYNAMIC)) add(m[1] ?? "", false, m.index);
  return found;
}

/** The imported names in the text between `{` and `}`, type-marked ones left out (`a as b`, `a: b` give `a`). */
function namesIn(braces: string): string[] {
  return braces
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p && !p.startsWith("type "))
    .map((p) => p.split(/\s+as\s+|\s*:\s*/)[0] ?? p);
}

/**
 * Named bindings of `module` in `text` that survive compilation: from a static import (not `type`-marked) or
 * destructured from `process.getBuiltinModule(module)`.
 */
function runtimeNamesFrom(text: string, module: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(STATIC)) {
    if (m[4] !== module || m[2]) continue;
    names.push(...namesIn(/\{([^}]*)\}/.exec(m[3] ?? "")?.[1] ?? ""));
  }
  for (const m of text.matchAll(/\{([^}]*)\}\s*=\s*process\.getBuiltinModule\(\s*"([^"]+)"\s*\)/g))
    if (m[2] === module) names.push(...namesIn(m[1] ?? ""));
  return names;
}

/** The area a file belongs to: `api`, `hack`, `e2e`, `src/<folder>`, or `src/*.ts` for the entry points. */
function areaOf(path: string): string {
  const [tree = "", second = ""] = path.split("/");
  if (tree !== "src") return tree;
  return second.endsWith(".ts") ? "src/*.ts" : `src/${second}`;
}

const isTest = (file: string): boolean => /\.(test|testutil)\.ts$/.test(file);
const packageOf = (module: string): string =>
  module.startsWith("@") ? module.split("/").slice(0, 2).join("/") : (module.split("/")[0] ?? module);
const describeImport = (i: Import): string => `${i.file}:${i.line} imports ${i.target}`;

/** The first cycle of a directed graph (as a path that returns to its start), or undefined. */
function findCycle(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const visit = (node: string, path: string[]): string[] | undefined => {
    if (state.get(node) === "open") return [...path.slice(path.indexOf(node)), node];
    if (state.get(node) === "done") return undefined;
    state.set(node, "open");
    for (const next of edges.get(node) ?? []) {
      const cycle = visit(next, [...path, node]);
      if (cycle) return cycle;
    }
    state.set(node, "done");
    return undefined;
  };
  for (const node of edges.keys()) {
    const cycle = visit(node, []);
    if (cycle) return cycle;
  }
  return undefined;
}

/** Edges between distinct groups, one group per file as `groupOf` says (undefined leaves the file out). */
function groupGraph(
  imports: readonly Import[],
  groupOf: (path: string) => string | undefined,
): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const i of imports.filter((x) => x.local)) {
    const [from, to] = [groupOf(i.file), groupOf(i.target)];
    if (!from || !to || from === to) continue;
    edges.set(from, (edges.get(from) ?? new Set()).add(to));
  }
  return edges;
}

/** The "May import:" line of a README as path prefixes (`api/`, `src/kube/`, `api/v1alpha1/types.ts`). */
function readmeRule(readme: string): string[] | undefined {
  const line = /^May import: (.*)$/m.exec(readme)?.[1];
  if (line === undefined) return undefined;
  return [...line.matchAll(/`([^`]+)`/g)]
    .map((m) => m[1] ?? "")
    .map((p) => (p.endsWith(".ts") || p.endsWith("/") ? p : `${p}/`));
}

const FILES = TREES.flatMap(tsFiles);
const IMPORTS = FILES.flatMap((file) => parseImports(file, readFileSync(join(ROOT, file), "utf8")));
const local = IMPORTS.filter((i) => i.local);
const within =
  (area: string) =>
  (i: Import): boolean =>
    areaOf(i.file) === area;

describe("layer rules (imports of api/, src/, hack/, e2e/)", () => {
  it("finds the import statements it checks (a parser that sees nothing checks nothing)", () => {
    expect(FILES.length).to.be.greaterThan(100);
    expect(local.some((i) => i.file === "src/controllers/store.ts" && i.target === "src/kube/informer.ts")).to.equal(
      true,
    );
    expect(IMPORTS.some((i) => i.file === "src/kube/kubeconfig.ts" && i.target === "@kubernetes/client-node")).to.equal(
      true,
    );
    for (const i of local) expect(FILES, `${describeImport(i)}, which does not exist`).to.include(i.target);
  });

  it("(a) each src/ folder imports only what its README allows, and RULES is what the READMEs say", () => {
    for (const folder of SRC_FOLDERS) {
      const readme = readFileSync(join(ROOT, "src", folder, "README.md"), "utf8");
      expect(readmeRule(readme), `the "May import:" line of src/${folder}/README.md`).to.have.members([
        ...RULES[folder],
      ]);
      const allowed = [`src/${folder}/`, ...RULES[folder]];
      const broken = local.filter(within(`src/${folder}`)).filter((i) => !allowed.some((p) => i.target.startsWith(p)));
      expect(broken.map(describeImport), `src/${folder} may import only ${allowed.join(", ")}`).to.deep.equal([]);
    }
  });

  it("(a) production files import only the packages their README allows", () => {
    for (const [area, packages] of Object.entries(PACKAGES)) {
      const name = area === "api" ? "api" : `src/${area}`;
      const broken = IMPORTS.filter((i) => !i.local && !isTest(i.file) && areaOf(i.file) === name).filter(
        (i) => !i.target.startsWith("node:") && !packages.includes(packageOf(i.target)),
      );
      expect(
        broken.map(describeImport),
        `${name} may import the packages ${packages.join(", ") || "(none)"}`,
      ).to.deep.equal([]);
    }
  });

  it("(a) nothing in a src/ folder imports the entry points (src/*.ts)", () => {
    const broken = local.filter(
      (i) => areaOf(i.file).startsWith("src/") && areaOf(i.file) !== "src/*.ts" && areaOf(i.target) === "src/*.ts",
    );
    expect(broken.map(describeImport)).to.deep.equal([]);
  });

  it("(b) nothing in src/ or api/ imports hack/ or e2e/", () => {
    const broken = local.filter(
      (i) =>
        ["src", "api"].includes(i.file.split("/")[0] ?? "") && ["hack", "e2e"].includes(i.target.split("/")[0] ?? ""),
    );
    expect(broken.map(describeImport)).to.deep.equal([]);
  });

  it("(c) api/ imports nothing outside api/", () => {
    expect(
      local
        .filter(within("api"))
        .filter((i) => !i.target.startsWith("api/"))
        .map(describeImport),
    ).to.deep.equal([]);
  });

  it("(d) no cycle between the folders of src/", () => {
    const folderOf = (path: string): string | undefined => {
      const area = areaOf(path);
      return area.startsWith("src/") && area !== "src/*.ts" ? area : undefined;
    };
    const cycle = findCycle(groupGraph(IMPORTS, folderOf))?.join(" → ");
    expect(cycle, `import cycle: ${cycle}`).to.equal(undefined);
  });

  // src/controllers is a shared layer (its top-level files and pools/) under one module per kind or claim API; the
  // registration list (kinds.ts) names the pool kinds' modules and the manager builds the claim APIs, so the shared
  // layer never reaches into one of them otherwise (type-only imports count).
  it("(d) the shared layer of src/controllers imports no kind's module (kinds.ts and manager.ts aside)", () => {
    const KIND_MODULES = ["ippool", "incluster", "netbox", "capi", "loadbalancer"].map((m) => `src/controllers/${m}/`);
    const shared = (file: string): boolean =>
      !isTest(file) &&
      !["src/controllers/manager.ts", "src/controllers/kinds.ts"].includes(file) &&
      (/^src\/controllers\/[^/]+\.ts$/.test(file) || file.startsWith("src/controllers/pools/"));
    expect(
      local.some((i) => shared(i.file) && i.target === "src/kube/informer.ts"),
      "sees the shared layer",
    ).to.equal(true);
    const upward = local.filter((i) => shared(i.file) && KIND_MODULES.some((m) => i.target.startsWith(m)));
    expect(upward.map(describeImport), "the shared layer imports a kind's module").to.deep.equal([]);
  });

  // A cycle between files is a cycle of meaning even through type-only imports: neither file can be understood, or
  // moved, without the other (store.ts once imported a type from a Cluster API write module that needed the store).
  it("(d) no cycle between the files of api/, src/, hack/ and e2e/ (type-only imports count)", () => {
    const cycle = findCycle(groupGraph(IMPORTS, (path) => path))?.join(" → ");
    expect(cycle, `import cycle: ${cycle}`).to.equal(undefined);
  });

  // Test infrastructure lives in hack/testkit and e2e/ imports it, never the other way round: a hack file importing
  // e2e/ would close a cycle here.
  it("(d) no cycle between the directories of hack/ and e2e/", () => {
    const directoryOf = (path: string): string | undefined =>
      ["hack", "e2e"].includes(path.split("/")[0] ?? "") ? posix.dirname(path) : undefined;
    const cycle = findCycle(groupGraph(IMPORTS, directoryOf))?.join(" → ");
    expect(cycle, `import cycle: ${cycle}`).to.equal(undefined);
  });

  it("(2) only src/kube talks HTTP to the API server and loads @kubernetes/client-node at run time (src/cli aside)", () => {
    // src/netbox talks HTTP too, to NetBox only; it imports nothing of Kubernetes (its README's empty "May import").
    const exempt = (file: string): boolean =>
      ["src/kube", "src/cli", "src/netbox"].includes(areaOf(file)) || isTest(file);
    const production = IMPORTS.filter((i) => i.file.startsWith("src/") && !exempt(i.file));
    const clientNode = production.filter((i) => packageOf(i.target) === "@kubernetes/client-node" && !i.typeOnly);
    expect(clientNode.map(describeImport), "client-node at run time").to.deep.equal([]);
    const fluent = production.filter((i) => packageOf(i.target) === "kubernetes-fluent-client");
    expect(fluent.map(describeImport), "kubernetes-fluent-client outside src/cli").to.deep.equal([]);
    const http = [...new Set(production.map((i) => i.file))].flatMap((file) => {
      const text = readFileSync(join(ROOT, file), "utf8");
      const names = ["node:http", "node:https"]
        .flatMap((m) => runtimeNamesFrom(text, m))
        .filter((n) => HTTP_CLIENT_NAMES.has(n));
      // A bare fetch( call (not a method such as store.fetch) is an HTTP request too.
      return [...names, ...(/(?<![.\w])fetch\(/.test(text) ? ["fetch"] : [])].map((n) => `${file} uses ${n}`);
    });
    expect(http, "HTTP clients outside src/kube").to.deep.equal([]);
  });

  it("(2) no production file imports node:http as an ES module (the namespace loads Node's undici, ~15 MiB)", () => {
    // Building the ES namespace of node:http reads its lazy `WebSocket` export, which loads Node's bundled undici
    // (nodejs/node#59686); process.getBuiltinModule("node:http") leaves it lazy. Type-only imports are erased.
    const esHttp = IMPORTS.filter(
      (i) => i.file.startsWith("src/") && !isTest(i.file) && i.target === "node:http" && !i.typeOnly,
    );
    expect(esHttp.map(describeImport)).to.deep.equal([]);
  });
});
