/**
 * What operators install: the generated RBAC grants exactly what the code declares (checked on paper and by the API
 * server's own authorizer), and config/default passes a server-side dry-run.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { AuthorizationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { installCrds } from "../hack/testkit/crds.js";
import { renderRbac } from "../hack/rbac.js";
import { CLUSTER_ROLE_RULES, NAMESPACE_ROLE_RULES, normalizeRules } from "../src/rbac.js";
import { repoRoot, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import {
  CONTROLLER_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNT,
  serviceAccountKubeConfig,
} from "../hack/testkit/serviceaccount.js";

/** The whole grant, as a table: any change to what the controller may do must change this table too. */
const EXPECTED = [
  "/events: create patch",
  "admissionregistration.k8s.io/mutatingwebhookconfigurations: get patch",
  "admissionregistration.k8s.io/validatingwebhookconfigurations: get patch",
  "apiextensions.k8s.io/customresourcedefinitions[globalinclusterippools.ipam.cluster.x-k8s.io,inclusterippools.ipam.cluster.x-k8s.io]: get patch",
  "cluster.x-k8s.io/clusters: get list watch",
  "coordination.k8s.io/leases[7bb7acb4.ipam.cluster.x-k8s.io]: get",
  "ipam.cluster.x-k8s.io/globalinclusterippools: get list patch watch",
  "ipam.cluster.x-k8s.io/globalinclusterippools/finalizers: update",
  "ipam.cluster.x-k8s.io/globalinclusterippools/status: patch",
  "ipam.cluster.x-k8s.io/inclusterippools: get list patch watch",
  "ipam.cluster.x-k8s.io/inclusterippools/finalizers: update",
  "ipam.cluster.x-k8s.io/inclusterippools/status: patch",
  "ipam.cluster.x-k8s.io/ipaddressclaims: get list patch watch",
  "ipam.cluster.x-k8s.io/ipaddressclaims/finalizers: update",
  "ipam.cluster.x-k8s.io/ipaddressclaims/status: patch",
  "ipam.cluster.x-k8s.io/ipaddresses: create delete get list patch watch",
  "ipam.metal3.io/ipaddresses: create delete get list patch watch",
  "ipam.metal3.io/ipclaims: get list patch watch",
  "ipam.metal3.io/ipclaims/status: patch",
  "ipam.metal3.io/ippools: get list patch watch",
  "ipam.metal3.io/ippools/finalizers: update",
  "ipam.metal3.io/ippools/status: patch",
  "netbox.ipam.cluster.x-k8s.io/globalnetboxippools: get list patch watch",
  "netbox.ipam.cluster.x-k8s.io/globalnetboxippools/finalizers: update",
  "netbox.ipam.cluster.x-k8s.io/globalnetboxippools/status: patch",
  "netbox.ipam.cluster.x-k8s.io/netboxippools: get list patch watch",
  "netbox.ipam.cluster.x-k8s.io/netboxippools/finalizers: update",
  "netbox.ipam.cluster.x-k8s.io/netboxippools/status: patch",
];

function kubectlAvailable(): boolean {
  return spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status === 0;
}

describe("shipping: RBAC and manifests", function () {
  this.timeout(120_000);

  it("config/rbac is generated from the rules in src and is current (run `npm run generate`)", () => {
    for (const [path, text] of renderRbac()) expect(readFileSync(join(repoRoot, path), "utf8"), path).to.equal(text);
  });

  it("grants exactly the listed verbs and resources: no wildcards, Secrets (get) and Leases (but the in-cluster provider's, get) only in its namespace", () => {
    const table = normalizeRules(CLUSTER_ROLE_RULES).map(
      (r) =>
        `${r.apiGroups[0]}/${r.resources[0]}${r.resourceNames ? `[${r.resourceNames.join(",")}]` : ""}: ${r.verbs.join(" ")}`,
    );
    expect(table).to.deep.equal(EXPECTED);
    const all = [...CLUSTER_ROLE_RULES, ...NAMESPACE_ROLE_RULES];
    for (const r of all) {
      expect([...r.apiGroups, ...r.resources, ...r.verbs]).to.not.include("*");
    }
    // Secrets: none cluster-wide; in its own namespace `get` only (NetBox tokens, by name; never listed or watched).
    for (const r of CLUSTER_ROLE_RULES) expect(r.resources).to.not.include("secrets");
    expect(normalizeRules(NAMESPACE_ROLE_RULES)).to.deep.equal([
      { apiGroups: [""], resources: ["secrets"], verbs: ["get"] },
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create", "get", "patch"] },
    ]);
  });

  describe("against the API server's authorizer", function () {
    let admin: KubeConfig;
    const user = `system:serviceaccount:${CONTROLLER_NAMESPACE}:${CONTROLLER_SERVICE_ACCOUNT}`;

    before(async function () {
      if (usingExistingCluster()) this.skip();
      admin = (await sharedCluster()).kubeConfig;
      await serviceAccountKubeConfig(admin);
    });

    async function allowed(
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
      ["get", "", "secrets", "default", false],
      ["list", "", "secrets", "default", false],
      ["list", "", "pods", "default", false],
      ["delete", "ipam.metal3.io", "ippools", "default", false],
      ["update", "ipam.metal3.io", "ippools", "default", false],
      ["delete", "cluster.x-k8s.io", "clusters", "default", false],
      ["create", "apps", "deployments", "default", false],
    ];
    // The conversion CRDs' CA bundle (self-managed mode): those two CRDs by name, nothing else about CRDs.
    const crdRows: [string, string, boolean][] = [
      ["patch", "inclusterippools.ipam.cluster.x-k8s.io", true],
      ["get", "globalinclusterippools.ipam.cluster.x-k8s.io", true],
      ["patch", "ippools.ipam.metal3.io", false],
      ["delete", "inclusterippools.ipam.cluster.x-k8s.io", false],
      ["list", "", false],
    ];
    for (const [verb, name, expected] of crdRows) {
      it(`${expected ? "may" : "may not"} ${verb} customresourcedefinitions ${name || "(all)"}`, async () => {
        const ok = await allowed(
          verb,
          "apiextensions.k8s.io",
          "customresourcedefinitions",
          "",
          undefined,
          name || undefined,
        );
        expect(ok).to.equal(expected);
      });
    }
    for (const [verb, group, resource, namespace, expected, sub] of rows) {
      it(`${expected ? "may" : "may not"} ${verb} ${group || "core"}/${resource}${sub ? "/" + sub : ""} in ${namespace}`, async () => {
        expect(await allowed(verb, group, resource, namespace, sub)).to.equal(expected);
      });
    }
  });

  it("config/default passes `kubectl apply --dry-run=server`", async function () {
    if (usingExistingCluster() || !kubectlAvailable()) this.skip();
    const cluster = await sharedCluster();
    await installCrds(cluster.kubeConfig, [join(repoRoot, "e2e", "fixtures")]);
    const env = { ...process.env, KUBECONFIG: cluster.kubeconfigPath };
    // The namespace must exist for a dry-run of the objects inside it (a dry-run creates nothing).
    spawnSync("kubectl", ["create", "namespace", CONTROLLER_NAMESPACE], { env, stdio: "ignore" });
    const out = execFileSync("kubectl", ["apply", "--dry-run=server", "-k", join(repoRoot, "config", "default")], {
      env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    expect(out).to.match(/deployment\.apps\/metal3-ipam-controller-manager .*\(server dry run\)/);
    expect(out).to.match(
      /validatingwebhookconfiguration.*metal3-ipam-validating-webhook-configuration .*\(server dry run\)/,
    );
    expect(out).to.match(/clusterrole.*metal3-ipam-manager-role .*\(server dry run\)/);
  });
});
