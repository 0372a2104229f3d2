/**
 * The configuration files of a local node (node.ts): containerd, the CNI network, the kubelet and kube-proxy. Every
 * path the node writes is under its folder, so removing the folder removes its state (nodehost.ts lists what lies
 * outside it).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { dump } from "js-yaml";
import { CNI_NETWORK, NODE_IP, POD_BRIDGE, POD_CIDR } from "./nodehost.js";

export const NODE_NAME = "localplane-node";
/** The sandbox image (our Go pause binary, nodeimages.ts): no registry has to serve one. */
export const PAUSE_IMAGE = "localplane.invalid/pause:1";

export interface NodePaths {
  dir: string;
  containerdSocket: string;
  kubeconfig: string;
  caFile: string;
}

/** Debian's CNI plugins (package containernetworking-plugins). */
export const CNI_BIN_DIR = "/usr/lib/cni";

export function writeContainerdConfig(p: NodePaths): string {
  const c = join(p.dir, "containerd");
  // cgroupfs (no systemd here), no AppArmor profile (the sandbox's kernel has none loaded for containerd to use).
  // restrict_oom_score_adj: without CAP_SYS_RESOURCE (CI sandboxes drop it from the bounding set) runc init cannot
  // lower oom_score_adj (-998 for sandboxes) and dies ("can't get final child's PID from pipe"); this clamps every
  // score to containerd's own, as for rootless containerd.
  const toml = `version = 2
root = "${c}/root"
state = "${c}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${p.containerdSocket}"
[ttrpc]
  address = "${p.containerdSocket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${c}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${join(p.dir, "cni")}"
`;
  const path = join(c, "config.toml");
  writeFileSync(path, toml);
  return path;
}

/** A bridge with host-local addresses, then the firewall plugin (it admits pod traffic where FORWARD drops). */
export function writeCniConfig(p: NodePaths): void {
  const conf = {
    cniVersion: "1.0.0",
    name: CNI_NETWORK,
    plugins: [
      {
        type: "bridge",
        bridge: POD_BRIDGE,
        isGateway: true,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: POD_CIDR }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: join(p.dir, "cni-ipam"),
        },
      },
      { type: "firewall" },
    ],
  };
  writeFileSync(join(p.dir, "cni", "10-m3ipam.conflist"), JSON.stringify(conf, null, 2));
}

export function writeKubeletConfig(p: NodePaths): string {
  const config = {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: NODE_IP,
    readOnlyPort: 0,
    healthzPort: 0,
    // The API server (admin client certificate of the plane's CA) reads logs and runs exec; nobody else.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: p.caFile } },
    authorization: { mode: "AlwaysAllow" },
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: true,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    protectKernelDefaults: false,
    // A shared CI machine's disk and memory must not evict the test's pods, nor image GC remove imported images.
    evictionHard: { "memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%" },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    podLogsDir: join(p.dir, "pod-logs"),
    resolvConf: "/etc/resolv.conf",
    serializeImagePulls: false,
  };
  const path = join(p.dir, "kubelet.yaml");
  writeFileSync(path, dump(config));
  return path;
}

/** iptables mode; conntrack limits untouched (zeros) and node ports on NODE_IP only (no route_localnet). */
export function writeKubeProxyConfig(p: NodePaths): string {
  const config = {
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    clientConnection: { kubeconfig: p.kubeconfig },
    mode: "iptables",
    clusterCIDR: POD_CIDR,
    hostnameOverride: NODE_NAME,
    bindAddress: NODE_IP,
    healthzBindAddress: "",
    metricsBindAddress: "",
    nodePortAddresses: [`${NODE_IP}/32`],
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
  };
  const path = join(p.dir, "kube-proxy.yaml");
  writeFileSync(path, dump(config));
  return path;
}
