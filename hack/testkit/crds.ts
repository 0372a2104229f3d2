/** Installs CustomResourceDefinitions from folders and waits until the API server serves them. */
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { CustomObjectsApi, KubeConfig, type V1CustomResourceDefinition } from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import { isConflict } from "../../src/kube/errors.js";
import { eventually } from "./wait.js";

/** Reads every CRD document from the YAML files of `dirs` (not recursive). Throws on a missing folder or a folder without CRDs. */
export function loadCrds(dirs: string[]): V1CustomResourceDefinition[] {
  const crds: V1CustomResourceDefinition[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      throw new Error(`CRD folder ${dir} does not exist (for Cluster API's CRDs run \`npm run binaries\`)`);
    }
    const before = crds.length;
    for (const file of readdirSync(dir).sort()) {
      if (!/\.ya?ml$/.test(file)) continue;
      for (const doc of loadAll(readFileSync(join(dir, file), "utf8"))) {
        const obj = doc as Partial<V1CustomResourceDefinition> | null;
        if (obj?.kind === "CustomResourceDefinition") crds.push(obj as V1CustomResourceDefinition);
      }
    }
    if (crds.length === before) throw new Error(`CRD folder ${dir} holds no CustomResourceDefinition`);
  }
  return crds;
}

// CRDs go through the generic client: the typed ApiextensionsV1Api re-serializes schemas through its models and
// silently drops keys such as `x-kubernetes-int-or-string`, which makes Cluster API's CRDs invalid.
const CRD_RESOURCE = { group: "apiextensions.k8s.io", version: "v1", plural: "customresourcedefinitions" };

async function readCrd(api: CustomObjectsApi, name: string): Promise<V1CustomResourceDefinition> {
  return (await api.getClusterCustomObject({ ...CRD_RESOURCE, name })) as V1CustomResourceDefinition;
}

/**
 * Creates the CRD, or replaces the one there. A replace that loses a race (409) is read and sent again after a short
 * random pause, ten times at most: a webhook server with self-managed certificates may write its CA into the same
 * CRD at any moment (a single read-and-replace failed a CI run on that).
 */
async function applyCrd(api: CustomObjectsApi, crd: V1CustomResourceDefinition): Promise<void> {
  const name = crd.metadata?.name ?? "";
  try {
    await api.createClusterCustomObject({ ...CRD_RESOURCE, body: crd });
    return;
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  for (let attempt = 1; ; attempt++) {
    const current = await readCrd(api, name);
    const body = { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata?.resourceVersion } };
    try {
      await api.replaceClusterCustomObject({ ...CRD_RESOURCE, name, body });
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 10) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40));
  }
}

function established(crd: V1CustomResourceDefinition): boolean {
  return (crd.status?.conditions ?? []).some((c) => c.type === "Established" && c.status === "True");
}

/**
 * Creates or replaces the CRDs of `dirs`, then waits until each is Established and listed in discovery. With
 * `conversionWebhooks` false, each is installed with conversion strategy None instead of the webhook it names.
 */
export async function installCrds(
  kc: KubeConfig,
  dirs: string[],
  timeoutMs = 60_000,
  options: { conversionWebhooks?: boolean } = {},
): Promise<string[]> {
  const crds = loadCrds(dirs).map((crd) =>
    options.conversionWebhooks === false ? { ...crd, spec: { ...crd.spec, conversion: { strategy: "None" } } } : crd,
  );
  const api = kc.makeApiClient(CustomObjectsApi);
  for (const crd of crds) await applyCrd(api, crd);
  const names = crds.map((c) => c.metadata?.name ?? "");
  await eventually(
    `CRDs ${names.join(", ")} to be Established`,
    async () => {
      for (const name of names) if (!established(await readCrd(api, name))) return false;
      return true;
    },
    timeoutMs,
    200,
  );
  // Established can precede the resource showing up in discovery and the REST mapping; a list proves both. Only the
  // storage version is listed: reading another version of stored objects needs the CRD's conversion webhook (the
  // in-cluster pools' v1alpha1), which the suite may not run, and the storage version proves the resource served.
  await eventually(
    `CRDs ${names.join(", ")} to be served`,
    async () => {
      for (const crd of crds) {
        for (const v of crd.spec.versions.filter((ver) => ver.served && ver.storage)) {
          await api.listClusterCustomObject({
            group: crd.spec.group,
            version: v.name,
            plural: crd.spec.names.plural,
            limit: 1,
          });
        }
      }
      return true;
    },
    timeoutMs,
    200,
  );
  return names;
}
