/**
 * RBAC of the certificate lifecycle: in self-managed mode `cabundle.ts` keeps the caBundle of the two webhook
 * configurations current. The shared Secret's rules are deliberately absent (see README.md).
 */
export const CA_BUNDLE_RULES = [
  {
    apiGroups: ["admissionregistration.k8s.io"],
    resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
    verbs: ["get", "patch"],
  },
];
