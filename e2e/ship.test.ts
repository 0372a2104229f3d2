/**
 * What operators install: the generated RBAC grants exactly what the code declares, the default install's and the
 * self-managed certificate mode's (checked on paper and by the API server's own authorizer). The manifests themselves:
 * e2e/install.test.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { AuthorizationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { renderRbac } from "../hack/rbac.js";
import type { PolicyRule } from "../src/kube/policy.js";
import { normalizeRules } from "../src/rbac.js";
import * as rbac from "../src/rbac.js";
import { repoRoot, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import {
  bindSelfManagedRoles,
  CONTROLLER_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNT,
  serviceAccountKubeConfig,
} from "../hack/testkit/serviceaccount.js";
import { SELF_MANAGED_NAMES } from "../src/certs/rbac.js";

const SELF_MANAGED_CHECK_ACCOUNT = "metal3-ipam-selfmanaged-check";

/**
 * The whole grant of the default install (config/rbac), as a table of rule and reason: any change to what the
 * controller may do must change this table too, and say why.
 */
const EXPECTED: [string, string][] = [
  ["/events: create patch", "Events on claims and pools, aggregated (repeats patch the count)"],
  ["/namespaces: get", "the control-plane endpoint guard reads a namespace's endpoint pools rule (its annotation)"],
  [
    "/namespaces[kube-system]: get",
    "its uid is the default installation id in the key of every NetBox record (management clusters sharing a NetBox)",
  ],
  ["authentication.k8s.io/tokenreviews: create", "whose token a /metrics scrape carries (diagnostics endpoint)"],
  [
    "authorization.k8s.io/subjectaccessreviews: create",
    "whether that scraper may get /metrics (the metrics-reader ClusterRole)",
  ],
  ["cluster.x-k8s.io/clusters: get list watch", "pools and claims follow their Cluster's pause and deletion"],
  [
    "coordination.k8s.io/leases[7bb7acb4.ipam.cluster.x-k8s.io]: get",
    "the in-cluster provider's leader Lease, by name: its kinds are not served while it runs",
  ],
  ...poolKindRows("ipam.cluster.x-k8s.io", "globalinclusterippools", "cluster-wide in-cluster pools"),
  ...poolKindRows("ipam.cluster.x-k8s.io", "inclusterippools", "in-cluster pools"),
  [
    "ipam.cluster.x-k8s.io/ipaddressclaims: create delete get list patch watch",
    "Cluster API claims served, finalizer added; control-plane endpoint claims made by the webhook, deleted when their Cluster never comes",
  ],
  [
    "ipam.cluster.x-k8s.io/ipaddressclaims/finalizers: update",
    "blockOwnerDeletion on owner references to claims (OwnerReferencesPermissionEnforcement)",
  ],
  ["ipam.cluster.x-k8s.io/ipaddressclaims/status: patch", "a claim's addressRef and conditions"],
  [
    "ipam.cluster.x-k8s.io/ipaddresses: create delete get list patch watch",
    "the Cluster API IPAddress of a claim, deleted on release; listed by the webhooks",
  ],
  [
    "ipam.metal3.io/ipaddresses: create delete get list patch watch",
    "the Metal3 IPAddress of an IPClaim, deleted on release; listed by the webhooks",
  ],
  ["ipam.metal3.io/ipclaims: get list patch watch", "IPClaims served, finalizer added"],
  ["ipam.metal3.io/ipclaims/status: patch", "an IPClaim's address and error"],
  ["ipam.metal3.io/ippools: get list patch watch", "Metal3 pools served, finalizer added; listed by the webhooks"],
  [
    "ipam.metal3.io/ippools/finalizers: update",
    "blockOwnerDeletion on owner references to pools (OwnerReferencesPermissionEnforcement)",
  ],
  ["ipam.metal3.io/ippools/status: patch", "a pool's allocations and conditions"],
  ...poolKindRows("netbox.ipam.cluster.x-k8s.io", "globalnetboxippools", "cluster-wide NetBox pools"),
  ...poolKindRows("netbox.ipam.cluster.x-k8s.io", "netboxippools", "NetBox pools"),
];

/** The three rules of a pool kind: served (finalizer added), owner references onto it, its status. */
function poolKindRows(group: string, plural: string, what: string): [string, string][] {
  return [
    [`${group}/${plural}: get list patch watch`, `${what} served, finalizer added`],
    [`${group}/${plural}/finalizers: update`, `blockOwnerDeletion on owner references to ${what}`],
    [`${group}/${plural}/status: patch`, `the status of ${what}`],
  ];
}

/** What only the self-managed certificate mode adds (config/selfmanaged/role.yaml), every rule by name. */
const SELF_MANAGED_EXPECTED: [string, string][] = [
  [
    "admissionregistration.k8s.io/mutatingwebhookconfigurations[metal3-ipam-mutating-webhook-configuration]: get patch",
    "its caBundle kept equal to the controller's CA",
  ],
  [
    "admissionregistration.k8s.io/validatingwebhookconfigurations[metal3-ipam-validating-webhook-configuration]: get patch",
    "its caBundle kept equal to the controller's CA",
  ],
  [
    "apiextensions.k8s.io/customresourcedefinitions[globalinclusterippools.ipam.cluster.x-k8s.io,inclusterippools.ipam.cluster.x-k8s.io]: get patch",
    "the CA bundle of their conversion webhook, when it is our Service",
  ],
];
const SELF_MANAGED_NAMESPACE_EXPECTED: [string, string][] = [
  ["/secrets: create", "the first replica creates the shared Secret (create cannot be limited to a name)"],
  ["/secrets[metal3-ipam-webhook-self-managed]: get update", "every replica reads the CA from it and stores renewals"],
];

/** What config/components/load-balancers adds, for `--serve-load-balancers` only. */
const LOAD_BALANCER_EXPECTED: [string, string][] = [
  ["/services: list patch watch", "Services of our loadBalancerClass watched; the kube-vip address annotation written"],
  ["ipam.cluster.x-k8s.io/ipaddressclaims: create delete", "the claim of a Service's address, deleted on release"],
];

const ruleRow = (r: PolicyRule): string =>
  `${r.apiGroups[0]}/${r.resources[0]}${r.resourceNames ? `[${r.resourceNames.join(",")}]` : ""}: ${r.verbs.join(" ")}`;

/** The rendered rules as rows, checked against `expected`; each row there has a reason. */
function expectTable(rules: readonly PolicyRule[], expected: [string, string][]): void {
  expect(normalizeRules(rules).map(ruleRow)).to.deep.equal(expected.map(([row]) => row));
  for (const [row, reason] of expected) expect(reason.length, `the reason of ${row}`).to.be.greaterThan(10);
}

describe("shipping: RBAC", function () {
  this.timeout(120_000);

  it("config/rbac is generated from the rules in src and is current (run `npm run generate`)", () => {
    for (const [path, text] of renderRbac()) expect(readFileSync(join(repoRoot, path), "utf8"), path).to.equal(text);
  });

  it("grants exactly the listed verbs and resources: no wildcards, Secrets (get) and Leases (but the in-cluster provider's, get) only in its namespace", () => {
    expectTable(rbac.CLUSTER_ROLE_RULES, EXPECTED);
    const all = Object.values(rbac)
      .filter((v): v is readonly PolicyRule[] => Array.isArray(v))
      .flat();
    expect(all.length, "rules of the four role sets").to.be.greaterThan(20);
    for (const r of all) {
      expect([...r.apiGroups, ...r.resources, ...r.verbs]).to.not.include("*");
    }
    // Secrets: none cluster-wide; in its own namespace `get` only (NetBox tokens, by name; never listed or watched).
    for (const r of rbac.CLUSTER_ROLE_RULES) expect(r.resources).to.not.include("secrets");
    expect(normalizeRules(rbac.NAMESPACE_ROLE_RULES)).to.deep.equal([
      { apiGroups: [""], resources: ["secrets"], verbs: ["get"] },
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create", "get", "patch"] },
    ]);
  });

  it("adds for the self-managed certificate mode only the listed rules, each limited by name but Secret create", () => {
    expectTable(rbac.SELF_MANAGED_CLUSTER_ROLE_RULES, SELF_MANAGED_EXPECTED);
    expectTable(rbac.SELF_MANAGED_NAMESPACE_ROLE_RULES, SELF_MANAGED_NAMESPACE_EXPECTED);
    for (const r of rbac.SELF_MANAGED_CLUSTER_ROLE_RULES) expect(r.resourceNames ?? [], ruleRow(r)).to.not.be.empty;
  });

  it("grants Services only in the load-balancers component, never in the default install", () => {
    expectTable(rbac.LOAD_BALANCER_CLUSTER_ROLE_RULES, LOAD_BALANCER_EXPECTED);
    for (const r of rbac.CLUSTER_ROLE_RULES) expect(r.resources, ruleRow(r)).to.not.include("services");
  });

  describe("against the API server's authorizer", function () {
    let admin: KubeConfig;
    const controller = `system:serviceaccount:${CONTROLLER_NAMESPACE}:${CONTROLLER_SERVICE_ACCOUNT}`;
    /** A ServiceAccount bound to config/selfmanaged's roles alone, so its rows show what they add. */
    const selfManaged = `system:serviceaccount:${CONTROLLER_NAMESPACE}:${SELF_MANAGED_CHECK_ACCOUNT}`;

    before(async function () {
      if (usingExistingCluster()) this.skip();
      admin = (await sharedCluster()).kubeConfig;
      await serviceAccountKubeConfig(admin);
      await bindSelfManagedRoles(admin, SELF_MANAGED_CHECK_ACCOUNT);
    });

    async function allowed(
      user: string,
      verb: string,
      group: string,
      resource: string,
      namespace = "default",
      subresource?: string,
      name?: string,
    ): Promise<boolean> {
      const review = await admin.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
        body: {
          spec: {
            user,
            groups: ["system:serviceaccounts", `system:serviceaccounts:${CONTROLLER_NAMESPACE}`],
            resourceAttributes: {
              verb,
              group,
              resource,
              namespace,
              ...(subresource ? { subresource } : {}),
              ...(name ? { name } : {}),
            },
          },
        },
      });
      return review.status?.allowed === true;
    }

    const rows: [string, string, string, string, boolean, string?][] = [
      ["patch", "ipam.metal3.io", "ipclaims", "default", true, "status"],
      ["create", "ipam.metal3.io", "ipaddresses", "default", true],
      ["create", "ipam.metal3.io", "ipclaims", "default", false],
      ["list", "cluster.x-k8s.io", "clusters", "default", true],
      ["patch", "coordination.k8s.io", "leases", CONTROLLER_NAMESPACE, true],
      ["patch", "coordination.k8s.io", "leases", "default", false],
      ["list", "coordination.k8s.io", "leases", "capi-ipam-in-cluster-system", false],
      ["get", "", "secrets", CONTROLLER_NAMESPACE, true],
      ["list", "", "secrets", CONTROLLER_NAMESPACE, false],
      ["watch", "", "secrets", CONTROLLER_NAMESPACE, false],
      ["create", "", "secrets", CONTROLLER_NAMESPACE, false],
      ["get", "", "secrets", "default", false],
      ["list", "", "secrets", "default", false],
      ["list", "", "pods", "default", false],
      ["delete", "ipam.metal3.io", "ippools", "default", false],
      ["update", "ipam.metal3.io", "ippools", "default", false],
      ["delete", "cluster.x-k8s.io", "clusters", "default", false],
      ["create", "apps", "deployments", "default", false],
      // The diagnostics endpoint's reviews of its scrapers' tokens (cluster-scoped; the API server stores none).
      ["create", "authentication.k8s.io", "tokenreviews", "", true],
      ["create", "authorization.k8s.io", "subjectaccessreviews", "", true],
      ["list", "authentication.k8s.io", "tokenreviews", "", false],
    ];
    for (const [verb, group, resource, namespace, expected, sub] of rows) {
      it(`${expected ? "may" : "may not"} ${verb} ${group || "core"}/${resource}${sub ? "/" + sub : ""} in ${namespace}`, async () => {
        expect(await allowed(controller, verb, group, resource, namespace, sub)).to.equal(expected);
      });
    }

    // Cluster-scoped, by name ("" = every object). The default install: nothing on webhook configurations or CRDs
    // (cert-manager injects the CA); config/selfmanaged's roles: exactly the objects the self-managed mode patches.
    const MUTATING = "admissionregistration.k8s.io/mutatingwebhookconfigurations";
    const VALIDATING = "admissionregistration.k8s.io/validatingwebhookconfigurations";
    const CRDS = "apiextensions.k8s.io/customresourcedefinitions";
    const namedRows: [string, string, string, boolean, boolean][] = [
      // verb, group/resource, name, the controller may, config/selfmanaged's roles may
      ["get", MUTATING, SELF_MANAGED_NAMES.mutating, false, true],
      ["patch", MUTATING, SELF_MANAGED_NAMES.mutating, false, true],
      ["patch", VALIDATING, SELF_MANAGED_NAMES.validating, false, true],
      ["patch", MUTATING, "another-webhook-configuration", false, false],
      ["patch", VALIDATING, SELF_MANAGED_NAMES.mutating, false, false],
      ["list", MUTATING, "", false, false],
      ["delete", VALIDATING, SELF_MANAGED_NAMES.validating, false, false],
      ["patch", CRDS, "inclusterippools.ipam.cluster.x-k8s.io", false, true],
      ["get", CRDS, "globalinclusterippools.ipam.cluster.x-k8s.io", false, true],
      ["patch", CRDS, "ippools.ipam.metal3.io", false, false],
      ["delete", CRDS, "inclusterippools.ipam.cluster.x-k8s.io", false, false],
      ["list", CRDS, "", false, false],
    ];
    for (const [verb, groupResource, name, byController, bySelfManaged] of namedRows) {
      const [group = "", resource = ""] = groupResource.split("/");
      const what = `${verb} ${resource} ${name || "(all)"}`;
      it(`the controller ${byController ? "may" : "may not"} ${what}; config/selfmanaged's roles ${bySelfManaged ? "may" : "may not"}`, async () => {
        expect(await allowed(controller, verb, group, resource, "", undefined, name || undefined)).to.equal(
          byController,
        );
        expect(await allowed(selfManaged, verb, group, resource, "", undefined, name || undefined)).to.equal(
          bySelfManaged,
        );
      });
    }

    const secretRows: [string, string, string, boolean][] = [
      ["create", CONTROLLER_NAMESPACE, "", true],
      ["get", CONTROLLER_NAMESPACE, SELF_MANAGED_NAMES.secret, true],
      ["update", CONTROLLER_NAMESPACE, SELF_MANAGED_NAMES.secret, true],
      ["get", CONTROLLER_NAMESPACE, "another-secret", false],
      ["update", CONTROLLER_NAMESPACE, "another-secret", false],
      ["delete", CONTROLLER_NAMESPACE, SELF_MANAGED_NAMES.secret, false],
      ["list", CONTROLLER_NAMESPACE, "", false],
      ["create", "default", "", false],
      ["get", "default", SELF_MANAGED_NAMES.secret, false],
    ];
    for (const [verb, namespace, name, expected] of secretRows) {
      it(`config/selfmanaged's roles ${expected ? "may" : "may not"} ${verb} Secret ${name || "(any)"} in ${namespace}`, async () => {
        expect(await allowed(selfManaged, verb, "", "secrets", namespace, undefined, name || undefined)).to.equal(
          expected,
        );
      });
    }
  });
});
