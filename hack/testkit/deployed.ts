/**
 * The controller deployed from the shipped manifests onto a local node (node.ts): the image built from the Dockerfile
 * (hack/local-image.sh), config/default applied through the overlay e2e/fixtures/node (image name, never pulled), and
 * cert-manager's part played here, since no cert-manager runs: its CRDs stubbed (e2e/fixtures), the Secret its
 * Certificate would issue, and the CA its injector would put into both webhook configurations.
 */
import { execFile, spawnSync } from "node:child_process";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { AdmissionregistrationV1Api, AppsV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { createCertificateAuthority, issueServingCertificate, serviceHosts } from "../../src/certs/pki.js";
import { repoRoot } from "./cluster.js";
import { installCrds } from "./crds.js";
import { scrapeSecure } from "./metrics.js";
import { CONTROLLER_NAMESPACE, scraperToken } from "./serviceaccount.js";

const execFileAsync = promisify(execFile);

export const DEPLOYMENT = "metal3-ipam-controller-manager";
export const WEBHOOK_SERVICE = "metal3-ipam-webhook-service";
export const METRICS_SERVICE = "metal3-ipam-controller-manager-metrics-service";
export const LEASE = "metal3-ipam-controller";
/** The name e2e/fixtures/node gives the image. */
export const LOCAL_IMAGE = "metal3-ipam-ts/controller:local";
const OVERLAY = join(repoRoot, "e2e", "fixtures", "node");
const WEBHOOK_CONFIGURATIONS = [
  "metal3-ipam-mutating-webhook-configuration",
  "metal3-ipam-validating-webhook-configuration",
];

/** Why the image cannot be built here, in one line (hack/local-image.sh needs these); undefined when it can. */
export function imageBuildUnsupported(): string | undefined {
  const missing = ["dockerd", "docker", "debootstrap", "kubectl"].filter(
    (t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0,
  );
  return missing.length > 0
    ? `building the image needs ${missing.join(", ")} (apt-get install docker.io debootstrap; kubectl for kustomize)`
    : undefined;
}

/** Builds the image from the Dockerfile into a `docker save` tarball at `out` (minutes; see hack/local-image.sh). */
export async function buildLocalImage(out: string): Promise<void> {
  await execFileAsync(join(repoRoot, "hack", "local-image.sh"), [out, LOCAL_IMAGE], {
    maxBuffer: 16 << 20,
    timeout: 900_000,
  });
}

/** Applies config/default (through the overlay) as cert-manager would see it installed; returns kubectl's output. */
export async function deployConfigDefault(kc: KubeConfig, kubeconfigPath: string): Promise<string> {
  await installCrds(kc, [join(repoRoot, "e2e", "fixtures")]);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: CONTROLLER_NAMESPACE } } });
  const ca = createCertificateAuthority("test-cert-manager-ca");
  const serving = issueServingCertificate(ca, serviceHosts(WEBHOOK_SERVICE, CONTROLLER_NAMESPACE));
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  // What cert-manager's Certificate `serving-cert` stores: a kubernetes.io/tls Secret with the issuing CA.
  await core.createNamespacedSecret({
    namespace: CONTROLLER_NAMESPACE,
    body: {
      metadata: { name: "webhook-server-cert" },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(serving.certPem), "tls.key": b64(serving.keyPem), "ca.crt": b64(ca.certPem) },
    },
  });
  const { stdout } = await execFileAsync("kubectl", ["apply", "--server-side", "-k", OVERLAY], {
    env: { ...process.env, KUBECONFIG: kubeconfigPath },
  });
  await injectCaBundle(kc, ca.certPem);
  return stdout;
}

/** What cert-manager's CA injector does for `cert-manager.io/inject-ca-from`: the CA into every webhook. */
async function injectCaBundle(kc: KubeConfig, caPem: string): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const caBundle = Buffer.from(caPem).toString("base64");
  const [mutating, validating] = WEBHOOK_CONFIGURATIONS;
  const m = await api.readMutatingWebhookConfiguration({ name: mutating! });
  for (const w of m.webhooks ?? []) w.clientConfig.caBundle = caBundle;
  await api.replaceMutatingWebhookConfiguration({ name: mutating!, body: m });
  const v = await api.readValidatingWebhookConfiguration({ name: validating! });
  for (const w of v.webhooks ?? []) w.clientConfig.caBundle = caBundle;
  await api.replaceValidatingWebhookConfiguration({ name: validating!, body: v });
}

/**
 * Applies e2e/fixtures/`overlay` on top of what runs (server-side: fields the overlay drops are removed) and
 * returns kubectl's output.
 */
export async function applyOverlay(kubeconfigPath: string, overlay: string): Promise<string> {
  const { stdout } = await execFileAsync(
    "kubectl",
    ["apply", "--server-side", "-k", join(repoRoot, "e2e", "fixtures", overlay)],
    {
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
    },
  );
  return stdout;
}

/** Whether the Deployment's latest template runs on all its replicas, every one ready, and no older pod is left. */
export async function rolledOut(kc: KubeConfig): Promise<boolean> {
  const d = await kc
    .makeApiClient(AppsV1Api)
    .readNamespacedDeployment({ name: DEPLOYMENT, namespace: CONTROLLER_NAMESPACE });
  const want = d.spec?.replicas ?? 1;
  const s = d.status;
  return (
    (s?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) &&
    s?.updatedReplicas === want &&
    s?.readyReplicas === want &&
    s?.replicas === want
  );
}

/** The caBundle of every webhook of both configurations, decoded. */
export async function caBundles(kc: KubeConfig): Promise<string[]> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const [mutating, validating] = WEBHOOK_CONFIGURATIONS;
  const m = await api.readMutatingWebhookConfiguration({ name: mutating! });
  const v = await api.readValidatingWebhookConfiguration({ name: validating! });
  return [...(m.webhooks ?? []), ...(v.webhooks ?? [])].map((w) =>
    Buffer.from(w.clientConfig.caBundle ?? "", "base64").toString(),
  );
}

/** Ready replicas of the Deployment, as its status says. */
export async function readyReplicas(kc: KubeConfig): Promise<number> {
  const d = await kc
    .makeApiClient(AppsV1Api)
    .readNamespacedDeployment({ name: DEPLOYMENT, namespace: CONTROLLER_NAMESPACE });
  return d.status?.readyReplicas ?? 0;
}

/** The Deployment's running pods: name, IP, ready. */
export async function controllerPods(kc: KubeConfig): Promise<Array<{ name: string; ip: string; ready: boolean }>> {
  const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({
    namespace: CONTROLLER_NAMESPACE,
    labelSelector: "control-plane=controller-manager",
  });
  return pods.items
    .filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp)
    .map((p) => ({
      name: p.metadata?.name ?? "",
      ip: p.status?.podIP ?? "",
      ready: p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    }));
}

/**
 * Whether a TCP connection to the Service's ClusterIP on `port` is accepted (from this host, through kube-proxy's
 * rules). A Deployment reports its replicas Ready before kube-proxy has programmed their endpoints; until then the
 * ClusterIP refuses connections, whatever the pods do.
 */
export async function serviceAccepts(kc: KubeConfig, service: string, port: number): Promise<boolean> {
  const svc = await kc
    .makeApiClient(CoreV1Api)
    .readNamespacedService({ name: service, namespace: CONTROLLER_NAMESPACE });
  const ip = svc.spec?.clusterIP ?? "";
  return await new Promise<boolean>((resolve) => {
    const socket = connect({ host: ip, port, timeout: 3_000 });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    socket.once("timeout", () => done(false));
  });
}

/** The port of /metrics on the pods and on the metrics Service (config/manager). */
export const METRICS_PORT = 8443;

/**
 * A reader of /metrics as a scraper does it: `GET https://host:8443/metrics` (a pod's or the metrics Service's IP) with
 * the token of a ServiceAccount bound to the metrics-reader ClusterRole, made now (valid 1 h). The reader resolves
 * with the body, or "" when nothing answers 200 within 5 s.
 */
export async function metricsReader(kc: KubeConfig): Promise<(host: string) => Promise<string>> {
  const token = await scraperToken(kc, "node-e2e-scraper", true);
  return async (host) => {
    try {
      const res = await scrapeSecure(host, METRICS_PORT, token);
      return res.status === 200 ? res.body : "";
    } catch {
      return "";
    }
  };
}
