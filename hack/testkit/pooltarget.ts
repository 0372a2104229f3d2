/**
 * The pool a reliability scenario runs on, of either kind, so one scenario (a fault and what must hold after it) is
 * written once and run on each: a Metal3 `IPPool` with IPClaims in one namespace, or a `GlobalInClusterIPPool` with
 * Cluster API IPAddressClaims spread over several namespaces, the same names in each. The global pool is the harder
 * case: its records are named after their claims, so the API server refuses no second record of an address
 * (docs/architecture.md, "Concurrency guarantees"), and a controller limited to one namespace does not serve it.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, PoolRef } from "../../api/capi/types.js";
import { PROTECT_ADDRESS_FINALIZER, RELEASE_ADDRESS_FINALIZER } from "../../api/incluster/types.js";
import { isNotFound } from "../../src/kube/errors.js";
import { freshNamespace } from "./cluster.js";
import {
  auditAllocations,
  auditClaimAllocations,
  createAllRetrying,
  createClaimsRetrying,
  type AllocationAudit,
  type ClaimAllocationAudit,
  type CreateClaimsOptions,
} from "./faults.js";
import {
  addressClaim,
  addressOf,
  capiClients,
  claim,
  clients,
  globalPool,
  globalPoolRef,
  pool,
  type CapiClients,
  type Clients,
} from "./ipam.js";

/** The pool kinds a scenario runs on. */
export type TargetKind = "IPPool" | "GlobalInClusterIPPool";

/** One claim of a scenario. */
export interface ClaimRef {
  namespace: string;
  name: string;
}

/**
 * The addresses of a scenario's pool: a CIDR (Metal3: with `prefix` if given; in-cluster: `prefix`, else the CIDR's
 * length), or a range (in-cluster: prefix 24).
 */
export type AddressRange = { subnet: string; prefix?: number } | { start: string; end: string };

/** An allocation audit; the in-cluster kind's also lists what lacks the provider's finalizers. */
export type TargetAudit = AllocationAudit & Partial<Pick<ClaimAllocationAudit, "unfinalized">>;

/** A pool and its claims, as a scenario sees them. */
export interface PoolTarget {
  readonly kind: TargetKind;
  /** The pool's name (the test's name, with a suffix of this run for a cluster-scoped pool). */
  readonly poolName: string;
  /** The namespaces the claims live in. */
  readonly namespaces: readonly string[];
  /**
   * The namespace a controller serving this pool watches (`--namespace`, Manager `namespace`): the claims' own for a
   * Metal3 pool, "" (all) for a global pool, which a controller limited to one namespace does not serve.
   */
  readonly watchNamespace: string;
  /** The informers whose watches carry the claims and the records: `{ resource, group }` as the informer logs them. */
  readonly claimAndRecordResources: readonly { resource: string; group: string }[];
  createPool(range: AddressRange): Promise<void>;
  /**
   * `count` claims named by `name`. A Metal3 pool's are `name(0..count-1)` in its namespace; a global pool's go round
   * the namespaces, the i-th named `name(floor(i / namespaces))`, so each name is claimed in every namespace.
   */
  claimRefs(count: number, name: (i: number) => string): ClaimRef[];
  /** Creates one claim (no retry). */
  createClaim(ref: ClaimRef): Promise<void>;
  /** Creates claims through API server restarts (see createClaimsRetrying). */
  createClaims(refs: readonly ClaimRef[], options?: CreateClaimsOptions): Promise<void>;
  /** The address a claim is bound to, or undefined. */
  addressOf(ref: ClaimRef): Promise<string | undefined>;
  /** The addresses of the claims bound so far (one per bound claim, duplicates kept). */
  boundAddresses(): Promise<string[]>;
  /** How many address records (IPAddresses of the pool's claim API) exist. */
  records(): Promise<number>;
  audit(): Promise<TargetAudit>;
  /**
   * Every claim bound exactly once: one record per claim, all addresses distinct (across namespaces), each record
   * naming a live claim that names it; for the in-cluster kind also no record no claim names, and the provider's
   * finalizers on claims and records.
   */
  expectSound(audit: TargetAudit, expected: number): void;
}

/** Every claim bound exactly once: one IPAddress per claim, all distinct, each naming a live claim that names it. */
export function expectSound(audit: AllocationAudit, expected: number): void {
  expect(audit.unbound, "claims without an address").to.deep.equal([]);
  expect(audit.duplicateAddresses, "addresses held twice").to.deep.equal([]);
  expect(audit.claimsWithSeveral, "claims with several IPAddresses").to.deep.equal([]);
  expect(audit.orphans, "IPAddresses whose claim is gone").to.deep.equal([]);
  expect(audit.claims).to.equal(expected);
  expect(audit.bound).to.equal(expected);
  expect(audit.addresses).to.equal(expected);
}

/** A Metal3 IPPool `poolName` in `namespace`, with IPClaims. */
export function metal3Target(kc: KubeConfig, namespace: string, poolName: string): PoolTarget {
  const c = clients(kc);
  return {
    kind: "IPPool",
    poolName,
    namespaces: [namespace],
    watchNamespace: namespace,
    claimAndRecordResources: [
      { resource: "ipclaims", group: "ipam.metal3.io" },
      { resource: "ipaddresses", group: "ipam.metal3.io" },
    ],
    async createPool(range) {
      const spec =
        "subnet" in range
          ? { pools: [{ subnet: range.subnet }], ...(range.prefix === undefined ? {} : { prefix: range.prefix }) }
          : { pools: [range] };
      await c.pools.create(namespace, pool(namespace, poolName, spec));
    },
    claimRefs: (count, name) => Array.from({ length: count }, (_, i) => ({ namespace, name: name(i) })),
    async createClaim(ref) {
      await c.claims.create(ref.namespace, claim(ref.namespace, ref.name, poolName));
    },
    createClaims: (refs, options) =>
      createClaimsRetrying(
        c,
        namespace,
        poolName,
        refs.map((r) => r.name),
        options,
      ),
    addressOf: (ref) => addressOf(c, ref.namespace, ref.name),
    boundAddresses: () => metal3BoundAddresses(c, namespace),
    records: async () => (await c.addresses.list(namespace)).items.length,
    audit: () => auditAllocations(c, namespace),
    expectSound,
  };
}

/**
 * A `GlobalInClusterIPPool` named `poolName` plus a suffix of this run (the pool is cluster-scoped: other suites on
 * the shared plane must not meet it), with IPAddressClaims in `namespaces`.
 */
export function globalTarget(kc: KubeConfig, namespaces: readonly string[], poolName: string): PoolTarget {
  const capi = capiClients(kc);
  const name = `${poolName}-${namespaces[0] ?? ""}`;
  const ref = globalPoolRef(name);
  return {
    kind: "GlobalInClusterIPPool",
    poolName: name,
    namespaces,
    watchNamespace: "",
    claimAndRecordResources: [
      { resource: "ipaddressclaims", group: ref.apiGroup ?? "" },
      { resource: "ipaddresses", group: ref.apiGroup ?? "" },
    ],
    async createPool(range) {
      const spec =
        "subnet" in range
          ? { addresses: [range.subnet], prefix: range.prefix ?? Number(range.subnet.split("/")[1]) }
          : { addresses: [`${range.start}-${range.end}`], prefix: 24 };
      await capi.globalPools.create("", globalPool(name, spec));
    },
    claimRefs: (count, claimName) =>
      Array.from({ length: count }, (_, i) => ({
        namespace: namespaces[i % namespaces.length] ?? "",
        name: claimName(Math.floor(i / namespaces.length)),
      })),
    async createClaim(claimRef) {
      await capi.claims.create(claimRef.namespace, addressClaim(claimRef.namespace, claimRef.name, ref));
    },
    createClaims: (refs, options) =>
      createAllRetrying(
        refs,
        (r) => capi.claims.create(r.namespace, addressClaim(r.namespace, r.name, ref)),
        (r) => `IPAddressClaim ${r.namespace}/${r.name}`,
        options,
      ),
    addressOf: (claimRef) => capiAddressOf(capi, claimRef),
    boundAddresses: () => capiBoundAddresses(capi, namespaces, ref),
    records: async () => (await capiRecords(capi, namespaces, ref)).length,
    audit: () =>
      auditClaimAllocations(capi, namespaces, ref, {
        claim: RELEASE_ADDRESS_FINALIZER,
        record: PROTECT_ADDRESS_FINALIZER,
      }),
    expectSound(audit, expected) {
      expectSound(audit, expected);
      expect(audit.strayAddresses, "IPAddresses no bound claim names").to.deep.equal([]);
      expect(audit.unfinalized, "claims and IPAddresses without the in-cluster finalizers").to.deep.equal([]);
    },
  };
}

/**
 * A target of `kind` with pool `poolName` on fresh namespaces named after `prefix`: one for a Metal3 pool, three
 * for a global pool.
 */
export async function freshTarget(
  kind: TargetKind,
  kc: KubeConfig,
  prefix: string,
  poolName: string,
): Promise<PoolTarget> {
  if (kind === "IPPool") return metal3Target(kc, await freshNamespace(kc, prefix), poolName);
  const namespaces: string[] = [];
  for (const part of ["a", "b", "c"]) namespaces.push(await freshNamespace(kc, `${prefix}-${part}`));
  return globalTarget(kc, namespaces, poolName);
}

async function metal3BoundAddresses(c: Clients, namespace: string): Promise<string[]> {
  const byName = new Map((await c.addresses.list(namespace)).items.map((a) => [a.metadata.name ?? "", a.spec.address]));
  return (await c.claims.list(namespace)).items
    .map((x) => byName.get(x.status?.address?.name ?? ""))
    .filter((a): a is string => a !== undefined);
}

async function capiAddressOf(capi: CapiClients, ref: ClaimRef): Promise<string | undefined> {
  const cl = await capi.claims.get(ref.namespace, ref.name);
  const name = cl.status?.addressRef?.name;
  if (!name) return undefined;
  try {
    return (await capi.addresses.get(ref.namespace, name)).spec.address;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function capiRecords(capi: CapiClients, namespaces: readonly string[], ref: PoolRef): Promise<CapiIPAddress[]> {
  const lists = await Promise.all(namespaces.map((ns) => capi.addresses.list(ns)));
  return lists.flatMap((l) => l.items).filter((a) => a.spec.poolRef?.name === ref.name);
}

async function capiBoundAddresses(capi: CapiClients, namespaces: readonly string[], ref: PoolRef): Promise<string[]> {
  const records = await capiRecords(capi, namespaces, ref);
  const byKey = new Map(records.map((a) => [`${a.metadata.namespace ?? ""}/${a.metadata.name ?? ""}`, a.spec.address]));
  const claims = (await Promise.all(namespaces.map((ns) => capi.claims.list(ns)))).flatMap((l) => l.items);
  return claims
    .map((x) => byKey.get(`${x.metadata.namespace ?? ""}/${x.status?.addressRef?.name ?? ""}`))
    .filter((a): a is string => a !== undefined);
}
