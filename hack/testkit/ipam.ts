/**
 * Test-side access to our kinds, Clusters and Events, plus a controller started in this process for one namespace
 * (set E2E_EXTERNAL_CONTROLLER=true when a deployed controller serves the cluster, e.g. on kind).
 */
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, IPAddressClaim, PoolRef } from "../../api/capi/types.js";
import type { InClusterIPPool, InClusterIPPoolSpec } from "../../api/incluster/types.js";
import {
  apiVersionOf,
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CLUSTER,
  GLOBAL_INCLUSTER_IPPOOL,
  IPADDRESS,
  IPCLAIM,
  IPPOOL,
  resourceType,
} from "../../api/registry.js";
import type { IPAddress, IPClaim, IPPool } from "../../api/v1alpha1/types.js";
import type { Cluster } from "../../src/controllers/clusters.js";
import { Manager, type ManagerOptions } from "../../src/controllers/manager.js";
import { isNotFound } from "../../src/kube/errors.js";
import { ResourceClient, type KubeObject } from "../../src/kube/resource.js";
import { createLogger } from "../../src/runtime/logger.js";
import { freshNamespace } from "./cluster.js";
import { tracked } from "./leaks.js";
import { LogRing } from "./logring.js";
import { serviceAccountKubeConfig } from "./serviceaccount.js";

export interface Clients {
  pools: ResourceClient<IPPool>;
  claims: ResourceClient<IPClaim>;
  addresses: ResourceClient<IPAddress>;
  clusters: ResourceClient<Cluster>;
  core: CoreV1Api;
}

export function clients(kc: KubeConfig): Clients {
  return {
    pools: new ResourceClient<IPPool>(kc, resourceType(IPPOOL)),
    claims: new ResourceClient<IPClaim>(kc, resourceType(IPCLAIM)),
    addresses: new ResourceClient<IPAddress>(kc, resourceType(IPADDRESS)),
    clusters: new ResourceClient<Cluster>(kc, resourceType(CLUSTER)),
    core: kc.makeApiClient(CoreV1Api),
  };
}

/** Cluster API's IPAM kinds (at their preferred version) and the in-cluster provider's cluster-scoped pools. */
export interface CapiClients {
  claims: ResourceClient<IPAddressClaim>;
  addresses: ResourceClient<CapiIPAddress>;
  globalPools: ResourceClient<InClusterIPPool>;
}

export function capiClients(kc: KubeConfig): CapiClients {
  return {
    claims: new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM)),
    addresses: new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS)),
    globalPools: new ResourceClient<InClusterIPPool>(kc, resourceType(GLOBAL_INCLUSTER_IPPOOL)),
  };
}

/**
 * Starts the controller for `namespace` in this process; returns a stop function. It authenticates as the
 * ServiceAccount of config/rbac (so every suite proves those rules sufficient), unless E2E_CONTROLLER_AS_ADMIN=true.
 * It serves the in-cluster pools, as config/manager's Deployment does (`--serve-incluster-pools`), and, unlike that
 * Deployment, permits plain-HTTP NetBox URLs (`--netbox-allow-http`: the test kit's NetBox is http on loopback)
 * unless `netBoxAllowHttp` is false.
 */
export async function startController(
  adminKc: KubeConfig,
  namespace: string,
  poolConcurrency = 4,
  netBoxAllowHttp = true,
  extra: Partial<ManagerOptions> = {},
): Promise<{ manager?: Manager; stop: () => Promise<void>; recentLog: () => string }> {
  if (process.env.E2E_EXTERNAL_CONTROLLER === "true") return { stop: () => Promise.resolve(), recentLog: () => "" };
  const kc = process.env.E2E_CONTROLLER_AS_ADMIN === "true" ? adminKc : await serviceAccountKubeConfig(adminKc);
  // E2E_LOG=debug shows the controller's log in the test output; otherwise its last lines are kept for a failure.
  const ring = process.env.E2E_LOG ? undefined : new LogRing();
  const logger = process.env.E2E_LOG
    ? createLogger({ level: process.env.E2E_LOG, format: "text" })
    : createLogger({ level: "info", format: "text", stream: ring });
  const manager = new Manager(kc, {
    namespace,
    poolConcurrency,
    logger,
    watchTimeoutSeconds: 60,
    serveInClusterPools: true,
    netBoxAllowHttp,
    ...extra,
  });
  await manager.start();
  return { manager, stop: tracked(() => manager.stop()), recentLog: () => ring?.text() ?? "" };
}

/**
 * Runs `body` in a fresh namespace with a controller of its own, stopped afterwards whatever happens. When `body`
 * fails, the controller's last log lines are printed, so that a failure in CI says what the controller did.
 */
export async function withController<T>(kc: KubeConfig, prefix: string, body: (ns: string) => Promise<T>): Promise<T> {
  const ns = await freshNamespace(kc, prefix);
  const ctl = await startController(kc, ns);
  try {
    return await body(ns);
  } catch (err) {
    const log = ctl.recentLog();
    if (log) process.stderr.write(`--- the controller's last log lines (namespace ${ns}) ---\n${log}\n---\n`);
    throw err;
  } finally {
    await ctl.stop();
  }
}

export function pool(
  namespace: string,
  name: string,
  spec: Partial<IPPool["spec"]> & { pools: IPPool["spec"]["pools"] },
): IPPool {
  return {
    apiVersion: apiVersionOf(IPPOOL),
    kind: IPPOOL.kind,
    metadata: { name, namespace },
    spec: { namePrefix: name, ...spec },
  };
}

export function claim(
  namespace: string,
  name: string,
  poolName: string,
  meta: Partial<IPClaim["metadata"]> = {},
): IPClaim {
  return {
    apiVersion: apiVersionOf(IPCLAIM),
    kind: IPCLAIM.kind,
    metadata: { name, namespace, ...meta },
    spec: { pool: { name: poolName } },
  };
}

/** A `GlobalInClusterIPPool` (cluster-scoped: no namespace). */
export function globalPool(name: string, spec: InClusterIPPoolSpec): InClusterIPPool {
  return {
    apiVersion: apiVersionOf(GLOBAL_INCLUSTER_IPPOOL),
    kind: GLOBAL_INCLUSTER_IPPOOL.kind,
    metadata: { name },
    spec,
  };
}

/** The poolRef of an IPAddressClaim for the `GlobalInClusterIPPool` `name`. */
export function globalPoolRef(name: string): PoolRef {
  return { apiGroup: GLOBAL_INCLUSTER_IPPOOL.group, kind: GLOBAL_INCLUSTER_IPPOOL.kind, name };
}

/** A Cluster API IPAddressClaim for the pool `poolRef` names. */
export function addressClaim(namespace: string, name: string, poolRef: PoolRef): IPAddressClaim {
  return {
    apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM),
    kind: CAPI_IPADDRESSCLAIM.kind,
    metadata: { name, namespace },
    spec: { poolRef: { ...poolRef } },
  };
}

/** The address a claim holds (through status.address → IPAddress), or undefined. */
export async function addressOf(c: Clients, namespace: string, claimName: string): Promise<string | undefined> {
  const cl = await c.claims.get(namespace, claimName);
  const ref = cl.status?.address?.name;
  if (!ref) return undefined;
  try {
    return (await c.addresses.get(namespace, ref)).spec.address;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Whether an object exists (any kind). */
export async function exists<T extends KubeObject>(
  client: ResourceClient<T>,
  namespace: string,
  name: string,
): Promise<boolean> {
  try {
    await client.get(namespace, name);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** Whether `name` does not exist (NotFound); other errors propagate. */
export async function gone<T extends KubeObject>(
  client: ResourceClient<T>,
  namespace: string,
  name: string,
): Promise<boolean> {
  return !(await exists(client, namespace, name));
}

/** Reasons of the Events recorded on object `name` in `namespace`. */
export async function eventReasons(c: Clients, namespace: string, name: string): Promise<string[]> {
  const list = await c.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items.map((e) => e.reason ?? "");
}

/** A v1beta2 Cluster with the smallest spec the schema accepts. */
export function cluster(namespace: string, name: string, paused = false): Cluster {
  return {
    apiVersion: apiVersionOf(CLUSTER),
    kind: CLUSTER.kind,
    metadata: { name, namespace },
    spec: { paused, controlPlaneEndpoint: { host: "192.0.2.1", port: 6443 } } as Cluster["spec"],
  };
}
