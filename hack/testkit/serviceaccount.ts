/**
 * Runs test controllers as the ServiceAccount of config/rbac instead of the admin: installs the rendered RBAC of
 * config/rbac (namespace metal3-ipam-system, name prefix metal3-ipam-, as config/default renders them) and mints a
 * token through the TokenRequest API. Every suite that starts a controller thereby proves the rules sufficient.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, KubernetesObjectApi, type KubernetesObject } from "@kubernetes/client-node";
import { load, loadAll } from "js-yaml";
import { DEFAULT_CONTROLLER_NAMESPACE } from "../../api/install.js";
import { isConflict } from "../../src/kube/errors.js";
import { repoRoot } from "./cluster.js";

export const CONTROLLER_NAMESPACE = DEFAULT_CONTROLLER_NAMESPACE;
export const CONTROLLER_SERVICE_ACCOUNT = "metal3-ipam-controller-manager";
const PREFIX = "metal3-ipam-";
const FILES = [
  "service_account.yaml",
  "role.yaml",
  "role_binding.yaml",
  "leader_election_role.yaml",
  "leader_election_role_binding.yaml",
];

/** An object of config/ as config/default renders it (namespace and name prefix applied). */
function rendered(obj: Record<string, unknown> & KubernetesObject): KubernetesObject {
  const meta = obj.metadata ?? {};
  meta.name = PREFIX + (meta.name ?? "");
  if (meta.namespace === "system") meta.namespace = CONTROLLER_NAMESPACE;
  const roleRef = obj.roleRef as { name: string } | undefined;
  if (roleRef) roleRef.name = PREFIX + roleRef.name;
  for (const s of (obj.subjects as { name: string; namespace?: string }[] | undefined) ?? []) {
    s.name = PREFIX + s.name;
    s.namespace = CONTROLLER_NAMESPACE;
  }
  return obj;
}

const readObject = (...path: string[]): Record<string, unknown> & KubernetesObject =>
  load(readFileSync(join(repoRoot, "config", ...path), "utf8")) as Record<string, unknown> & KubernetesObject;

/** config/rbac's objects as config/default renders them (namespace and name prefix applied). */
export function renderedRbac(): KubernetesObject[] {
  return FILES.map((f) => rendered(readObject("rbac", f)));
}

/**
 * Grants the controller's ServiceAccount config/components/load-balancers' ClusterRole through that component's own
 * binding (it carries final names). Resolves to the undoing (the binding deleted), so suites after the caller run
 * with config/rbac alone.
 */
export async function bindLoadBalancerRole(admin: KubeConfig): Promise<() => Promise<void>> {
  const dir = ["components", "load-balancers"];
  const binding = readObject(...dir, "role_binding.yaml");
  await serviceAccountKubeConfig(admin);
  await applyAll(admin, [readObject(...dir, "role.yaml"), binding]);
  return async () => {
    await KubernetesObjectApi.makeApiClient(admin).delete(binding);
  };
}

async function applyAll(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name: CONTROLLER_NAMESPACE } } });
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  for (const obj of objects) {
    try {
      await api.create(obj);
    } catch (err) {
      if (!isConflict(err)) throw err;
      await api.replace(obj);
    }
  }
}

/**
 * Binds config/selfmanaged's generated roles (role.yaml) to the ServiceAccount `account` of the controller's namespace
 * (created here), through role_binding.yaml's bindings renamed for it: what those roles alone allow, for the
 * authorizer's checks, without widening the controller's own ServiceAccount.
 */
export async function bindSelfManagedRoles(admin: KubeConfig, account: string): Promise<void> {
  const read = (f: string): (KubernetesObject & Record<string, unknown>)[] =>
    loadAll(readFileSync(join(repoRoot, "config", "selfmanaged", f), "utf8")) as (KubernetesObject &
      Record<string, unknown>)[];
  const bindings = read("role_binding.yaml").map((b) => ({
    ...b,
    metadata: { ...b.metadata, name: `${b.metadata?.name ?? ""}-${account}` },
    subjects: [{ kind: "ServiceAccount", name: account, namespace: CONTROLLER_NAMESPACE }],
  }));
  const serviceAccount = {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: account, namespace: CONTROLLER_NAMESPACE },
  };
  await applyAll(admin, [serviceAccount, ...read("role.yaml"), ...bindings]);
}

/** RBAC installs per API server (suites may run planes of their own). */
const installed = new Map<string, Promise<void>>();

/**
 * A kubeconfig for the same server that authenticates as the controller's ServiceAccount (token valid 1 h), or as
 * `account`, another ServiceAccount of its namespace that exists already.
 */
export async function serviceAccountKubeConfig(
  admin: KubeConfig,
  account = CONTROLLER_SERVICE_ACCOUNT,
): Promise<KubeConfig> {
  const server = admin.getCurrentCluster()?.server ?? "";
  if (!installed.has(server)) installed.set(server, applyAll(admin, renderedRbac()));
  await installed.get(server);
  const core = admin.makeApiClient(CoreV1Api);
  const token = await core.createNamespacedServiceAccountToken({
    name: account,
    namespace: CONTROLLER_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const cluster = admin.getCurrentCluster();
  if (!cluster || !token.status?.token) throw new Error("could not mint a ServiceAccount token");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "test" }],
    users: [{ name: account, token: token.status.token }],
    contexts: [{ name: "sa", cluster: "test", user: account }],
    currentContext: "sa",
  });
  return kc;
}

/**
 * A token (valid 1 h) of the ServiceAccount `name` in the controller's namespace, made if missing; with `reader`, bound
 * to config/rbac's metrics-reader ClusterRole (as config/default names it), as an operator binds their Prometheus.
 */
export async function scraperToken(admin: KubeConfig, name: string, reader: boolean): Promise<string> {
  const account = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: CONTROLLER_NAMESPACE } };
  const role = load(
    readFileSync(join(repoRoot, "config", "rbac", "metrics_reader_role.yaml"), "utf8"),
  ) as KubernetesObject;
  const roleName = PREFIX + (role.metadata?.name ?? "");
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `${roleName}-${name}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: roleName },
    subjects: [{ kind: "ServiceAccount", name, namespace: CONTROLLER_NAMESPACE }],
  };
  await applyAll(admin, reader ? [account, { ...role, metadata: { name: roleName } }, binding] : [account]);
  const token = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace: CONTROLLER_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  if (!token.status?.token) throw new Error(`could not mint a token of ServiceAccount ${name}`);
  return token.status.token;
}

/**
 * {@link serviceAccountKubeConfig} written to `<dir>/sa.kubeconfig`, for a controller child process
 * (startControllerProcess takes a kubeconfig file). Returns the file's path.
 */
export async function serviceAccountKubeconfigFile(admin: KubeConfig, dir: string): Promise<string> {
  const path = join(dir, "sa.kubeconfig");
  writeFileSync(path, (await serviceAccountKubeConfig(admin)).exportConfig());
  return path;
}
