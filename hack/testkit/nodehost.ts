/**
 * What a local node (node.ts) changes on the host, and how it is put back. Everything here is synchronous, so the
 * exit hook of a dying test run can clean up too.
 *
 * A node leaves behind, unless cleaned (`cleanNodeHost`, which `LocalNode.stop`, the exit hook and the next node's
 * start all run; each step is idempotent):
 * - processes: containerd's shims (they outlive containerd) and the pods' processes, all in `kubepods` cgroups;
 * - mounts: overlay roots of containers and tmpfs volumes under the node's folder, network namespaces in /run/netns;
 * - links: the node's bridge (carrying NODE_IP) and the pods' bridge with its veths;
 * - iptables chains `KUBE-*` (kube-proxy, kubelet) and `CNI-*` (the firewall plugin), with the rules jumping to them;
 * - cgroups `kubepods` (cgroupfs driver);
 * - sysctls the kubelet, kube-proxy and the bridge plugin set (SYSCTLS), restored from a snapshot taken at start;
 * - /var/log/containers (the kubelet's fixed folder of log links) and the CNI cache /var/lib/cni, removed when the
 *   node created them.
 * `nodeHostResidue` lists what is still there, for tests and `localplane down` to assert on.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mountsUnder, PLANE_DIR_PREFIX, processAlive } from "./reaper.js";

/** The node's address: kubelet, kube-proxy and (on a node plane) kube-apiserver serve on it. Not loopback. */
export const NODE_IP = "10.250.0.1";
/** Bridge without ports that only carries NODE_IP (the kernel here has no `dummy` links). */
export const NODE_LINK = "m3ipam-node0";
/** The pods' bridge (CNI bridge plugin) and their addresses (host-local). */
export const POD_BRIDGE = "m3ipam-cni0";
export const POD_CIDR = "10.244.0.0/24";
/** Service ClusterIPs of a node plane; the first is the `kubernetes` Service. */
export const SERVICE_CIDR = "10.0.0.0/24";
export const KUBERNETES_SERVICE_IP = "10.0.0.1";
/** Name of the CNI network: the cache entries under /var/lib/cni/results are named after it. */
export const CNI_NETWORK = "m3ipam";

/** Sysctls a node may change: the kubelet's kernel tunables, kube-proxy's, the bridge plugin's forwarding. */
const SYSCTLS = [
  "vm/overcommit_memory",
  "vm/panic_on_oom",
  "kernel/panic",
  "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys",
  "kernel/keys/root_maxbytes",
  "net/ipv4/ip_forward",
  "net/ipv4/conf/all/route_localnet",
  "net/ipv6/conf/all/forwarding",
  "net/bridge/bridge-nf-call-iptables",
  "net/bridge/bridge-nf-call-ip6tables",
];

interface HostSnapshot {
  sysctls: Record<string, string>;
  /** Folders the node may create, and whether they existed before. */
  existed: Record<string, boolean>;
}

const CREATED_FOLDERS = ["/var/log/containers", "/var/lib/cni"];
const SNAPSHOT = "host-snapshot.json";

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  return r.status === 0 ? r.stdout : "";
}

function readSysctl(name: string): string | undefined {
  try {
    return readFileSync(`/proc/sys/${name}`, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** Records the sysctls and folders a node may change into `dir`, then adds NODE_LINK with NODE_IP. */
export function prepareNodeHost(dir: string): void {
  const snapshot: HostSnapshot = { sysctls: {}, existed: {} };
  for (const name of SYSCTLS) {
    const value = readSysctl(name);
    if (value !== undefined) snapshot.sysctls[name] = value;
  }
  for (const folder of CREATED_FOLDERS) snapshot.existed[folder] = existsSync(folder);
  writeFileSync(join(dir, SNAPSHOT), JSON.stringify(snapshot));
  execFileSync("ip", ["link", "add", NODE_LINK, "type", "bridge"]);
  execFileSync("ip", ["addr", "add", `${NODE_IP}/32`, "dev", NODE_LINK]);
  execFileSync("ip", ["link", "set", NODE_LINK, "up"]);
}

/** Pids of processes in a `kubepods` cgroup (pods) or whose command line names `dir` (containerd's shims). */
function nodeProcesses(dir: string | undefined): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const inPod = /:\/kubepods[/.\n]/.test(readFileSync(`/proc/${entry}/cgroup`, "utf8") + "\n");
      const ours = dir !== undefined && readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(dir);
      if (inPod || ours) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** `KUBE-*` and `CNI-*` chains per table, as `table/chain`, for iptables and ip6tables. */
function nodeChains(): string[] {
  const chains: string[] = [];
  for (const cmd of ["iptables", "ip6tables"])
    for (const table of ["filter", "nat", "mangle"])
      for (const line of run(`${cmd}-save`, ["-t", table]).split("\n"))
        if (/^:(KUBE-|CNI-)/.test(line)) chains.push(`${cmd} ${table}/${line.slice(1).split(" ")[0]}`);
  return chains;
}

function removeChains(): void {
  for (const cmd of ["iptables", "ip6tables"])
    for (const table of ["filter", "nat", "mangle"]) {
      const saved = run(`${cmd}-save`, ["-t", table]).split("\n");
      const chains = saved.filter((l) => /^:(KUBE-|CNI-)/.test(l)).map((l) => l.slice(1).split(" ")[0]!);
      if (chains.length === 0) continue;
      // Rules of built-in chains that jump to ours go first, then ours are flushed and deleted.
      for (const rule of saved.filter((l) =>
        /^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE-|CNI-)/.test(l),
      ))
        spawnSync(cmd, ["-t", table, ...splitRule(rule.replace(/^-A /, "-D "))]);
      for (const chain of chains) spawnSync(cmd, ["-t", table, "-F", chain]);
      for (const chain of chains) spawnSync(cmd, ["-t", table, "-X", chain]);
    }
}

/** Splits an iptables-save rule into arguments, keeping quoted comments whole. */
function splitRule(rule: string): string[] {
  return (rule.match(/"[^"]*"|\S+/g) ?? []).map((a) => a.replace(/^"(.*)"$/, "$1"));
}

function cgroupRoots(): string[] {
  const base = "/sys/fs/cgroup";
  if (existsSync(join(base, "cgroup.controllers"))) return [join(base, "kubepods")];
  return readdirSync(base).map((c) => join(base, c, "kubepods"));
}

function removeCgroupTree(path: string): void {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return;
  }
  if (!stat.isDirectory()) return;
  for (const entry of readdirSync(path, { withFileTypes: true }))
    if (entry.isDirectory()) removeCgroupTree(join(path, entry.name));
  try {
    rmdirSync(path);
  } catch {
    // still has processes: nodeHostResidue reports it
  }
}

function linkExists(name: string): boolean {
  return existsSync(`/sys/class/net/${name}`);
}

/** Network namespaces the CRI plugin made for pods (containerd names them cni-<uuid>). */
function podNetns(): string[] {
  return existsSync("/run/netns") ? readdirSync("/run/netns").filter((n) => n.startsWith("cni-")) : [];
}

/**
 * Puts the host back as it was before the node of `dir` (or, with `dir` undefined, removes what any node left,
 * without a snapshot to restore sysctls from). Kills what still runs, unmounts, deletes links, chains and cgroups.
 */
export function cleanNodeHost(dir: string | undefined, kubeProxy?: string): void {
  killNodeProcesses(dir);
  const prefixes = [...(dir ? [`${dir}/`] : []), "/run/netns/cni-"];
  for (const m of mountsUnder(prefixes).sort().reverse()) spawnSync("umount", ["-l", m]);
  for (const ns of podNetns()) rmSync(join("/run/netns", ns), { force: true });
  if (kubeProxy) spawnSync(kubeProxy, ["--cleanup"], { stdio: "ignore", timeout: 30_000 });
  removeChains();
  for (const link of [POD_BRIDGE, NODE_LINK]) if (linkExists(link)) spawnSync("ip", ["link", "del", link]);
  for (const root of cgroupRoots()) removeCgroupTree(root);
  if (dir) restoreSnapshot(dir);
  if (existsSync("/var/lib/cni/results"))
    for (const f of readdirSync("/var/lib/cni/results"))
      if (f.startsWith(`${CNI_NETWORK}-`)) rmSync(join("/var/lib/cni/results", f), { force: true });
}

function killNodeProcesses(dir: string | undefined): void {
  for (let round = 0; round < 3; round++) {
    const pids = nodeProcesses(dir);
    if (pids.length === 0) return;
    for (const pid of pids) spawnSync("kill", ["-KILL", String(pid)]);
    spawnSync("sleep", ["0.3"]);
  }
}

function readSnapshot(dir: string): HostSnapshot | undefined {
  const file = join(dir, SNAPSHOT);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as HostSnapshot) : undefined;
}

/** Sysctls back to their values at start; folders the node created removed. */
function restoreSnapshot(dir: string): void {
  const snapshot = readSnapshot(dir);
  if (!snapshot) return;
  for (const [name, value] of Object.entries(snapshot.sysctls))
    if (readSysctl(name) !== value) writeFileSync(`/proc/sys/${name}`, value);
  for (const [folder, existed] of Object.entries(snapshot.existed))
    if (!existed) rmSync(folder, { recursive: true, force: true });
}

/** What a node left on the host, one line each; empty when the host is as it was. `dir` adds its snapshot's checks. */
export function nodeHostResidue(dir?: string): string[] {
  const left: string[] = [];
  for (const pid of nodeProcesses(dir))
    left.push(`process ${pid}: ${run("ps", ["-o", "args=", "-p", String(pid)]).trim()}`);
  for (const m of mountsUnder([...(dir ? [`${dir}/`] : []), "/run/netns/cni-"])) left.push(`mount ${m}`);
  for (const ns of podNetns()) left.push(`network namespace ${ns}`);
  for (const link of [POD_BRIDGE, NODE_LINK]) if (linkExists(link)) left.push(`link ${link}`);
  for (const chain of nodeChains()) left.push(`chain ${chain}`);
  for (const root of cgroupRoots()) if (existsSync(root)) left.push(`cgroup ${root}`);
  const snapshot = dir ? readSnapshot(dir) : undefined;
  if (snapshot) {
    for (const [name, value] of Object.entries(snapshot.sysctls)) {
      const now = readSysctl(name);
      if (now !== value) left.push(`sysctl ${name} = ${now} (was ${value})`);
    }
    for (const [folder, existed] of Object.entries(snapshot.existed))
      if (!existed && existsSync(folder)) left.push(`folder ${folder}`);
  }
  return left;
}

/**
 * Cleans the host after nodes whose run died (owner gone): their processes, mounts, links, chains and sysctls. Runs
 * before a plane's folders are reaped (a mount left below one makes its removal fail) and before a node starts.
 */
export function reapOrphanedNodes(): void {
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(PLANE_DIR_PREFIX)) continue;
    const nodeDir = join(tmpdir(), entry, "node");
    const owner = join(tmpdir(), entry, "owner.json");
    if (!existsSync(nodeDir) || !existsSync(owner)) continue;
    try {
      if (processAlive((JSON.parse(readFileSync(owner, "utf8")) as { owner: number }).owner)) continue;
    } catch {
      continue;
    }
    cleanNodeHost(nodeDir);
  }
}
