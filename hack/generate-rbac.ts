/** `npm run generate` (part 2): writes config/rbac/role.yaml and leader_election_role.yaml. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../e2e/support/cluster.js";
import { renderRbac } from "./rbac.js";

for (const [path, text] of renderRbac()) {
  writeFileSync(join(repoRoot, path), text);
  console.log(`wrote ${path}`);
}
