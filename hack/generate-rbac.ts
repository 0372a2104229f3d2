/** `npm run generate` (part 2): writes config/rbac/role.yaml and leader_election_role.yaml. */
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { renderRbac } from "./rbac.js";

// A generator, not a test: it finds the repository from its own place (hack/), as generate-crds.ts does.
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

for (const [path, text] of renderRbac()) {
  writeFileSync(join(repoRoot, path), text);
  console.log(`wrote ${path}`);
}
