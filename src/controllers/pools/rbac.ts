/**
 * The RBAC a pool kind served through the pass needs on its own pools: read and watch them, patch their metadata
 * (finalizer, owners) and status, and update their finalizers (owner references with blockOwnerDeletion).
 */
import type { ResourceDescriptor } from "../../../api/registry.js";
import type { PolicyRule } from "../../kube/policy.js";

/** The rules for pools of `kinds` (one group). */
export function poolKindRules(...kinds: readonly [ResourceDescriptor, ...ResourceDescriptor[]]): PolicyRule[] {
  const group = kinds[0].group;
  const plurals = (suffix: string): string[] => kinds.map((k) => `${k.plural}${suffix}`);
  return [
    { apiGroups: [group], resources: plurals(""), verbs: ["get", "list", "watch", "patch"] },
    { apiGroups: [group], resources: plurals("/status"), verbs: ["patch"] },
    { apiGroups: [group], resources: plurals("/finalizers"), verbs: ["update"] },
  ];
}
