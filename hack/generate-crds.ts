/**
 * `npm run generate`: writes the CRD manifests and their kustomization under `config/crd/` from
 * `api/v1alpha1/schema.ts`. Removes stale generated manifests of our group left in `config/crd/bases/`.
 */

import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { GROUP } from "../api/v1alpha1/types.js";
import { CRD_BASES_DIR, renderCrds } from "./crds.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

async function main(): Promise<void> {
  const files = renderCrds();
  for (const [relPath, text] of files) {
    const target = join(repoRoot, relPath);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, text, "utf8");
    console.log(`wrote ${relPath}`);
  }
  const basesDir = join(repoRoot, CRD_BASES_DIR);
  for (const name of await readdir(basesDir)) {
    const relPath = `${CRD_BASES_DIR}/${name}`;
    if (name.startsWith(`${GROUP}_`) && name.endsWith(".yaml") && !files.has(relPath)) {
      await rm(join(basesDir, name));
      console.log(`removed stale ${relPath}`);
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
