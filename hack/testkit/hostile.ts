/**
 * Hostile admission traffic for the e2e suites: requests whose every answer is timed and classified (never thrown),
 * sent to a webhook port as a pod that reaches it would send them (`curl -k`: the certificate is not checked) or to
 * the API server with the test's credentials; pool specs as large as the API server stores; the shipped webhook
 * configurations pointed at one URL; and a recorder of a Lease's holder and renewals.
 */
import { readFileSync } from "node:fs";
import { request, type RequestOptions } from "node:https";
import { join } from "node:path";
import type {
  KubeConfig,
  V1MutatingWebhookConfiguration,
  V1ValidatingWebhookConfiguration,
} from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import type { IPPoolSpec, Pool } from "../../api/v1alpha1/types.js";
import { ResourceClient, type KubeObject } from "../../src/kube/resource.js";
import { repoRoot } from "./cluster.js";
import { sleep } from "./wait.js";

/** One answered (or failed) request: HTTP status (0 when none came), body text, time to the last byte. */
export interface Timed {
  status: number;
  body: string;
  ms: number;
  /** Why no answer came (transport error, or no answer within the request's deadline). */
  error?: string;
}

/**
 * One HTTPS request with `body`; resolves when the answer's last byte arrived, or with `error` set on a transport
 * failure or after `timeoutMs`. Never rejects. An error after the answer began (the server closes a connection whose
 * body it refused) does not hide the answer.
 */
export function timedHttps(options: RequestOptions, body: Buffer, timeoutMs: number): Promise<Timed> {
  const started = performance.now();
  return new Promise((resolve) => {
    let answered = false;
    const done = (t: Omit<Timed, "ms">): void => {
      if (answered) return;
      answered = true;
      resolve({ ...t, ms: performance.now() - started });
    };
    const req = request({ ...options, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (err) => done({ status: res.statusCode ?? 0, body: "", error: err.message }));
    });
    req.setTimeout(timeoutMs, () => {
      done({ status: 0, body: "", error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    });
    req.on("error", (err) => done({ status: 0, body: "", error: err.message }));
    req.end(body);
  });
}

/** A POST of `body` to 127.0.0.1:`port`, the server's certificate not checked (what `curl -k` does). */
export function postInsecure(port: number, path: string, body: Buffer, timeoutMs: number): Promise<Timed> {
  return timedHttps(
    {
      host: "127.0.0.1",
      port,
      path,
      method: "POST",
      rejectUnauthorized: false,
      headers: { "Content-Type": "application/json", "Content-Length": String(body.length) },
    },
    body,
    timeoutMs,
  );
}

/** A request to the API server of `kc` with its credentials; `path` includes the query. */
export async function apiServerCall(
  kc: KubeConfig,
  method: string,
  path: string,
  body: Buffer,
  contentType: string,
  timeoutMs: number,
): Promise<Timed> {
  const server = new URL(kc.getCurrentCluster()?.server ?? "");
  const options: RequestOptions = {
    method,
    hostname: server.hostname,
    port: server.port,
    path,
    headers: { "Content-Type": contentType, "Content-Length": String(body.length) },
  };
  await kc.applyToHTTPSOptions(options);
  return await timedHttps(options, body, timeoutMs);
}

/** An AdmissionReview v1 request as the API server sends it. */
export function admissionReview(
  uid: string,
  kind: { group: string; version: string; kind: string },
  operation: "CREATE" | "UPDATE",
  object: KubeObject,
  oldObject?: KubeObject,
): Buffer {
  const { name, namespace } = object.metadata;
  return Buffer.from(
    JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: { uid, kind, operation, name, namespace, object, ...(oldObject ? { oldObject } : {}) },
    }),
  );
}

/** IPv4 address number `i` of 10.0.0.0/8 (i below 2^24). */
function ten(i: number): string {
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}

/**
 * An IPPool spec of about `bytes` bytes of JSON, half entries and half preallocations, each preallocation the
 * address of an entry's `/32` subnet: inside Metal3's bounds (admitted) though no entry yields it (a `/32` yields
 * nothing), so every preallocation is looked up among every entry, and each gets a warning. `shift` moves every
 * address (two specs of different shifts differ in every entry). `outOfBounds` preallocations lie outside every
 * entry: each is an error. Preallocation names are the same for every shift.
 */
export function largeIPPoolSpec(
  bytes: number,
  shift = 0,
  outOfBounds = 0,
): IPPoolSpec & { pools: Pool[]; preAllocations: Record<string, string> } {
  const pools: Pool[] = [];
  const preAllocations: Record<string, string> = {};
  let size = 64;
  for (let i = 0; size < bytes; i++) {
    const address = ten(2 * i + shift);
    const entry = { subnet: `${address}/32` };
    pools.push(entry);
    const name = `c${i.toString(36)}`;
    preAllocations[name] = i < outOfBounds ? `11.${address.slice(3)}` : address;
    size += JSON.stringify(entry).length + name.length + address.length + 7;
  }
  return { namePrefix: "big", pools, preAllocations };
}

/**
 * An InClusterIPPool spec of about `bytes` bytes of JSON: single IPv4 addresses of 10.0.0.0/8, alternately handed
 * out and excluded, prefix 8 (valid). `shift` moves every address; `gateway` is set as given (an IPv6 gateway makes
 * the spec invalid, refused after every address was read).
 */
export function largeInClusterSpec(bytes: number, shift = 0, gateway?: string): InClusterIPPoolSpec {
  const addresses: string[] = [];
  const excludedAddresses: string[] = [];
  let size = 64;
  for (let i = 0; size < bytes; i++) {
    const address = ten(i + shift);
    (i % 2 === 0 ? addresses : excludedAddresses).push(address);
    size += address.length + 3;
  }
  return { addresses, excludedAddresses, prefix: 8, ...(gateway ? { gateway } : {}) };
}

type WebhookConfiguration = V1MutatingWebhookConfiguration | V1ValidatingWebhookConfiguration;

/** A shipped webhook entry, as {@link scopedWebhookConfigurations} filters them. */
type WebhookEntry = { rules?: Array<{ apiGroups?: string[]; resources?: string[] }> };

/** Whether an entry serves only namespaced kinds: a namespaceSelector keeps other namespaces' objects from it. */
const namespacedOnly = (w: WebhookEntry): boolean =>
  !(w.rules ?? []).some((r) => r.resources?.some((x) => x.startsWith("global")));

/**
 * The shipped webhook configurations (config/webhook/manifests.yaml) named `name-mutating` and `name-validating`,
 * pointed at `baseUrl` by URL, limited to the namespaces labelled `label=value`, with the entries `keep` accepts; by
 * default those of namespaced kinds (a namespaceSelector cannot keep other suites' GlobalInClusterIPPools away).
 */
export function scopedWebhookConfigurations(
  name: string,
  baseUrl: string,
  caPem: string,
  label: string,
  value: string,
  keep: (w: WebhookEntry) => boolean = namespacedOnly,
): { mutating: V1MutatingWebhookConfiguration; validating: V1ValidatingWebhookConfiguration } {
  const docs = loadAll(
    readFileSync(join(repoRoot, "config", "webhook", "manifests.yaml"), "utf8"),
  ) as WebhookConfiguration[];
  const adapt = <T extends WebhookConfiguration>(kind: string, suffix: string): T => {
    const doc = docs.find((d) => d.kind === kind);
    if (!doc) throw new Error(`config/webhook/manifests.yaml lacks a ${kind}`);
    const webhooks = (doc.webhooks ?? []).filter(keep).map((w) => ({
      ...w,
      clientConfig: {
        url: `${baseUrl}${w.clientConfig.service?.path ?? ""}`,
        caBundle: Buffer.from(caPem).toString("base64"),
      },
      namespaceSelector: { matchLabels: { [label]: value } },
    }));
    return { ...doc, metadata: { name: `${name}-${suffix}` }, webhooks } as T;
  };
  return {
    mutating: adapt<V1MutatingWebhookConfiguration>("MutatingWebhookConfiguration", "mutating"),
    validating: adapt<V1ValidatingWebhookConfiguration>("ValidatingWebhookConfiguration", "validating"),
  };
}

/** One reading of a Lease: when (ms since the epoch), its holder and renewTime, or why it could not be read. */
export interface LeaseSample {
  at: number;
  holder?: string;
  renewTime?: string;
  error?: string;
}

interface Lease extends KubeObject {
  spec?: { holderIdentity?: string | null; renewTime?: string | null };
}

/**
 * Reads the Lease `namespace/name` every `intervalMs` (one read at a time) until `stop()`, which resolves with every
 * reading in order.
 */
export function recordLease(
  kc: KubeConfig,
  namespace: string,
  name: string,
  intervalMs = 1_000,
): { stop(): Promise<LeaseSample[]> } {
  const leases = new ResourceClient<Lease>(
    kc,
    { group: "coordination.k8s.io", version: "v1", plural: "leases", kind: "Lease", namespaced: true },
    { requestTimeoutMs: 5_000 },
  );
  const samples: LeaseSample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = Date.now();
      try {
        const spec = (await leases.get(namespace, name)).spec;
        samples.push({ at, holder: spec?.holderIdentity ?? "", renewTime: spec?.renewTime ?? "" });
      } catch (err) {
        samples.push({ at, error: err instanceof Error ? err.message : String(err) });
      }
      await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}
