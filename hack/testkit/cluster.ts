/**
 * The cluster a test suite talks to: by default one local plane shared by every suite of the run (with our CRDs, the
 * in-cluster provider's pool CRDs we ship as an optional component, and Cluster API's), or an existing cluster when
 * `USE_EXISTING_CLUSTER=true` (the envtest convention; `KUBECONFIG` names it). Suites isolate themselves with their
 * own namespaces.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { LocalPlane } from "./plane.js";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const OUR_CRDS = join(repoRoot, "config", "crd", "bases");
export const CAPI_CRDS = join(repoRoot, ".cache", "crds", "cluster-api");
/** The in-cluster provider's pool CRDs (InClusterIPPool, GlobalInClusterIPPool) from config/components/incluster. */
export const INCLUSTER_POOL_CRDS = join(repoRoot, "config", "crd", "incluster");

export interface TestCluster {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  /** Present when the cluster is a local plane this run owns (fault injection is possible). */
  plane?: LocalPlane;
}

let shared: Promise<TestCluster> | undefined;

export function usingExistingCluster(): boolean {
  return process.env.USE_EXISTING_CLUSTER === "true";
}

/** The run's shared cluster, started on first use. */
export async function sharedCluster(): Promise<TestCluster> {
  shared ??= (async () => {
    if (usingExistingCluster()) {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromDefault();
      return { kubeConfig, kubeconfigPath: process.env.KUBECONFIG ?? join(process.env.HOME ?? "", ".kube", "config") };
    }
    const plane = await LocalPlane.start({ crdDirs: [OUR_CRDS, INCLUSTER_POOL_CRDS, CAPI_CRDS] });
    return { kubeConfig: plane.kubeConfig, kubeconfigPath: plane.kubeconfigPath, plane };
  })();
  return await shared;
}

/** Stops the shared plane, if this run started one. */
export async function stopSharedCluster(): Promise<void> {
  if (!shared) return;
  const cluster = await shared.catch(() => undefined);
  shared = undefined;
  await cluster?.plane?.stop();
}

let namespaceCounter = 0;

/** Creates a fresh namespace named after `prefix`; deleting it is the caller's choice (the plane dies anyway). */
export async function freshNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${process.pid}-${++namespaceCounter}-${Math.random().toString(36).slice(2, 7)}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}
