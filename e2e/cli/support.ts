/**
 * Comparing `kubectl-ipam`'s output (run by `runCli` of hack/testkit/cli.ts) with golden files, and config/samples
 * as fixtures. `UPDATE_GOLDEN=true` rewrites the golden files instead of comparing.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { loadAll } from "js-yaml";
import type { IPClaim, IPPool } from "../../api/v1alpha1/types.js";
import { IPCLAIM_KIND, IPPOOL_KIND } from "../../api/v1alpha1/types.js";
import { repoRoot } from "../../hack/testkit/cluster.js";
import type { Clients } from "../../hack/testkit/ipam.js";

const GOLDEN = join(dirname(fileURLToPath(import.meta.url)), "golden");

/** Output with the test's random namespace replaced by `<ns>`, so golden files stay fixed. */
export function normalise(text: string, namespace: string): string {
  return text.split(namespace).join("<ns>");
}

/** Compares `actual` with golden file `name` (or writes it under UPDATE_GOLDEN=true). */
export function expectGolden(name: string, actual: string): void {
  const path = join(GOLDEN, name);
  if (process.env.UPDATE_GOLDEN === "true" || !existsSync(path)) {
    if (process.env.UPDATE_GOLDEN !== "true" && process.env.CI) throw new Error(`golden file ${name} is missing`);
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(path, actual);
    return;
  }
  expect(actual, `golden file e2e/cli/golden/${name} (UPDATE_GOLDEN=true rewrites it)`).to.equal(
    readFileSync(path, "utf8"),
  );
}

/** config/samples' pools and claims, moved into `namespace`. */
export function samples(namespace: string): { pools: IPPool[]; claims: IPClaim[] } {
  const docs: (IPPool | IPClaim)[] = [];
  for (const file of [
    "ipam_v1alpha1_ippool.yaml",
    "ipam_v1alpha1_ippool_v6.yaml",
    "ipam_v1alpha1_ippool_small.yaml",
    "ipam_v1alpha1_ipclaim.yaml",
  ]) {
    for (const doc of loadAll(readFileSync(join(repoRoot, "config", "samples", file), "utf8")))
      docs.push(doc as IPPool | IPClaim);
  }
  for (const d of docs) d.metadata.namespace = namespace;
  return {
    pools: docs.filter((d): d is IPPool => d.kind === IPPOOL_KIND),
    claims: docs.filter((d): d is IPClaim => d.kind === IPCLAIM_KIND),
  };
}

/** Creates the samples in `namespace`, pools first. */
export async function applySamples(c: Clients, namespace: string): Promise<number> {
  const { pools, claims } = samples(namespace);
  for (const p of pools) await c.pools.create(namespace, p);
  for (const cl of claims) await c.claims.create(namespace, cl);
  return claims.length;
}
