/**
 * Cluster API Clusters, read-only: pause (spec §4) and owner references. The served version is discovered at start
 * (api/registry.ts's CLUSTER, preferred first); without Cluster API's CRDs the cache stays empty and keeps retrying,
 * so Clusters installed later are noticed.
 */
import { CLUSTER } from "../../api/registry.js";
import { PAUSED_ANNOTATION, type ObjectMeta } from "../../api/v1alpha1/types.js";
import type { KubeObject } from "../kube/resource.js";

export interface Cluster extends KubeObject {
  spec?: { paused?: boolean };
}

/** RBAC for reading Clusters (pause, owner references). */
export const CLUSTER_RULES = [
  { apiGroups: [CLUSTER.group], resources: [CLUSTER.plural], verbs: ["get", "list", "watch"] },
];

export const clusterPaused = (cluster: Cluster): boolean =>
  cluster.spec?.paused === true || PAUSED_ANNOTATION in (cluster.metadata.annotations ?? {});

/** What pause evaluation found for an object (spec §4). */
export type PauseState = { paused: true; why: string } | { paused: false; clusterMissing?: string; cluster?: Cluster };

/**
 * Pause of an object that belongs to `clusterName` (if any): the object's own annotation, or its Cluster paused.
 * A named Cluster that does not exist is reported as `clusterMissing` (blocks allocation, not release).
 */
export function pauseState(
  meta: ObjectMeta,
  clusterName: string | undefined,
  lookup: (ns: string, name: string) => Cluster | undefined,
): PauseState {
  if (PAUSED_ANNOTATION in (meta.annotations ?? {}))
    return { paused: true, why: `the object carries ${PAUSED_ANNOTATION}` };
  if (!clusterName) return { paused: false };
  const cluster = lookup(meta.namespace ?? "", clusterName);
  if (!cluster) return { paused: false, clusterMissing: clusterName };
  if (clusterPaused(cluster)) return { paused: true, why: `Cluster ${clusterName} is paused` };
  return { paused: false, cluster };
}
