#!/usr/bin/env bash
# For users with Docker and kind: runs the e2e suites against a real kind cluster with the controller deployed from
# config/default. Not run in CI here (kind needs privileged containers, which the CI sandbox refuses); the same path
# runs there without kind in e2e/node.test.ts (a local plane with a real node, the image from hack/local-image.sh).
#   1. create a kind cluster            4. build the image and load it into kind
#   2. install cert-manager             5. deploy config/default and wait for the rollout
#   3. install Cluster API's CRDs       6. run the e2e suites (USE_EXISTING_CLUSTER, E2E_EXTERNAL_CONTROLLER), clean up
set -o errexit -o nounset -o pipefail

CLUSTER_NAME="${KIND_CLUSTER_NAME:-metal3-ipam-e2e}"
CERT_MANAGER_VERSION="${CERT_MANAGER_VERSION:-v1.19.1}"
IMAGE="${IMAGE:-metal3-ipam-ts/controller:e2e}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KEEP="${KEEP_CLUSTER:-false}"

for tool in docker kind kubectl npm; do
  command -v "${tool}" >/dev/null 2>&1 || { echo "e2e-kind: ${tool} is required" >&2; exit 1; }
done

cleanup() {
  if [[ "${KEEP}" != "true" ]]; then kind delete cluster --name "${CLUSTER_NAME}" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

cd "${REPO_ROOT}"
kind create cluster --name "${CLUSTER_NAME}" --wait 120s
export KUBECONFIG
KUBECONFIG="$(mktemp)"
kind get kubeconfig --name "${CLUSTER_NAME}" >"${KUBECONFIG}"

kubectl apply -f "https://github.com/cert-manager/cert-manager/releases/download/${CERT_MANAGER_VERSION}/cert-manager.yaml"
kubectl -n cert-manager rollout status deployment/cert-manager-webhook --timeout=180s

npm run binaries >/dev/null   # copies Cluster API's CRDs into .cache/crds/cluster-api
for crd in .cache/crds/cluster-api/*.yaml; do
  kubectl label --local -f "${crd}" clusterctl.cluster.x-k8s.io= -o yaml | kubectl apply --server-side -f -
done

docker build -t "${IMAGE}" .
kind load docker-image "${IMAGE}" --name "${CLUSTER_NAME}"

kubectl kustomize config/default | sed -e "s#image: ghcr.io/metal3-ipam-ts/controller:v0.1.0#image: ${IMAGE}#" \
  -e "s#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#" | kubectl apply --server-side -f -
kubectl -n metal3-ipam-system rollout status deployment/metal3-ipam-controller-manager --timeout=180s

USE_EXISTING_CLUSTER=true E2E_EXTERNAL_CONTROLLER=true npx mocha e2e/ippool.test.ts e2e/capi.test.ts
