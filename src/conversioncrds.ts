/**
 * The CRDs whose conversion webhook is ours (the in-cluster pools, v1alpha1 ⇄ v1alpha2): in self-managed mode the
 * controller keeps their CA bundle current (src/certs/crdbundle.ts), and its RBAC names exactly them (src/rbac.ts).
 */
import { GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL, qualifiedName } from "../api/registry.js";

export const CONVERSION_CRDS: readonly string[] = [
  qualifiedName(INCLUSTER_IPPOOL),
  qualifiedName(GLOBAL_INCLUSTER_IPPOOL),
];
