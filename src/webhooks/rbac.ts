/** RBAC of the webhook server: the self-managed certificate mode keeps the caBundle of its two configurations current. */
export const WEBHOOK_RULES = [
  { apiGroups: ["admissionregistration.k8s.io"], resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"], verbs: ["get", "patch"] },
];
