/**
 * A real node for a local plane (`LocalPlane.start({ node: true })`): Debian's containerd and runc, the CNI plugins of
 * Debian's containernetworking-plugins, and a kubelet, kube-scheduler and kube-proxy built like the plane's binaries
 * (`npm run binaries -- node`). Pods run images imported from tarballs (`importImage`), with `imagePullPolicy: Never`.
 *
 * Needs Linux and root (cgroups, mounts, links, iptables): `nodeUnsupported()` says in one line why a machine cannot
 * run one. One node per machine: the links, the addresses and port 10250 are the host's.
 *
 * Guarantees: `stop` (and the exit hook, for a run that dies) removes the pods, the node's processes and everything it
 * changed on the host (nodehost.ts lists it), and returns what is still left (empty on success); a node left by a run
 * killed with SIGKILL is cleaned by the next node to start.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { cacheRoot, verifyBinary } from "./binaries.js";
import {
  CNI_BIN_DIR,
  NODE_NAME,
  writeCniConfig,
  writeContainerdConfig,
  writeKubeletConfig,
  writeKubeProxyConfig,
  type NodePaths,
} from "./nodeconfig.js";
import { cleanNodeHost, NODE_IP, NODE_LINK, nodeHostResidue, prepareNodeHost, reapOrphanedNodes } from "./nodehost.js";
import { importImage, writePauseImage } from "./nodeimages.js";
import { exitedWithError, startProcess, type Supervised } from "./process.js";
import { eventually, sleep } from "./wait.js";

export interface NodeBinaries {
  kubelet: string;
  kubeScheduler: string;
  kubeProxy: string;
  pause: string;
}

const HOST_TOOLS = ["containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "iptables", "iptables-save", "tar"];

/** Why this machine cannot run a node, in one line; undefined when it can. Installs nothing. */
export function nodeUnsupported(): string | undefined {
  if (process.platform !== "linux") return "a local node needs Linux";
  if (process.getuid?.() !== 0) return "a local node needs root (cgroups, mounts, links, iptables)";
  const missing = HOST_TOOLS.filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);
  if (!existsSync(join(CNI_BIN_DIR, "bridge"))) missing.push(`${CNI_BIN_DIR}/bridge`);
  if (missing.length > 0)
    return `a local node needs ${missing.join(", ")} (apt-get install containerd runc containernetworking-plugins iptables)`;
  return undefined;
}

/** The cached kubelet, kube-scheduler, kube-proxy and pause binaries (`npm run binaries -- node`), verified. */
export async function resolveNodeBinaries(): Promise<NodeBinaries> {
  const bin = join(cacheRoot(), "bin");
  const b = {
    kubelet: join(bin, "kubelet"),
    kubeScheduler: join(bin, "kube-scheduler"),
    kubeProxy: join(bin, "kube-proxy"),
    pause: join(bin, "pause"),
  };
  for (const path of [b.kubelet, b.kubeScheduler, b.kubeProxy]) await verifyBinary(path);
  if (!existsSync(b.pause)) throw new Error(`${b.pause} is missing; run \`npm run binaries -- node\``);
  return b;
}

/** Names and addresses the API server of a node plane is reached by: loopback, the node, the `kubernetes` Service. */
export function nodePlaneHosts(serviceIp: string): string[] {
  const names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"];
  return [NODE_IP, serviceIp, ...names];
}

/** Controllers a Deployment behind a Service needs, on top of the plane's garbage collector and namespaces. */
export const NODE_CONTROLLERS = [
  "deployment-controller",
  "replicaset-controller",
  "endpoints-controller",
  "endpointslice-controller",
  "serviceaccount-controller",
  "root-ca-certificate-publisher-controller",
  "pod-garbage-collector-controller",
  // It lifts the node.kubernetes.io/not-ready taint the kubelet registers with, once the Node is Ready.
  "node-lifecycle-controller",
];

const liveNodes = new Set<LocalNode>();
process.on("exit", () => {
  for (const node of liveNodes) node.killSync();
});

export class LocalNode {
  private readonly procs: Supervised[] = [];
  private readonly paths: NodePaths;
  private stopped = false;

  private constructor(
    readonly dir: string,
    private readonly binaries: NodeBinaries,
    kubeconfig: string,
    caFile: string,
  ) {
    this.paths = { dir, containerdSocket: join(dir, "containerd", "containerd.sock"), kubeconfig, caFile };
  }

  /**
   * Cleans what a node of a dead run left, then claims the host: adds NODE_LINK with NODE_IP, which the API server
   * of a node plane binds to. Rejects when another live node holds the host.
   */
  static prepare(dir: string, binaries: NodeBinaries, kubeconfig: string, caFile: string): LocalNode {
    reapOrphanedNodes();
    if (existsSync(`/sys/class/net/${NODE_LINK}`))
      throw new Error(`another local node runs on this machine (link ${NODE_LINK} exists); one node per machine`);
    for (const sub of ["containerd", "cni", "cni-ipam", "pod-logs", "kubelet"])
      mkdirSync(join(dir, sub), { recursive: true });
    // Every node process names the node's folder on its command line: that is how a later run finds its orphans.
    copyFileSync(kubeconfig, join(dir, "kubeconfig"));
    const node = new LocalNode(dir, binaries, join(dir, "kubeconfig"), caFile);
    liveNodes.add(node);
    prepareNodeHost(dir);
    return node;
  }

  /** Starts containerd, the scheduler, the kubelet and kube-proxy; resolves when the Node is Ready. */
  async start(kc: KubeConfig, timeoutMs: number): Promise<void> {
    const p = this.paths;
    writeCniConfig(p);
    const containerd = this.spawn("containerd", "containerd", ["--config", writeContainerdConfig(p)]);
    await this.ready(containerd, "containerd to answer", () => ctr(p.containerdSocket, ["version"]), timeoutMs);
    importImage(p.containerdSocket, writePauseImage(this.dir, this.binaries.pause));
    this.spawn("kube-scheduler", this.binaries.kubeScheduler, [
      `--kubeconfig=${p.kubeconfig}`,
      "--leader-elect=false",
      "--secure-port=0",
    ]);
    const kubelet = this.spawn("kubelet", this.binaries.kubelet, [
      `--config=${writeKubeletConfig(p)}`,
      `--kubeconfig=${p.kubeconfig}`,
      `--root-dir=${join(this.dir, "kubelet")}`,
      `--node-ip=${NODE_IP}`,
      `--hostname-override=${NODE_NAME}`,
    ]);
    this.spawn("kube-proxy", this.binaries.kubeProxy, [`--config=${writeKubeProxyConfig(p)}`]);
    const core = kc.makeApiClient(CoreV1Api);
    await this.ready(
      kubelet,
      `node ${NODE_NAME} to be Ready and without taints`,
      async () => {
        const node = await core.readNode({ name: NODE_NAME });
        const ready = node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
        return ready && (node.spec?.taints ?? []).length === 0;
      },
      timeoutMs,
    );
  }

  get containerdSocket(): string {
    return this.paths.containerdSocket;
  }

  /** Loads a `docker save` tarball into the node's containerd; returns the image names it then holds. */
  importImage(tarball: string): string[] {
    return importImage(this.paths.containerdSocket, tarball);
  }

  /**
   * Deletes every pod through the kubelet (so CNI and volumes are torn down by their owners), stops the node's
   * processes, then removes whatever is left on the host. Returns what could not be removed; empty on success.
   */
  async stop(kc?: KubeConfig): Promise<string[]> {
    if (this.stopped) return [];
    this.stopped = true;
    if (kc) await this.drain(kc).catch(() => undefined);
    for (const proc of [...this.procs].reverse()) await proc.stop(10_000);
    cleanNodeHost(this.dir, this.binaries.kubeProxy);
    liveNodes.delete(this);
    return nodeHostResidue(this.dir);
  }

  /** For the exit hook: SIGKILL to the node's processes, then the same host clean-up as `stop`. */
  killSync(): void {
    for (const proc of this.procs) proc.signal("SIGKILL");
    cleanNodeHost(this.dir, this.binaries.kubeProxy);
  }

  private async drain(kc: KubeConfig): Promise<void> {
    const core = kc.makeApiClient(CoreV1Api);
    const onNode = async (): Promise<number> =>
      (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE_NAME}` })).items.length;
    for (const pod of (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE_NAME}` })).items)
      await core
        .deleteNamespacedPod({
          name: pod.metadata!.name!,
          namespace: pod.metadata!.namespace!,
          gracePeriodSeconds: 1,
        })
        .catch(() => undefined);
    await eventually("the node's pods to be gone", async () => (await onNode()) === 0, 60_000, 500);
    // The kubelet stops sandboxes (CNI DEL, network namespace) after the containers; give it its sync period.
    await eventually("the pods' sandboxes to stop", () => Promise.resolve(podNetworkNamespaces() === 0), 30_000, 500);
  }

  private spawn(name: string, binary: string, args: string[]): Supervised {
    if (this.stopped) throw new Error(`cannot start ${name}: the node is stopped`);
    const proc = startProcess(name, binary, args, join(this.dir, `${name}.log`));
    this.procs.push(proc);
    return proc;
  }

  private async ready(proc: Supervised, what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    await Promise.race([exitedWithError(proc), eventually(what, probe, timeoutMs, 250)]);
  }
}

async function ctr(socket: string, args: string[]): Promise<boolean> {
  await sleep(0);
  return spawnSync("ctr", ["-a", socket, ...args], { stdio: "ignore", timeout: 5_000 }).status === 0;
}

/** Pod network namespaces still open (bind mounts in /run/netns, named cni-<uuid> by the CRI plugin). */
function podNetworkNamespaces(): number {
  return existsSync("/run/netns") ? readdirSync("/run/netns").filter((n) => n.startsWith("cni-")).length : 0;
}
