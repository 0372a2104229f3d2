/**
 * Cluster API Clusters, read-only: pause (spec §4) and owner references. The served version is discovered at start
 * (v1beta2 preferred, v1beta1 for older management clusters); without Cluster API's CRDs the cache stays empty and
 * keeps retrying, so Clusters installed later are noticed.
 */
import { PAUSED_ANNOTATION, type ObjectMeta } from "../../api/v1alpha1/types.js";
import type { Kube } from "../kube/access.js";
import { ResourceClient, type KubeObject, type ResourceType } from "../kube/resource.js";

export interface Cluster extends KubeObject {
  spec?: { paused?: boolean };
}

/** RBAC for reading Clusters (pause, owner references). */
export const CLUSTER_RULES = [{ apiGroups: ["cluster.x-k8s.io"], resources: ["clusters"], verbs: ["get", "list", "watch"] }];

export const CLUSTER_GROUP = "cluster.x-k8s.io";

export function clusterType(version: string): ResourceType {
  return { group: CLUSTER_GROUP, version, plural: "clusters", kind: "Cluster", namespaced: true };
}

/** The newest Cluster version the API server serves, or v1beta2 when none is (yet). */
export async function discoverClusterVersion(kube: Kube): Promise<{ version: string; served: boolean }> {
  for (const version of ["v1beta2", "v1beta1"]) {
    if (await new ResourceClient(kube, clusterType(version)).served()) return { version, served: true };
  }
  return { version: "v1beta2", served: false };
}

export const clusterPaused = (cluster: Cluster): boolean =>
  cluster.spec?.paused === true || PAUSED_ANNOTATION in (cluster.metadata.annotations ?? {});

/** What pause evaluation found for an object (spec §4). */
export type PauseState = { paused: true; why: string } | { paused: false; clusterMissing?: string; cluster?: Cluster };

/**
 * Pause of an object that belongs to `clusterName` (if any): the object's own annotation, or its Cluster paused.
 * A named Cluster that does not exist is reported as `clusterMissing` (blocks allocation, not release).
 */
export function pauseState(meta: ObjectMeta, clusterName: string | undefined, lookup: (ns: string, name: string) => Cluster | undefined): PauseState {
  if (PAUSED_ANNOTATION in (meta.annotations ?? {})) return { paused: true, why: `the object carries ${PAUSED_ANNOTATION}` };
  if (!clusterName) return { paused: false };
  const cluster = lookup(meta.namespace ?? "", clusterName);
  if (!cluster) return { paused: false, clusterMissing: clusterName };
  if (clusterPaused(cluster)) return { paused: true, why: `Cluster ${clusterName} is paused` };
  return { paused: false, cluster };
}
