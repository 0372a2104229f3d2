/**
 * The pivot suite's machinery: two management clusters (two local planes, or two existing clusters named by
 * PIVOT_FROM_KUBECONFIG / PIVOT_TO_KUBECONFIG, e.g. kind), our controller on each with its log kept for assertions,
 * the real clusterctl, and a watch that records every object the target receives.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Writable } from "node:stream";
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type V1CustomResourceDefinition,
} from "@kubernetes/client-node";
import { dump } from "js-yaml";
import { CLUSTERCTL_LABEL } from "../../api/v1alpha1/types.js";
import { Manager } from "../../src/controllers/manager.js";
import { isConflict, isNotFound } from "../../src/kube/errors.js";
import type { KubeObject } from "../../src/kube/resource.js";
import { createLogger } from "../../src/runtime/logger.js";
import { loopbackPki, writeCertDir } from "../../src/webhooks/https.testutil.js";
import { startWebhookServer } from "../../src/webhooks/server.js";
import { scopedWebhookConfigurations } from "../../hack/testkit/hostile.js";
import { resolveClusterctl } from "../../hack/testkit/binaries.js";
import { loadCrds } from "../../hack/testkit/crds.js";
import { LocalPlane } from "../../hack/testkit/plane.js";
import { CAPI_CRDS, INCLUSTER_POOL_CRDS, OUR_CRDS } from "../../hack/testkit/cluster.js";
import { eventually } from "../../hack/testkit/wait.js";
import { inBatches, kinds, type Kinds } from "./fixtures.js";

/** The suite's own CRDs (the stand-ins for CAPM3's kinds). */
export const PIVOT_CRDS = join(dirname(fileURLToPath(import.meta.url)), "crds");

/** One management cluster of the pivot. */
export interface Side {
  name: string;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  /** Context to use inside `kubeconfigPath` (clusterctl's --kubeconfig-context); empty = current. */
  context: string;
  k: Kinds;
  /** Set when this run started the cluster as a local plane. */
  plane?: LocalPlane;
}

/** Both sides, and how to tear them down. */
export interface World {
  source: Side;
  target: Side;
  /** True when the sides are clusters this run did not start (kind). */
  existing: boolean;
  close(): Promise<void>;
}

/** Writes Cluster API's CRDs, labelled `clusterctl.cluster.x-k8s.io` (as `clusterctl init` would), into a temp folder. */
export function labelledCapiCrds(): string {
  const dir = mkdtempSync(join(tmpdir(), "pivot-capi-crds-"));
  for (const crd of loadCrds([CAPI_CRDS])) {
    crd.metadata = { ...crd.metadata, labels: { ...(crd.metadata?.labels ?? {}), [CLUSTERCTL_LABEL]: "" } };
    writeFileSync(join(dir, `${crd.metadata.name ?? "crd"}.yaml`), dump(crd, { lineWidth: -1 }));
  }
  return dir;
}

const CRD_RESOURCE = { group: "apiextensions.k8s.io", version: "v1", plural: "customresourcedefinitions" };

/**
 * For clusters this run did not start: creates the CRDs that are missing and labels the ones that exist (an
 * installed Cluster API keeps its own CRDs: they are never replaced). Waits until each is Established.
 */
export async function ensureCrds(kc: KubeConfig, dirs: string[]): Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const crds = loadCrds(dirs);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? "";
    try {
      const current = (await api.getClusterCustomObject({ ...CRD_RESOURCE, name })) as V1CustomResourceDefinition;
      if (!(CLUSTERCTL_LABEL in (current.metadata?.labels ?? {}))) {
        await api.patchClusterCustomObject(
          { ...CRD_RESOURCE, name, body: { metadata: { labels: { [CLUSTERCTL_LABEL]: "" } } } },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        );
      }
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const labelled = {
        ...crd,
        metadata: { ...crd.metadata, labels: { ...(crd.metadata?.labels ?? {}), [CLUSTERCTL_LABEL]: "" } },
      };
      await api.createClusterCustomObject({ ...CRD_RESOURCE, body: labelled });
    }
  }
  await eventually(
    "CRDs Established",
    async () => {
      for (const crd of crds) {
        const live = (await api.getClusterCustomObject({
          ...CRD_RESOURCE,
          name: crd.metadata?.name ?? "",
        })) as V1CustomResourceDefinition;
        if (!(live.status?.conditions ?? []).some((c) => c.type === "Established" && c.status === "True")) return false;
      }
      return true;
    },
    60_000,
    500,
  );
}

function sideFrom(name: string, kubeconfigPath: string, context: string): Side {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  if (context) kubeConfig.setCurrentContext(context);
  return { name, kubeConfig, kubeconfigPath, context, k: kinds(kubeConfig) };
}

/**
 * Opens the two management clusters: PIVOT_FROM_KUBECONFIG / PIVOT_TO_KUBECONFIG (with optional
 * PIVOT_FROM_CONTEXT / PIVOT_TO_CONTEXT) when set, else two fresh local planes started side by side.
 */
export async function openWorld(): Promise<World> {
  const from = process.env.PIVOT_FROM_KUBECONFIG;
  const to = process.env.PIVOT_TO_KUBECONFIG;
  if (from && to) {
    const source = sideFrom("source", from, process.env.PIVOT_FROM_CONTEXT ?? "");
    const target = sideFrom("target", to, process.env.PIVOT_TO_CONTEXT ?? "");
    for (const side of [source, target])
      await ensureCrds(side.kubeConfig, [OUR_CRDS, INCLUSTER_POOL_CRDS, CAPI_CRDS, PIVOT_CRDS]);
    return { source, target, existing: true, close: () => Promise.resolve() };
  }
  const capiDir = labelledCapiCrds();
  const planes = await Promise.allSettled(
    [0, 1].map(() => LocalPlane.start({ crdDirs: [OUR_CRDS, INCLUSTER_POOL_CRDS, capiDir, PIVOT_CRDS] })),
  );
  rmSync(capiDir, { recursive: true, force: true });
  const started = planes.flatMap((p) => (p.status === "fulfilled" ? [p.value] : []));
  const failed = planes.find((p): p is PromiseRejectedResult => p.status === "rejected");
  if (failed) {
    await Promise.all(started.map((p) => p.stop()));
    throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
  }
  const [a, b] = started as [LocalPlane, LocalPlane];
  const side = (name: string, plane: LocalPlane): Side => ({
    name,
    kubeConfig: plane.kubeConfig,
    kubeconfigPath: plane.kubeconfigPath,
    context: "",
    k: kinds(plane.kubeConfig),
    plane,
  });
  return {
    source: side("source", a),
    target: side("target", b),
    existing: false,
    close: async () => void (await Promise.all([a.stop(), b.stop()])),
  };
}

/** One record of a controller's log. */
export interface LogRecord {
  msg: string;
  level: string;
  /** Receipt time (ms since epoch). */
  at: number;
  [field: string]: unknown;
}

/** A controller running in this process for one namespace, with its log kept. */
export interface RecordedController {
  records: LogRecord[];
  /** Records with message `msg` received at or after `since`. */
  count(msg: string, since?: number): number;
  stop(): Promise<void>;
}

/**
 * Starts our controller for `namespace` against `side`, logging at info level into memory (E2E_LOG also echoes the
 * records). With E2E_EXTERNAL_CONTROLLER=true a deployed controller serves the cluster: nothing starts and the log is
 * empty (log-based assertions are then skipped by the suite).
 */
export async function startRecordedController(side: Side, namespace: string): Promise<RecordedController> {
  const records: LogRecord[] = [];
  const count = (msg: string, since = 0): number => records.filter((r) => r.msg === msg && r.at >= since).length;
  if (process.env.E2E_EXTERNAL_CONTROLLER === "true") return { records, count, stop: () => Promise.resolve() };
  const echo = Boolean(process.env.E2E_LOG);
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done): void {
      for (const line of chunk.toString().split("\n")) {
        if (!line.trim()) continue;
        const parsed = JSON.parse(line) as { msg?: string; level?: string };
        records.push({ ...parsed, msg: parsed.msg ?? "", level: parsed.level ?? "", at: Date.now() });
        if (echo) process.stdout.write(`[${side.name}/${namespace}] ${line}\n`);
      }
      done();
    },
  });
  const logger = createLogger({ level: "info", format: "json", stream });
  const manager = new Manager(side.kubeConfig, {
    namespace,
    poolConcurrency: 4,
    logger,
    watchTimeoutSeconds: 60,
    serveInClusterPools: true,
    // The test kit's NetBox is http on loopback.
    netBoxAllowHttp: true,
  });
  await manager.start();
  return { records, count, stop: () => manager.stop() };
}

/** The outcome of one `clusterctl move`. */
export interface MoveResult {
  code: number | null;
  output: string;
  ms: number;
}

/**
 * Runs the real `clusterctl move` of `namespace` from `from` to `to` (version check off, config in a temp folder):
 * PIVOT_CLUSTERCTL when set, else the clusterctl `npm run binaries` builds.
 * A move still running after `timeoutMs` is killed (clusterctl retries a failing write for minutes): the result then
 * has a null code and its output says so.
 */
export async function clusterctlMove(
  from: Side,
  to: Side,
  namespace: string,
  timeoutMs = 100_000,
): Promise<MoveResult> {
  const binary = process.env.PIVOT_CLUSTERCTL || (await resolveClusterctl());
  const home = mkdtempSync(join(tmpdir(), "pivot-clusterctl-"));
  const args = [
    "move",
    "--kubeconfig",
    from.kubeconfigPath,
    "--to-kubeconfig",
    to.kubeconfigPath,
    "--namespace",
    namespace,
    "-v",
    "1",
  ];
  if (from.context) args.push("--kubeconfig-context", from.context);
  if (to.context) args.push("--to-kubeconfig-context", to.context);
  const started = Date.now();
  try {
    return await new Promise<MoveResult>((resolve, reject) => {
      const child = spawn(binary, args, {
        env: { ...process.env, CLUSTERCTL_DISABLE_VERSIONCHECK: "true", XDG_CONFIG_HOME: home },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (d: Buffer) => (output += d.toString()));
      child.stderr.on("data", (d: Buffer) => (output += d.toString()));
      const timer = setTimeout(() => {
        output += `\n[killed: clusterctl move was still running after ${timeoutMs} ms]\n`;
        child.kill("SIGKILL");
      }, timeoutMs);
      child.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, output, ms: Date.now() - started });
      });
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** The last `lines` lines of clusterctl's output, without the API server's finalizer-name warnings. */
export function outputTail(r: MoveResult, lines = 25): string {
  return r.output
    .split("\n")
    .filter((l) => !l.startsWith("[API Server Warning]"))
    .slice(-lines)
    .join("\n");
}

/** Every ADDED and DELETED event of one collection, from the moment the watch starts. */
export interface EventLog {
  /** Names, in order of their ADDED events. */
  added: string[];
  deleted: string[];
  /** The object as its ADDED event showed it (what its creator sent, as stored). */
  firstSeen: Map<string, KubeObject & { status?: unknown }>;
  /** Stops watching; throws when the watch had ended before, since the log would then be incomplete. */
  stop(): void;
}

/**
 * Field managers recorded on an object (`metadata.managedFields[].manager`). An object clusterctl created carries a
 * "clusterctl" entry (next to the entries it copied from the source); one our controller created has none.
 */
export function managersOf(obj: KubeObject): string[] {
  const fields = (obj.metadata as { managedFields?: { manager?: string }[] }).managedFields ?? [];
  return fields.map((f) => f.manager ?? "");
}

/** Watches `collectionPath` on `side` and records ADDED and DELETED events. */
export async function recordEvents(side: Side, collectionPath: string): Promise<EventLog> {
  const log: EventLog = { added: [], deleted: [], firstSeen: new Map(), stop: () => undefined };
  let stopped = false;
  let endedEarly: string | undefined;
  const watch = new Watch(side.kubeConfig);
  // The client ends a watch that sees no event for 30 s (a private inactivity timeout); a quiet collection during a
  // long move is normal here, and an ended watch would make the log incomplete, so it waits as long as the test does.
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 60 * 60_000;
  const controller = await watch.watch(
    collectionPath,
    {},
    (type: string, obj: KubeObject & { status?: unknown }) => {
      const name = obj.metadata.name ?? "";
      if (type === "ADDED") {
        log.added.push(name);
        if (!log.firstSeen.has(name)) log.firstSeen.set(name, obj);
      }
      if (type === "DELETED") log.deleted.push(name);
    },
    (err: unknown) => {
      if (!stopped) endedEarly = err instanceof Error ? err.message : "the server closed it";
    },
  );
  log.stop = () => {
    stopped = true;
    controller.abort();
    // An empty `deleted` list only proves something if the watch was there to see deletions.
    if (endedEarly !== undefined)
      throw new Error(`the event watch on ${collectionPath} ended before it was stopped: ${endedEarly}`);
  };
  return log;
}

/** One {@link recordEvents} per collection of `clients` in `namespace`, by the same keys. */
export async function recordAll<K extends string>(
  side: Side,
  namespace: string,
  clients: Record<K, { collectionPath(namespace: string): string }>,
): Promise<Record<K, EventLog>> {
  const logs = {} as Record<K, EventLog>;
  for (const name of Object.keys(clients) as K[])
    logs[name] = await recordEvents(side, clients[name].collectionPath(namespace));
  return logs;
}

/** Creates `namespace` on `side` (already existing is fine). */
export async function ensureNamespace(side: Side, namespace: string): Promise<void> {
  try {
    await side.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
}

/** Whether `namespace` exists on `side`. */
export async function namespaceExists(side: Side, namespace: string): Promise<boolean> {
  try {
    await side.kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: namespace });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/**
 * Removes a namespace of the scenario from a cluster this run did not start: strips every finalizer (controllers
 * may be gone by then) and deletes the namespace.
 */
export async function wipeNamespace(side: Side, namespace: string): Promise<void> {
  if (!(await namespaceExists(side, namespace))) return;
  for (const client of Object.values(side.k) as Kinds[keyof Kinds][]) {
    const items = (await client.list(namespace)).items as KubeObject[];
    await inBatches(items, 16, async (o) => {
      if ((o.metadata.finalizers ?? []).length === 0) return;
      await client.patch(namespace, o.metadata.name ?? "", { metadata: { finalizers: null } }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    });
  }
  await side.kubeConfig
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: namespace })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
}

/** Messages of the endpoint claim lifecycle (src/controllers/capi/endpoint.ts): an owner reference written, a claim deleted. */
export const ENDPOINT_OWNED = "Endpoint claim owned by its Cluster";
export const ENDPOINT_DELETED = "Deleting an endpoint claim whose Cluster never came";

/** Namespace label that scopes the webhook configurations {@link serveEndpointWebhooks} registers. */
const ENDPOINT_SCOPE_LABEL = "e2e.ipam.metal3.io/pivot-endpoint";

/**
 * Serves our webhooks for Clusters (the control-plane endpoint webhook and its guard) from this process to `side`'s
 * API server, for `namespace` only: creates the namespace when missing and labels it, starts the webhook server on
 * loopback with a fresh certificate, and registers the shipped Cluster entries of config/webhook/manifests.yaml
 * pointed at it. The returned function unregisters and stops. Only a local plane can call back to this process.
 */
export async function serveEndpointWebhooks(side: Side, namespace: string): Promise<() => Promise<void>> {
  await ensureNamespace(side, namespace);
  await side.kubeConfig
    .makeApiClient(CoreV1Api)
    .patchNamespace(
      { name: namespace, body: { metadata: { labels: { [ENDPOINT_SCOPE_LABEL]: namespace } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  const pki = loopbackPki();
  const certDir = writeCertDir(pki.serving);
  const server = await startWebhookServer({
    port: 0,
    host: "127.0.0.1",
    certDir,
    // The certificate never changes here; a reload check in flight when the folder is removed would log a warning.
    certReloadMs: 3_600_000,
    kubeConfig: side.kubeConfig,
    logger: createLogger({ level: "warn", format: "json" }),
  });
  const name = `pivot-endpoint-${namespace}`;
  const { mutating, validating } = scopedWebhookConfigurations(
    name,
    `https://127.0.0.1:${server.port}`,
    pki.ca.certPem,
    ENDPOINT_SCOPE_LABEL,
    namespace,
    (w) => (w.rules ?? []).some((r) => r.resources?.includes("clusters")),
  );
  const admission = side.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  await admission.createMutatingWebhookConfiguration({ body: mutating });
  await admission.createValidatingWebhookConfiguration({ body: validating });
  return async () => {
    await admission.deleteMutatingWebhookConfiguration({ name: `${name}-mutating` });
    await admission.deleteValidatingWebhookConfiguration({ name: `${name}-validating` });
    await server.stop();
    rmSync(certDir, { recursive: true, force: true });
  };
}
