/**
 * A local Kubernetes control plane for tests and the demo: etcd, kube-apiserver and (when available)
 * kube-controller-manager running only the garbage collector and namespace controllers, as child processes on free
 * loopback ports, with generated certificates and an admin kubeconfig, in a temporary folder.
 *
 * Guarantees: `start` either resolves with a ready plane or rejects with a message naming what failed (never hangs:
 * every wait has a deadline); `stop` kills every process and deletes the folder; if the process exits without calling
 * `stop` (test failure, Ctrl-C), an exit hook kills the children and removes the folder; a run killed with SIGKILL is
 * cleaned up by the next plane to start (see reaper.ts). Several planes can run side by side.
 *
 * Fault injection for reliability tests: etcd and kube-apiserver can be stopped, started, restarted and frozen
 * (SIGSTOP) in place, on the same ports and data, so clients keep their kubeconfig. Combine with `apiServerFlags` such
 * as `--min-request-timeout=5` (short watches) or `--watch-cache=false` with `--etcd-compaction-interval=2s` (a watch
 * resumed from an old resourceVersion then gets 410 Gone).
 */
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { dump } from "js-yaml";
import { resolveBinaries, type PlaneBinaries } from "./binaries.js";
import { installCrds } from "./crds.js";
import { get, type TlsIdentity } from "./http.js";
import { generatePlanePki, type PlanePki } from "./pki.js";
import { issueClientCertificate, type CertificatePair } from "../../src/certs/pki.js";
import { LocalNode, NODE_CONTROLLERS, nodePlaneHosts, resolveNodeBinaries } from "./node.js";
import { KUBERNETES_SERVICE_IP, NODE_IP, reapOrphanedNodes, SERVICE_CIDR } from "./nodehost.js";
import { claimPorts } from "./ports.js";
import { exitedWithError, killAllChildrenSync, startProcess, type Supervised } from "./process.js";
import { PLANE_DIR_PREFIX, reapOrphanedPlanes, recordOwnership } from "./reaper.js";
import { eventually } from "./wait.js";

export interface LocalPlaneOptions {
  /** Folders whose CustomResourceDefinitions are installed once the API server is ready. */
  crdDirs?: string[];
  /**
   * Install those CRDs without their conversion webhook (strategy None). For a plane that serves no webhook and stores
   * many objects of a kind with several served versions: the API server keeps a watch cache per served version, and the
   * cache of a version other than the stored one converts every object through the webhook, so without one it fails
   * and retries for as long as the plane runs.
   */
  crdsWithoutConversionWebhooks?: boolean;
  /** Run kube-controller-manager (garbage collection, namespace deletion). Default: true when the binary exists. */
  controllerManager?: boolean;
  /** Fixed ports; default: free ones. A taken port fails start-up with a clear error. */
  apiServerPort?: number;
  etcdPort?: number;
  /** Extra kube-apiserver flags, e.g. `--min-request-timeout=5` for short watches. */
  apiServerFlags?: string[];
  binaries?: PlaneBinaries;
  /** Deadline for each readiness wait. Default 90 s (a cold kube-apiserver on two cores needs ~10 s). */
  readyTimeoutMs?: number;
  /**
   * Add a real node (node.ts; Linux and root): the API server then serves on NODE_IP (pods reach it through the
   * `kubernetes` Service), admits ServiceAccounts, and the controller manager runs what Deployments need.
   */
  node?: boolean;
}

const livePlaneDirs = new Set<string>();
process.on("exit", () => {
  killAllChildrenSync();
  for (const dir of livePlaneDirs) rmSync(dir, { recursive: true, force: true });
});

/** Controllers kube-controller-manager runs for tests: owner-reference cascades and namespace deletion. */
const CONTROLLERS = ["garbage-collector-controller", "namespace-controller"];

export class LocalPlane {
  readonly kubeConfig: KubeConfig;
  private etcd?: Supervised;
  private apiServer?: Supervised;
  private controllerManager?: Supervised;
  private stopped = false;
  /** The plane's node, when started with `node: true`. */
  node?: LocalNode;
  /** What the node left on the host after `stop` (nodehost.ts); empty when the host is as it was. */
  nodeResidue: string[] = [];

  private constructor(
    readonly dir: string,
    readonly kubeconfigPath: string,
    readonly server: string,
    private readonly pki: PlanePki,
    private readonly ports: { etcd: number; apiServer: number },
    private readonly binaries: PlaneBinaries,
    private readonly options: LocalPlaneOptions,
  ) {
    this.kubeConfig = new KubeConfig();
    this.kubeConfig.loadFromFile(kubeconfigPath);
  }

  /** Starts a plane. Rejects (after cleaning up what it started) when anything fails. */
  static async start(options: LocalPlaneOptions = {}): Promise<LocalPlane> {
    const nodeBinaries = options.node ? await resolveNodeBinaries() : undefined;
    reapOrphanedNodes();
    reapOrphanedPlanes();
    const binaries = options.binaries ?? (await resolveBinaries());
    if (options.etcdPort !== undefined && options.etcdPort === options.apiServerPort)
      throw new Error(`etcd and kube-apiserver cannot share port ${options.etcdPort}`);
    const [etcdPort = 0, apiServerPort = 0] = await claimPorts([options.etcdPort ?? 0, options.apiServerPort ?? 0]);
    const dir = mkdtempSync(join(tmpdir(), PLANE_DIR_PREFIX));
    livePlaneDirs.add(dir);
    const pki = generatePlanePki(options.node ? nodePlaneHosts(KUBERNETES_SERVICE_IP) : []);
    const server = `https://${options.node ? NODE_IP : "127.0.0.1"}:${apiServerPort}`;
    const kubeconfigPath = writePlaneFiles(dir, pki, server);
    const plane = new LocalPlane(
      dir,
      kubeconfigPath,
      server,
      pki,
      { etcd: etcdPort, apiServer: apiServerPort },
      binaries,
      options,
    );
    try {
      if (nodeBinaries)
        plane.node = LocalNode.prepare(join(dir, "node"), nodeBinaries, kubeconfigPath, join(dir, "pki", "ca.crt"));
      await plane.startEtcd();
      await plane.startApiServer();
      if (options.controllerManager ?? Boolean(binaries.kubeControllerManager)) await plane.startControllerManager();
      if (options.crdDirs && options.crdDirs.length > 0)
        await installCrds(plane.kubeConfig, options.crdDirs, plane.timeout, {
          conversionWebhooks: !options.crdsWithoutConversionWebhooks,
        });
      await plane.node?.start(plane.kubeConfig, plane.timeout);
      return plane;
    } catch (err) {
      await plane.stop();
      throw err;
    }
  }

  private get timeout(): number {
    return this.options.readyTimeoutMs ?? 90_000;
  }

  /** The plane's CA certificate (PEM): the API server trusts client certificates it signed. */
  get caPem(): string {
    return this.pki.ca.certPem;
  }

  /** A client certificate signed by the plane's CA, valid for `days` (fractions allowed: 20 s is 20 / 86400). */
  issueClientCertificate(commonName: string, organizations: string[], days: number): CertificatePair {
    return issueClientCertificate(this.pki.ca, commonName, organizations, days);
  }

  private get tls(): TlsIdentity {
    return { ca: this.pki.ca.certPem, cert: this.pki.admin.certPem, key: this.pki.admin.keyPem };
  }

  private record(): void {
    const pids = [this.etcd, this.apiServer, this.controllerManager].filter((p) => p?.isRunning()).map((p) => p!.pid);
    recordOwnership(this.dir, pids);
  }

  /** Fails clearly when the plane was stopped or `proc` still runs: a second copy could not bind the port. */
  private assertCanStart(proc: Supervised | undefined, what: string): void {
    if (this.stopped) throw new Error(`cannot start ${what}: the plane is stopped`);
    if (proc?.isRunning()) throw new Error(`cannot start ${what}: it is already running (pid ${proc.pid})`);
  }

  /** Starts etcd on the plane's port and data folder; waits for /health. Rejects if it is already running. */
  async startEtcd(): Promise<void> {
    this.assertCanStart(this.etcd, "etcd");
    const url = `http://127.0.0.1:${this.ports.etcd}`;
    this.etcd = startProcess(
      "etcd",
      this.binaries.etcd,
      [
        `--data-dir=${join(this.dir, "etcd")}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        "--listen-peer-urls=http://localhost:0",
        "--unsafe-no-fsync=true",
        "--log-level=warn",
      ],
      join(this.dir, "etcd.log"),
    );
    this.record();
    await this.ready(this.etcd, "etcd /health", async () => (await get(`${url}/health`)).body.includes('"true"'));
  }

  /** Starts kube-apiserver on the plane's port and data; waits for /readyz. Rejects if it is already running. */
  async startApiServer(): Promise<void> {
    this.assertCanStart(this.apiServer, "kube-apiserver");
    const port = this.ports.apiServer;
    const f = (name: string): string => join(this.dir, "pki", name);
    const address = this.options.node ? NODE_IP : "127.0.0.1";
    // A node plane: pods call the API server through the `kubernetes` Service (so it binds to NODE_IP), get
    // ServiceAccount tokens (admission on), and it calls the kubelet with the admin certificate (logs, exec).
    const nodeFlags = this.options.node
      ? [
          "--kubelet-preferred-address-types=InternalIP,Hostname",
          `--kubelet-client-certificate=${f("admin.crt")}`,
          `--kubelet-client-key=${f("admin.key")}`,
        ]
      : ["--disable-admission-plugins=ServiceAccount"];
    this.apiServer = startProcess(
      "kube-apiserver",
      this.binaries.kubeApiServer,
      [
        `--etcd-servers=http://127.0.0.1:${this.ports.etcd}`,
        `--secure-port=${port}`,
        `--bind-address=${address}`,
        `--advertise-address=${address}`,
        `--cert-dir=${join(this.dir, "pki")}`,
        `--tls-cert-file=${f("serving.crt")}`,
        `--tls-private-key-file=${f("serving.key")}`,
        `--client-ca-file=${f("ca.crt")}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        "--allow-privileged=true",
        "--authorization-mode=RBAC",
        ...nodeFlags,
        `--service-account-issuer=https://127.0.0.1:${port}/`,
        `--service-account-key-file=${f("sa.pub")}`,
        `--service-account-signing-key-file=${f("sa.key")}`,
        "--enable-priority-and-fairness=false",
        ...(this.options.apiServerFlags ?? []),
      ],
      join(this.dir, "kube-apiserver.log"),
    );
    this.record();
    await this.waitApiServerReady(this.apiServer);
  }

  private async waitApiServerReady(proc: Supervised): Promise<void> {
    await this.ready(proc, "kube-apiserver /readyz", async () => {
      const res = await get(`${this.server}/readyz`, this.tls);
      return res.status === 200;
    });
  }

  /**
   * Stops kube-apiserver: SIGTERM (its graceful shutdown: open watches end, new connections are refused), or SIGKILL
   * with `{ kill: true }` (a crash). Resolves when the process is gone. No-op when it is not running.
   */
  async stopApiServer(options: { kill?: boolean } = {}): Promise<void> {
    const proc = this.apiServer;
    if (!proc) return;
    await (options.kill ? proc.kill() : proc.stop());
    this.record();
  }

  /** Stops and starts kube-apiserver on the same port and data; resolves when it is ready again. */
  async restartApiServer(options: { kill?: boolean } = {}): Promise<void> {
    await this.stopApiServer(options);
    await this.startApiServer();
  }

  /**
   * Freezes kube-apiserver with SIGSTOP: it keeps its sockets and accepts TCP connections (the kernel does), but
   * answers nothing, not even TLS handshakes: a hung server, as seen by clients. `resumeApiServer` thaws it.
   * Resolves once every thread of the server is stopped: a signal is delivered asynchronously, and on a loaded machine
   * a request sent right after kill() could otherwise still be answered.
   */
  async pauseApiServer(): Promise<void> {
    const proc = this.apiServer;
    if (!proc?.signal("SIGSTOP")) throw new Error("cannot pause kube-apiserver: it is not running");
    await eventually("kube-apiserver to stop on SIGSTOP", () => allThreadsStopped(proc.pid), 10_000, 10);
  }

  /** Thaws a paused kube-apiserver (SIGCONT) and resolves when it answers /readyz again. */
  async resumeApiServer(): Promise<void> {
    const proc = this.apiServer;
    if (!proc?.signal("SIGCONT")) throw new Error("cannot resume kube-apiserver: it is not running");
    await this.waitApiServerReady(proc);
  }

  /** Stops etcd (SIGTERM, or SIGKILL with `{ kill: true }`); the API server, if running, stays up and fails reads. */
  async stopEtcd(options: { kill?: boolean } = {}): Promise<void> {
    const proc = this.etcd;
    if (!proc) return;
    await (options.kill ? proc.kill() : proc.stop());
    this.record();
  }

  /**
   * Restarts etcd on the same port and data folder; resolves when etcd is healthy and, if kube-apiserver runs, when
   * it is ready again.
   */
  async restartEtcd(options: { kill?: boolean } = {}): Promise<void> {
    await this.stopEtcd(options);
    await this.startEtcd();
    if (this.apiServer?.isRunning()) await this.waitApiServerReady(this.apiServer);
  }

  /** Process ids of the plane's running processes, e.g. to watch them from a test. */
  get pids(): { etcd?: number; apiServer?: number; controllerManager?: number } {
    const pid = (p: Supervised | undefined): number | undefined => (p?.isRunning() ? p.pid : undefined);
    return { etcd: pid(this.etcd), apiServer: pid(this.apiServer), controllerManager: pid(this.controllerManager) };
  }

  private async startControllerManager(): Promise<void> {
    const binary = this.binaries.kubeControllerManager;
    if (!binary)
      throw new Error("kube-controller-manager was requested but no binary was found; run `npm run binaries`");
    this.controllerManager = startProcess(
      "kube-controller-manager",
      binary,
      [
        `--kubeconfig=${this.kubeconfigPath}`,
        `--controllers=${[...CONTROLLERS, ...(this.options.node ? NODE_CONTROLLERS : [])].join(",")}`,
        ...(this.options.node ? [`--root-ca-file=${join(this.dir, "pki", "ca.crt")}`] : []),
        "--use-service-account-credentials=false",
        "--leader-elect=false",
        "--secure-port=0",
        "--concurrent-gc-syncs=5",
      ],
      join(this.dir, "kube-controller-manager.log"),
    );
    this.record();
    // It has no health endpoint with --secure-port=0: give it a moment to crash on bad flags, then trust it.
    await Promise.race([exitedWithError(this.controllerManager), new Promise((r) => setTimeout(r, 500))]);
  }

  private async ready(proc: Supervised, what: string, probe: () => Promise<boolean>): Promise<void> {
    await Promise.race([exitedWithError(proc), eventually(what, probe, this.timeout, 200)]);
  }

  /** Installs (or updates) the CRDs of `dirs` and waits until they are served. */
  async installCrds(dirs: string[]): Promise<string[]> {
    return await installCrds(this.kubeConfig, dirs, this.timeout);
  }

  /** Whether kube-controller-manager (garbage collection, namespace deletion) runs in this plane. */
  get hasControllerManager(): boolean {
    return this.controllerManager?.isRunning() ?? false;
  }

  /**
   * Stops the node (its pods first, then its processes and what it changed on the host: see `nodeResidue`), every
   * process (controller manager, API server, etcd) and deletes the folder. Idempotent.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.node) this.nodeResidue = await this.node.stop(this.apiServer?.isRunning() ? this.kubeConfig : undefined);
    for (const proc of [this.controllerManager, this.apiServer, this.etcd]) await proc?.stop();
    rmSync(this.dir, { recursive: true, force: true });
    livePlaneDirs.delete(this.dir);
  }
}

function writePlaneFiles(dir: string, pki: PlanePki, server: string): string {
  const pkiDir = join(dir, "pki");
  mkdirSync(pkiDir, { recursive: true });
  const files: Record<string, string> = {
    "ca.crt": pki.ca.certPem,
    "serving.crt": pki.serving.certPem,
    "serving.key": pki.serving.keyPem,
    "sa.key": pki.serviceAccount.privateKeyPem,
    "sa.pub": pki.serviceAccount.publicKeyPem,
    "admin.crt": pki.admin.certPem,
    "admin.key": pki.admin.keyPem,
  };
  for (const [name, content] of Object.entries(files)) writeFileSync(join(pkiDir, name), content, { mode: 0o600 });
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "localplane", cluster: { server, "certificate-authority-data": b64(pki.ca.certPem) } }],
    users: [
      {
        name: "admin",
        user: { "client-certificate-data": b64(pki.admin.certPem), "client-key-data": b64(pki.admin.keyPem) },
      },
    ],
    contexts: [{ name: "localplane", context: { cluster: "localplane", user: "admin", namespace: "default" } }],
    "current-context": "localplane",
  };
  const path = join(dir, "kubeconfig");
  writeFileSync(path, dump(kubeconfig), { mode: 0o600 });
  return path;
}

/**
 * Whether every thread of `pid` is in the stopped state (`T`, or `t` under a tracer) per /proc. Linux only, as the
 * plane is. False when the process is gone.
 */
function allThreadsStopped(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).every((tid) => {
      // The state is the first field after the command name, which is in parentheses and may contain spaces.
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      return state === "T" || state === "t";
    });
  } catch {
    return false;
  }
}
