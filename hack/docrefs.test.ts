/**
 * What the docs name in the tree, checked against the tree, so a rename or a move cannot leave them pointing at
 * nothing:
 * - every file, folder and code symbol docs/architecture.md names in backticks, and every file or folder its diagrams
 *   name, exists. In a diagram a bare name is resolved in the folder whose column it sits under (so a file drawn under
 *   the wrong folder fails); elsewhere a relative name must end a path of the tree. A symbol must be declared (or be
 *   a member, or a string constant such as a condition reason) in the source of api/, src/ or hack/; `A.b` needs `b`
 *   in the file that declares `A`.
 * - every `docs/<name>.md` that a file under api/, src/, hack/ or e2e/ cites exists, and so does the section it names
 *   (`docs/<name>.md, "Section"`: a heading or a bold lead-in).
 * Pure reads of the working tree: no server.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SKIP_DIRS = new Set(["node_modules", "dist", "out", "coverage"]);
/** Names the architecture may use in backticks that are examples, not things of the tree. */
const EXAMPLES = new Set(["v1beta3"]);
const FILE = /\.(?:ts|mjs|js|sh|ya?ml|json|md)$/;
const IDENT = /^[A-Za-z_$][\w$]*$/;

/** Every file of the tree (relative, `/`-separated), dot folders and build output aside. */
function walk(dir = "", out: string[] = []): string[] {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIP_DIRS.has(entry.name)) continue;
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) walk(path, out);
    else out.push(path);
  }
  return out;
}

interface Tree {
  files: Set<string>;
  dirs: Set<string>;
  /** Source text of api/, src/ and hack/ (tests aside), by path. */
  code: Map<string, string>;
  /** The root's folders and files. */
  topLevel: Set<string>;
  /** package.json's scripts and packages. */
  scripts: Set<string>;
  packages: Set<string>;
}

function readTree(): Tree {
  const files = new Set(walk());
  const dirs = new Set<string>();
  for (const f of files) {
    const parts = f.split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
  }
  const code = new Map<string, string>();
  for (const f of files) {
    if (/^(api|src|hack)\//.test(f) && f.endsWith(".ts") && !/\.(test|testutil)\.ts$/.test(f))
      code.set(f, readFileSync(join(ROOT, f), "utf8"));
  }
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  return {
    files,
    dirs,
    code,
    topLevel: new Set(readdirSync(ROOT).filter((n) => !n.startsWith(".") && !SKIP_DIRS.has(n))),
    scripts: new Set(Object.keys(pkg.scripts)),
    packages: new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]),
  };
}

/** A reference the doc makes: what it says, and the folder a diagram puts it in (if any). */
interface Ref {
  text: string;
  folder?: string;
  line: number;
}

const DIAGRAM_PATH =
  /(?<![\w/.@$-])((?:[\w.-]+\/)+(?:[\w.-]+)?|[\w-]+(?:\.[\w-]+)*\.(?:ts|sh|ya?ml|json|md))(?![\w/-])/g;

/**
 * The references of `markdown`: backticked spans outside fenced blocks, and the paths drawn in fenced blocks. In a
 * fenced block, a path that starts with a top-level folder of `topLevel` opens a column at its position (closing the
 * columns right of it); a relative name belongs to the column it sits under.
 */
function references(markdown: string, topLevel: ReadonlySet<string>): Ref[] {
  const refs: Ref[] = [];
  let fenced = false;
  let columns: { col: number; folder: string }[] = [];
  markdown.split("\n").forEach((raw, i) => {
    const line = i + 1;
    if (raw.startsWith("```")) {
      fenced = !fenced;
      columns = [];
      return;
    }
    if (!fenced) {
      for (const m of raw.matchAll(/`([^`]+)`/g)) refs.push({ text: m[1] ?? "", line });
      return;
    }
    for (const m of raw.matchAll(DIAGRAM_PATH)) {
      const text = m[1] ?? "";
      const col = m.index;
      const anchored = topLevel.has(text.split("/")[0] ?? "");
      // Prose in a diagram (`HTTP/2`, `I/O`, `get/list`) is no path: one ends in `/` or a file name, or is anchored.
      if (!anchored && !text.endsWith("/") && !FILE.test(text)) continue;
      if (anchored) {
        columns = columns.filter((c) => c.col < col);
        if (!FILE.test(text)) columns.push({ col, folder: text.replace(/\/$/, "") });
        refs.push({ text, line });
        continue;
      }
      const folder = columns.filter((c) => c.col <= col).at(-1)?.folder;
      refs.push({ text, line, ...(folder ? { folder } : {}) });
    }
  });
  return refs;
}

/** A checker's answer: not its kind of reference (undefined), found (`ok`), or why not. */
type Verdict = { ok: true } | { ok: false; why: string } | undefined;
const verdict = (found: boolean, why: string): Verdict => (found ? { ok: true } : { ok: false, why });

/** Commands (npm scripts must exist; kubectl's and clusterctl's are not ours), flags, packages and URL paths. */
function checkNonCode(text: string, tree: Tree): Verdict {
  const npm = /^npm run ([\w:-]+)/.exec(text)?.[1];
  if (npm !== undefined) return verdict(tree.scripts.has(npm), `no npm script ${npm}`);
  if (/^(kubectl|clusterctl) /.test(text)) return { ok: true };
  if (text.startsWith("--")) {
    const flag = text.slice(2).split("=")[0] ?? "";
    return verdict(tree.code.get("src/flags.ts")?.includes(`"${flag}"`) ?? false, `no flag --${flag} in src/flags.ts`);
  }
  if (tree.packages.has(text)) return { ok: true };
  if (text.startsWith("@")) return verdict(false, `no package ${text} in package.json`);
  if (text.startsWith("/"))
    return verdict(
      [...tree.code.values()].some((src) => src.includes(`"${text}"`)),
      "served nowhere in src/",
    );
  const metric = /^metal3_ipam_(\w+)/.exec(text)?.[1];
  if (metric !== undefined)
    return verdict(
      [...tree.code.values()].some((src) => src.includes(`}${metric}\``)),
      "no such metric",
    );
  return undefined;
}

/** A file or folder: anchored at the root, under a diagram's folder, or (relative) the end of a path of the tree. */
function checkPath(text: string, folder: string | undefined, tree: Tree): Verdict {
  if (/\s/.test(text) || !(text.includes("/") || FILE.test(text))) return undefined;
  // Placeholders (`<kind>`) and globs: what comes before them.
  const cut = text.search(/[<*]/);
  if (cut === 0) return { ok: true };
  const path = (cut > 0 ? text.slice(0, cut) : text).replace(/\/$/, "");
  const exists = (p: string): boolean =>
    tree.files.has(p) || tree.dirs.has(p) || tree.files.has(`${p}.ts`) || (cut > 0 && tree.dirs.has(dirname(p)));
  if (folder) return verdict(exists(`${folder}/${path}`), `not in ${folder}/`);
  if (tree.topLevel.has(path.split("/")[0] ?? "")) return verdict(exists(path), "no such path");
  const suffix = `/${path}`;
  const found = [...tree.files, ...tree.dirs].some((p) => p.endsWith(suffix) || p.endsWith(`${suffix}.ts`));
  return verdict(found, "no path of the tree ends so");
}

/** A symbol: `Name`, `A.b`, `name(args)`, `Name=Value`, `name: value`, `PREFIX_*`. */
function checkSymbol(text: string, tree: Tree): Verdict {
  const parts = text
    .replace(/\(.*\)$/, "")
    .replace(/[=:{].*$/, "")
    .split(".");
  if (parts.length > 2 || !parts.every((p) => IDENT.test(p) || /^\*?\w*\*?$/.test(p))) return undefined;
  const [head = "", member] = parts;
  const declaring = [...tree.code.values()].filter((src) => declares(src, head));
  if (member !== undefined) {
    if (declaring.length === 0) return verdict(false, `${head} is declared nowhere in api/, src/ or hack/`);
    return verdict(
      declaring.some((src) => isMember(src, member)),
      `${head} has no member ${member}`,
    );
  }
  const named =
    declaring.length > 0 || [...tree.code.values()].some((src) => isMember(src, head) || src.includes(`"${head}"`));
  return verdict(named, "declared nowhere in api/, src/ or hack/");
}

/** Why `ref` names nothing in `tree`, or undefined when it names something (or nothing checkable). */
function missing(ref: Ref, tree: Tree): string | undefined {
  const text = ref.text.trim();
  if (EXAMPLES.has(text)) return undefined;
  const v = checkNonCode(text, tree) ?? checkPath(text, ref.folder, tree) ?? checkSymbol(text, tree);
  return v && !v.ok ? v.why : undefined;
}

const escape = (name: string): string => name.replace(/[$]/g, "\\$").replace(/\*/g, "\\w*");

/** Whether `src` declares `name` (a function, class, interface, type, enum or variable; `*` matches any word). */
function declares(src: string, name: string): boolean {
  return new RegExp(`\\b(?:function\\*?|class|interface|type|enum|const|let|var)\\s+${escape(name)}\\b`).test(src);
}

/** Whether `src` has `name` as a property or method (`name:`, `name?:`, `name(`). */
function isMember(src: string, name: string): boolean {
  return new RegExp(`(?:^|[\\s{;,(.])${escape(name)}\\??\\s*[:(<]`, "m").test(src);
}

describe("docs name what the tree has", function () {
  const tree = readTree();
  const problems = (markdown: string): string[] =>
    references(markdown, tree.topLevel).flatMap((ref) => {
      const why = missing(ref, tree);
      return why ? [`line ${ref.line}: \`${ref.text}\`${ref.folder ? ` (under ${ref.folder})` : ""}: ${why}`] : [];
    });

  it("every file, folder and symbol docs/architecture.md names exists", () => {
    expect(problems(readFileSync(join(ROOT, "docs", "architecture.md"), "utf8"))).to.deep.equal([]);
  });

  it("the check fails on a name the tree lacks, and on a file drawn under the wrong folder", () => {
    const doc = [
      "`PoolKind.poolMetadata` `NoSuchSymbol` `PoolKind.noSuchMember` `src/kube/nosuch.ts` `pools/reconciler.ts`",
      "```text",
      "  src/controllers                          src/webhooks",
      "    store.ts                                 certdir.ts",
      "  src/certs   selfmanaged.ts",
      "```",
    ].join("\n");
    expect(problems(doc)).to.deep.equal([
      "line 1: `NoSuchSymbol`: declared nowhere in api/, src/ or hack/",
      "line 1: `PoolKind.noSuchMember`: PoolKind has no member noSuchMember",
      "line 1: `src/kube/nosuch.ts`: no such path",
      "line 4: `certdir.ts` (under src/webhooks): not in src/webhooks/",
    ]);
  });

  it("every docs/*.md a file under api/, src/, hack/ or e2e/ cites is in the repository, with the section it names", () => {
    const cited = [...tree.files]
      .filter((f) => /^(api|src|hack|e2e)\//.test(f) && /\.(ts|sh|md|yaml)$/.test(f))
      .flatMap((f) =>
        [...readFileSync(join(ROOT, f), "utf8").matchAll(/\bdocs\/([\w.-]+\.md)\b(?:,? "([^"\n]+)")?/g)].map((m) => ({
          f,
          doc: `docs/${m[1] ?? ""}`,
          section: m[2],
        })),
      );
    expect(cited.length).to.be.greaterThan(0);
    expect(cited.filter((c) => !existsSync(join(ROOT, c.doc))).map((c) => `${c.f} cites ${c.doc}`)).to.deep.equal([]);
    const titled = (doc: string, section: string): boolean =>
      readFileSync(join(ROOT, doc), "utf8")
        .split("\n")
        .some((l) => (/^#+ /.test(l) || l.startsWith("**")) && l.includes(section));
    const sections = cited.filter((c): c is typeof c & { section: string } => c.section !== undefined);
    expect(sections.length).to.be.greaterThan(0);
    expect(
      sections.filter((c) => !titled(c.doc, c.section)).map((c) => `${c.f} cites ${c.doc} "${c.section}"`),
    ).to.deep.equal([]);
  });
});
