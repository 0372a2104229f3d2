/** config/webhook and config/certmanager agree with the server (paths, operations, policies) and with spec §6. */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadAll } from "js-yaml";
import { ENDPOINT_GUARD_PATHS } from "./endpointguard.js";
import { WEBHOOK_PATHS } from "./handlers.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

interface Webhook {
  name: string;
  admissionReviewVersions: string[];
  clientConfig: { service: { name: string; namespace: string; path: string } };
  failurePolicy: string;
  matchPolicy: string;
  sideEffects: string;
  timeoutSeconds: number;
  rules: Array<{
    apiGroups: string[];
    apiVersions: string[];
    operations: string[];
    resources: string[];
    scope?: string;
  }>;
}

interface Doc {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  webhooks?: Webhook[];
  spec?: { ports?: Array<{ port: number; targetPort: number }>; secretName?: string; issuerRef?: { name: string } };
}

function docs(path: string): Doc[] {
  return loadAll(readFileSync(join(root, path), "utf8")).filter((d): d is Doc => d !== null && typeof d === "object");
}

describe("config/webhook and config/certmanager", () => {
  const manifests = docs("config/webhook/manifests.yaml");
  const webhooks = manifests.flatMap((d) => (d.webhooks ?? []).map((w) => ({ kind: d.kind, ...w })));

  const endpoint = webhooks.filter((w) => w.clientConfig.service.path === WEBHOOK_PATHS.mutateControlPlaneEndpoint);
  const metal3 = webhooks.filter((w) => w.rules.some((r) => r.apiGroups.includes("ipam.metal3.io")));
  const inCluster = webhooks.filter((w) => w.rules.some((r) => r.apiGroups.includes("ipam.cluster.x-k8s.io")));
  const guard = webhooks.filter((w) => !metal3.includes(w) && !inCluster.includes(w) && !endpoint.includes(w));

  it("has one webhook per served path, mutating only for the IPPool defaulter and the control-plane endpoint", () => {
    const byPath = new Map(webhooks.map((w) => [w.clientConfig.service.path, w.kind]));
    expect(byPath).to.deep.equal(
      new Map<string, string>([
        [WEBHOOK_PATHS.mutateIPPool, "MutatingWebhookConfiguration"],
        [WEBHOOK_PATHS.mutateControlPlaneEndpoint, "MutatingWebhookConfiguration"],
        [WEBHOOK_PATHS.validateIPPool, "ValidatingWebhookConfiguration"],
        [WEBHOOK_PATHS.validateIPClaim, "ValidatingWebhookConfiguration"],
        [WEBHOOK_PATHS.validateIPAddress, "ValidatingWebhookConfiguration"],
        [WEBHOOK_PATHS.validateInClusterIPPool, "ValidatingWebhookConfiguration"],
        [WEBHOOK_PATHS.validateGlobalInClusterIPPool, "ValidatingWebhookConfiguration"],
        [ENDPOINT_GUARD_PATHS.validateClusterEndpoint, "ValidatingWebhookConfiguration"],
        [ENDPOINT_GUARD_PATHS.validateMetal3ClusterEndpoint, "ValidatingWebhookConfiguration"],
      ]),
    );
  });

  it("routes CREATE and UPDATE of Metal3's main resources only: never DELETE, never a status subresource", () => {
    expect(metal3).to.have.length(4);
    for (const w of metal3) {
      expect(w.rules, w.name).to.have.length(1);
      const [rule] = w.rules;
      expect(rule?.operations, w.name).to.deep.equal(["CREATE", "UPDATE"]);
      expect(rule?.apiGroups, w.name).to.deep.equal(["ipam.metal3.io"]);
      expect(rule?.apiVersions, w.name).to.deep.equal(["v1alpha1"]);
      expect(rule?.resources, w.name).to.have.length(1);
      expect(rule?.resources[0], w.name).to.match(/^(ippools|ipclaims|ipaddresses)$/);
      expect(w.clientConfig.service.path, w.name).to.contain(rule?.resources[0]?.replace(/es$|s$/, ""));
    }
  });

  it("routes CREATE, UPDATE and DELETE of the in-cluster provider's pools, each in its scope, under its names", () => {
    const expected = [
      { name: "validation.inclusterippool.ipam.cluster.x-k8s.io", resource: "inclusterippools", scope: "Namespaced" },
      {
        name: "validation.globalinclusterippool.ipam.cluster.x-k8s.io",
        resource: "globalinclusterippools",
        scope: "Cluster",
      },
    ];
    expect(inCluster.map((w) => w.name)).to.deep.equal(expected.map((e) => e.name));
    for (const { name, resource, scope } of expected) {
      const w = inCluster.find((x) => x.name === name);
      expect(w?.kind, name).to.equal("ValidatingWebhookConfiguration");
      expect(w?.rules, name).to.deep.equal([
        {
          apiGroups: ["ipam.cluster.x-k8s.io"],
          apiVersions: ["v1alpha2"],
          operations: ["CREATE", "UPDATE", "DELETE"],
          resources: [resource],
          scope,
        },
      ]);
      expect(w?.clientConfig.service.path, name).to.equal(
        `/validate-ipam-cluster-x-k8s-io-v1alpha2-${resource.replace(/s$/, "")}`,
      );
    }
  });

  it("routes CREATE of Clusters (v1beta2, v1beta1) and Metal3Clusters (v1beta1, v1beta2) to the endpoint webhook", () => {
    expect(endpoint.map((w) => w.name)).to.deep.equal(["control-plane-endpoint.ipam.metal3.io"]);
    expect(endpoint[0]?.rules).to.deep.equal([
      {
        apiGroups: ["cluster.x-k8s.io"],
        apiVersions: ["v1beta2", "v1beta1"],
        operations: ["CREATE"],
        resources: ["clusters"],
        scope: "Namespaced",
      },
      {
        apiGroups: ["infrastructure.cluster.x-k8s.io"],
        apiVersions: ["v1beta1", "v1beta2"],
        operations: ["CREATE"],
        resources: ["metal3clusters"],
        scope: "Namespaced",
      },
    ]);
  });

  it("routes CREATE and UPDATE of Clusters and Metal3Clusters, every served version, to the endpoint guard", () => {
    expect(guard.map((w) => [w.clientConfig.service.path, w.rules])).to.deep.equal([
      [
        ENDPOINT_GUARD_PATHS.validateClusterEndpoint,
        [
          {
            apiGroups: ["cluster.x-k8s.io"],
            apiVersions: ["v1beta2", "v1beta1"],
            operations: ["CREATE", "UPDATE"],
            resources: ["clusters"],
          },
        ],
      ],
      [
        ENDPOINT_GUARD_PATHS.validateMetal3ClusterEndpoint,
        [
          {
            apiGroups: ["infrastructure.cluster.x-k8s.io"],
            apiVersions: ["v1beta1", "v1beta2"],
            operations: ["CREATE", "UPDATE"],
            resources: ["metal3clusters"],
          },
        ],
      ],
    ]);
  });

  it("fails closed, speaks AdmissionReview v1 and matches equivalent versions; only the endpoint webhook writes, not on dry runs", () => {
    for (const w of webhooks) {
      const sideEffects = endpoint.includes(w) ? "NoneOnDryRun" : "None";
      expect(w, w.name).to.include({ failurePolicy: "Fail", sideEffects, matchPolicy: "Equivalent" });
      expect(w.admissionReviewVersions, w.name).to.deep.equal(["v1"]);
      expect(w.timeoutSeconds, w.name).to.be.within(1, 30);
    }
    expect(new Set(webhooks.map((w) => w.name)).size).to.equal(webhooks.length);
  });

  it("asks cert-manager for the CA bundle and points at the Service", () => {
    const [service] = docs("config/webhook/service.yaml");
    for (const d of manifests)
      expect(d.metadata.annotations?.["cert-manager.io/inject-ca-from"], d.metadata.name).to.be.a("string");
    for (const w of webhooks) expect(w.clientConfig.service.name).to.equal(service?.metadata.name);
    expect(service?.spec?.ports?.[0]).to.include({ port: 443, targetPort: 9443 });
  });

  it("issues the certificate into the Secret the manager mounts, from the Issuer it declares", () => {
    const cm = docs("config/certmanager/certificate.yaml");
    const issuer = cm.find((d) => d.kind === "Issuer");
    const certificate = cm.find((d) => d.kind === "Certificate");
    expect(certificate?.spec?.issuerRef?.name).to.equal(issuer?.metadata.name);
    expect(certificate?.spec?.secretName).to.equal("webhook-server-cert");
  });
});
