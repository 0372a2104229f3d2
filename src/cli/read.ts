/**
 * The reads behind the subcommands, through kube.ts: the inventory of both address APIs, owner chains, and
 * clusterctl's view of a namespace for preflight-move.
 */
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import type { NetBoxIPPool } from "../../api/netbox/types.js";
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CLUSTER,
  CLUSTER_API_VERSIONS,
  GLOBAL_INCLUSTER_IPPOOL,
  GLOBAL_NETBOX_IPPOOL,
  INCLUSTER_IPPOOL,
  IPADDRESS,
  IPCLAIM,
  IPPOOL,
  isGlobalKind,
  NETBOX_IPPOOL,
  poolKindOfRef,
  qualifiedName,
  resourceType,
  type PoolKindName,
  type ResourceDescriptor,
} from "../../api/registry.js";
import { CLUSTERCTL_LABEL, type IPAddress, type IPClaim, type IPPool } from "../../api/v1alpha1/types.js";
import { get, list, listCrds, raw, resourceName, type CrdObj, type Obj, type ResourceKind } from "./kube.js";
import type { Inventory } from "./inventory.js";
import type { ClusterInfo, MoveNode } from "./preflight.js";
import { BAREMETALHOST_ANNOTATION, type ChainLink } from "./who.js";

export const IPPOOLS: ResourceKind = resourceType(IPPOOL);
export const IPCLAIMS: ResourceKind = resourceType(IPCLAIM);
export const IPADDRESSES: ResourceKind = resourceType(IPADDRESS);
export const INCLUSTER_POOLS: ResourceKind = resourceType(INCLUSTER_IPPOOL);
export const GLOBAL_POOLS: ResourceKind = resourceType(GLOBAL_INCLUSTER_IPPOOL);

export const NETBOX_POOLS: ResourceKind = resourceType(NETBOX_IPPOOL);
export const GLOBAL_NETBOX_POOLS: ResourceKind = resourceType(GLOBAL_NETBOX_IPPOOL);

/**
 * The optional pool kinds (the in-cluster provider's, NetBox's: their CRDs may be missing) as resource types, by
 * kind; Metal3's IPPool is always served, so it has none here.
 */
export const OPTIONAL_POOL_RESOURCES: ReadonlyMap<PoolKindName, ResourceKind> = new Map(
  [INCLUSTER_IPPOOL, GLOBAL_INCLUSTER_IPPOOL, NETBOX_IPPOOL, GLOBAL_NETBOX_IPPOOL].map((d) => [
    d.kind,
    resourceType(d),
  ]),
);

/** `k` when the cluster serves it (discovery); an optional kind's CRD may be missing. */
export async function ifServed(k: ResourceKind): Promise<ResourceKind | undefined> {
  return (await resolveKind(`${k.group}/${k.version}`, k.kind)) ? k : undefined;
}

/** Where the reads say what they had to leave out (a warning line on stderr). */
export type Warn = (message: string) => void;

/**
 * A Cluster API kind at the first of its versions (api/registry.ts, preferred first) whose group/version the cluster
 * serves; undefined when none is.
 */
export async function capiKind(descriptor: ResourceDescriptor): Promise<ResourceKind | undefined> {
  for (const version of descriptor.versions)
    if (await served(descriptor.group, version)) return resourceType(descriptor, version);
  return undefined;
}

/** Lists a Cluster API IPAM kind at the version the cluster serves; none at all is an empty list. */
async function listCapi<T extends Obj>(
  descriptor: ResourceDescriptor,
  namespace: string | undefined,
  onForbidden?: () => void,
): Promise<T[]> {
  const k = await capiKind(descriptor);
  return k ? await list<T>(k, namespace, { missing: "empty", ...(onForbidden ? { onForbidden } : {}) }) : [];
}

const where = (namespace: string | undefined): string =>
  namespace ? `in namespace "${namespace}"` : "in all namespaces";

/**
 * The pools of an optional kind (the in-cluster provider's, NetBox's): a cluster without their CRDs has none, and a
 * user RBAC does not let list them sees the other kinds, with a warning.
 */
function listOptionalPools<T extends Obj>(k: ResourceKind, namespace: string | undefined, warn: Warn): Promise<T[]> {
  const scope = k.namespaced ? namespace : undefined;
  return list<T>(k, scope, {
    missing: "empty",
    onForbidden: () => warn(`not allowed to list ${resourceName(k)} ${where(scope)}; they are left out`),
  });
}

/**
 * The claims and records of every namespace that name a GlobalInClusterIPPool (see `Inventory.globalRecords`). When
 * all namespaces were read, or there is no global pool, nothing more is read. A user who may not list them in every
 * namespace is warned that global pools count the namespace's alone.
 */
async function readGlobalRecords(
  namespace: string | undefined,
  globalPools: { kind: string; pools: readonly Obj[] }[],
  local: { claims: IPAddressClaim[]; addresses: CapiIPAddress[] },
  warn: Warn,
): Promise<Inventory["globalRecords"]> {
  const isGlobal = (o: IPAddressClaim | CapiIPAddress): boolean => {
    const kind = poolKindOfRef(o.spec.poolRef);
    return kind !== undefined && isGlobalKind(kind);
  };
  let all = local;
  const present = globalPools.filter((g) => g.pools.length > 0).map((g) => `${g.kind}s`);
  if (namespace !== undefined && present.length > 0) {
    let forbidden = false;
    const onForbidden = (): void => void (forbidden = true);
    all = {
      claims: await listCapi<IPAddressClaim & Obj>(CAPI_IPADDRESSCLAIM, undefined, onForbidden),
      addresses: await listCapi<CapiIPAddress & Obj>(CAPI_IPADDRESS, undefined, onForbidden),
    };
    if (forbidden) {
      warn(
        `not allowed to list IPAddressClaims and IPAddresses in all namespaces; ${present.join(" and ")} count those ${where(namespace)} alone`,
      );
      all = local;
    }
  }
  return { claims: all.claims.filter(isGlobal), addresses: all.addresses.filter(isGlobal) };
}

const servedCache = new Map<string, Promise<boolean>>();

/** Whether the API server serves `group/version` (discovery). */
async function served(group: string, version: string): Promise<boolean> {
  const key = `${group}/${version}`;
  if (!servedCache.has(key))
    servedCache.set(
      key,
      raw<object>(`/apis/${key}`).then((d) => d !== undefined),
    );
  return await servedCache.get(key)!;
}

/**
 * Everything about addresses in `namespace` (all namespaces when undefined), every global pool (in-cluster and NetBox)
 * with its records from every namespace. Our Metal3 CRDs must exist; the in-cluster provider's and NetBox's need not.
 */
export async function readInventory(namespace: string | undefined, warn: Warn = () => undefined): Promise<Inventory> {
  const pools = await list<IPPool & Obj>(IPPOOLS, namespace);
  const [inClusterPools, globalPools, netBoxPools, globalNetBoxPools, claims, addresses, capiClaims, capiAddresses] =
    await Promise.all([
      listOptionalPools<InClusterIPPool & Obj>(INCLUSTER_POOLS, namespace, warn),
      listOptionalPools<InClusterIPPool & Obj>(GLOBAL_POOLS, namespace, warn),
      listOptionalPools<NetBoxIPPool & Obj>(NETBOX_POOLS, namespace, warn),
      listOptionalPools<NetBoxIPPool & Obj>(GLOBAL_NETBOX_POOLS, namespace, warn),
      list<IPClaim & Obj>(IPCLAIMS, namespace),
      list<IPAddress & Obj>(IPADDRESSES, namespace),
      listCapi<IPAddressClaim & Obj>(CAPI_IPADDRESSCLAIM, namespace),
      listCapi<CapiIPAddress & Obj>(CAPI_IPADDRESS, namespace),
    ]);
  const local = { claims: capiClaims, addresses: capiAddresses };
  const globalKinds = [
    { kind: GLOBAL_INCLUSTER_IPPOOL.kind, pools: globalPools },
    { kind: GLOBAL_NETBOX_IPPOOL.kind, pools: globalNetBoxPools },
  ];
  const globalRecords = await readGlobalRecords(namespace, globalKinds, local, warn);
  return {
    pools,
    inClusterPools,
    globalPools,
    netBoxPools,
    globalNetBoxPools,
    claims,
    addresses,
    capiClaims,
    capiAddresses,
    globalRecords,
  };
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
    links.push({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      name: ref.name,
      ...(host ? { host } : {}),
      ...(node ? { node } : {}),
    });
    if (ref.kind === CLUSTER.kind && ref.apiVersion.startsWith(`${CLUSTER.group}/`)) break;
    current = owner;
  }
  return links;
}

/** Kinds whose CRD labels make clusterctl treat them as move roots or force-moved (see clusterctl's objectgraph). */
const MOVE_LABEL = "clusterctl.cluster.x-k8s.io/move";
const MOVE_HIERARCHY_LABEL = "clusterctl.cluster.x-k8s.io/move-hierarchy";
const ROOT_KINDS = new Set([
  `${CLUSTER.group}/${CLUSTER.kind}`,
  "cluster.x-k8s.io/ClusterClass",
  "addons.cluster.x-k8s.io/ClusterResourceSet",
]);

/** The kinds whose CRDs matter to a move of addresses; installed ones missing the label are reported. */
const MOVE_KINDS = [
  IPPOOL,
  IPCLAIM,
  IPADDRESS,
  CLUSTER,
  CAPI_IPADDRESSCLAIM,
  CAPI_IPADDRESS,
  INCLUSTER_IPPOOL,
  GLOBAL_INCLUSTER_IPPOOL,
];
/** Every version any of them is spoken at: a CRD served under any of these counts as installed. */
const PROBE_VERSIONS = [...new Set(MOVE_KINDS.flatMap((d) => [...CLUSTER_API_VERSIONS, ...d.versions]))];

interface ClusterObj extends Obj {
  spec?: { paused?: boolean };
}

function toNode(o: Obj, crd: CrdObj, version: string): MoveNode {
  const labels = crd.metadata.labels ?? {};
  const objLabels = o.metadata.labels ?? {};
  const root =
    ROOT_KINDS.has(`${crd.spec.group}/${crd.spec.names.kind}`) ||
    MOVE_HIERARCHY_LABEL in labels ||
    MOVE_HIERARCHY_LABEL in objLabels;
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

/**
 * clusterctl's discovery of `namespace`: every object of every labelled kind at its storage version, those of
 * cluster-scoped kinds whatever their namespace (clusterctl lists them unfiltered: GlobalInClusterIPPools are copied).
 */
export async function readMoveGraph(
  namespace: string,
): Promise<{ nodes: MoveNode[]; clusters: ClusterInfo[]; unlabelledCrds: string[] }> {
  const crds = await listCrds(CLUSTERCTL_LABEL);
  const labelled = new Set(crds.map((c) => c.metadata.name ?? ""));
  const nodes: MoveNode[] = [];
  const clusters: ClusterInfo[] = [];
  await Promise.all(
    crds.map(async (crd) => {
      const version = crd.spec.versions.find((v) => v.storage)?.name ?? crd.spec.versions[0]?.name ?? "";
      const kind: ResourceKind = {
        group: crd.spec.group,
        version,
        kind: crd.spec.names.kind,
        plural: crd.spec.names.plural,
        namespaced: crd.spec.scope === "Namespaced",
      };
      const items = await list<ClusterObj>(kind, namespace, { missing: "empty" });
      for (const o of items) nodes.push(toNode(o, crd, version));
      if (crd.spec.group === CLUSTER.group && crd.spec.names.kind === CLUSTER.kind) {
        for (const o of items)
          clusters.push({ name: o.metadata.name ?? "", uid: o.metadata.uid ?? "", paused: o.spec?.paused === true });
      }
    }),
  );
  const unlabelledCrds: string[] = [];
  for (const d of MOVE_KINDS.filter((k) => !labelled.has(qualifiedName(k)))) {
    if (await crdInstalled(d.group, d.plural)) unlabelledCrds.push(qualifiedName(d));
  }
  clusters.sort((a, b) => a.name.localeCompare(b.name));
  return { nodes, clusters, unlabelledCrds };
}

async function crdInstalled(group: string, plural: string): Promise<boolean> {
  for (const version of PROBE_VERSIONS) {
    const doc = await raw<ApiResourceList>(`/apis/${group}/${version}`);
    if (doc?.resources.some((r) => r.name === plural)) return true;
  }
  return false;
}
