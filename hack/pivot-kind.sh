#!/usr/bin/env bash
# Runs the pivot suite (e2e/pivot) against two kind clusters instead of two local planes: creates the clusters when
# they are missing, runs `npx tsx e2e/pivot/run.ts --from <source> --to <target>`, and deletes the clusters it created
# (KEEP_CLUSTERS=true keeps them). Clusters that already existed are used as they are and never deleted.
#
#   hack/pivot-kind.sh                                   kind clusters "pivot-source" and "pivot-target"
#   SOURCE_CLUSTER=a TARGET_CLUSTER=b hack/pivot-kind.sh other kind clusters
#   hack/pivot-kind.sh --keep --clusterctl ~/bin/clusterctl   further arguments go to e2e/pivot/run.ts
#
# Needs kind, Node and npm dependencies (npm ci), Cluster API's CRDs in .cache/crds/cluster-api and a clusterctl
# v1.14 (`npm run binaries` provides both; or pass --clusterctl <path>). The clusters must not run Cluster API's own
# controllers: the suite plays their part.
set -o errexit -o nounset -o pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SOURCE_CLUSTER="${SOURCE_CLUSTER:-pivot-source}"
TARGET_CLUSTER="${TARGET_CLUSTER:-pivot-target}"
KEEP_CLUSTERS="${KEEP_CLUSTERS:-false}"

log() { echo "pivot-kind: $*" >&2; }

command -v kind >/dev/null 2>&1 || { log "kind is not on PATH (https://kind.sigs.k8s.io/)"; exit 2; }
command -v npx >/dev/null 2>&1 || { log "npx (Node.js) is not on PATH"; exit 2; }
if [[ "${SOURCE_CLUSTER}" == "${TARGET_CLUSTER}" ]]; then
  log "SOURCE_CLUSTER and TARGET_CLUSTER must differ"
  exit 2
fi
if ! ls "${REPO_ROOT}/.cache/crds/cluster-api/"*.yaml >/dev/null 2>&1; then
  log "Cluster API's CRDs are missing from .cache/crds/cluster-api: run 'npm run binaries' first"
  exit 2
fi

work="$(mktemp -d)"
created=()
cleanup() {
  local status=$?
  if [[ "${KEEP_CLUSTERS}" != "true" ]]; then
    for name in "${created[@]+"${created[@]}"}"; do
      log "deleting kind cluster ${name}"
      kind delete cluster --name "${name}" >&2 || true
    done
  fi
  rm -rf "${work}"
  exit "${status}"
}
trap cleanup EXIT

existing="$(kind get clusters 2>/dev/null || true)"
for name in "${SOURCE_CLUSTER}" "${TARGET_CLUSTER}"; do
  if grep -qx "${name}" <<<"${existing}"; then
    log "using existing kind cluster ${name}"
  else
    log "creating kind cluster ${name}"
    kind create cluster --name "${name}" --wait 120s >&2
    created+=("${name}")
  fi
  kind get kubeconfig --name "${name}" >"${work}/${name}.kubeconfig"
done

cd "${REPO_ROOT}"
npx tsx e2e/pivot/run.ts --from "${work}/${SOURCE_CLUSTER}.kubeconfig" --to "${work}/${TARGET_CLUSTER}.kubeconfig" "$@"
