/**
 * Every permission the controller needs, collected from the modules that declare them. `npm run generate` renders
 * them into config/rbac (a ClusterRole for the cluster-wide rules, a Role in the controller's namespace for the
 * leader-election Lease) and, for the self-managed certificate mode only, into config/selfmanaged (a ClusterRole and a
 * Role, every rule limited to named objects); a test fails when the rendered files are stale or a rule grows a
 * wildcard.
 */
import { BRIDGE_RULES } from "./controllers/capi/bridge.js";
import { ENDPOINT_CLAIM_RULES } from "./controllers/capi/endpoint.js";
import { CLUSTER_RULES } from "./controllers/clusters.js";
import { EVENT_RULES } from "./controllers/events.js";
import { KIND_MODULES } from "./controllers/kinds.js";
import { LOAD_BALANCER_RULES } from "./controllers/loadbalancer/controller.js";
import { LEADER_ELECTION_RULES } from "./runtime/leader.js";
import { ACCESS_REVIEW_RULES } from "./runtime/reviews.js";
import { caBundleRules, crdBundleRules, SELF_MANAGED_NAMES, sharedSecretRules } from "./certs/rbac.js";
import { CONVERSION_CRDS } from "./conversioncrds.js";
import { ENDPOINT_RULES } from "./webhooks/endpoint.js";
import { LOOKUP_RULES } from "./webhooks/lookup.js";
import { ENDPOINT_GUARD_RULES } from "./webhooks/endpointreads.js";
import type { PolicyRule } from "./kube/policy.js";

/** Rules granted cluster-wide (the controller may watch all namespaces). */
export const CLUSTER_ROLE_RULES: readonly PolicyRule[] = [
  // Each pool kind module's own (src/controllers/kinds.ts lists them).
  ...KIND_MODULES.flatMap((m) => m.clusterRules),
  ...CLUSTER_RULES,
  ...EVENT_RULES,
  ...BRIDGE_RULES,
  ...ENDPOINT_CLAIM_RULES,
  ...LOOKUP_RULES,
  ...ENDPOINT_RULES,
  ...ENDPOINT_GUARD_RULES,
  ...ACCESS_REVIEW_RULES,
];
/** Rules granted only in the controller's own namespace. */
export const NAMESPACE_ROLE_RULES: readonly PolicyRule[] = [
  ...LEADER_ELECTION_RULES,
  ...KIND_MODULES.flatMap((m) => m.namespaceRules ?? []),
];

/**
 * Cluster-wide rules only `--serve-load-balancers` needs (config/components/load-balancers): a controller without the
 * flag never reads Services, so the default install does not grant them.
 */
export const LOAD_BALANCER_CLUSTER_ROLE_RULES: readonly PolicyRule[] = LOAD_BALANCER_RULES;

/** Cluster-scoped rules only the self-managed certificate mode needs (config/selfmanaged), by the names it installs. */
export const SELF_MANAGED_CLUSTER_ROLE_RULES: readonly PolicyRule[] = [
  ...caBundleRules(SELF_MANAGED_NAMES.mutating, SELF_MANAGED_NAMES.validating),
  ...crdBundleRules(CONVERSION_CRDS),
];
/** Namespaced rules only the self-managed certificate mode needs, in the controller's namespace. */
export const SELF_MANAGED_NAMESPACE_ROLE_RULES: readonly PolicyRule[] = sharedSecretRules(SELF_MANAGED_NAMES.secret);

/**
 * Merges rules per (group, resource, resource names), verbs united and sorted, for a stable rendering. Rules limited
 * to names stay apart from unlimited ones: merging them would widen the limited verbs to every object.
 */
export function normalizeRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const byKey = new Map<string, Set<string>>();
  for (const r of rules) {
    for (const g of r.apiGroups) {
      for (const res of r.resources) {
        const key = `${g}\u0000${res}\u0000${[...(r.resourceNames ?? [])].sort().join(",")}`;
        const verbs = byKey.get(key) ?? new Set<string>();
        r.verbs.forEach((v) => verbs.add(v));
        byKey.set(key, verbs);
      }
    }
  }
  return [...byKey.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, verbs]) => {
      const [group = "", resource = "", names = ""] = key.split("\u0000");
      const resourceNames = names === "" ? {} : { resourceNames: names.split(",") };
      return { apiGroups: [group], resources: [resource], ...resourceNames, verbs: [...verbs].sort() };
    });
}
