/**
 * The reads behind the subcommands, through kube.ts: the inventory of both address APIs, owner chains, and
 * clusterctl's view of a namespace for preflight-move.
 */
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import { CLUSTERCTL_LABEL, GROUP, IPADDRESS_KIND, IPADDRESS_PLURAL, IPCLAIM_KIND, IPCLAIM_PLURAL, IPPOOL_KIND, IPPOOL_PLURAL, VERSION, type IPAddress, type IPClaim, type IPPool } from "../../api/v1alpha1/types.js";
import { get, list, listCrds, raw, type CrdObj, type Obj, type ResourceKind } from "./kube.js";
import type { Inventory } from "./inventory.js";
import type { ClusterInfo, MoveNode } from "./preflight.js";
import { BAREMETALHOST_ANNOTATION, type ChainLink } from "./who.js";

const ours = (kind: string, plural: string): ResourceKind => ({ group: GROUP, version: VERSION, kind, plural, namespaced: true });
export const IPPOOLS = ours(IPPOOL_KIND, IPPOOL_PLURAL);
export const IPCLAIMS = ours(IPCLAIM_KIND, IPCLAIM_PLURAL);
export const IPADDRESSES = ours(IPADDRESS_KIND, IPADDRESS_PLURAL);

const CAPI_IPAM = "ipam.cluster.x-k8s.io";
const capi = (version: string, kind: string, plural: string): ResourceKind => ({ group: CAPI_IPAM, version, kind, plural, namespaced: true });

/** The Cluster API IPAM kind at v1beta2, else v1beta1 (CAPI 1.10 and older); undefined when neither is served. */
export async function capiKind(kind: string, plural: string): Promise<ResourceKind | undefined> {
  for (const version of ["v1beta2", "v1beta1"]) if (await served(CAPI_IPAM, version)) return capi(version, kind, plural);
  return undefined;
}

/** Lists a Cluster API IPAM kind at the version the cluster serves; none at all is an empty list. */
async function listCapi<T extends Obj>(kind: string, plural: string, namespace: string | undefined): Promise<T[]> {
  const k = await capiKind(kind, plural);
  return k ? await list<T>(k, namespace, { missing: "empty" }) : [];
}

const servedCache = new Map<string, Promise<boolean>>();

/** Whether the API server serves `group/version` (discovery). */
async function served(group: string, version: string): Promise<boolean> {
  const key = `${group}/${version}`;
  if (!servedCache.has(key)) servedCache.set(key, raw<object>(`/apis/${key}`).then((d) => d !== undefined));
  return await servedCache.get(key)!;
}

/** Everything about addresses in `namespace` (all namespaces when undefined). Our CRDs must exist. */
export async function readInventory(namespace: string | undefined): Promise<Inventory> {
  const pools = await list<IPPool & Obj>(IPPOOLS, namespace);
  const [claims, addresses, capiClaims, capiAddresses] = await Promise.all([
    list<IPClaim & Obj>(IPCLAIMS, namespace),
    list<IPAddress & Obj>(IPADDRESSES, namespace),
    listCapi<IPAddressClaim & Obj>("IPAddressClaim", "ipaddressclaims", namespace),
    listCapi<CapiIPAddress & Obj>("IPAddress", "ipaddresses", namespace),
  ]);
  return { pools, claims, addresses, capiClaims, capiAddresses };
}

interface ApiResourceList {
  resources: { name: string; kind: string; namespaced: boolean }[];
}

const discoveryCache = new Map<string, Promise<ApiResourceList | undefined>>();

/** The resource type of `apiVersion`/`kind` through discovery; undefined when the server does not serve it. */
export async function resolveKind(apiVersion: string, kind: string): Promise<ResourceKind | undefined> {
  const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  if (!discoveryCache.has(path)) discoveryCache.set(path, raw<ApiResourceList>(path));
  const doc = await discoveryCache.get(path)!;
  const r = doc?.resources.find((x) => x.kind === kind && !x.name.includes("/"));
  if (!r) return undefined;
  const [group, version] = apiVersion.includes("/") ? (apiVersion.split("/") as [string, string]) : ["", apiVersion];
  return { group, version, kind, plural: r.name, namespaced: r.namespaced };
}

interface Owned extends Obj {
  status?: { nodeRef?: { name?: string } };
}

/**
 * Follows owner references from `obj` upwards (the controller owner first, else the first), up to a Cluster or 8
 * steps. An owner that is gone, or has another uid, ends the chain as a `missing` link.
 */
export async function ownerChain(obj: Obj, namespace: string): Promise<ChainLink[]> {
  const links: ChainLink[] = [];
  let current: Obj = obj;
  for (let depth = 0; depth < 8; depth++) {
    const refs = current.metadata.ownerReferences ?? [];
    const ref = refs.find((r) => r.controller) ?? refs[0];
    if (!ref) break;
    const type = await resolveKind(ref.apiVersion, ref.kind);
    const owner = type ? await get<Owned>(type, namespace, ref.name) : undefined;
    if (!owner || owner.metadata.uid !== ref.uid) {
      links.push({ apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, missing: true });
      break;
    }
    const host = owner.metadata.annotations?.[BAREMETALHOST_ANNOTATION];
    const node = ref.kind === "Machine" ? owner.status?.nodeRef?.name : undefined;
    links.push({ apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, ...(host ? { host } : {}), ...(node ? { node } : {}) });
    if (ref.kind === "Cluster" && ref.apiVersion.startsWith("cluster.x-k8s.io/")) break;
    current = owner;
  }
  return links;
}

/** Kinds whose CRD labels make clusterctl treat them as move roots or force-moved (see clusterctl's objectgraph). */
const MOVE_LABEL = "clusterctl.cluster.x-k8s.io/move";
const MOVE_HIERARCHY_LABEL = "clusterctl.cluster.x-k8s.io/move-hierarchy";
const ROOT_KINDS = new Set(["cluster.x-k8s.io/Cluster", "cluster.x-k8s.io/ClusterClass", "addons.cluster.x-k8s.io/ClusterResourceSet"]);

/** The CRDs that matter to a move of addresses; installed ones missing the label are reported. */
const MOVE_CRDS = ["ippools.ipam.metal3.io", "ipclaims.ipam.metal3.io", "ipaddresses.ipam.metal3.io", "clusters.cluster.x-k8s.io", "ipaddressclaims.ipam.cluster.x-k8s.io", "ipaddresses.ipam.cluster.x-k8s.io"];

interface ClusterObj extends Obj {
  spec?: { paused?: boolean };
}

function toNode(o: Obj, crd: CrdObj, version: string): MoveNode {
  const labels = crd.metadata.labels ?? {};
  const objLabels = o.metadata.labels ?? {};
  const root = ROOT_KINDS.has(`${crd.spec.group}/${crd.spec.names.kind}`) || MOVE_HIERARCHY_LABEL in labels || MOVE_HIERARCHY_LABEL in objLabels;
  return {
    uid: o.metadata.uid ?? "",
    apiVersion: `${crd.spec.group}/${version}`,
    kind: crd.spec.names.kind,
    name: o.metadata.name ?? "",
    owners: (o.metadata.ownerReferences ?? []).map((r) => r.uid),
    hierarchyRoot: root,
    forceMove: root || MOVE_LABEL in labels || MOVE_LABEL in objLabels,
  };
}

/** clusterctl's discovery of `namespace`: every object of every labelled namespaced kind, at its storage version. */
export async function readMoveGraph(namespace: string): Promise<{ nodes: MoveNode[]; clusters: ClusterInfo[]; unlabelledCrds: string[] }> {
  const crds = await listCrds(CLUSTERCTL_LABEL);
  const labelled = new Set(crds.map((c) => c.metadata.name ?? ""));
  const nodes: MoveNode[] = [];
  const clusters: ClusterInfo[] = [];
  await Promise.all(crds.filter((c) => c.spec.scope === "Namespaced").map(async (crd) => {
    const version = crd.spec.versions.find((v) => v.storage)?.name ?? crd.spec.versions[0]?.name ?? "";
    const kind: ResourceKind = { group: crd.spec.group, version, kind: crd.spec.names.kind, plural: crd.spec.names.plural, namespaced: true };
    const items = await list<ClusterObj>(kind, namespace, { missing: "empty" });
    for (const o of items) nodes.push(toNode(o, crd, version));
    if (crd.spec.group === "cluster.x-k8s.io" && crd.spec.names.kind === "Cluster") {
      for (const o of items) clusters.push({ name: o.metadata.name ?? "", uid: o.metadata.uid ?? "", paused: o.spec?.paused === true });
    }
  }));
  const unlabelledCrds: string[] = [];
  for (const name of MOVE_CRDS.filter((n) => !labelled.has(n))) {
    const [plural = "", ...group] = name.split(".");
    if (await crdInstalled(group.join("."), plural)) unlabelledCrds.push(name);
  }
  clusters.sort((a, b) => a.name.localeCompare(b.name));
  return { nodes, clusters, unlabelledCrds };
}

async function crdInstalled(group: string, plural: string): Promise<boolean> {
  for (const version of ["v1beta2", "v1beta1", "v1alpha1"]) {
    const doc = await raw<ApiResourceList>(`/apis/${group}/${version}`);
    if (doc?.resources.some((r) => r.name === plural)) return true;
  }
  return false;
}
