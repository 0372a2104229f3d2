/**
 * What the Cluster API in-cluster IPAM provider leaves in a cluster, built object by object (its Go module is not
 * served here: docs/incluster.md "Behaviour" says what it writes), and the checks that it would take over again: for
 * e2e/incluster-migration.test.ts.
 *
 * The provider's objects: pools with `ipam.cluster.x-k8s.io/ProtectPool` and `status.ipAddresses` counts; claims with
 * `ReleaseAddress` and `status.addressRef` (no conditions: it writes none); IPAddresses named after their claims, in
 * their namespaces, with `ProtectAddress`, the claim's cluster-name label and two owners (the claim: controller and
 * blockOwnerDeletion; the pool: blockOwnerDeletion).
 */
import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim, PoolRef } from "../../api/capi/types.js";
import {
  PROTECT_ADDRESS_FINALIZER,
  PROTECT_POOL_FINALIZER,
  RELEASE_ADDRESS_FINALIZER,
  type InClusterIPPool,
  type InClusterIPPoolSpec,
} from "../../api/incluster/types.js";
import { apiVersionOf, CAPI_IPADDRESSCLAIM } from "../../api/registry.js";
import { CLUSTER_NAME_LABEL } from "../../api/v1alpha1/types.js";
import type { ResourceClient } from "../../src/kube/resource.js";
import { clients } from "./ipam.js";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  GLOBAL,
  IN,
  owner,
  poolClient,
  providerLabels,
  providerOwners,
  readyOf,
  ref,
  type InClusterClients,
  type InClusterKind,
} from "./incluster.js";

/** Every finalizer the provider puts on these kinds, and so removes. */
export const PROVIDER_FINALIZERS = new Set([
  PROTECT_POOL_FINALIZER,
  RELEASE_ADDRESS_FINALIZER,
  PROTECT_ADDRESS_FINALIZER,
]);

/** A pool as the provider leaves it: its finalizer and the counts it last wrote. */
export async function providerPool(
  k: InClusterClients,
  kind: InClusterKind,
  namespace: string,
  name: string,
  spec: InClusterIPPoolSpec,
  ipAddresses: NonNullable<InClusterIPPool["status"]>["ipAddresses"],
): Promise<InClusterIPPool> {
  const client = poolClient(k, kind);
  const metadata = { name, ...(kind === IN ? { namespace } : {}), finalizers: [PROTECT_POOL_FINALIZER] };
  await client.create(namespace, { metadata, spec });
  return await client.patchStatus(namespace, name, { status: { ipAddresses } });
}

/** A claim the provider served with `address` from `pool`, and its IPAddress, as the provider writes them. */
export async function providerClaim(
  k: InClusterClients,
  kind: InClusterKind,
  pool: InClusterIPPool,
  namespace: string,
  name: string,
  address: string,
  cluster?: string,
): Promise<IPAddressClaim> {
  const poolRef: PoolRef = ref(kind, pool.metadata.name ?? "");
  const labels = cluster ? { [CLUSTER_NAME_LABEL]: cluster } : undefined;
  const created = await k.claims.create(namespace, {
    apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM),
    metadata: { name, namespace, finalizers: [RELEASE_ADDRESS_FINALIZER], ...(labels ? { labels } : {}) },
    spec: { poolRef },
  });
  const claim = await k.claims.patchStatus(namespace, name, { status: { addressRef: { name } } });
  await k.addresses.create(namespace, {
    metadata: {
      name,
      namespace,
      finalizers: [PROTECT_ADDRESS_FINALIZER],
      ...(labels ? { labels } : {}),
      ownerReferences: providerOwners(created, pool, kind),
    },
    spec: {
      claimRef: { name },
      poolRef,
      address,
      prefix: pool.spec.prefix,
      ...(pool.spec.gateway ? { gateway: pool.spec.gateway } : {}),
    },
  });
  return claim;
}

/** The objects of the provider's kinds (and of ours the provider does not know) in some namespaces. */
export interface Inventory {
  pools: InClusterIPPool[];
  claims: IPAddressClaim[];
  addresses: CapiIPAddress[];
  /** Objects of Metal3's kinds: the provider knows none of them. */
  metal3: string[];
}

/** Lists the namespaced pools, claims and IPAddresses of `namespaces`, the global pools `globals`, and any Metal3 kind. */
export async function inventory(
  kc: KubeConfig,
  k: InClusterClients,
  namespaces: readonly string[],
  globals: readonly string[],
): Promise<Inventory> {
  const m3 = clients(kc);
  const out: Inventory = { pools: [], claims: [], addresses: [], metal3: [] };
  for (const name of globals) out.pools.push(await k.globals.get("", name));
  for (const ns of namespaces) {
    out.pools.push(...(await k.pools.list(ns)).items);
    out.claims.push(...(await k.claims.list(ns)).items);
    out.addresses.push(...(await k.addresses.list(ns)).items);
    const names = async (kind: string, c: ResourceClient<{ metadata: { name?: string } }>) =>
      (await c.list(ns)).items.map((o) => `${kind} ${ns}/${o.metadata.name ?? ""}`);
    out.metal3.push(...(await names("IPPool", m3.pools)), ...(await names("IPClaim", m3.claims)));
    out.metal3.push(...(await names("IPAddress.ipam.metal3.io", m3.addresses)));
  }
  return out;
}

/** `Kind ns/name` → `uid@resourceVersion` of every object of an inventory. */
export function versionsOf(inv: Inventory): Map<string, string> {
  const out = new Map<string, string>();
  const add = (kind: string, o: { metadata: { namespace?: string; name?: string; uid?: string } }) =>
    out.set(
      `${kind} ${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`,
      `${o.metadata.uid ?? ""}@${(o.metadata as { resourceVersion?: string }).resourceVersion ?? ""}`,
    );
  for (const p of inv.pools) add(p.kind ?? (p.metadata.namespace ? IN : GLOBAL), p);
  for (const c of inv.claims) add("IPAddressClaim", c);
  for (const a of inv.addresses) add("IPAddress", a);
  return out;
}

const poolKindOf = (p: InClusterIPPool): InClusterKind => (p.metadata.namespace ? IN : GLOBAL);
const poolKey = (kind: string, namespace: string, name: string): string =>
  kind === GLOBAL ? `${kind} /${name}` : `${kind} ${namespace}/${name}`;

/**
 * What would stop the provider from taking over `inv` again, or surprise it (empty when nothing does): a finalizer
 * it never removes; an object of a kind it does not know; a claim whose addressRef does not name the IPAddress named
 * after it (the provider finds a claim's address by the claim's name); an IPAddress that is not exactly what the
 * provider writes (owners, finalizer, claimRef, pool's prefix and gateway); a Ready condition that contradicts the
 * claim's addressRef (the provider never writes or reads conditions, so a stale one would stay wrong).
 */
export function providerProblems(inv: Inventory): string[] {
  const problems: string[] = [...inv.metal3.map((o) => `${o}: a kind the provider does not know`)];
  const all = [...inv.pools, ...inv.claims, ...inv.addresses];
  for (const o of all)
    for (const f of o.metadata.finalizers ?? [])
      if (!PROVIDER_FINALIZERS.has(f))
        problems.push(`${o.metadata.name ?? ""}: finalizer ${f} the provider never removes`);
  const pools = new Map(
    inv.pools.map((p) => [poolKey(poolKindOf(p), p.metadata.namespace ?? "", p.metadata.name ?? ""), p]),
  );
  const records = new Map(inv.addresses.map((a) => [`${a.metadata.namespace ?? ""}/${a.metadata.name ?? ""}`, a]));
  for (const claim of inv.claims) problems.push(...claimProblems(claim, records));
  for (const record of inv.addresses) problems.push(...recordProblems(record, inv.claims, pools));
  return problems;
}

function claimProblems(claim: IPAddressClaim, records: ReadonlyMap<string, CapiIPAddress>): string[] {
  const where = `IPAddressClaim ${claim.metadata.namespace ?? ""}/${claim.metadata.name ?? ""}`;
  const bound = claim.status?.addressRef?.name;
  const record = records.get(`${claim.metadata.namespace ?? ""}/${claim.metadata.name ?? ""}`);
  const problems: string[] = [];
  if (bound !== undefined && bound !== claim.metadata.name) problems.push(`${where}: addressRef names ${bound}`);
  if (bound !== undefined && !record) problems.push(`${where}: its IPAddress is missing`);
  if (bound !== undefined && !claim.metadata.finalizers?.includes(RELEASE_ADDRESS_FINALIZER))
    problems.push(`${where}: bound without ${RELEASE_ADDRESS_FINALIZER}`);
  const ready = readyOf(claim);
  if (ready && (ready.status === "True") !== (bound !== undefined))
    problems.push(`${where}: Ready=${ready.status} contradicts its addressRef`);
  return problems;
}

function recordProblems(
  record: CapiIPAddress,
  claims: readonly IPAddressClaim[],
  pools: ReadonlyMap<string, InClusterIPPool>,
): string[] {
  const ns = record.metadata.namespace ?? "";
  const where = `IPAddress ${ns}/${record.metadata.name ?? ""}`;
  const claim = claims.find((c) => c.metadata.namespace === ns && c.metadata.name === record.metadata.name);
  const pool = pools.get(poolKey(record.spec.poolRef.kind, ns, record.spec.poolRef.name));
  if (!claim || !pool) return [`${where}: no claim of its name or no pool`];
  const problems: string[] = [];
  const kind = poolKindOf(pool);
  try {
    expect(record.spec).to.deep.equal({
      claimRef: { name: claim.metadata.name },
      poolRef: ref(kind, pool.metadata.name ?? ""),
      address: record.spec.address,
      prefix: pool.spec.prefix,
      ...(pool.spec.gateway ? { gateway: pool.spec.gateway } : {}),
    });
    expect(record.metadata.finalizers).to.deep.equal([PROTECT_ADDRESS_FINALIZER]);
    expect((record.metadata.ownerReferences ?? []).map(owner)).to.deep.equal(providerOwners(claim, pool, kind));
    const cluster = claim.metadata.labels?.[CLUSTER_NAME_LABEL];
    expect(providerLabels(record, pool.metadata.name ?? "")).to.deep.equal(
      cluster ? { [CLUSTER_NAME_LABEL]: cluster } : {},
    );
  } catch (err) {
    problems.push(`${where}: not as the provider writes it: ${err instanceof Error ? err.message : String(err)}`);
  }
  return problems;
}

/** The counts the provider computes for `pool` from `inv`'s IPAddresses (every address here lies in the pool). */
export function usedBy(inv: Inventory, kind: InClusterKind, name: string): number {
  return inv.addresses.filter((a) => a.spec.poolRef.kind === kind && a.spec.poolRef.name === name).length;
}
