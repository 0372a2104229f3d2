#!/usr/bin/env bash
# Builds the local control plane's binaries from Go modules (no prebuilt downloads) and caches them per version
# outside the repository. Prints nothing but progress on stderr; the last line on stdout is the binary folder.
#
#   hack/localplane-binaries.sh            build what is missing: etcd, kube-apiserver, kube-controller-manager,
#                                          clusterctl, prometheus and promtool, and copy Cluster API's CRDs into
#                                          .cache/crds/cluster-api; plus the node's kubelet, kube-scheduler and
#                                          kube-proxy when this machine can run a node (root, containerd and runc
#                                          installed: see node_possible)
#   hack/localplane-binaries.sh plane      only what a plane needs (etcd, kube-apiserver, kube-controller-manager,
#                                          Cluster API's CRDs): what `npm run demo` and `npm run localplane -- up`
#                                          build first
#   hack/localplane-binaries.sh plane-node that and the node's binaries: what `npm run localplane -- up --node` builds
#   hack/localplane-binaries.sh node       everything, and the node's binaries whatever the machine
#   KUBEBUILDER_ASSETS=/dir hack/...       use etcd, kube-apiserver (and kube-controller-manager) from /dir instead
#
# Cache: ${METAL3_IPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metal3-ipam-ts}/<name>-<version>/<binary>. An entry is
# valid only when its .complete stamp exists and the binary answers --version; anything else is rebuilt.
set -o errexit -o nounset -o pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CLUSTER_API_VERSION="${CLUSTER_API_VERSION:-v1.14.2}"
# Go module version of Prometheus: v0.MMmm.P is Prometheus M.mm.P (v0.316.0 is 3.16.0).
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_ROOT="${METAL3_IPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metal3-ipam-ts}"
CRD_OUT="${REPO_ROOT}/.cache/crds/cluster-api"

log() { echo "localplane-binaries: $*" >&2; }

require_go() {
  if ! command -v go >/dev/null 2>&1; then
    log "no Go toolchain found on PATH."
    log "Either install Go 1.24+ (https://go.dev/dl/) so this script can build the binaries from Go modules,"
    log "or point KUBEBUILDER_ASSETS at a folder holding etcd, kube-apiserver and kube-controller-manager"
    log "(for example from 'setup-envtest use -p path')."
    exit 1
  fi
}

# entry_ok DIR BINARY... : true when DIR holds a complete build whose binaries run.
entry_ok() {
  local dir="$1"; shift
  [[ -f "${dir}/.complete" ]] || return 1
  local b
  for b in "$@"; do
    [[ -x "${dir}/${b}" ]] || return 1
    timeout 20 "${dir}/${b}" --version >/dev/null 2>&1 || timeout 20 "${dir}/${b}" version >/dev/null 2>&1 || return 1
  done
}

# build_into DIR WRAPPER_SETUP_FN LDFLAGS PACKAGE... : builds into a temporary folder, then moves it into place so a
# killed build never leaves a half-written entry behind. GO_BUILD_TAGS, when set, is passed to go build as -tags.
build_into() {
  local dir="$1" setup="$2" ldflags="$3"; shift 3
  local work; work="$(mktemp -d)"
  "${setup}" "${work}"
  log "building $* (cold builds take minutes; the result is cached in ${dir})"
  if ! (cd "${work}" && go mod tidy >&2 && CGO_ENABLED=0 go build -trimpath -tags "${GO_BUILD_TAGS:-}" -ldflags "${ldflags}" -o "${work}/out/" "$@" >&2); then
    rm -rf "${work}"
    log "building $* failed (see the Go output above)"
    exit 1
  fi
  touch "${work}/out/.complete"
  rm -rf "${dir}" && mkdir -p "$(dirname "${dir}")" && mv "${work}/out" "${dir}" && rm -rf "${work}"
}

setup_kubernetes_wrapper() {
  local work="$1"
  local staging_version="v0.${KUBERNETES_VERSION#v1.}"
  local gomod; gomod="$(go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    echo "module localplane.invalid/kubernetes"
    echo "go 1.24.0"
    echo "godebug default=go1.24"
    echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with ./staging; map each one to its
    # published version instead. The list comes from upstream's own go.mod so it follows the pinned release.
    grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging/' "${gomod}" | awk -v v="${staging_version}" '{print "replace " $1 " => " $1 " " v}'
  } >"${work}/go.mod"
  # go mod tidy keeps what the packages being built import: list them in a tools file.
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'; printf '\t_ "%s"\n' "${KUBERNETES_PACKAGES[@]}"; printf ')\n'; } >"${work}/tools.go"
}

setup_etcd_wrapper() {
  local work="$1"
  printf 'module localplane.invalid/etcd\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "${ETCD_VERSION}" >"${work}/go.mod"
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >"${work}/main.go"
}

setup_clusterctl_wrapper() {
  local work="$1"
  printf 'module localplane.invalid/clusterctl\n\ngo 1.24.0\n\nrequire (\n\tsigs.k8s.io/cluster-api %s\n\tsigs.k8s.io/cluster-api/api %s\n)\n' \
    "${CLUSTER_API_VERSION}" "${CLUSTER_API_VERSION}" >"${work}/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/cluster-api/cmd/clusterctl"\n' >"${work}/tools.go"
}

setup_prometheus_wrapper() {
  local work="$1"
  # go mod tidy raises the go line to what Prometheus asks for (1.26.7 for v0.316.0); an older go command fetches
  # that toolchain itself (GOTOOLCHAIN=auto, the default).
  printf 'module localplane.invalid/prometheus\n\ngo 1.24.0\n\nrequire github.com/prometheus/prometheus %s\n' \
    "${PROMETHEUS_VERSION}" >"${work}/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "github.com/prometheus/prometheus/cmd/prometheus"\n\t_ "github.com/prometheus/prometheus/cmd/promtool"\n)\n' >"${work}/tools.go"
}

build_etcd() {
  local dir="${CACHE_ROOT}/etcd-${ETCD_VERSION}"
  entry_ok "${dir}" etcd && { echo "${dir}"; return; }
  build_into "${dir}" setup_etcd_wrapper "-s -w" .
  echo "${dir}"
}

# build_kubernetes ENTRY BINARY... : k8s.io/kubernetes/cmd/<BINARY> for each, through the wrapper module, into the
# cache entry <ENTRY>-<version>. The plane's binaries and the node's are two entries, so a machine that never runs a
# node never builds the kubelet.
build_kubernetes() {
  local entry="$1"; shift
  local dir="${CACHE_ROOT}/${entry}-${KUBERNETES_VERSION}"
  entry_ok "${dir}" "$@" && { echo "${dir}"; return; }
  local minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
  local pkg="k8s.io/component-base/version" b
  KUBERNETES_PACKAGES=()
  for b in "$@"; do KUBERNETES_PACKAGES+=("k8s.io/kubernetes/cmd/${b}"); done
  build_into "${dir}" setup_kubernetes_wrapper \
    "-s -w -X ${pkg}.gitVersion=${KUBERNETES_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}" \
    "${KUBERNETES_PACKAGES[@]}"
  echo "${dir}"
}

# The node's sandbox ("pause") image runs this: it blocks until SIGTERM or SIGINT. Our own ten lines, so the node needs
# no image from a registry; hack/testkit/nodeimages.ts wraps the binary into an image tarball.
PAUSE_VERSION=1
setup_pause_wrapper() {
  local work="$1"
  printf 'module localplane.invalid/pause\n\ngo 1.24.0\n' >"${work}/go.mod"
  printf 'package main\n\nimport (\n\t"os"\n\t"os/signal"\n\t"syscall"\n)\n\nfunc main() {\n\tc := make(chan os.Signal, 1)\n\tsignal.Notify(c, syscall.SIGINT, syscall.SIGTERM)\n\t<-c\n}\n' >"${work}/main.go"
}

build_pause() {
  local dir="${CACHE_ROOT}/pause-${PAUSE_VERSION}"
  [[ -f "${dir}/.complete" && -x "${dir}/pause" ]] && { echo "${dir}"; return; }
  build_into "${dir}" setup_pause_wrapper "-s -w" .
  echo "${dir}"
}

# node_possible: true when this machine can run the local plane's node (hack/testkit/node.ts): Linux, root, and
# Debian's containerd and runc installed (.ci/run installs them). Elsewhere the node suite skips, so its binaries
# (a cold build of several minutes) are not built unless asked for with the `node` argument.
node_possible() {
  [[ "$(uname -s)" == "Linux" && "$(id -u)" == "0" ]] && command -v containerd >/dev/null 2>&1 &&
    command -v runc >/dev/null 2>&1
}

build_clusterctl() {
  local dir="${CACHE_ROOT}/clusterctl-${CLUSTER_API_VERSION}"
  entry_ok "${dir}" clusterctl && { echo "${dir}"; return; }
  build_into "${dir}" setup_clusterctl_wrapper \
    "-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=${CLUSTER_API_VERSION}" \
    sigs.k8s.io/cluster-api/cmd/clusterctl
  echo "${dir}"
}

# Prometheus and promtool for the alerting-rule tests and the monitoring e2e suite. Only the HTTP API is used: the
# web UI's assets (a separate JavaScript build, tag builtinassets) are left out, and so is every service discovery
# but the static and file ones (tag remove_all_sd: no cloud SDKs to compile; the tests list their targets).
build_prometheus() {
  local dir="${CACHE_ROOT}/prometheus-${PROMETHEUS_VERSION}"
  entry_ok "${dir}" prometheus promtool && { echo "${dir}"; return; }
  local numbers="${PROMETHEUS_VERSION#v0.}" # 316.0
  local release="$((${numbers%%.*} / 100)).$((${numbers%%.*} % 100)).${numbers#*.}"
  GO_BUILD_TAGS=remove_all_sd build_into "${dir}" setup_prometheus_wrapper \
    "-s -w -X github.com/prometheus/common/version.Version=${release}" \
    github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
  echo "${dir}"
}

copy_cluster_api_crds() {
  local stamp="${CRD_OUT}/.version"
  [[ -f "${stamp}" && "$(cat "${stamp}")" == "${CLUSTER_API_VERSION}" ]] && return
  local moddir; moddir="$(cd "$(mktemp -d)" && go mod download -json "sigs.k8s.io/cluster-api@${CLUSTER_API_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [[ -d "${moddir}" ]] || { log "could not download sigs.k8s.io/cluster-api@${CLUSTER_API_VERSION}"; exit 1; }
  rm -rf "${CRD_OUT}" && mkdir -p "${CRD_OUT}"
  local f
  for f in core/config/crd/bases/cluster.x-k8s.io_clusters.yaml core/config/crd/bases/cluster.x-k8s.io_machines.yaml \
    core/config/crd/bases/ipam.cluster.x-k8s.io_ipaddressclaims.yaml core/config/crd/bases/ipam.cluster.x-k8s.io_ipaddresses.yaml \
    cmd/clusterctl/config/crd/bases/clusterctl.cluster.x-k8s.io_providers.yaml; do
    [[ -f "${moddir}/${f}" ]] || { log "missing ${f} in sigs.k8s.io/cluster-api@${CLUSTER_API_VERSION}"; exit 1; }
    install -m 0644 "${moddir}/${f}" "${CRD_OUT}/"
  done
  echo "${CLUSTER_API_VERSION}" >"${stamp}"
  log "copied Cluster API ${CLUSTER_API_VERSION} CRDs into ${CRD_OUT}"
}

main() {
  local want="${1:-all}"
  if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
    local b
    for b in etcd kube-apiserver; do
      [[ -x "${KUBEBUILDER_ASSETS}/${b}" ]] || { log "KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS} has no executable ${b}"; exit 1; }
    done
    log "using binaries from KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS}"
  fi
  require_go
  mkdir -p "${CACHE_ROOT}/bin"
  copy_cluster_api_crds
  if [[ -z "${KUBEBUILDER_ASSETS:-}" ]]; then
    local etcd_dir k8s_dir
    etcd_dir="$(build_etcd)"
    k8s_dir="$(build_kubernetes kubernetes kube-apiserver kube-controller-manager)"
    ln -sf "${etcd_dir}/etcd" "${CACHE_ROOT}/bin/etcd"
    ln -sf "${k8s_dir}/kube-apiserver" "${CACHE_ROOT}/bin/kube-apiserver"
    ln -sf "${k8s_dir}/kube-controller-manager" "${CACHE_ROOT}/bin/kube-controller-manager"
  fi
  if [[ "${want}" == "node" || "${want}" == "plane-node" ]] || { [[ "${want}" == "all" ]] && node_possible; }; then
    local node_dir b; node_dir="$(build_kubernetes kubernetes-node kubelet kube-scheduler kube-proxy)"
    for b in kubelet kube-scheduler kube-proxy; do ln -sf "${node_dir}/${b}" "${CACHE_ROOT}/bin/${b}"; done
    ln -sf "$(build_pause)/pause" "${CACHE_ROOT}/bin/pause"
  fi
  if [[ "${want}" == "all" || "${want}" == "node" || "${want}" == "clusterctl" ]]; then
    local cc_dir; cc_dir="$(build_clusterctl)"
    ln -sf "${cc_dir}/clusterctl" "${CACHE_ROOT}/bin/clusterctl"
  fi
  if [[ "${want}" == "all" || "${want}" == "node" || "${want}" == "prometheus" ]]; then
    local prom_dir; prom_dir="$(build_prometheus)"
    ln -sf "${prom_dir}/prometheus" "${CACHE_ROOT}/bin/prometheus"
    ln -sf "${prom_dir}/promtool" "${CACHE_ROOT}/bin/promtool"
  fi
  echo "${KUBEBUILDER_ASSETS:-${CACHE_ROOT}/bin}"
}

main "$@"
