/**
 * Control-plane endpoints from a pool, through a real API server: two controller replicas on one Lease, the API
 * server calling the follower's endpoint webhook (so the webhook's answer comes from a replica that allocates nothing),
 * and a fixture validating webhook in this process playing CAPM3's rule (a Metal3Cluster needs
 * `spec.controlPlaneEndpoint.host` at create) and "a later webhook refuses the create" (a label asks it to).
 *
 * Isolation: the webhook configurations select only this suite's namespace (a label) and are deleted in after().
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "chai";
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  loadYaml,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
import type { IPAddressClaim } from "../api/capi/types.js";
import { NETBOX_IPPOOL_KIND } from "../api/netbox/types.js";
import { CLUSTER_NAME_LABEL } from "../api/v1alpha1/types.js";
import {
  DEFAULT_ENDPOINT_PENDING_CLAIMS,
  ENDPOINT_CLAIM_LABEL,
  ENDPOINT_PENDING_LABEL,
  ENDPOINT_POOL_ANNOTATION,
  endpointClaimName,
} from "../src/ipam/endpoint.js";
import { describeError, statusCodeOf } from "../src/kube/errors.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import { loopbackPki, writeCertDir } from "../src/webhooks/https.testutil.js";
import { sharedNetBox } from "../hack/testkit/netbox.js";
import { NETBOX_TOOL } from "../hack/testkit/netboxinstall.js";
import { skipWithout } from "../hack/testkit/skips.js";
import { freshNamespace, repoRoot, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { startControllerProcess, type ControllerProcess } from "../hack/testkit/controller.js";
import { installCrds } from "../hack/testkit/crds.js";
import { admissionReview, postInsecure, scopedWebhookConfigurations } from "../hack/testkit/hostile.js";
import { WEBHOOK_PATHS } from "../src/webhooks/handlers.js";
import { capiClients, clients, pool, type CapiClients, type Clients } from "../hack/testkit/ipam.js";
import { metricSample, scrapeMetrics } from "../hack/testkit/metrics.js";
import { claimPort } from "../hack/testkit/ports.js";
import { CONTROLLER_NAMESPACE, serviceAccountKubeconfigFile } from "../hack/testkit/serviceaccount.js";
import { consistently, eventually, sleep } from "../hack/testkit/wait.js";
import { hostOf, keyIn, netBoxClients, netBoxPool, ourRecordsIn, writeToken } from "../hack/testkit/netboxpools.js";

const SCOPE_LABEL = "e2e.ipam.metal3.io/endpoint";
/** On an object: the fixture validating webhook refuses its create (a later webhook refusing after ours). */
const REFUSE_LABEL = "e2e.ipam.metal3.io/refuse";
/** Long enough for the bound's test to see its pool's claims before they expire; the refused create's test waits it out. */
const GRACE = "20s";
const POOL_NAME = "vips";
/** The pool's range: 10.77.0.10 to 10.77.0.250. */
const inPool = (host: unknown): boolean =>
  typeof host === "string" && /^10\.77\.0\.(\d+)$/.test(host) && Number(host.split(".")[3]) >= 10;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
/**
 * Bound on the garbage collector deleting a Cluster's dependents. It resolves an owner's kind through its own REST
 * mapping, refreshed at its 30 s resync: on a plane whose Cluster API CRDs came after kube-controller-manager started
 * (this file run alone), a Cluster's dependents are retried with a growing backoff until that refresh and past it.
 */
const GC_BOUND_MS = 90_000;
const applyPatch = setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply);
/** Cluster API's topology controller: its field manager, and the label it puts on every object it creates. */
const TOPOLOGY_MANAGER = "capi-topology";
const TOPOLOGY_OWNED_LABEL = "topology.cluster.x-k8s.io/owned";
const INFRA_GROUP = "infrastructure.cluster.x-k8s.io";

interface Endpointed extends KubeObject {
  spec?: { controlPlaneEndpoint?: { host?: string; port?: number }; paused?: boolean; topology?: object };
}

const resource = (group: string, version: string, plural: string, kind: string) => ({
  group,
  version,
  plural,
  kind,
  namespaced: true,
});

interface Replica {
  proc: ControllerProcess;
  metricsPort: number;
  webhookPort: number;
}

/**
 * The fixture validating webhook: CAPM3's create rule for Metal3Clusters (host required, as its
 * internal/webhooks/v1beta2/metal3cluster_webhook.go has it), and a refusal of any object labelled REFUSE_LABEL.
 */
function fixtureWebhook(certPem: string, keyPem: string): Promise<Server> {
  const server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const review = JSON.parse(Buffer.concat(chunks).toString()) as {
        request: { uid: string; kind: { kind: string }; name?: string; object: Endpointed };
      };
      const { uid, kind, object } = review.request;
      let message: string | undefined;
      if (object.metadata.labels?.[REFUSE_LABEL] !== undefined) message = "refused by the fixture's later webhook";
      else if (kind.kind === "Metal3Cluster" && !object.spec?.controlPlaneEndpoint?.host)
        message = `Metal3Cluster.infrastructure.cluster.x-k8s.io "${object.metadata.name ?? ""}" is invalid: spec.controlPlaneEndpoint: Invalid value: "": is required`;
      const response = message
        ? { uid, allowed: false, status: { status: "Failure", code: 422, reason: "Invalid", message } }
        : { uid, allowed: true };
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response }));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/**
 * Runs the kube-vip sample's script (config/samples/endpoint) on a machine whose /run/kubeadm holds `kubeadm` (file name
 * → content), with every path of the machine under a fresh folder; returns the `address` of the kube-vip static pod
 * it leaves.
 */
function kubeVipAddressOn(kubeadm: Record<string, string>): string | undefined {
  const sample = loadYaml<KubeadmControlPlaneSample>(
    readFileSync(join(repoRoot, "config", "samples", "endpoint", "kubeadmcontrolplane-kube-vip.yaml"), "utf8"),
  );
  const root = mkdtempSync(join(tmpdir(), "kube-vip-"));
  try {
    const onMachine = (path: string): string => join(root, path);
    const relocate = (text: string): string =>
      text.replaceAll("/run/kubeadm/", `${root}/run/kubeadm/`).replaceAll("/etc/", `${root}/etc/`);
    for (const file of sample.spec.kubeadmConfigSpec.files) {
      mkdirSync(dirname(onMachine(file.path)), { recursive: true });
      writeFileSync(onMachine(file.path), relocate(file.content), { mode: Number.parseInt(file.permissions, 8) });
    }
    mkdirSync(onMachine("/run/kubeadm"), { recursive: true });
    for (const [name, content] of Object.entries(kubeadm)) writeFileSync(onMachine(`/run/kubeadm/${name}`), content);
    for (const command of sample.spec.kubeadmConfigSpec.preKubeadmCommands)
      execFileSync("sh", ["-c", relocate(command)], { stdio: "pipe" });
    const pod = loadYaml<{ spec: { containers: { env: { name: string; value: string }[] }[] } }>(
      readFileSync(onMachine("/etc/kubernetes/manifests/kube-vip.yaml"), "utf8"),
    );
    return pod.spec.containers[0]?.env.find((e) => e.name === "address")?.value;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

interface KubeadmControlPlaneSample {
  spec: {
    kubeadmConfigSpec: {
      files: { path: string; permissions: string; content: string }[];
      preKubeadmCommands: string[];
    };
  };
}

describe("control-plane endpoints from a pool (two replicas, webhooks through the API server)", function () {
  this.timeout(300_000);
  let admin: KubeConfig;
  let c: Clients;
  let capi: CapiClients;
  let ns: string;
  let dir: string;
  let fixture: Server | undefined;
  const replicas: Replica[] = [];
  const configName = `endpoint-${process.pid}`;
  let clustersV1beta2: ResourceClient<Endpointed>;
  let clustersV1beta1: ResourceClient<Endpointed>;
  let metal3Clusters: ResourceClient<Endpointed>;

  async function isLeader(r: Replica): Promise<boolean> {
    try {
      return metricSample(await scrapeMetrics(r.metricsPort), "metal3_ipam_leader") === 1;
    } catch {
      return false;
    }
  }

  async function startReplica(name: string, kubeconfig: string, certDir: string): Promise<Replica> {
    const [metricsPort, webhookPort] = [await claimPort(), await claimPort()];
    const proc = startControllerProcess({
      name: `replica ${name}`,
      kubeconfigPath: kubeconfig,
      namespace: ns,
      logDir: dir,
      logName: `${name}.log`,
      diagnosticsAddress: `127.0.0.1:${metricsPort}`,
      insecureDiagnostics: true,
      flags: [
        "--leader-elect",
        `--leader-election-namespace=${CONTROLLER_NAMESPACE}`,
        `--leader-election-id=endpoint-${ns}`,
        `--webhook-port=${webhookPort}`,
        `--webhook-cert-dir=${certDir}`,
        `--endpoint-claim-grace=${GRACE}`,
      ],
    });
    const replica = { proc, metricsPort, webhookPort };
    replicas.push(replica);
    await proc.guard(
      eventually(
        `${name} to serve /metrics`,
        async () => (await scrapeMetrics(metricsPort)).includes("metal3_ipam_leader"),
        60_000,
        250,
      ),
    );
    return replica;
  }

  /** A Cluster or Metal3Cluster asking for its endpoint from the pool (unless `annotated` is false). */
  function object(
    apiVersion: string,
    kind: string,
    name: string,
    extra: {
      annotated?: boolean;
      /** The annotation's value; default this suite's IPPool. */
      pool?: string;
      labels?: Record<string, string>;
      spec?: Endpointed["spec"];
    } = {},
  ): Endpointed {
    const pool = extra.pool ?? `IPPool/${POOL_NAME}`;
    return {
      apiVersion,
      kind,
      metadata: {
        name,
        namespace: ns,
        ...(extra.annotated === false ? {} : { annotations: { [ENDPOINT_POOL_ANNOTATION]: pool } }),
        ...(extra.labels ? { labels: extra.labels } : {}),
      },
      spec: extra.spec ?? {},
    };
  }
  const clusterV1beta2 = (name: string, extra?: Parameters<typeof object>[3]) =>
    object("cluster.x-k8s.io/v1beta2", "Cluster", name, extra);

  /** `write`, tried again (five tries in all) on the webhook's "not bound yet" (503), as a client or a controller does. */
  async function retryingUnbound(write: () => Promise<Endpointed>): Promise<Endpointed> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (statusCodeOf(err) !== 503 || attempt >= 5) throw err;
      }
    }
  }

  /** Creates `obj`, retrying the webhook's "not bound yet"; the stored object. */
  const createRetrying = (client: ResourceClient<Endpointed>, obj: Endpointed): Promise<Endpointed> =>
    retryingUnbound(() => client.create(ns, obj));

  /**
   * Writes Metal3Cluster `obj` by server-side apply as the topology controller does (a create when it does not
   * exist), retrying the webhook's "not bound yet" as that controller's requeue does; the stored object.
   */
  const applyAsTopology = (version: string, obj: Endpointed): Promise<Endpointed> =>
    retryingUnbound(
      async () =>
        (await admin.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
          {
            group: INFRA_GROUP,
            version,
            namespace: ns,
            plural: "metal3clusters",
            name: obj.metadata.name ?? "",
            body: obj,
            fieldManager: TOPOLOGY_MANAGER,
            force: true,
          },
          applyPatch,
        )) as Endpointed,
    );

  /**
   * The Metal3Cluster Cluster API's topology controller creates for ClusterClass Cluster `cluster`, as its
   * desired state has it: named `<cluster>-<random>`, labelled with the Cluster's name and as topology-owned,
   * annotated with the template it was cloned from, owned by the Cluster's shim Secret (the Cluster's own owner
   * reference comes later, from the Cluster controller), the template's spec without an endpoint, no annotation of ours.
   * The shim Secret (`<cluster>-shim`, owned by the Cluster) is made here as that controller makes it.
   */
  async function topologyMetal3Cluster(cluster: Endpointed, version: string): Promise<Endpointed> {
    const name = cluster.metadata.name ?? "";
    const shim = await c.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: {
          name: `${name}-shim`,
          ownerReferences: [
            { apiVersion: cluster.apiVersion ?? "", kind: "Cluster", name, uid: cluster.metadata.uid ?? "" },
          ],
        },
        type: "cluster.x-k8s.io/secret",
      },
    });
    return {
      apiVersion: `${INFRA_GROUP}/${version}`,
      kind: "Metal3Cluster",
      metadata: {
        name: `${name}-${Math.random().toString(36).slice(2, 7)}`,
        namespace: ns,
        labels: { [CLUSTER_NAME_LABEL]: name, [TOPOLOGY_OWNED_LABEL]: "" },
        annotations: {
          "cluster.x-k8s.io/cloned-from-name": "metal3-cluster-template",
          "cluster.x-k8s.io/cloned-from-groupkind": `Metal3ClusterTemplate.${INFRA_GROUP}`,
        },
        ownerReferences: [
          { apiVersion: "v1", kind: "Secret", name: shim.metadata?.name ?? "", uid: shim.metadata?.uid ?? "" },
        ],
      },
      spec: {},
    };
  }

  /** The endpoint claims (by label) of Cluster `cluster`. */
  const endpointClaimsOf = async (cluster: string): Promise<IPAddressClaim[]> =>
    (await capi.claims.list(ns)).items.filter(
      (x) =>
        x.metadata.labels?.[CLUSTER_NAME_LABEL] === cluster && x.metadata.labels[ENDPOINT_CLAIM_LABEL] !== undefined,
    );

  /** Deletes Cluster `cluster` once it owns its claim; resolves once the claim is gone and `host` freed. */
  async function deleteAndSeeReleased(cluster: string, host: string | undefined): Promise<void> {
    await eventually("the claim to be owned by its Cluster", () => ownedByCluster(cluster), 30_000, 200);
    await clustersV1beta2.delete(ns, cluster);
    await eventually("the claim to be deleted", async () => (await claimOf(cluster)) === undefined, GC_BOUND_MS, 200);
    await eventually(
      "its address to be freed",
      async () => !(await capi.addresses.list(ns)).items.some((a) => a.spec.address === host),
      30_000,
      200,
    );
  }

  /** The bound address of the endpoint claim of Cluster `cluster`, or undefined. */
  async function claimAddress(cluster: string): Promise<string | undefined> {
    const claim = await capi.claims.get(ns, endpointClaimName(cluster)).catch(() => undefined);
    const ref = claim?.status?.addressRef?.name;
    return ref ? (await capi.addresses.get(ns, ref)).spec.address : undefined;
  }

  const claimOf = (cluster: string): Promise<IPAddressClaim | undefined> =>
    capi.claims.get(ns, endpointClaimName(cluster)).catch((err: unknown) => {
      if (statusCodeOf(err) === 404) return undefined;
      throw err;
    });

  const ownedByCluster = async (cluster: string): Promise<boolean> => {
    const live = await clustersV1beta2.get(ns, cluster);
    return ((await claimOf(cluster))?.metadata.ownerReferences ?? []).some((o) => o.uid === live.metadata.uid);
  };

  before(async function () {
    if (usingExistingCluster()) this.skip();
    admin = (await sharedCluster()).kubeConfig;
    c = clients(admin);
    capi = capiClients(admin);
    clustersV1beta2 = new ResourceClient(admin, resource("cluster.x-k8s.io", "v1beta2", "clusters", "Cluster"));
    clustersV1beta1 = new ResourceClient(admin, resource("cluster.x-k8s.io", "v1beta1", "clusters", "Cluster"));
    metal3Clusters = new ResourceClient(
      admin,
      resource("infrastructure.cluster.x-k8s.io", "v1beta1", "metal3clusters", "Metal3Cluster"),
    );
    await installCrds(admin, [join(repoRoot, "e2e", "fixtures", "metal3cluster")]);
    dir = mkdtempSync(join(tmpdir(), "endpoint-e2e-"));
    ns = await freshNamespace(admin, "endpoint");
    await admin
      .makeApiClient(CoreV1Api)
      .patchNamespace({ name: ns, body: { metadata: { labels: { [SCOPE_LABEL]: ns } } } }, mergePatch);
    await c.pools.create(ns, pool(ns, POOL_NAME, { pools: [{ start: "10.77.0.10", end: "10.77.0.250" }], prefix: 24 }));

    const pki = loopbackPki();
    const certDir = writeCertDir(pki.serving, mkdtempSync(join(dir, "certs-")));
    const kubeconfig = await serviceAccountKubeconfigFile(admin, dir);
    const a = await startReplica("a", kubeconfig, certDir);
    const leaderA = await eventually("replica a to lead", () => isLeader(a), 60_000, 250);
    expect(leaderA).to.equal(true);
    const b = await startReplica("b", kubeconfig, certDir);
    expect(await isLeader(b)).to.equal(false);

    // Ours, pointed at the follower: its answers rest on the leader's allocations.
    const ours = scopedWebhookConfigurations(
      configName,
      `https://127.0.0.1:${b.webhookPort}`,
      pki.ca.certPem,
      SCOPE_LABEL,
      ns,
      (w) => (w.rules ?? []).some((r) => r.resources?.includes("clusters")),
    );
    const admission = admin.makeApiClient(AdmissionregistrationV1Api);
    await admission.createMutatingWebhookConfiguration({ body: ours.mutating });
    fixture = await fixtureWebhook(pki.serving.certPem, pki.serving.keyPem);
    const fixturePort = (fixture.address() as AddressInfo).port;
    await admission.createValidatingWebhookConfiguration({
      body: {
        metadata: { name: `${configName}-fixture` },
        webhooks: [
          {
            name: "fixture.metal3cluster.e2e.ipam.metal3.io",
            admissionReviewVersions: ["v1"],
            clientConfig: {
              url: `https://127.0.0.1:${fixturePort}/validate`,
              caBundle: Buffer.from(pki.ca.certPem).toString("base64"),
            },
            failurePolicy: "Fail",
            sideEffects: "None",
            namespaceSelector: { matchLabels: { [SCOPE_LABEL]: ns } },
            rules: [
              {
                apiGroups: ["cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io"],
                apiVersions: ["*"],
                operations: ["CREATE"],
                resources: ["clusters", "metal3clusters"],
              },
            ],
          },
        ],
      },
    });
    // Configurations reach the API server's admission lazily: wait until both webhooks answer for this namespace.
    await eventually(
      "both webhooks to serve the namespace",
      async () => {
        const probe = await createRetrying(clustersV1beta2, clusterV1beta2(`probe-${Date.now()}`)).catch(
          () => undefined,
        );
        return inPool(probe?.spec?.controlPlaneEndpoint?.host);
      },
      60_000,
      500,
    );
    await eventually(
      "the fixture webhook to refuse",
      async () => {
        const refused = await metal3Clusters
          .create(ns, object("infrastructure.cluster.x-k8s.io/v1beta1", "Metal3Cluster", "probe", { annotated: false }))
          .then(
            () => false,
            (err: unknown) => describeError(err).includes("is required"),
          );
        return refused;
      },
      60_000,
      500,
    );
  });

  after(async () => {
    const admission = admin?.makeApiClient(AdmissionregistrationV1Api);
    await admission?.deleteMutatingWebhookConfiguration({ name: `${configName}-mutating` }).catch(() => undefined);
    await admission?.deleteValidatingWebhookConfiguration({ name: `${configName}-fixture` }).catch(() => undefined);
    for (const r of replicas.splice(0)) await r.proc.kill();
    fixture?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("admits a Metal3Cluster created without a host, with the pool's address and port 6443", async () => {
    const created = await createRetrying(
      metal3Clusters,
      object("infrastructure.cluster.x-k8s.io/v1beta1", "Metal3Cluster", "m3"),
    );
    const endpoint = created.spec?.controlPlaneEndpoint;
    expect(inPool(endpoint?.host), JSON.stringify(endpoint)).to.equal(true);
    expect(endpoint?.port).to.equal(6443);
    expect(await claimAddress("m3")).to.equal(endpoint?.host);
    const claim = await claimOf("m3");
    expect(claim?.metadata.labels).to.include({ [CLUSTER_NAME_LABEL]: "m3", [ENDPOINT_CLAIM_LABEL]: "" });
  });

  it("fills a Cluster v1beta2 and a Cluster v1beta1; the Metal3Cluster of a Cluster shares its claim", async () => {
    const v2 = await createRetrying(clustersV1beta2, clusterV1beta2("c2"));
    const v1 = await createRetrying(clustersV1beta1, object("cluster.x-k8s.io/v1beta1", "Cluster", "c1"));
    const [h2, h1] = [v2.spec?.controlPlaneEndpoint?.host, v1.spec?.controlPlaneEndpoint?.host];
    expect(inPool(h2) && inPool(h1), `${h2} ${h1}`).to.equal(true);
    expect(h1).to.not.equal(h2);
    const infra = await createRetrying(
      metal3Clusters,
      object("infrastructure.cluster.x-k8s.io/v1beta1", "Metal3Cluster", "c2-m3", {
        annotated: false,
        labels: { [CLUSTER_NAME_LABEL]: "c2" },
      }),
    );
    expect(infra.spec?.controlPlaneEndpoint?.host).to.equal(h2);
    await eventually("c2's claim to be owned by c2", () => ownedByCluster("c2"), 30_000, 200);
  });

  // ClusterClass Clusters: the plane has Cluster API's Cluster CRD but no ClusterClass CRD, webhooks or controllers; a
  // topology's class reference is checked by Cluster API's webhook only, so none is needed here. The topology
  // controller's part (the infrastructure cluster it creates) is played by topologyMetal3Cluster.
  it("fills a ClusterClass Cluster (v1beta2) and the Metal3Cluster its topology controller creates from one claim; deleting the Cluster releases it", async () => {
    const cluster = await createRetrying(
      clustersV1beta2,
      clusterV1beta2("topo", { spec: { topology: { classRef: { name: "metal3" }, version: "v1.34.4" } } }),
    );
    const host = cluster.spec?.controlPlaneEndpoint?.host;
    expect(inPool(host), JSON.stringify(cluster.spec)).to.equal(true);
    expect(cluster.spec?.topology).to.deep.equal({ classRef: { name: "metal3" }, version: "v1.34.4" });
    const desired = await topologyMetal3Cluster(cluster, "v1beta2");
    const infra = await applyAsTopology("v1beta2", desired);
    expect(infra.spec?.controlPlaneEndpoint).to.deep.equal({ host, port: 6443 });
    // The topology controller's next reconcile applies the same desired state: the endpoint stays.
    const again = await applyAsTopology("v1beta2", desired);
    expect(again.spec?.controlPlaneEndpoint).to.deep.equal({ host, port: 6443 });
    expect((await endpointClaimsOf("topo")).map((x) => x.metadata.name)).to.deep.equal([endpointClaimName("topo")]);
    expect((await capi.addresses.list(ns)).items.filter((a) => a.spec.address === host)).to.have.length(1);
    await deleteAndSeeReleased("topo", host);
  });

  it("fills a ClusterClass Cluster (v1beta1: topology.class and version) and its topology Metal3Cluster v1beta1 alike", async () => {
    // v1beta1 requires topology.class and version. With no conversion webhook on the plane, storage (v1beta2, which
    // names classRef) drops class; the annotation the webhook reads is kept.
    const cluster = await createRetrying(
      clustersV1beta1,
      object("cluster.x-k8s.io/v1beta1", "Cluster", "topo1", {
        spec: { topology: { class: "metal3", version: "v1.34.4" } },
      }),
    );
    const host = cluster.spec?.controlPlaneEndpoint?.host;
    expect(inPool(host), JSON.stringify(cluster.spec)).to.equal(true);
    const infra = await applyAsTopology("v1beta1", await topologyMetal3Cluster(cluster, "v1beta1"));
    expect(infra.spec?.controlPlaneEndpoint).to.deep.equal({ host, port: 6443 });
    expect(await endpointClaimsOf("topo1")).to.have.length(1);
    expect(await claimAddress("topo1")).to.equal(host);
  });

  it("leaves an explicit host untouched and makes no claim", async () => {
    const created = await clustersV1beta2.create(
      ns,
      clusterV1beta2("explicit", { spec: { controlPlaneEndpoint: { host: "192.0.2.10", port: 443 } } }),
    );
    expect(created.spec?.controlPlaneEndpoint).to.deep.equal({ host: "192.0.2.10", port: 443 });
    expect(await claimOf("explicit")).to.equal(undefined);
  });

  it("allocates nothing on a dry run", async () => {
    const before = (await capi.addresses.list(ns)).items.length;
    const api = admin.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      group: "cluster.x-k8s.io",
      version: "v1beta2",
      namespace: ns,
      plural: "clusters",
      body: clusterV1beta2("dry", { spec: { paused: false } }),
      dryRun: "All",
    });
    await sleep(1_000);
    expect(await claimOf("dry")).to.equal(undefined);
    expect((await capi.addresses.list(ns)).items.length).to.equal(before);
  });

  it("gives 50 Clusters created at once 50 distinct endpoints, each its claim's address", async () => {
    const names = Array.from({ length: 50 }, (_, i) => `many-${i}`);
    const created = await Promise.all(names.map((n) => createRetrying(clustersV1beta2, clusterV1beta2(n))));
    const hosts = created.map((x) => x.spec?.controlPlaneEndpoint?.host);
    expect(hosts.every(inPool), hosts.join(" ")).to.equal(true);
    expect(new Set(hosts).size).to.equal(50);
    const bound = await Promise.all(names.map(claimAddress));
    expect(bound).to.deep.equal(hosts);
  });

  // Anyone who reaches a replica's webhook port can post reviews for Clusters that never come (the port does not know
  // its caller): here straight to the follower's port, as such a sender would, from a pool of their own.
  it("makes at most --endpoint-pending-claims claims of a pool that wait for their Cluster; refuses more with the reason; a Cluster that comes frees a place", async () => {
    const limit = DEFAULT_ENDPOINT_PENDING_CLAIMS;
    const bounded = "bounded";
    await c.pools.create(ns, pool(ns, bounded, { pools: [{ start: "10.78.0.10", end: "10.78.0.250" }], prefix: 24 }));
    const poolRef = `IPPool/${bounded}`;
    const pendingOfPool = async (): Promise<string[]> =>
      (await capi.claims.list(ns)).items
        .filter(
          (x) =>
            x.metadata.labels?.[ENDPOINT_PENDING_LABEL] === `IPPool.${bounded}` &&
            !(x.metadata.ownerReferences ?? []).some((o) => o.kind === "Cluster"),
        )
        .map((x) => x.metadata.name ?? "");
    const follower = replicas[1];
    if (!follower) throw new Error("no follower");
    const forged = Array.from({ length: limit + 3 }, (_, i) => `forged-${i}`);
    const answers = await Promise.all(
      forged.map(async (name, i) => {
        const review = admissionReview(
          `forged-${i}`,
          { group: "cluster.x-k8s.io", version: "v1beta2", kind: "Cluster" },
          "CREATE",
          clusterV1beta2(name, { pool: poolRef }),
        );
        const answer = await postInsecure(
          follower.webhookPort,
          WEBHOOK_PATHS.mutateControlPlaneEndpoint,
          review,
          15_000,
        );
        return (
          JSON.parse(answer.body || "{}") as {
            response?: { allowed: boolean; status?: { code?: number; message?: string } };
          }
        ).response;
      }),
    );
    const refused = answers.filter((a) => a?.status?.code === 429);
    expect(refused, JSON.stringify(answers.filter((a) => !a?.allowed).slice(0, 3))).to.have.length(3);
    expect(refused[0]?.status?.message)
      .to.contain(`${limit} control-plane endpoint claims of pool ${poolRef} are waiting for their Cluster`)
      .and.contain(`--endpoint-pending-claims=${limit}`)
      .and.contain(`${GRACE} after their creation (--endpoint-claim-grace)`);
    expect(await pendingOfPool()).to.have.length(limit);

    // Through the API server: a new Cluster from that pool is refused with the reason; one whose claim exists is not.
    // (A client that does not send a 429 again, as kubectl; this repository's own client would, for 10 s.)
    const err = await admin
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({
        group: "cluster.x-k8s.io",
        version: "v1beta2",
        namespace: ns,
        plural: "clusters",
        body: clusterV1beta2("bounded-real", { pool: poolRef }),
      })
      .then(
        () => undefined,
        (e: unknown) => describeError(e),
      );
    expect(err).to.contain(`are waiting for their Cluster`).and.contain("--endpoint-pending-claims");
    const taken = forged.find((_, i) => answers[i]?.status?.code !== 429);
    const came = await createRetrying(clustersV1beta2, clusterV1beta2(taken ?? "", { pool: poolRef }));
    expect(came.spec?.controlPlaneEndpoint?.host).to.match(/^10\.78\.0\./);
    // Owned by its Cluster, that claim waits no more: the next Cluster from the pool gets its endpoint.
    await eventually(
      "the claim to be owned and no longer pending",
      async () => (await pendingOfPool()).length === limit - 1,
      30_000,
      200,
    );
    const real = await createRetrying(clustersV1beta2, clusterV1beta2("bounded-real", { pool: poolRef }));
    expect(real.spec?.controlPlaneEndpoint?.host).to.match(/^10\.78\.0\./);
    // The forged claims go after the grace, and their addresses with them.
    await eventually("the forged claims to be deleted", async () => (await pendingOfPool()).length === 0, 90_000, 500);
    await eventually(
      "their addresses to be freed",
      async () =>
        (await capi.addresses.list(ns)).items.filter((a) => a.spec.address.startsWith("10.78.0.")).length === 2,
      30_000,
      500,
    );
  });

  it("deletes, after the grace, the claim of a create a later webhook refused, and frees its address", async () => {
    const err = await clustersV1beta2.create(ns, clusterV1beta2("refused", { labels: { [REFUSE_LABEL]: "" } })).then(
      () => undefined,
      (e: unknown) => describeError(e),
    );
    expect(err).to.contain("refused by the fixture's later webhook");
    const claim = await claimOf("refused");
    expect(claim, "the claim our webhook made").to.not.equal(undefined);
    const held = await claimAddress("refused");
    expect(inPool(held)).to.equal(true);
    await eventually(
      "the leaked claim to be deleted",
      async () => (await claimOf("refused")) === undefined,
      60_000,
      500,
    );
    await eventually(
      "its address to be freed",
      async () => !(await capi.addresses.list(ns)).items.some((a) => a.spec.address === held),
      30_000,
      200,
    );
  });

  // What the KubeadmControlPlane sample does on a control-plane machine, with the machine's paths under a folder:
  // Cluster API's kubeadm bootstrap writes the Cluster's endpoint as `host:port` (brackets around an IPv6 host) into the
  // kubeadm configuration of the first machine (ClusterConfiguration) and of the others (JoinConfiguration's discovery).
  it("the KubeadmControlPlane sample's kube-vip gets the host the webhook filled, on the first and on a joining machine", async () => {
    const cluster = await createRetrying(clustersV1beta2, clusterV1beta2("vip"));
    const host = cluster.spec?.controlPlaneEndpoint?.host ?? "";
    const port = cluster.spec?.controlPlaneEndpoint?.port ?? 0;
    expect(await claimAddress("vip")).to.equal(host);
    const first = `---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: vip\ncontrolPlaneEndpoint: ${host}:${port}\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n`;
    const joining = `---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: ${host}:${port}\n    token: abcdef.0123456789abcdef\ncontrolPlane: {}\n`;
    expect(kubeVipAddressOn({ "kubeadm.yaml": first })).to.equal(host);
    expect(kubeVipAddressOn({ "kubeadm-join-config.yaml": joining })).to.equal(host);
    expect(kubeVipAddressOn({ "kubeadm-join-config.yaml": joining.replace(`${host}:`, "[fd00::a]:") })).to.equal(
      "fd00::a",
    );
  });

  it("releases the address when the Cluster is deleted", async () => {
    const created = await createRetrying(clustersV1beta2, clusterV1beta2("gone"));
    const host = created.spec?.controlPlaneEndpoint?.host;
    await deleteAndSeeReleased("gone", host);
  });

  it("keeps the address while the Cluster is paused, even when the claim is deleted; releases it on unpause", async () => {
    const created = await createRetrying(clustersV1beta2, clusterV1beta2("paused"));
    const host = created.spec?.controlPlaneEndpoint?.host;
    await eventually("the claim to be owned by its Cluster", () => ownedByCluster("paused"), 30_000, 200);
    await clustersV1beta2.patch(ns, "paused", { spec: { paused: true } });
    await sleep(1_000);
    await capi.claims.delete(ns, endpointClaimName("paused"));
    await consistently(
      "the claim and its address to stay",
      async () =>
        (await claimOf("paused")) !== undefined &&
        (await capi.addresses.list(ns)).items.some((a) => a.spec.address === host),
      4_000,
      250,
    );
    await clustersV1beta2.patch(ns, "paused", { spec: { paused: false } });
    await eventually("the claim to go once unpaused", async () => (await claimOf("paused")) === undefined, 30_000, 200);
  });
  it("takes the endpoint from a NetBoxIPPool: NetBox records it under the claim's identity, and deleting the Cluster deletes the record", async function () {
    // NetBox is installed on a machine's first run (minutes, once), then started once per run.
    this.timeout(30 * 60_000);
    skipWithout(this, NETBOX_TOOL);
    const nb = await sharedNetBox();
    const k = netBoxClients(admin);
    const prefix = await nb.admin.freshPrefix(28);
    await writeToken(k, ns, nb.token);
    await k.pools.create(ns, netBoxPool(ns, "nb-vips", { prefix: { id: prefix.id } }));
    const pool = `${NETBOX_IPPOOL_KIND}/nb-vips`;
    const cluster = await createRetrying(clustersV1beta2, clusterV1beta2("nb", { pool }));
    const host = cluster.spec?.controlPlaneEndpoint?.host;
    const infra = await createRetrying(
      metal3Clusters,
      object("infrastructure.cluster.x-k8s.io/v1beta1", "Metal3Cluster", "nb", { pool }),
    );
    expect(infra.spec?.controlPlaneEndpoint?.host).to.equal(host);
    const records = await ourRecordsIn(nb, prefix.cidr);
    expect(records.map((r) => [hostOf(r.address), r.description])).to.deep.equal([
      [host, await keyIn(admin, ns, endpointClaimName("nb"))],
    ]);
    expect(await claimAddress("nb")).to.equal(host);
    await deleteAndSeeReleased("nb", host);
    expect(await ourRecordsIn(nb, prefix.cidr)).to.deep.equal([]);
  });
});
