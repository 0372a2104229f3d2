/**
 * Migration from Metal3's IP Address Manager, and rollback to it, on a real API server.
 *
 * Metal3's Go modules cannot be fetched here, so the suite builds, object by object, what Metal3's controller leaves
 * behind (names, finalizers, owner references, labels, `status.indexes`, both claim kinds, a preallocation, a claim
 * CAPM3 still holds, a person-made reservation), then runs our controller over it and stops it again.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, IPAddressClaim } from "../api/capi/types.js";
import { apiVersionOf, CAPI_IPADDRESS, CAPI_IPADDRESSCLAIM, resourceType } from "../api/registry.js";
import {
  GROUP,
  IPPOOL_KIND,
  type IPAddress,
  type IPClaim,
  type IPPool,
  type ObjectMeta,
  type OwnerReference,
} from "../api/v1alpha1/types.js";
import { ipAddressName } from "../src/ipam/naming.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { addressOf, claim, clients, cluster, pool, startController, type Clients } from "../hack/testkit/ipam.js";
import { consistently, eventually } from "../hack/testkit/wait.js";

const PREFIX = "pool1";
const POOL_REF = { apiGroup: GROUP, kind: IPPOOL_KIND, name: "pool1" };
const CLUSTER_LABELS = { "cluster.x-k8s.io/cluster-name": "wl" };
const CAPM3_FINALIZER = "metal3data.infrastructure.cluster.x-k8s.io";
/** Every finalizer Metal3's controller (or CAPM3) puts on these kinds, and so knows how to remove. */
const METAL3_FINALIZERS = new Set([
  "ippool.ipam.metal3.io",
  "ipclaim.ipam.metal3.io",
  "ipaddress.ipam.metal3.io",
  "ipam.metal3.io/ipaddressclaim",
  "ipam.metal3.io/ipaddress",
  CAPM3_FINALIZER,
]);

interface Kinds {
  c: Clients;
  capiClaims: ResourceClient<IPAddressClaim>;
  capiAddresses: ResourceClient<CapiIPAddress>;
}

function kinds(kc: KubeConfig): Kinds {
  return {
    c: clients(kc),
    capiClaims: new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM)),
    capiAddresses: new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS)),
  };
}

const ownerRef = (o: KubeObject & { apiVersion?: string; kind?: string }, kind: string): OwnerReference => ({
  apiVersion: o.apiVersion ?? "",
  kind,
  name: o.metadata.name ?? "",
  uid: o.metadata.uid ?? "",
});

/** Creates `obj`, then writes `status` through the status subresource, as a controller would have. */
async function createWithStatus<T extends KubeObject>(
  client: ResourceClient<T>,
  ns: string,
  obj: T,
  status: object,
): Promise<T> {
  const created = await client.create(ns, obj);
  return await client.patchStatus(ns, created.metadata.name ?? "", { status });
}

/** What Metal3 made for IPClaim `name` holding `address`: the claim and its IPAddress. */
async function metal3IPClaim(
  k: Kinds,
  ns: string,
  p: IPPool,
  name: string,
  address: string,
  extraFinalizers: string[] = [],
): Promise<void> {
  const recordName = ipAddressName(PREFIX, address);
  const c = await createWithStatus(
    k.c.claims,
    ns,
    claim(ns, name, "pool1", { labels: CLUSTER_LABELS, finalizers: ["ipclaim.ipam.metal3.io", ...extraFinalizers] }),
    {
      address: { name: recordName, namespace: ns },
    },
  );
  await k.c.addresses.create(ns, {
    metadata: {
      name: recordName,
      namespace: ns,
      labels: CLUSTER_LABELS,
      finalizers: ["ipaddress.ipam.metal3.io"],
      ownerReferences: [ownerRef(p, "IPPool"), ownerRef(c, "IPClaim")],
    },
    spec: {
      address,
      prefix: 24,
      gateway: "10.50.0.1",
      pool: { name: "pool1", namespace: ns },
      claim: { name, namespace: ns },
    },
  });
}

/** What Metal3 made for IPAddressClaim `name` holding `address`: the claim and its Cluster API IPAddress. */
async function metal3CapiClaim(k: Kinds, ns: string, p: IPPool, name: string, address: string): Promise<void> {
  const recordName = ipAddressName(PREFIX, address);
  const c = await createWithStatus(
    k.capiClaims,
    ns,
    {
      apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM),
      metadata: { name, namespace: ns, labels: CLUSTER_LABELS, finalizers: ["ipam.metal3.io/ipaddressclaim"] },
      spec: { poolRef: POOL_REF },
    },
    { addressRef: { name: recordName } },
  );
  await k.capiAddresses.create(ns, {
    metadata: {
      name: recordName,
      namespace: ns,
      labels: CLUSTER_LABELS,
      finalizers: ["ipam.metal3.io/ipaddress"],
      ownerReferences: [ownerRef(p, "IPPool"), ownerRef(c, "IPAddressClaim")],
    },
    spec: { address, prefix: 24, gateway: "10.50.0.1", poolRef: POOL_REF, claimRef: { name } },
  });
}

/** The namespace as Metal3's controller leaves it after serving both kinds of claims. */
async function metal3Leftovers(k: Kinds, ns: string): Promise<void> {
  const wl = await k.c.clusters.create(ns, cluster(ns, "wl"));
  const spec = {
    clusterName: "wl",
    pools: [{ start: "10.50.0.10", end: "10.50.0.19" }],
    prefix: 24,
    gateway: "10.50.0.1",
    preAllocations: { "pre-claim": "10.50.0.15", "capi-pre": "10.50.0.16" },
  };
  const indexes = {
    "m3-a": "10.50.0.10",
    "m3-held": "10.50.0.11",
    "capi-a": "10.50.0.12",
    outside: "10.50.0.13",
    "pre-claim": "10.50.0.15",
    "capi-pre": "10.50.0.16",
  };
  const base = pool(ns, "pool1", spec);
  const meta: ObjectMeta = {
    ...base.metadata,
    finalizers: ["ippool.ipam.metal3.io"],
    labels: { ...CLUSTER_LABELS, "cluster.x-k8s.io/provider": "ipam-metal3" },
    ownerReferences: [ownerRef(wl, "Cluster")],
  };
  const p = await createWithStatus(
    k.c.pools,
    ns,
    { ...base, metadata: meta },
    { indexes, lastUpdated: "2026-11-01T00:00:00Z" },
  );
  await metal3IPClaim(k, ns, p, "m3-a", "10.50.0.10");
  await metal3IPClaim(k, ns, p, "m3-held", "10.50.0.11", [CAPM3_FINALIZER]);
  await metal3IPClaim(k, ns, p, "pre-claim", "10.50.0.15");
  await metal3CapiClaim(k, ns, p, "capi-a", "10.50.0.12");
  await metal3CapiClaim(k, ns, p, "capi-pre", "10.50.0.16");
  // A person's reservation of an address used outside Kubernetes: no owner, no finalizer, a claim that does not exist.
  await k.c.addresses.create(ns, {
    metadata: { name: "reserved-10-50-0-13", namespace: ns },
    spec: { address: "10.50.0.13", pool: { name: "pool1", namespace: ns }, claim: { name: "outside", namespace: ns } },
  });
}

/** `Kind/name` → `uid@resourceVersion` of every object of the five kinds in `ns`. */
async function versions(k: Kinds, ns: string): Promise<Map<string, string>> {
  const lists: [string, Promise<{ items: KubeObject[] }>][] = [
    ["IPPool", k.c.pools.list(ns)],
    ["IPClaim", k.c.claims.list(ns)],
    ["IPAddress", k.c.addresses.list(ns)],
    ["IPAddressClaim", k.capiClaims.list(ns)],
    ["CapiIPAddress", k.capiAddresses.list(ns)],
  ];
  const out = new Map<string, string>();
  for (const [kind, list] of lists)
    for (const o of (await list).items)
      out.set(`${kind}/${o.metadata.name ?? ""}`, `${o.metadata.uid ?? ""}@${o.metadata.resourceVersion ?? ""}`);
  return out;
}

async function capiAddressOf(k: Kinds, ns: string, name: string): Promise<string | undefined> {
  const ref = (await k.capiClaims.get(ns, name)).status?.addressRef?.name;
  return ref ? (await k.capiAddresses.get(ns, ref)).spec.address : undefined;
}

interface Objects {
  pools: IPPool[];
  claims: IPClaim[];
  addresses: IPAddress[];
  capiClaims: IPAddressClaim[];
  capiAddresses: CapiIPAddress[];
}

async function objectsIn(k: Kinds, ns: string): Promise<Objects> {
  const [pools, claims, addresses, capiClaims, capiAddresses] = await Promise.all([
    k.c.pools.list(ns),
    k.c.claims.list(ns),
    k.c.addresses.list(ns),
    k.capiClaims.list(ns),
    k.capiAddresses.list(ns),
  ]);
  return {
    pools: pools.items,
    claims: claims.items,
    addresses: addresses.items,
    capiClaims: capiClaims.items,
    capiAddresses: capiAddresses.items,
  };
}

function foreignFinalizers(o: Objects): string[] {
  const all: KubeObject[] = [...o.pools, ...o.claims, ...o.addresses, ...o.capiClaims, ...o.capiAddresses];
  return all.flatMap((obj) =>
    (obj.metadata.finalizers ?? [])
      .filter((f) => !METAL3_FINALIZERS.has(f))
      .map((f) => `${obj.metadata.name ?? ""} carries finalizer ${f} that Metal3 never removes`),
  );
}

/** Metal3 finds a claim's record as `<namePrefix>-<status.indexes[claim]>` of the claim's kind. */
function unfindableRecords(o: Objects): string[] {
  const indexes = o.pools.find((p) => p.metadata.name === "pool1")?.status?.indexes ?? {};
  const m3 = new Map(o.addresses.map((a) => [a.metadata.name ?? "", a.spec.claim.name]));
  const capi = new Map(o.capiAddresses.map((a) => [a.metadata.name ?? "", a.spec.claimRef.name]));
  const missing = (kind: string, name: string, records: Map<string, string>): string[] => {
    const address = indexes[name];
    return address && records.get(ipAddressName(PREFIX, address)) === name
      ? []
      : [`${kind} ${name}: no record at ${address ?? "(no index)"}`];
  };
  return [
    ...o.claims
      .filter((c) => c.spec.pool.name === "pool1")
      .flatMap((c) => missing("IPClaim", c.metadata.name ?? "", m3)),
    ...o.capiClaims
      .filter((c) => c.spec.poolRef.name === "pool1")
      .flatMap((c) => missing("IPAddressClaim", c.metadata.name ?? "", capi)),
  ];
}

function misnamedRecords(o: Objects): string[] {
  const records: (IPAddress | CapiIPAddress)[] = [...o.addresses, ...o.capiAddresses];
  return records
    .filter(
      (a) =>
        a.metadata.name !== "reserved-10-50-0-13" &&
        a.metadata.name !==
          ipAddressName(a.metadata.name?.startsWith("sentinel") ? "sentinel" : PREFIX, a.spec.address),
    )
    .map((a) => `record ${a.metadata.name ?? ""} is not named as Metal3 names it`);
}

/** IPClaims that stand in for a Cluster API claim: Metal3 would allocate them a second address. */
function standIns(o: Objects): string[] {
  return o.claims
    .filter((c) => c.metadata.ownerReferences?.some((r) => r.kind === "IPAddressClaim"))
    .map((c) => `IPClaim ${c.metadata.name ?? ""} stands in for an IPAddressClaim`);
}

/** What would stop Metal3's controller from taking over again (empty when nothing does). */
async function rollbackProblems(k: Kinds, ns: string): Promise<string[]> {
  const o = await objectsIn(k, ns);
  return [...foreignFinalizers(o), ...unfindableRecords(o), ...misnamedRecords(o), ...standIns(o)];
}

describe("migration from Metal3's controller, and rollback to it", function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let k: Kinds;

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    k = kinds(kc);
  });

  it("takes over without rewriting anything, serves new claims around held addresses, and leaves what Metal3 expects", async () => {
    const ns = await freshNamespace(kc, "migrate");
    await metal3Leftovers(k, ns);
    expect(await rollbackProblems(k, ns), "the fixture itself is what Metal3 leaves").to.deep.equal([]);
    const before = await versions(k, ns);
    const ctl = await startController(kc, ns);
    try {
      // A claim of another pool, bound, proves the controller is synced and reconciling this namespace.
      await k.c.pools.create(ns, pool(ns, "sentinel", { pools: [{ start: "10.51.0.1", end: "10.51.0.9" }] }));
      await k.c.claims.create(ns, claim(ns, "sentinel", "sentinel"));
      await eventually("the sentinel claim bound", () => addressOf(k.c, ns, "sentinel"));
      const unchanged = async (): Promise<boolean> => {
        const now = await versions(k, ns);
        return [...before].every(([key, version]) => now.get(key) === version);
      };
      await consistently("every object Metal3 left keeps its uid and resourceVersion", unchanged, 3_000);

      await k.c.claims.create(ns, claim(ns, "m3-new", "pool1", { labels: CLUSTER_LABELS }));
      await k.capiClaims.create(ns, {
        metadata: { name: "capi-new", namespace: ns, labels: CLUSTER_LABELS },
        spec: { poolRef: POOL_REF },
      });
      const fresh = [
        await eventually("m3-new bound", () => addressOf(k.c, ns, "m3-new")),
        await eventually("capi-new bound", () => capiAddressOf(k, ns, "capi-new")),
      ];
      expect(fresh.sort(), "new claims avoid every held, reserved and preallocated address").to.deep.equal([
        "10.50.0.14",
        "10.50.0.17",
      ]);

      await k.c.claims.delete(ns, "m3-a");
      await k.capiClaims.delete(ns, "capi-a");
      await k.c.claims.delete(ns, "m3-held");
      await eventually("old claims released normally", async () => {
        const now = await versions(k, ns);
        return ![
          "IPClaim/m3-a",
          "IPAddress/pool1-10-50-0-10",
          "IPAddressClaim/capi-a",
          "CapiIPAddress/pool1-10-50-0-12",
        ].some((key) => now.has(key));
      });
      await consistently(
        "the claim CAPM3 still holds keeps its address",
        async () => (await addressOf(k.c, ns, "m3-held")) === "10.50.0.11",
        1_500,
      );
      const reservation = (await versions(k, ns)).get("IPAddress/reserved-10-50-0-13");
      expect(reservation, "the person-made reservation is untouched").to.equal(
        before.get("IPAddress/reserved-10-50-0-13"),
      );
      await eventually(
        "the pool's indexes follow",
        async () => (await k.c.pools.get(ns, "pool1")).status?.indexes?.["m3-a"] === undefined,
      );
    } finally {
      await ctl.stop();
    }
    // Metal3's controller (scaled back up) finds every claim's record by name and every finalizer is one it removes.
    expect(await rollbackProblems(k, ns)).to.deep.equal([]);
  });
});
