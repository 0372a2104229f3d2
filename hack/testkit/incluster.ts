/**
 * What the in-cluster provider's scenario suites share (e2e/incluster.test.ts: a controller limited to the test's
 * namespace; e2e/incluster-global.test.ts: a controller of every namespace): typed clients, object builders, and the
 * checks of an exact record and a bound claim as docs/incluster.md describes them.
 */
import { expect } from "chai";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress, IPAddressClaim, PoolRef } from "../../api/capi/types.js";
import {
  INCLUSTER_GROUP,
  PROTECT_ADDRESS_FINALIZER,
  RELEASE_ADDRESS_FINALIZER,
  type InClusterIPPool,
  type InClusterIPPoolSpec,
} from "../../api/incluster/types.js";
import {
  apiVersionOf,
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CLUSTER,
  GLOBAL_INCLUSTER_IPPOOL,
  INCLUSTER_IPPOOL,
  resourceType,
} from "../../api/registry.js";
import { CLUSTER_NAME_LABEL, READY_CONDITION, type Condition, type OwnerReference } from "../../api/v1alpha1/types.js";
import type { Cluster } from "../../src/controllers/clusters.js";
import { RECORD_POOL_LABEL } from "../../src/controllers/capi/translate.js";
import { ResourceClient } from "../../src/kube/resource.js";
import { eventually } from "./wait.js";

export const IN = "InClusterIPPool";
export const GLOBAL = "GlobalInClusterIPPool";
export type InClusterKind = typeof IN | typeof GLOBAL;

export interface InClusterClients {
  pools: ResourceClient<InClusterIPPool>;
  globals: ResourceClient<InClusterIPPool>;
  claims: ResourceClient<IPAddressClaim>;
  addresses: ResourceClient<CapiIPAddress>;
  clusters: ResourceClient<Cluster>;
  core: CoreV1Api;
}

export function inClusterClients(kc: KubeConfig): InClusterClients {
  return {
    pools: new ResourceClient<InClusterIPPool>(kc, resourceType(INCLUSTER_IPPOOL)),
    globals: new ResourceClient<InClusterIPPool>(kc, resourceType(GLOBAL_INCLUSTER_IPPOOL)),
    claims: new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM)),
    addresses: new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS)),
    clusters: new ResourceClient<Cluster>(kc, resourceType(CLUSTER)),
    core: kc.makeApiClient(CoreV1Api),
  };
}

/** The pool client of `kind` (the cluster-scoped one ignores the namespace it is given). */
export const poolClient = (k: InClusterClients, kind: InClusterKind): ResourceClient<InClusterIPPool> =>
  kind === IN ? k.pools : k.globals;

export const ref = (kind: string, name: string): PoolRef => ({ apiGroup: INCLUSTER_GROUP, kind, name });

/** An in-cluster pool; `namespace` undefined makes it a GlobalInClusterIPPool's object. */
export function inClusterPool(
  namespace: string | undefined,
  name: string,
  spec: InClusterIPPoolSpec,
  annotations?: Record<string, string>,
): InClusterIPPool {
  return {
    metadata: { name, ...(namespace ? { namespace } : {}), ...(annotations ? { annotations } : {}) },
    spec,
  };
}

export function addressClaim(
  namespace: string,
  name: string,
  poolRef: PoolRef,
  meta: Partial<IPAddressClaim["metadata"]> = {},
  spec: Partial<IPAddressClaim["spec"]> = {},
): IPAddressClaim {
  return { metadata: { name, namespace, ...meta }, spec: { poolRef, ...spec } };
}

export const readyOf = (claim: IPAddressClaim): Condition | undefined =>
  (claim.status?.conditions as Condition[] | undefined)?.find((c) => c.type === READY_CONDITION);

/** The IPAddress a claim is bound to (status.addressRef and Ready=True), or undefined. */
export async function boundRecord(
  k: InClusterClients,
  namespace: string,
  name: string,
): Promise<CapiIPAddress | undefined> {
  const claim = await k.claims.get(namespace, name);
  const recordName = claim.status?.addressRef?.name;
  if (!recordName || readyOf(claim)?.status !== "True") return undefined;
  return await k.addresses.get(namespace, recordName);
}

export const waitBound = (k: InClusterClients, namespace: string, name: string, timeoutMs = 15_000) =>
  eventually(`claim ${namespace}/${name} bound`, () => boundRecord(k, namespace, name), timeoutMs);

/**
 * Waits for the claim's Ready=False with `reason` (and `message`, when given: a claim created right after its pool may
 * first say that the pool is not found, until the pool reaches the controller's cache); returns the condition.
 */
export const waitNotReady = (k: InClusterClients, namespace: string, name: string, reason: string, message?: string) =>
  eventually(`claim ${namespace}/${name} Ready=False ${reason} ${message ?? ""}`, async () => {
    const ready = readyOf(await k.claims.get(namespace, name));
    return ready?.status === "False" && ready.reason === reason && (message === undefined || ready.message === message)
      ? ready
      : undefined;
  });

/** The names of the IPAddresses of `namespace`, sorted. */
export async function recordNames(k: InClusterClients, namespace: string): Promise<string[]> {
  return (await k.addresses.list(namespace)).items.map((a) => a.metadata.name ?? "").sort();
}

/**
 * A claim that got no address: no finalizer, no addressRef, Ready not True. (A claim created right after its pool or
 * Cluster may carry Ready=False "... not found" from a pass that ran before they reached the controller's cache; a
 * pause leaves that status as it is.)
 */
export const unallocated = (claim: IPAddressClaim): boolean =>
  (claim.metadata.finalizers ?? []).length === 0 &&
  claim.status?.addressRef === undefined &&
  readyOf(claim)?.status !== "True";

/** A claim nobody served: no finalizer and no status. */
export const untouched = (claim: IPAddressClaim): boolean =>
  (claim.metadata.finalizers ?? []).length === 0 && claim.status === undefined;

/** An owner reference with the two flags made explicit (absent = false), for exact comparison. */
export function owner(o: Pick<OwnerReference, "apiVersion" | "kind" | "name" | "uid"> & Partial<OwnerReference>) {
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    name: o.name,
    uid: o.uid,
    controller: o.controller ?? false,
    blockOwnerDeletion: o.blockOwnerDeletion ?? false,
  };
}

/** The two owners the provider sets: the claim (controller, blockOwnerDeletion), the pool (blockOwnerDeletion). */
export function providerOwners(claim: IPAddressClaim, pool: InClusterIPPool, kind: InClusterKind) {
  return [
    owner({
      apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM),
      kind: "IPAddressClaim",
      name: claim.metadata.name ?? "",
      uid: claim.metadata.uid ?? "",
      controller: true,
      blockOwnerDeletion: true,
    }),
    owner({
      apiVersion: apiVersionOf(kind === IN ? INCLUSTER_IPPOOL : GLOBAL_INCLUSTER_IPPOOL),
      kind,
      name: pool.metadata.name ?? "",
      uid: pool.metadata.uid ?? "",
      blockOwnerDeletion: true,
    }),
  ];
}

export interface ExpectedRecord {
  claim: IPAddressClaim;
  pool: InClusterIPPool;
  kind: InClusterKind;
  address: string;
  prefix: number;
  gateway?: string;
  /** The claim's cluster-name label, copied. */
  cluster?: string;
  /** Owners the record had before (adoption), kept in front. */
  foreignOwners?: ReturnType<typeof owner>[];
}

/**
 * A record's labels as the provider compares them: without our one label (`ipam.metal3.io/pool-name`, which the
 * provider does not read), after checking that label names `pool` when the record has it.
 */
export function providerLabels(record: CapiIPAddress, pool: string): Record<string, string> {
  const { [RECORD_POOL_LABEL]: ours, ...labels } = record.metadata.labels ?? {};
  if (ours !== undefined) expect(ours, "record pool label").to.equal(pool);
  return labels;
}

/** The IPAddress the provider writes for a claim, field by field (docs/incluster.md "Behaviour"). */
export function expectRecord(record: CapiIPAddress, want: ExpectedRecord): void {
  const name = want.claim.metadata.name ?? "";
  expect(record.metadata.name, "record name").to.equal(name);
  expect(record.metadata.namespace, "record namespace").to.equal(want.claim.metadata.namespace);
  expect(record.spec, "record spec").to.deep.equal({
    claimRef: { name },
    poolRef: ref(want.kind, want.pool.metadata.name ?? ""),
    address: want.address,
    prefix: want.prefix,
    ...(want.gateway !== undefined ? { gateway: want.gateway } : {}),
  });
  expect(record.metadata.finalizers, "record finalizers").to.deep.equal([PROTECT_ADDRESS_FINALIZER]);
  expect(providerLabels(record, want.pool.metadata.name ?? ""), "record labels").to.deep.equal(
    want.cluster ? { [CLUSTER_NAME_LABEL]: want.cluster } : {},
  );
  expect((record.metadata.ownerReferences ?? []).map(owner), "record owners").to.deep.equal([
    ...(want.foreignOwners ?? []),
    ...providerOwners(want.claim, want.pool, want.kind),
  ]);
}

/** A claim bound as the provider binds it (finalizer, addressRef), plus our Ready=True condition. */
export function expectBoundClaim(claim: IPAddressClaim, recordName: string, address: string): void {
  expect(claim.metadata.finalizers, "claim finalizers").to.deep.equal([RELEASE_ADDRESS_FINALIZER]);
  expect(claim.status?.addressRef, "claim addressRef").to.deep.equal({ name: recordName });
  const ready = readyOf(claim);
  expect(ready, "claim Ready").to.include({ status: "True", reason: "Allocated", message: `Allocated ${address}` });
}

/** Waits until the pool's status counts are exactly `counts`. */
export async function waitCounts(
  k: InClusterClients,
  kind: InClusterKind,
  namespace: string,
  name: string,
  counts: { total: number; used: number; free: number; outOfRange: number },
): Promise<void> {
  let last: unknown;
  await eventually(
    `${kind} ${name} counts ${JSON.stringify(counts)}`,
    async () => {
      last = (await poolClient(k, kind).get(namespace, name)).status?.ipAddresses;
      expect(last).to.deep.equal(counts);
      return true;
    },
    15_000,
  ).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)} (last seen ${JSON.stringify(last)})`);
  });
}

/** One row of the provider's usage-count table (inclusterippool_test.go), with the addresses its claims get. */
export interface CountRow {
  name: string;
  addresses: string[];
  prefix: number;
  gateway?: string;
  total: number;
  /** The addresses the row's claims get, in creation order (their number is `used`). */
  allocated: string[];
}

export const COUNT_ROWS: CountRow[] = [
  { name: "nogw-one", addresses: ["10.0.0.10-10.0.0.20"], prefix: 24, total: 11, allocated: ["10.0.0.10"] },
  {
    name: "nogw-two",
    addresses: ["10.0.0.10-10.0.0.20"],
    prefix: 24,
    total: 11,
    allocated: ["10.0.0.10", "10.0.0.11"],
  },
  {
    name: "gw-inside",
    addresses: ["10.0.0.10-10.0.0.20"],
    prefix: 24,
    gateway: "10.0.0.10",
    total: 10,
    allocated: ["10.0.0.11", "10.0.0.12"],
  },
  {
    name: "gw-outside",
    addresses: ["10.0.0.10-10.0.0.20"],
    prefix: 24,
    gateway: "10.0.0.1",
    total: 11,
    allocated: ["10.0.0.10"],
  },
  // The network address of (first address)/prefix is not handed out.
  {
    name: "network",
    addresses: ["10.0.0.0-10.0.0.1"],
    prefix: 24,
    gateway: "10.0.0.2",
    total: 1,
    allocated: ["10.0.0.1"],
  },
  // Nor the IPv4 broadcast.
  {
    name: "broadcast",
    addresses: ["10.0.0.254-10.0.0.255"],
    prefix: 24,
    gateway: "10.0.0.1",
    total: 1,
    allocated: ["10.0.0.254"],
  },
  // IPv6 has no broadcast: the last address of the subnet is handed out.
  { name: "v6-last", addresses: ["fe80::ffff"], prefix: 120, gateway: "fe80::a", total: 1, allocated: ["fe80::ffff"] },
];
