/**
 * `npm run generate`: writes the CRD manifests and their kustomization under `config/crd/` from
 * `api/v1alpha1/schema.ts`, and the in-cluster provider's pool CRDs (`api/incluster/schema.ts`) under
 * `config/crd/incluster/` with the optional component `config/components/incluster/`. Removes stale generated
 * manifests of our group left in `config/crd/bases/` and of the in-cluster group left in `config/crd/incluster/`.
 */

import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { INCLUSTER_GROUP } from "../api/incluster/types.js";
import { GROUP } from "../api/v1alpha1/types.js";
import { CRD_BASES_DIR, INCLUSTER_CRD_DIR, renderCrds } from "./crds.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

async function main(): Promise<void> {
  const files = renderCrds();
  for (const [relPath, text] of files) {
    const target = join(repoRoot, relPath);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, text, "utf8");
    console.log(`wrote ${relPath}`);
  }
  await removeStale(files, CRD_BASES_DIR, GROUP);
  await removeStale(files, INCLUSTER_CRD_DIR, INCLUSTER_GROUP);
}

/** Removes `<group>_*.yaml` files of `dir` that the rendering no longer produces. */
async function removeStale(files: Map<string, string>, dir: string, group: string): Promise<void> {
  for (const name of await readdir(join(repoRoot, dir))) {
    const relPath = `${dir}/${name}`;
    if (name.startsWith(`${group}_`) && name.endsWith(".yaml") && !files.has(relPath)) {
      await rm(join(repoRoot, relPath));
      console.log(`removed stale ${relPath}`);
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
