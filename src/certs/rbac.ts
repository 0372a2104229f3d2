/**
 * RBAC of the self-managed certificate mode, and of nothing else: with cert-manager (the default install) the
 * controller touches neither webhook configurations nor CRDs, so config/rbac grants none of this. `src/rbac.ts`
 * collects these rules into the extra roles config/selfmanaged ships, each limited by `resourceNames` to the objects
 * that install names: `cabundle.ts` patches the two webhook configurations, `crdbundle.ts` the conversion webhook of
 * the named CRDs, `selfmanaged.ts` keeps the CA in the shared Secret.
 */
interface NamedRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

/**
 * The names config/selfmanaged gives what these rules reach: config/default's webhook configurations (the defaults of
 * --webhook-mutating-configuration-name and --webhook-validating-configuration-name) and the Secret it passes as
 * --webhook-secret-name. A test builds the overlay and checks each against the objects and arguments it renders.
 */
export const SELF_MANAGED_NAMES = {
  mutating: "metal3-ipam-mutating-webhook-configuration",
  validating: "metal3-ipam-validating-webhook-configuration",
  secret: "metal3-ipam-webhook-self-managed",
} as const;

/**
 * What a forbidden read or write in this mode logs besides the API server's message: the RBAC it lacks is not in the
 * default install, so the fix is the overlay's roles (or a grant like theirs).
 */
export const SELF_MANAGED_RBAC_HINT =
  "--webhook-self-managed needs the roles of config/selfmanaged (role.yaml), which config/default does not grant";

/** Read and patch of the two webhook configurations `cabundle.ts` keeps current, by name. */
export function caBundleRules(mutating: string, validating: string): NamedRule[] {
  return [
    {
      apiGroups: ["admissionregistration.k8s.io"],
      resources: ["mutatingwebhookconfigurations"],
      resourceNames: [mutating],
      verbs: ["get", "patch"],
    },
    {
      apiGroups: ["admissionregistration.k8s.io"],
      resources: ["validatingwebhookconfigurations"],
      resourceNames: [validating],
      verbs: ["get", "patch"],
    },
  ];
}

/** Read and patch of exactly the CRDs `crdbundle.ts` keeps current, by name: no other CRD is readable or writable. */
export function crdBundleRules(names: readonly string[]): NamedRule[] {
  return [
    {
      apiGroups: ["apiextensions.k8s.io"],
      resources: ["customresourcedefinitions"],
      resourceNames: [...names],
      verbs: ["get", "patch"],
    },
  ];
}

/**
 * The shared Secret (`selfmanaged.ts`), in the controller's namespace: the first replica creates it (create cannot be
 * limited to a name: the API server checks it before the object has one), every replica reads it and stores renewals.
 */
export function sharedSecretRules(name: string): NamedRule[] {
  return [
    { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    { apiGroups: [""], resources: ["secrets"], resourceNames: [name], verbs: ["get", "update"] },
  ];
}
