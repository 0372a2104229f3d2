/**
 * Fixtures of the NetBox pool suites: clients of the NetBox pool kinds and of Cluster API's claims, a pool whose token
 * Secret names the run's real NetBox (hack/testkit/netbox.ts), and reads of what NetBox recorded.
 */
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import {
  ALLOWED_NAMESPACES_ANNOTATION,
  NETBOX_GROUP,
  NETBOX_IPPOOL_KIND,
  type NetBoxIPPool,
  type NetBoxIPPoolSpec,
} from "../../api/netbox/types.js";
import { CONTROLLER_NAMESPACE } from "./serviceaccount.js";
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  GLOBAL_NETBOX_IPPOOL,
  NETBOX_IPPOOL,
  resourceType,
} from "../../api/registry.js";
import { ResourceClient } from "../../src/kube/resource.js";
import { installationOfUid, OWNER_TAG, parseKey, recordKey } from "../../src/controllers/netbox/identity.js";
import { sharedCluster } from "./cluster.js";
import { sharedNetBox, type NetBoxServer } from "./netbox.js";
import { NETBOX_TOOL } from "./netboxinstall.js";
import { serviceAccountKubeConfig } from "./serviceaccount.js";
import { skipWithout } from "./skips.js";

export interface NetBoxClients {
  pools: ResourceClient<NetBoxIPPool>;
  globals: ResourceClient<NetBoxIPPool>;
  claims: ResourceClient<IPAddressClaim>;
  addresses: ResourceClient<CapiIPAddress>;
  core: CoreV1Api;
}

export function netBoxClients(kc: KubeConfig): NetBoxClients {
  return {
    pools: new ResourceClient<NetBoxIPPool>(kc, resourceType(NETBOX_IPPOOL)),
    globals: new ResourceClient<NetBoxIPPool>(kc, resourceType(GLOBAL_NETBOX_IPPOOL)),
    claims: new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM)),
    addresses: new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS)),
    core: kc.makeApiClient(CoreV1Api),
  };
}

/** The token Secret of the pools of `namespace`: in the controller's namespace, as tokens must be. */
export const tokenSecret = (namespace: string): string => `netbox-token-${namespace}`;

/**
 * Writes (or replaces) the token Secret of `namespace`'s pools, allowing that namespace only, for the run's NetBox
 * (its `url`); `data` adds or replaces keys (`url`, `ca.crt`).
 */
export async function writeToken(
  k: NetBoxClients,
  namespace: string,
  token: string,
  data: Readonly<Record<string, string>> = {},
): Promise<void> {
  const name = tokenSecret(namespace);
  // The run's NetBox unless `data` names another server (a loopback stand-in): then no NetBox is started for it.
  const url = data.url ?? (await sharedNetBox()).url;
  const body = {
    metadata: { name, namespace: CONTROLLER_NAMESPACE, annotations: { [ALLOWED_NAMESPACES_ANNOTATION]: namespace } },
    stringData: { token, ...data, url },
  };
  try {
    await k.core.createNamespacedSecret({ namespace: CONTROLLER_NAMESPACE, body });
  } catch {
    await k.core.replaceNamespacedSecret({ name, namespace: CONTROLLER_NAMESPACE, body });
  }
}

/** A NetBoxIPPool of `namespace` with `place` (a prefix or a range) and extras; its token Secret names the NetBox. */
export function netBoxPool(
  namespace: string,
  name: string,
  place: Pick<NetBoxIPPoolSpec, "prefix" | "range">,
  extra: Partial<NetBoxIPPoolSpec> = {},
): NetBoxIPPool {
  return {
    metadata: { name, namespace },
    spec: { netbox: { credentialsRef: { name: tokenSecret(namespace) } }, ...place, ...extra },
  };
}

export const netBoxRef = (name: string, kind = NETBOX_IPPOOL_KIND) => ({ apiGroup: NETBOX_GROUP, kind, name });

/** An IP address record as the admin reads it from NetBox. */
export interface NetBoxRecordView {
  id: number;
  address: string;
  description: string;
  dns_name: string;
  comments: string;
  tags: { slug: string }[];
  tenant: { id: number } | null;
  custom_fields: Record<string, unknown>;
}

/** Every record inside `cidr` (any tag), by the admin's token. */
export async function recordsIn(server: NetBoxServer, cidr: string): Promise<NetBoxRecordView[]> {
  const page = (await server.admin.request(
    "GET",
    `/api/ipam/ip-addresses/?parent=${encodeURIComponent(cidr)}&limit=1000`,
  )) as { results: NetBoxRecordView[] };
  return page.results;
}

/** The records of ours (our tag) inside `cidr`. */
export async function ourRecordsIn(server: NetBoxServer, cidr: string): Promise<NetBoxRecordView[]> {
  return (await recordsIn(server, cidr)).filter((r) => r.tags.some((t) => t.slug === OWNER_TAG.slug));
}

/** The installation id a controller derives on the cluster of `kc` (installation.ts: its kube-system uid). */
export async function installationIn(kc: KubeConfig): Promise<string> {
  const ns = await kc.makeApiClient(CoreV1Api).readNamespace({ name: "kube-system" });
  const id = installationOfUid(ns.metadata?.uid ?? "");
  if (!id) throw new Error("kube-system has no uid");
  return id;
}

/** The key of the record the controller on the cluster of `kc` makes for claim `namespace/name`. */
export async function keyIn(kc: KubeConfig, namespace: string, name: string): Promise<string> {
  return recordKey({ namespace, name }, await installationIn(kc));
}

/** `namespace/name` of the claim a record's description names (any installation), or "" for none. */
export const claimOfRecord = (description: string): string => {
  const key = parseKey(description);
  return key ? `${key.namespace}/${key.name}` : "";
};

/** `10.0.0.5` of `10.0.0.5/24`. */
export const hostOf = (cidr: string): string => cidr.split("/")[0] ?? cidr;

/**
 * A NetBox suite's `before`: skips (named at the end of the run) where NetBox cannot be installed, else the shared
 * plane and the run's NetBox (installed and migrated on a machine's first run: minutes, once), the clients, and the
 * controller's namespace with its RBAC, where token Secrets live.
 */
export async function netBoxSuite(ctx: Mocha.Context): Promise<{ kc: KubeConfig; nb: NetBoxServer; k: NetBoxClients }> {
  ctx.timeout(30 * 60_000);
  skipWithout(ctx, NETBOX_TOOL);
  const [kc, nb] = await Promise.all([sharedCluster().then((c) => c.kubeConfig), sharedNetBox()]);
  await serviceAccountKubeConfig(kc);
  return { kc, nb, k: netBoxClients(kc) };
}
