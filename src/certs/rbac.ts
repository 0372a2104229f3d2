/**
 * RBAC of the certificate lifecycle: in self-managed mode `cabundle.ts` keeps the caBundle of the two webhook
 * configurations current, and `crdbundle.ts` that of the conversion webhook of the CRDs named (by src/rbac.ts, from
 * the registry) in {@link crdBundleRules}. The shared Secret's rules are deliberately absent (see README.md).
 */
export const CA_BUNDLE_RULES = [
  {
    apiGroups: ["admissionregistration.k8s.io"],
    resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
    verbs: ["get", "patch"],
  },
];

/** Read and patch of exactly the CRDs `crdbundle.ts` keeps current, by name: no other CRD is readable or writable. */
export function crdBundleRules(names: readonly string[]): {
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  verbs: string[];
}[] {
  return [
    {
      apiGroups: ["apiextensions.k8s.io"],
      resources: ["customresourcedefinitions"],
      resourceNames: [...names],
      verbs: ["get", "patch"],
    },
  ];
}
