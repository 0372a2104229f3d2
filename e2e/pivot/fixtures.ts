/**
 * Fixtures of the pivot suite: management-cluster content as Cluster API and CAPM3 leave it, built through the API
 * and read back as a comparable "picture".
 *
 * The owner chain is the one `clusterctl move` follows: Cluster → Machine → PivotMachine (a Metal3Machine stand-in)
 * → PivotData (a Metal3Data stand-in) → IPClaim / IPAddressClaim, with the `metal3data.infrastructure.cluster.x-k8s.io`
 * finalizer on IPClaims as CAPM3 puts it there. Pools name their Cluster in `clusterName`, which makes the controller
 * add the owner reference pool → Cluster that carries them along.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import {
  type GLOBAL_INCLUSTER_IPPOOL_KIND,
  INCLUSTER_GROUP,
  type INCLUSTER_IPPOOL_KIND,
} from "../../api/incluster/types.js";
import { GLOBAL_NETBOX_IPPOOL_KIND, NETBOX_GROUP, NETBOX_IPPOOL_KIND } from "../../api/netbox/types.js";
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CLUSTER,
  IPADDRESS,
  IPCLAIM,
  IPPOOL,
  MACHINE,
  resourceType,
} from "../../api/registry.js";
import {
  API_VERSION,
  CLUSTER_NAME_LABEL,
  GROUP,
  IP_ADDRESS_ANNOTATION,
  IPPOOL_KIND,
  type Condition,
  type IPAddress,
  type IPClaim,
  type IPPool,
  type IPPoolSpec,
  type ObjectMeta,
  type OwnerReference,
} from "../../api/v1alpha1/types.js";
import { ENDPOINT_CLAIM_LABEL, ENDPOINT_POOL_ANNOTATION, endpointClaimName } from "../../src/ipam/endpoint.js";
import { statusCodeOf } from "../../src/kube/errors.js";
import { ResourceClient, type KubeObject, type ResourceType } from "../../src/kube/resource.js";
import { exists } from "../../hack/testkit/ipam.js";
import { eventually } from "../../hack/testkit/wait.js";

export { exists };

/** CAPM3's finalizer on the claims a Metal3Data makes; it means "the machine still uses this address". */
export const METAL3DATA_FINALIZER = "metal3data.infrastructure.cluster.x-k8s.io";
/** Group of the suite's own stand-in kinds (see e2e/pivot/crds). */
export const PIVOT_GROUP = "infrastructure.pivot.test";

/** An object of a kind the suite only builds and reads (Cluster, Machine, the stand-ins). */
export interface Thing extends KubeObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** One client per kind the pivot touches, on one management cluster. */
export interface Kinds {
  clusters: ResourceClient<Thing>;
  machines: ResourceClient<Thing>;
  infraMachines: ResourceClient<Thing>;
  data: ResourceClient<Thing>;
  pools: ResourceClient<IPPool>;
  claims: ResourceClient<IPClaim>;
  addresses: ResourceClient<IPAddress>;
  capiClaims: ResourceClient<IPAddressClaim>;
  capiAddresses: ResourceClient<CapiIPAddress>;
}

const type = (group: string, version: string, kind: string, plural: string): ResourceType => ({
  group,
  version,
  kind,
  plural,
  namespaced: true,
});

/** Clients for every kind of the scenario on the cluster of `kc`. */
export function kinds(kc: KubeConfig): Kinds {
  return {
    clusters: new ResourceClient<Thing>(kc, resourceType(CLUSTER)),
    machines: new ResourceClient<Thing>(kc, resourceType(MACHINE)),
    infraMachines: new ResourceClient<Thing>(kc, type(PIVOT_GROUP, "v1alpha1", "PivotMachine", "pivotmachines")),
    data: new ResourceClient<Thing>(kc, type(PIVOT_GROUP, "v1alpha1", "PivotData", "pivotdatas")),
    pools: new ResourceClient<IPPool>(kc, resourceType(IPPOOL)),
    claims: new ResourceClient<IPClaim>(kc, resourceType(IPCLAIM)),
    addresses: new ResourceClient<IPAddress>(kc, resourceType(IPADDRESS)),
    capiClaims: new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM)),
    capiAddresses: new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS)),
  };
}

/** One claim every machine of a cluster makes. */
export interface ClaimPlan {
  /** Claim names are `<machine>-<suffix>`. */
  suffix: string;
  kind: "IPClaim" | "IPAddressClaim";
  pool: string;
  /** For an IPAddressClaim: the in-cluster provider's or a NetBox pool kind it names instead of Metal3's IPPool. */
  poolKind?:
    | typeof INCLUSTER_IPPOOL_KIND
    | typeof GLOBAL_INCLUSTER_IPPOOL_KIND
    | typeof NETBOX_IPPOOL_KIND
    | typeof GLOBAL_NETBOX_IPPOOL_KIND;
}

/** The API group of a claim plan's pool kind. */
const groupOfPoolKind = (kind: NonNullable<ClaimPlan["poolKind"]>): string =>
  kind === NETBOX_IPPOOL_KIND || kind === GLOBAL_NETBOX_IPPOOL_KIND ? NETBOX_GROUP : INCLUSTER_GROUP;

/** A workload cluster: its machines, the claims each machine's data object makes, and per-claim requests. */
export interface ClusterPlan {
  name: string;
  machines: number;
  claims: ClaimPlan[];
  /** Claim name → address asked for with the `ipAddress` annotation. */
  requested?: Record<string, string>;
  /** The cluster's IPClaims are deleted after allocation and held by CAPM3's finalizer (a scale-down in flight). */
  midDeletion?: boolean;
  /** Claims name no Cluster (no cluster-name label, no `spec.clusterName`): only their pool could pause them. */
  unlabelled?: boolean;
  /**
   * `<Kind>/<name>` of the pool the Cluster's control-plane endpoint comes from: the Cluster is created with
   * {@link ENDPOINT_POOL_ANNOTATION} and no host, after the pools, and our endpoint webhook must be served.
   */
  endpointPool?: string;
}

/** Pools (by name) and clusters of one namespace. */
export interface Topology {
  pools: Record<string, IPPoolSpec>;
  clusters: ClusterPlan[];
}

/**
 * The main scenario: three clusters, 50 machines, 100 claims (70 IPClaims, 30 IPAddressClaims). `prov` belongs to c1
 * and is shared with c2; each pool kind of feature appears once: preallocations on two pools, requested addresses on
 * both claim kinds; all of c3's claims are mid-deletion.
 */
export function mainTopology(): Topology {
  return {
    pools: {
      prov: {
        namePrefix: "prov",
        clusterName: "c1",
        pools: [{ start: "10.10.0.10", end: "10.10.0.250" }],
        prefix: 24,
        gateway: "10.10.0.1",
        dnsServers: ["10.10.0.2"],
        preAllocations: { "c2-m03-prov": "10.10.0.200" },
      },
      "c1-bm": {
        namePrefix: "c1-bm",
        clusterName: "c1",
        pools: [{ subnet: "192.168.10.0/24", start: "192.168.10.10", end: "192.168.10.200" }],
        prefix: 24,
        gateway: "192.168.10.1",
        preAllocations: { "c1-m00-bm": "192.168.10.100" },
      },
      "c2-bm": {
        namePrefix: "c2-bm",
        clusterName: "c2",
        pools: [{ start: "192.168.20.10", end: "192.168.20.100", gateway: "192.168.20.254" }],
        prefix: 24,
      },
      "c3-prov": {
        namePrefix: "c3-prov",
        clusterName: "c3",
        pools: [{ start: "10.30.0.10", end: "10.30.0.100" }],
        prefix: 24,
      },
      "c3-bm": { namePrefix: "c3-bm", clusterName: "c3", pools: [{ subnet: "fd00:30::/120" }], prefix: 64 },
    },
    clusters: [
      {
        name: "c1",
        machines: 15,
        claims: [
          { suffix: "prov", kind: "IPClaim", pool: "prov" },
          { suffix: "bm", kind: "IPAddressClaim", pool: "c1-bm" },
        ],
        requested: { "c1-m01-prov": "10.10.0.150" },
      },
      {
        name: "c2",
        machines: 15,
        claims: [
          { suffix: "prov", kind: "IPClaim", pool: "prov" },
          { suffix: "bm", kind: "IPAddressClaim", pool: "c2-bm" },
        ],
        requested: { "c2-m02-bm": "192.168.20.77" },
      },
      {
        name: "c3",
        machines: 20,
        claims: [
          { suffix: "prov", kind: "IPClaim", pool: "c3-prov" },
          { suffix: "bm", kind: "IPClaim", pool: "c3-bm" },
        ],
        midDeletion: true,
      },
    ],
  };
}

/** A cluster whose pool does not name it (no `clusterName`): the pool has no owner, so clusterctl leaves it behind. */
export function loosePoolTopology(): Topology {
  return {
    pools: { loose: { namePrefix: "loose", pools: [{ start: "10.50.0.10", end: "10.50.0.20" }], prefix: 24 } },
    clusters: [
      {
        name: "cl",
        machines: 2,
        claims: [
          { suffix: "prov", kind: "IPClaim", pool: "loose" },
          { suffix: "bm", kind: "IPAddressClaim", pool: "loose" },
        ],
        unlabelled: true,
      },
    ],
  };
}

/**
 * Two clusters whose control-plane endpoints come from the pool `vips` (through our webhook), which also hands out
 * their machines' addresses: e1's as IPAddressClaims, e2's as IPClaims. The pool belongs to e1.
 */
export function endpointTopology(): Topology {
  return {
    pools: {
      vips: { namePrefix: "vips", clusterName: "e1", pools: [{ start: "10.80.0.10", end: "10.80.0.30" }], prefix: 24 },
    },
    clusters: [
      {
        name: "e1",
        machines: 2,
        claims: [{ suffix: "bm", kind: "IPAddressClaim", pool: "vips" }],
        endpointPool: "IPPool/vips",
      },
      {
        name: "e2",
        machines: 2,
        claims: [{ suffix: "prov", kind: "IPClaim", pool: "vips" }],
        endpointPool: "IPPool/vips",
      },
    ],
  };
}

/** A small ordinary cluster (used for the paused-Cluster refusal). */
export function smallTopology(name: string): Topology {
  return {
    pools: {
      [`${name}-pool`]: {
        namePrefix: `${name}-pool`,
        clusterName: name,
        pools: [{ start: "10.60.0.10", end: "10.60.0.20" }],
        prefix: 24,
      },
    },
    clusters: [
      {
        name,
        machines: 2,
        claims: [
          { suffix: "prov", kind: "IPClaim", pool: `${name}-pool` },
          { suffix: "bm", kind: "IPAddressClaim", pool: `${name}-pool` },
        ],
      },
    ],
  };
}

/** Number of claims (both kinds, endpoint claims included) a topology makes. */
export function claimCount(t: Topology): number {
  return t.clusters.reduce((n, c) => n + c.machines * c.claims.length + (c.endpointPool ? 1 : 0), 0);
}

const machineName = (cluster: string, i: number): string => `${cluster}-m${String(i).padStart(2, "0")}`;

function ownerRef(obj: KubeObject, controller = true): OwnerReference {
  return {
    apiVersion: obj.apiVersion ?? "",
    kind: obj.kind ?? "",
    name: obj.metadata.name ?? "",
    uid: obj.metadata.uid ?? "",
    controller,
    blockOwnerDeletion: true,
  };
}

function meta(namespace: string, name: string, cluster: string, owner?: KubeObject): ObjectMeta {
  return {
    name,
    namespace,
    labels: { [CLUSTER_NAME_LABEL]: cluster },
    ...(owner ? { ownerReferences: [ownerRef(owner)] } : {}),
  };
}

/** Runs `fn` over `items`, `limit` at a time. */
export async function inBatches<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < items.length; i += limit) await Promise.all(items.slice(i, i + limit).map(fn));
}

/** Cluster status as Cluster API reports a running cluster: what clusterctl's preflight checks before a move. */
async function reportClusterReady(k: Kinds, namespace: string, name: string): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const initialized: Condition = {
    type: "ControlPlaneInitialized",
    status: "True",
    reason: "Initialized",
    message: "control plane initialized",
    lastTransitionTime: now,
  };
  await k.clusters.patchStatus(namespace, name, {
    status: {
      initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true },
      conditions: [initialized],
    },
  });
}

/**
 * A Cluster that passes clusterctl's preflight: provisioned infrastructure and an initialized control plane. Its
 * endpoint is a fixed host, or with `endpointPool` whatever our webhook writes (its "not bound yet" 503 is retried,
 * as a client does).
 */
async function createCluster(k: Kinds, namespace: string, name: string, endpointPool?: string): Promise<Thing> {
  const cluster: Thing = endpointPool
    ? { metadata: { name, namespace, annotations: { [ENDPOINT_POOL_ANNOTATION]: endpointPool } }, spec: {} }
    : { metadata: { name, namespace }, spec: { controlPlaneEndpoint: { host: "192.0.2.10", port: 6443 } } };
  let created: Thing | undefined;
  for (let attempt = 1; !created; attempt++) {
    try {
      created = await k.clusters.create(namespace, cluster);
    } catch (err) {
      if (!endpointPool || statusCodeOf(err) !== 503 || attempt >= 5) throw err;
    }
  }
  await reportClusterReady(k, namespace, name);
  return created;
}

/**
 * What Cluster API's controllers do on a new management cluster after a move (clusterctl carries no status): report
 * the Clusters provisioned and each Machine's node again. Without it the next move's preflight refuses to start.
 */
export async function restoreCapiStatus(k: Kinds, namespace: string): Promise<void> {
  for (const c of (await k.clusters.list(namespace)).items)
    await reportClusterReady(k, namespace, c.metadata.name ?? "");
  await inBatches((await k.machines.list(namespace)).items, 16, (m) =>
    k.machines.patchStatus(namespace, m.metadata.name ?? "", { status: { nodeRef: { name: m.metadata.name ?? "" } } }),
  );
}

/** Creates the pools of a topology. */
export async function createPools(k: Kinds, namespace: string, t: Topology): Promise<void> {
  await inBatches(Object.entries(t.pools), 8, ([name, spec]) =>
    k.pools.create(namespace, { apiVersion: API_VERSION, kind: IPPOOL_KIND, metadata: { name, namespace }, spec }),
  );
}

/** Machine `index` of `plan` with its whole chain down to its claims; returns the claim names. */
export async function createMachine(
  k: Kinds,
  namespace: string,
  plan: ClusterPlan,
  cluster: Thing,
  index: number,
): Promise<string[]> {
  const name = machineName(plan.name, index);
  const machine = await k.machines.create(namespace, {
    metadata: meta(namespace, name, plan.name, cluster),
    spec: {
      clusterName: plan.name,
      bootstrap: { dataSecretName: `${name}-bootstrap` },
      infrastructureRef: { apiGroup: PIVOT_GROUP, kind: "PivotMachine", name },
    },
  });
  await k.machines.patchStatus(namespace, name, { status: { nodeRef: { name } } });
  const infra = await k.infraMachines.create(namespace, {
    metadata: meta(namespace, name, plan.name, machine),
    spec: { image: "pivot-test" },
  });
  const data = await k.data.create(namespace, { metadata: meta(namespace, name, plan.name, infra), spec: { index } });
  const names: string[] = [];
  for (const c of plan.claims) {
    const claimName = `${name}-${c.suffix}`;
    names.push(claimName);
    const m = meta(namespace, claimName, plan.name, data);
    if (plan.unlabelled) delete m.labels;
    const requested = plan.requested?.[claimName];
    if (requested) m.annotations = { [IP_ADDRESS_ANNOTATION]: requested };
    if (c.kind === "IPClaim") {
      await k.claims.create(namespace, {
        metadata: { ...m, finalizers: [METAL3DATA_FINALIZER] },
        spec: { pool: { name: c.pool } },
      });
    } else {
      await k.capiClaims.create(namespace, {
        metadata: m,
        spec: {
          poolRef: c.poolKind
            ? { apiGroup: groupOfPoolKind(c.poolKind), kind: c.poolKind, name: c.pool }
            : { apiGroup: GROUP, kind: IPPOOL_KIND, name: c.pool },
          ...(plan.unlabelled ? {} : { clusterName: plan.name }),
        },
      });
    }
  }
  return names;
}

/**
 * Creates everything of `t` in `namespace`: Clusters with a fixed endpoint, pools, Clusters whose endpoint comes from
 * a pool, then the machine chains.
 */
export async function createTopology(k: Kinds, namespace: string, t: Topology): Promise<void> {
  const clusters = new Map<string, Thing>();
  for (const plan of t.clusters.filter((p) => !p.endpointPool))
    clusters.set(plan.name, await createCluster(k, namespace, plan.name));
  await createPools(k, namespace, t);
  for (const plan of t.clusters.filter((p) => p.endpointPool))
    clusters.set(plan.name, await createCluster(k, namespace, plan.name, plan.endpointPool));
  const jobs = t.clusters.flatMap((plan) => Array.from({ length: plan.machines }, (_, i) => ({ plan, i })));
  await inBatches(jobs, 10, ({ plan, i }) => createMachine(k, namespace, plan, clusters.get(plan.name)!, i));
}

/** Deletes the IPClaims of every mid-deletion cluster; CAPM3's finalizer keeps them (and their addresses) alive. */
export async function startMidDeletions(k: Kinds, namespace: string, t: Topology): Promise<string[]> {
  const names = t.clusters
    .filter((p) => p.midDeletion)
    .flatMap((p) =>
      Array.from({ length: p.machines }, (_, i) =>
        p.claims.filter((c) => c.kind === "IPClaim").map((c) => `${machineName(p.name, i)}-${c.suffix}`),
      ).flat(),
    );
  await inBatches(names, 16, (n) => k.claims.delete(namespace, n));
  return names;
}

/** Finishes the deletion of IPClaims the way CAPM3 does: delete (if not yet) and drop its finalizer. */
export async function finishClaimDeletion(k: Kinds, namespace: string, names: readonly string[]): Promise<void> {
  await inBatches(names, 16, async (n) => {
    const claim = await k.claims.get(namespace, n);
    if (!claim.metadata.deletionTimestamp) await k.claims.delete(namespace, n);
    const finalizers = (claim.metadata.finalizers ?? []).filter((f) => f !== METAL3DATA_FINALIZER);
    await k.claims.patch(namespace, n, { metadata: { finalizers } });
  });
}

/** What a pool looks like to a user (the status view, its Cluster labels and owners). */
export interface PoolView {
  clusterLabel?: string;
  owners: string[];
  indexes: Record<string, string>;
  total?: number;
  used?: number;
  free?: number;
  ready: string;
}

/**
 * Everything about addresses in one namespace, in comparable form. Keys of `claims` and `ready` are
 * `IPClaim/<name>` and `IPAddressClaim/<name>` (one name may be both: two claims).
 */
export interface Picture {
  claims: Record<string, string>;
  ready: Record<string, string>;
  /** Metal3 IPAddresses: `name address/prefix gateway pool claim`. */
  addresses: string[];
  /** Cluster API IPAddresses: `name address/prefix gateway pool claim`. */
  capiAddresses: string[];
  pools: Record<string, PoolView>;
  /** Objects per kind (the Kinds keys). */
  counts: Record<string, number>;
  /** Claims carrying a deletionTimestamp. */
  deleting: string[];
}

function readyText(conditions: readonly Condition[] | undefined, errorMessage?: string): string {
  const ready = conditions?.find((c) => c.type === "Ready");
  if (!ready) return "none";
  return ready.status === "True" ? `True/${ready.reason}` : `False/${ready.reason}: ${errorMessage ?? ready.message}`;
}

async function listAll(
  k: Kinds,
  namespace: string,
): Promise<{ [K in keyof Kinds]: Awaited<ReturnType<Kinds[K]["list"]>>["items"] }> {
  const [clusters, machines, infraMachines, data, pools, claims, addresses, capiClaims, capiAddresses] =
    await Promise.all([
      k.clusters.list(namespace),
      k.machines.list(namespace),
      k.infraMachines.list(namespace),
      k.data.list(namespace),
      k.pools.list(namespace),
      k.claims.list(namespace),
      k.addresses.list(namespace),
      k.capiClaims.list(namespace),
      k.capiAddresses.list(namespace),
    ]);
  return {
    clusters: clusters.items,
    machines: machines.items,
    infraMachines: infraMachines.items,
    data: data.items,
    pools: pools.items,
    claims: claims.items,
    addresses: addresses.items,
    capiClaims: capiClaims.items,
    capiAddresses: capiAddresses.items,
  };
}

const byName = <T extends KubeObject>(items: readonly T[]): Map<string, T> =>
  new Map(items.map((i) => [i.metadata.name ?? "", i]));
const sortedRecord = <V>(entries: [string, V][]): Record<string, V> =>
  Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Reads the picture of `namespace`. */
export async function pictureOf(k: Kinds, namespace: string): Promise<Picture> {
  const all = await listAll(k, namespace);
  const m3 = byName(all.addresses);
  const capi = byName(all.capiAddresses);
  const claims: [string, string][] = [];
  const ready: [string, string][] = [];
  for (const c of all.claims) {
    const key = `IPClaim/${c.metadata.name ?? ""}`;
    claims.push([key, m3.get(c.status?.address?.name ?? "")?.spec.address ?? ""]);
    ready.push([key, readyText(c.status?.conditions, c.status?.errorMessage)]);
  }
  for (const c of all.capiClaims) {
    const key = `IPAddressClaim/${c.metadata.name ?? ""}`;
    claims.push([key, capi.get(c.status?.addressRef?.name ?? "")?.spec.address ?? ""]);
    ready.push([key, readyText(c.status?.conditions as Condition[] | undefined)]);
  }
  const pools = all.pools.map((p): [string, PoolView] => [
    p.metadata.name ?? "",
    {
      ...(p.metadata.labels?.[CLUSTER_NAME_LABEL] ? { clusterLabel: p.metadata.labels[CLUSTER_NAME_LABEL] } : {}),
      owners: (p.metadata.ownerReferences ?? []).map((o) => `${o.kind}/${o.name}`).sort(),
      indexes: sortedRecord(Object.entries(p.status?.indexes ?? {})),
      total: p.status?.total,
      used: p.status?.used,
      free: p.status?.free,
      ready: readyText(p.status?.conditions),
    },
  ]);
  return {
    claims: sortedRecord(claims),
    ready: sortedRecord(ready),
    addresses: all.addresses
      .map(
        (a) =>
          `${a.metadata.name ?? ""} ${a.spec.address}/${a.spec.prefix ?? ""} ${a.spec.gateway ?? "-"} ${a.spec.pool.name} ${a.spec.claim.name}`,
      )
      .sort(),
    capiAddresses: all.capiAddresses
      .map(
        (a) =>
          `${a.metadata.name ?? ""} ${a.spec.address}/${a.spec.prefix} ${a.spec.gateway ?? "-"} ${a.spec.poolRef.name} ${a.spec.claimRef.name}`,
      )
      .sort(),
    pools: sortedRecord(pools),
    counts: Object.fromEntries(Object.entries(all).map(([kind, items]) => [kind, items.length])),
    deleting: [...all.claims, ...all.capiClaims]
      .filter((c) => c.metadata.deletionTimestamp)
      .map((c) => c.metadata.name ?? "")
      .sort(),
  };
}

/** Why `p` is not yet a settled picture of `expectedClaims` bound claims (empty when it is). */
export function unsettled(p: Picture, expectedClaims: number): string[] {
  const problems: string[] = [];
  const dataClaims = Object.keys(p.claims);
  if (dataClaims.length !== expectedClaims) problems.push(`${dataClaims.length} of ${expectedClaims} claims exist`);
  for (const [key, address] of Object.entries(p.claims)) {
    if (!address || p.ready[key] !== "True/Allocated")
      problems.push(`${key}: ${address || "no address"} ${p.ready[key] ?? ""}`);
  }
  for (const [name, pool] of Object.entries(p.pools)) {
    const held = [...p.addresses, ...p.capiAddresses].filter((a) => a.split(" ")[3] === name).length;
    if (Object.keys(pool.indexes).length !== held || pool.used !== held || pool.ready !== "True/PoolReady") {
      problems.push(
        `pool ${name}: ${Object.keys(pool.indexes).length} indexes, used ${String(pool.used)}, ${held} IPAddresses of both kinds, ${pool.ready}`,
      );
    }
  }
  return problems;
}

/** Waits until every claim of `namespace` is bound and every pool's status agrees with its IPAddresses. */
export async function settledPicture(
  k: Kinds,
  namespace: string,
  expectedClaims: number,
  timeoutMs = 90_000,
): Promise<Picture> {
  return await eventually(
    `${expectedClaims} claims bound in ${namespace}`,
    async () => {
      const p = await pictureOf(k, namespace);
      const problems = unsettled(p, expectedClaims);
      if (problems.length > 0) throw new Error(`${problems.length} problems, e.g. ${problems.slice(0, 4).join("; ")}`);
      return p;
    },
    timeoutMs,
    500,
  );
}

/** The picture without deletion state (clusterctl cannot carry a deletionTimestamp across). */
export function withoutDeletionState(p: Picture): Omit<Picture, "deleting"> {
  const { deleting: _deleting, ...rest } = p;
  return rest;
}

/** True when the namespace holds no object of any scenario kind. */
export function isEmpty(p: Picture): boolean {
  return Object.values(p.counts).every((n) => n === 0);
}

/** `name → resourceVersion` of every scenario object in `namespace` (proves "nothing changed"). */
export async function versionsOf(k: Kinds, namespace: string): Promise<Record<string, string>> {
  const all = await listAll(k, namespace);
  const entries = Object.entries(all).flatMap(([kind, items]) =>
    (items as KubeObject[]).map((o): [string, string] => [
      `${kind}/${o.metadata.name ?? ""}`,
      o.metadata.resourceVersion ?? "",
    ]),
  );
  return sortedRecord(entries);
}

/** An endpoint claim as {@link endpointsOf} shows it: name, label, pool, owning Cluster and the IPAddress named. */
function claimView(claim: IPAddressClaim | undefined, cluster: Thing): string {
  if (!claim) return "claim=- pool=- owner=- address=";
  const owners = (claim.metadata.ownerReferences ?? [])
    .filter((o) => o.kind === "Cluster")
    .map((o) => (o.uid === cluster.metadata.uid ? `Cluster/${o.name}` : `Cluster/${o.name}(stale uid)`));
  const labelled = claim.metadata.labels?.[ENDPOINT_CLAIM_LABEL] !== undefined ? "" : " (unlabelled)";
  const pool = `${claim.spec.poolRef.kind}/${claim.spec.poolRef.name}`;
  return `claim=${claim.metadata.name ?? "-"}${labelled} pool=${pool} owner=${owners.join(",") || "-"} address=`;
}

/**
 * The control-plane endpoint of every Cluster of `namespace` that asks for one from a pool, as
 * `host:port claim=<endpoint claim> pool=<Kind/name> owner=<Cluster owner> address=<IPAddress> <address>`, where the
 * owner reads `Cluster/<name>` only when the claim's owner reference carries that Cluster's live uid.
 */
export async function endpointsOf(k: Kinds, namespace: string): Promise<Record<string, string>> {
  const [clusters, claims, addresses] = await Promise.all([
    k.clusters.list(namespace),
    k.capiClaims.list(namespace),
    k.capiAddresses.list(namespace),
  ]);
  const claimsByName = byName(claims.items);
  const addressesByName = byName(addresses.items);
  const entries = clusters.items
    .filter((c) => c.metadata.annotations?.[ENDPOINT_POOL_ANNOTATION] !== undefined)
    .map((c): [string, string] => {
      const name = c.metadata.name ?? "";
      const endpoint = (c.spec?.controlPlaneEndpoint ?? {}) as { host?: string; port?: number };
      const claim = claimsByName.get(endpointClaimName(name));
      const ref = claim?.status?.addressRef?.name ?? "";
      const address = addressesByName.get(ref)?.spec.address ?? "-";
      return [
        name,
        `${endpoint.host ?? "-"}:${String(endpoint.port ?? "-")} ${claimView(claim, c)}${ref || "-"} ${address}`,
      ];
    });
  return sortedRecord(entries);
}

/**
 * Waits until the `count` endpoint Clusters of `namespace` each have a claim owned by them (what clusterctl follows
 * to carry the claim), and returns {@link endpointsOf}.
 */
export async function ownedEndpoints(k: Kinds, namespace: string, count: number): Promise<Record<string, string>> {
  return await eventually(
    `${count} endpoint claims owned by their Clusters in ${namespace}`,
    async () => {
      const e = await endpointsOf(k, namespace);
      const owned = Object.entries(e).filter(([c, v]) => v.includes(` owner=Cluster/${c} `));
      return owned.length === count && Object.keys(e).length === count ? e : undefined;
    },
    30_000,
    250,
  );
}

/** {@link endpointsOf} once it equals `want`, or the last reading after `timeoutMs` (for the caller to compare). */
export async function endpointsSettle(
  k: Kinds,
  namespace: string,
  want: Record<string, string>,
  timeoutMs = 30_000,
): Promise<Record<string, string>> {
  return await eventually(
    `the endpoints of ${namespace} to read as before`,
    async () => {
      const e = await endpointsOf(k, namespace);
      return JSON.stringify(e) === JSON.stringify(want) ? e : undefined;
    },
    timeoutMs,
    250,
  ).catch(() => endpointsOf(k, namespace));
}
