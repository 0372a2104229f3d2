/**
 * The control-plane endpoint guard through a real API server: our webhook server runs in this process on 127.0.0.1,
 * the guard's entries of config/webhook/manifests.yaml point at it by URL, scoped to this suite's namespaces by label.
 * The holders are written as the controller writes them (an endpoint `IPAddressClaim` bound to a Cluster API
 * IPAddress; a machine's Metal3 IPAddress), so the guard's own reads (its index of held addresses, the claim, the
 * namespace) are what is under test.
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { AdmissionregistrationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CLUSTER,
  IPADDRESS,
  apiVersionOf,
  resourceType,
} from "../api/registry.js";
import type { CapiIPAddress, IPAddressClaim } from "../api/capi/types.js";
import type { IPAddress } from "../api/v1alpha1/types.js";
import { ENDPOINT_CLAIM_LABEL, ENDPOINT_POOL_ANNOTATION, endpointClaimName } from "../src/ipam/endpoint.js";
import { ENDPOINT_POOLS_NAMESPACE_ANNOTATION } from "../src/ipam/endpoint-guard.js";
import { describeError } from "../src/kube/errors.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import type { Cluster } from "../src/controllers/clusters.js";
import { silentLogger } from "../src/runtime/logger.js";
import { loopbackPki, writeCertDir } from "../src/webhooks/https.testutil.js";
import { startWebhookServer, type WebhookServer } from "../src/webhooks/server.js";
import { freshNamespace, repoRoot, sharedCluster } from "../hack/testkit/cluster.js";
import { installCrds } from "../hack/testkit/crds.js";
import { scopedWebhookConfigurations } from "../hack/testkit/hostile.js";
import { cluster } from "../hack/testkit/ipam.js";
import { eventually } from "../hack/testkit/wait.js";

const SCOPE_LABEL = "e2e.ipam.metal3.io/endpoint-guard";
const runId = `${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
/** The guard's entries: those on Cluster API's and CAPM3's kinds. */
const isGuardEntry = (w: { rules?: Array<{ resources?: string[] }> }): boolean =>
  (w.rules ?? []).some((r) => r.resources?.some((x) => x === "clusters" || x === "metal3clusters"));
/** CAPM3's kind as the fixture CRD serves it (e2e/fixtures/metal3cluster). */
const METAL3CLUSTER = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1beta1",
  kind: "Metal3Cluster",
  plural: "metal3clusters",
  namespaced: true,
};
const VIPS = { apiGroup: "ipam.cluster.x-k8s.io", kind: "InClusterIPPool", name: "vips" };

/** The message of a refused write; fails the test when the write succeeds. */
async function refusal(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (err) {
    return describeError(err);
  }
  throw new Error("expected the API server to refuse the request");
}

function clusterWithHost(namespace: string, name: string, host: string, annotations: Record<string, string> = {}) {
  const c = cluster(namespace, name);
  return {
    ...c,
    metadata: { ...c.metadata, annotations },
    spec: { ...c.spec, controlPlaneEndpoint: { host, port: 6443 } },
  } as Cluster;
}

describe("control-plane endpoint guard (real API server)", function () {
  this.timeout(120_000);
  const pki = loopbackPki();
  const name = `endpoint-guard-${runId}`;
  let kc: KubeConfig;
  let server: WebhookServer | undefined;
  let certDir: string | undefined;
  let clusters: ResourceClient<Cluster>;
  let claims: ResourceClient<IPAddressClaim>;
  let capiAddresses: ResourceClient<CapiIPAddress>;
  let metal3Addresses: ResourceClient<IPAddress>;
  let metal3Clusters: ResourceClient<KubeObject>;
  let ns: string;

  /** A namespace in the guard's scope. */
  async function scoped(prefix: string, annotations: Record<string, string> = {}): Promise<string> {
    const namespace = await freshNamespace(kc, prefix);
    await kc
      .makeApiClient(CoreV1Api)
      .patchNamespace(
        { name: namespace, body: { metadata: { labels: { [SCOPE_LABEL]: runId }, annotations } } },
        mergePatch,
      );
    return namespace;
  }

  /** What the controller leaves for Cluster `clusterName`'s endpoint: the labelled claim bound to its IPAddress. */
  async function boundEndpoint(namespace: string, clusterName: string, address: string, pool = VIPS): Promise<void> {
    const claimName = endpointClaimName(clusterName);
    await claims.create(namespace, {
      apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM),
      kind: CAPI_IPADDRESSCLAIM.kind,
      metadata: {
        name: claimName,
        namespace,
        labels: { [ENDPOINT_CLAIM_LABEL]: "", "cluster.x-k8s.io/cluster-name": clusterName },
      },
      spec: { poolRef: pool },
    });
    await capiAddresses.create(namespace, {
      apiVersion: apiVersionOf(CAPI_IPADDRESS),
      kind: CAPI_IPADDRESS.kind,
      metadata: { name: claimName, namespace },
      spec: { address, prefix: 24, claimRef: { name: claimName }, poolRef: pool },
    });
    await claims.patchStatus(namespace, claimName, { status: { addressRef: { name: claimName } } });
  }

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    await installCrds(kc, [join(repoRoot, "e2e", "fixtures", "metal3cluster")]);
    metal3Clusters = new ResourceClient<KubeObject>(kc, METAL3CLUSTER);
    clusters = new ResourceClient<Cluster>(kc, resourceType(CLUSTER));
    claims = new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM));
    capiAddresses = new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS));
    metal3Addresses = new ResourceClient<IPAddress>(kc, resourceType(IPADDRESS));
    ns = await scoped("endpoint-guard");
    // Held before the guard's first review: another Cluster's endpoint, and a machine's NIC from a Metal3 pool.
    await boundEndpoint(ns, "first", "10.77.0.10");
    await metal3Addresses.create(ns, {
      apiVersion: apiVersionOf(IPADDRESS),
      kind: IPADDRESS.kind,
      metadata: { name: "nics-10-77-0-20", namespace: ns },
      spec: { address: "10.77.0.20", prefix: 24, pool: { name: "nics" }, claim: { name: "worker-0-nic" } },
    });
    certDir = writeCertDir(pki.serving);
    server = await startWebhookServer({ port: 0, host: "127.0.0.1", certDir, kubeConfig: kc, logger: silentLogger() });
    const { validating } = scopedWebhookConfigurations(
      name,
      `https://127.0.0.1:${server.port}`,
      pki.ca.certPem,
      SCOPE_LABEL,
      runId,
      isGuardEntry,
    );
    await kc.makeApiClient(AdmissionregistrationV1Api).createValidatingWebhookConfiguration({ body: validating });
    // Configurations take effect lazily: probes until one is refused (those admitted before are left, harmless).
    let probe = 0;
    await eventually(
      "the guard to serve the namespace",
      async () => {
        const message = await refusal(clusters.create(ns, clusterWithHost(ns, `probe-${++probe}`, "10.77.0.10"))).catch(
          () => "",
        );
        return message.includes("denied the request");
      },
      60_000,
      250,
    );
  });

  after(async () => {
    await kc
      ?.makeApiClient(AdmissionregistrationV1Api)
      .deleteValidatingWebhookConfiguration({ name: `${name}-validating` })
      .catch(() => undefined);
    await server?.stop();
    if (certDir) rmSync(certDir, { recursive: true, force: true });
  });

  it("refuses a second Cluster on the address another Cluster's endpoint claim holds, naming that claim", async () => {
    const message = await refusal(clusters.create(ns, clusterWithHost(ns, "second", "10.77.0.10")));
    expect(message).to.contain(`IPAddressClaim ${ns}/${endpointClaimName("first")} (pool InClusterIPPool/vips)`);
    expect(message).to.contain("spec.controlPlaneEndpoint.host");
  });

  it("refuses a Cluster on a machine's address, naming the machine's IPClaim", async () => {
    const message = await refusal(clusters.create(ns, clusterWithHost(ns, "on-a-nic", "10.77.0.20")));
    expect(message).to.contain(`IPClaim ${ns}/worker-0-nic (pool IPPool/nics)`);
  });

  it("admits a Cluster on the address its own endpoint claim holds, and a DNS name", async () => {
    await clusters.create(
      ns,
      clusterWithHost(ns, "first", "10.77.0.10", { [ENDPOINT_POOL_ANNOTATION]: "InClusterIPPool/vips" }),
    );
    await clusters.create(ns, clusterWithHost(ns, "by-name", "api.example.test"));
    const stored = (await clusters.get(ns, "first")) as Cluster & {
      spec: { controlPlaneEndpoint?: { host?: string } };
    };
    expect(stored.spec.controlPlaneEndpoint?.host).to.equal("10.77.0.10");
  });

  it("guards Metal3Clusters too: its Cluster's endpoint (by label) is admitted, another's refused", async () => {
    const m3c = (name: string, clusterName: string, host: string) =>
      ({
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
        kind: "Metal3Cluster",
        metadata: { name, namespace: ns, labels: { "cluster.x-k8s.io/cluster-name": clusterName } },
        spec: { controlPlaneEndpoint: { host, port: 6443 } },
      }) as KubeObject;
    await metal3Clusters.create(ns, m3c("first-infra", "first", "10.77.0.10"));
    const message = await refusal(metal3Clusters.create(ns, m3c("other-infra", "other", "10.77.0.10")));
    expect(message).to.contain(`Metal3Cluster.infrastructure.cluster.x-k8s.io "other-infra" is invalid`);
    expect(message).to.contain(`IPAddressClaim ${ns}/${endpointClaimName("first")}`);
  });

  it("refuses moving a pool endpoint's host, saying how; other updates pass", async () => {
    const message = await refusal(
      clusters.patch(ns, "first", { spec: { controlPlaneEndpoint: { host: "10.77.0.11", port: 6443 } } }),
    );
    expect(message).to.contain(`delete IPAddressClaim ${ns}/${endpointClaimName("first")}`);
    await clusters.patch(ns, "first", { metadata: { labels: { tier: "gold" } } });
  });

  it("under a namespace's endpoint rule, refuses a host not from the listed pools and admits one that is", async () => {
    const ruled = await scoped("endpoint-rule", { [ENDPOINT_POOLS_NAMESPACE_ANNOTATION]: "InClusterIPPool/vips" });
    await boundEndpoint(ruled, "listed", "10.77.1.1");
    await boundEndpoint(ruled, "unlisted", "10.77.2.1", { ...VIPS, name: "elsewhere" });
    const typed = await refusal(clusters.create(ruled, clusterWithHost(ruled, "typed", "10.77.1.99")));
    expect(typed).to.contain("takes control-plane endpoints only from InClusterIPPool/vips");
    const other = await refusal(clusters.create(ruled, clusterWithHost(ruled, "unlisted", "10.77.2.1")));
    expect(other).to.contain(`not held by IPAddressClaim ${ruled}/${endpointClaimName("unlisted")}`);
    await clusters.create(ruled, clusterWithHost(ruled, "listed", "10.77.1.1"));
    await clusters.create(ruled, clusterWithHost(ruled, "dns", "api.example.test"));
  });
});
