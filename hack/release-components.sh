#!/usr/bin/env bash
# Renders the clusterctl release artefacts of this IPAM provider from config/default:
#   out/<version>/ipam-components.yaml   (image set to IMAGE:VERSION)
#   out/<version>/metadata.yaml
# Usage: hack/release-components.sh [VERSION] [IMAGE]   (defaults: v0.1.0, ghcr.io/metal3-ipam-ts/controller)
# clusterctl then installs it with a providers entry in its configuration (see docs/install.md, "Install with
# clusterctl").
set -o errexit -o nounset -o pipefail

VERSION="${1:-v0.1.0}"
IMAGE="${2:-ghcr.io/metal3-ipam-ts/controller}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT_DIR:-${REPO_ROOT}/out}/${VERSION}"

command -v kubectl >/dev/null 2>&1 || { echo "release-components: kubectl (with kustomize) is required" >&2; exit 1; }
mkdir -p "${OUT}"
kubectl kustomize "${REPO_ROOT}/config/default" \
  | sed -e "s#image: ghcr.io/metal3-ipam-ts/controller:v0.1.0#image: ${IMAGE}:${VERSION}#" >"${OUT}/ipam-components.yaml"
cp "${REPO_ROOT}/metadata.yaml" "${OUT}/metadata.yaml"
echo "${OUT}/ipam-components.yaml"
