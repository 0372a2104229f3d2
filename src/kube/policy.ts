/** One RBAC rule as the controller declares it (src/rbac.ts collects them; `npm run generate` renders them). */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  /** Limits the rule to these objects (absent: every object of the resources). */
  resourceNames?: string[];
  verbs: string[];
}
