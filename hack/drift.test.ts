/**
 * Type drift: kubernetes-fluent-client's generator turns each CRD of config/crd/bases into TypeScript, and every field
 * below `spec` and `status` (names and required-ness, lists by element, maps by value) must match the hand-written
 * types of api/v1alpha1/types.ts. The CRDs are the contract shared with Metal3, so on a difference the types follow.
 * The generated files go to a temporary folder removed afterwards.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect } from "chai";

import { CRD_BASES_DIR, crdFileName } from "./crds.js";
import { collectFields, compareFields, parseSource, type FieldTable } from "./typedrift.js";
import { CRDS, type CrdDefinition } from "../api/v1alpha1/schema.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const TYPES_PATH = "api/v1alpha1/types.ts";
const LABELS = { ours: TYPES_PATH, theirs: "the CRD" };
const GENERATOR_PACKAGE = join(repoRoot, "node_modules", "kubernetes-fluent-client");

/**
 * Differences kept on purpose, each with its reason. The test fails on any other difference, and on an entry here that
 * no longer occurs, so the list cannot go stale.
 */
const ACCEPTED: ReadonlyMap<string, string> = new Map(
  ["IPPool", "IPClaim", "IPAddress"].map((kind) => [
    `${kind}.spec: required in ${TYPES_PATH}, optional in the CRD`,
    // Metal3's CRDs do not require spec either (Go `omitempty`); requiring it in the schema would refuse objects
    // Metal3 accepts. The validating webhooks refuse a spec-less object instead (src/ipam/validation.ts).
    "spec required by the webhooks, not by the schema, as in Metal3",
  ]),
);

/** The generator's bin script, from its package.json, so it runs on this Node without a shell or npx. */
async function generatorScript(): Promise<string> {
  const manifest = JSON.parse(await readFile(join(GENERATOR_PACKAGE, "package.json"), "utf8")) as {
    bin?: string | Record<string, string>;
  };
  const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.["kubernetes-fluent-client"];
  if (!bin) throw new Error("kubernetes-fluent-client declares no bin script");
  return join(GENERATOR_PACKAGE, bin);
}

/**
 * Generates plain interfaces for one CRD into `outDir` and returns the source text. Its progress lines are captured
 * (and shown only on failure) so the test output stays quiet.
 */
async function generate(script: string, def: CrdDefinition, outDir: string): Promise<string> {
  const crdPath = join(repoRoot, CRD_BASES_DIR, crdFileName(def));
  try {
    await promisify(execFile)(process.execPath, [script, "crd", "--plain", crdPath, outDir], { cwd: repoRoot });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`kubernetes-fluent-client crd ${crdFileName(def)} failed:\n${stdout ?? ""}${stderr ?? ""}`, {
      cause: err,
    });
  }
  const files = (await readdir(outDir)).filter((f) => f.endsWith(".ts"));
  if (files.length !== 1)
    throw new Error(`expected one generated file for ${def.kind}, found ${files.join(", ") || "none"}`);
  return readFile(join(outDir, files[0]!), "utf8");
}

/**
 * Paths the generated types must contain, one per kind of nesting, so a generator whose output the reader no longer
 * understands (everything read as a plain value) fails instead of comparing nothing.
 */
const EXPECTED_PATHS = [
  "IPPool.spec.namePrefix",
  "IPPool.spec.pools[].subnet",
  "IPPool.spec.preAllocations",
  "IPPool.status.conditions[].reason",
  "IPClaim.spec.pool.name",
  "IPClaim.status.address.name",
  "IPAddress.spec.claim.namespace",
];

describe("api/v1alpha1/types.ts against the types kubernetes-fluent-client generates from the CRDs", function () {
  // About two seconds per CRD on a busy machine; a generous margin.
  this.timeout(60_000);
  let workDir = "";
  const differences: string[] = [];
  const generatedPaths: string[] = [];

  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), "ipam-drift-"));
    const script = await generatorScript();
    const ours = await readFile(join(repoRoot, TYPES_PATH), "utf8");
    for (const def of CRDS) {
      const outDir = await mkdtemp(join(workDir, `${def.plural}-`));
      const generated: FieldTable = collectFields(
        parseSource(`${def.kind} generated`, await generate(script, def, outDir)),
        def.kind,
      );
      generatedPaths.push(...generated.keys());
      differences.push(...compareFields(collectFields(parseSource(TYPES_PATH, ours), def.kind), generated, LABELS));
    }
  });

  after(async () => {
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it("reads the nested objects, lists and maps of the generated types", () => {
    expect(generatedPaths).to.include.members(EXPECTED_PATHS);
  });

  // expect.fail with the lines alone: a deep-equal diff would print every line twice.
  it("finds no difference besides the accepted ones", () => {
    const unexpected = differences.filter((d) => !ACCEPTED.has(d));
    if (unexpected.length > 0)
      expect.fail(`${unexpected.length} type drift difference(s):\n  ${unexpected.join("\n  ")}`);
  });

  it("still finds every accepted difference (none is stale)", () => {
    const stale = [...ACCEPTED.keys()].filter((d) => !differences.includes(d));
    if (stale.length > 0) expect.fail(`accepted differences that no longer occur:\n  ${stale.join("\n  ")}`);
  });
});
