/**
 * Metal3's IPPool (`ipam.metal3.io/v1alpha1`) as a pool kind: Metal3 entries and preallocations, records named
 * `<namePrefix>-<address>`, Cluster labels and owner reference on the pool, and a status with indexes, counts and a
 * Ready condition (spec §1, §3, §4). Served for IPClaims and IPAddressClaims alike.
 */
import isEqual from "lodash/isEqual.js";
import { IPADDRESSCLAIM_FINALIZER, CAPI_IPADDRESS_FINALIZER } from "../../../api/capi/types.js";
import { apiVersionOf, CLUSTER, IPPOOL } from "../../../api/registry.js";
import {
  CLUSTER_NAME_LABEL,
  IPPOOL_FINALIZER,
  PROVIDER_LABEL,
  PROVIDER_NAME,
  type IPAddress,
  type IPPool,
  type IPPoolStatus,
  type ObjectMeta,
  type OwnerReference,
} from "../../../api/v1alpha1/types.js";
import type { CapiIPAddress } from "../../../api/capi/types.js";
import { compileSteps, PoolAllocator } from "../../ipam/allocator.js";
import { ipAddressName } from "../../ipam/naming.js";
import type { Cluster } from "../clusters.js";
import { METAL3_STYLE, type KindContext, type PoolKind, type StatusDecision, type StatusInput } from "../pools/kind.js";
import { BY_NAMESPACE } from "../pools/indexes.js";
import { SpecCache } from "../pools/speccache.js";
import { desiredPoolStatus, indexesPatch, sameStatus } from "./status.js";
import { metal3Caches } from "./caches.js";

/** Each IPPool's spec compiled and validated once per generation (pools/speccache.ts). */
export const metal3Specs = new SpecCache((pool: IPPool) => compileSteps(pool.spec));

/** The spec error of an IPPool stored without a spec. */
const NO_SPEC = "spec is missing: the pool has no namePrefix and no address ranges";

export const METAL3_POOL_KIND: PoolKind<IPPool> = {
  descriptor: IPPOOL,
  style: METAL3_STYLE,
  finalizers: { pool: IPPOOL_FINALIZER, claim: IPADDRESSCLAIM_FINALIZER, record: CAPI_IPADDRESS_FINALIZER },

  clusterName: (pool) => pool.spec?.clusterName || undefined,

  poolMetadata(pool, cluster, unpaused) {
    const clusterName = pool.spec?.clusterName;
    const labels = { ...(pool.metadata.labels ?? {}) };
    if (clusterName) Object.assign(labels, { [CLUSTER_NAME_LABEL]: clusterName, [PROVIDER_LABEL]: PROVIDER_NAME });
    const owners = [...(pool.metadata.ownerReferences ?? [])];
    if (cluster && !owners.some((o) => o.kind === CLUSTER.kind && o.uid === cluster.metadata.uid)) {
      owners.push(clusterOwnerRef(cluster));
    }
    const finalizers = pool.metadata.finalizers ?? [];
    const patch: Partial<ObjectMeta> = {
      ...(finalizers.includes(IPPOOL_FINALIZER) || !unpaused ? {} : { finalizers: [...finalizers, IPPOOL_FINALIZER] }),
      ...(isEqual(labels, pool.metadata.labels ?? {}) ? {} : { labels }),
      ...(owners.length === (pool.metadata.ownerReferences ?? []).length ? {} : { ownerReferences: owners }),
    };
    return Object.keys(patch).length === 0 ? undefined : patch;
  },

  // A pool stored without a spec (the CRD does not require one) is an empty space with that error: it reports
  // InvalidSpec and its claims are told why they get nothing.
  openAllocator: async (pool) =>
    pool.spec
      ? new PoolAllocator(await metal3Specs.load(pool))
      : PoolAllocator.fromSpace({ entries: [], specErrors: [NO_SPEC] }),

  reserveForeign: (pool, allocator, ctx) => reserveForeignNames(pool, allocator, ctx),

  recordName: (pool, _claimName, address) => ipAddressName(pool.spec.namePrefix, address),

  describeNameCollision: (pool, name, address, otherPool) =>
    `IPAddress ${name} for ${address} already exists and belongs to IPPool ${otherPool} (same namePrefix "${pool.spec.namePrefix}"); address skipped`,

  preallocated: (pool, claimName) => pool.spec?.preAllocations?.[claimName] !== undefined,

  desiredStatus: (pool, input) => metal3Status(pool, input),
};

/**
 * Addresses whose record name is already taken by another pool's IPAddress (same namePrefix, spec §3.6) are held
 * and reported as collisions, so the pass skips them instead of looping on AlreadyExists.
 */
function reserveForeignNames(pool: IPPool, allocator: PoolAllocator, ctx: KindContext): string[] {
  const collisions: string[] = [];
  for (const other of metal3Caches(ctx.store).addresses.byIndex(BY_NAMESPACE, pool.metadata.namespace ?? "")) {
    const owner = other.spec?.pool?.name;
    const address = other.spec?.address;
    const name = other.metadata.name;
    if (owner === pool.metadata.name || !address || !allocator.contains(address)) continue;
    if (ipAddressName(pool.spec.namePrefix, address) !== name) continue;
    allocator.reserve(address, { kind: "other", description: `IPAddress ${name} of IPPool ${owner ?? ""}` });
    collisions.push(
      `IPAddress ${name} of IPPool ${owner ?? ""} holds the name this pool would give ${address} (shared namePrefix "${pool.spec.namePrefix}"); the address is skipped`,
    );
  }
  return collisions;
}

/** Indexes, counts and the Ready condition (spec §1.1); metrics of capacity and waiting claims on the way. */
function metal3Status(pool: IPPool, input: StatusInput): StatusDecision | undefined {
  const { records, allocator } = input;
  const health = { specErrors: allocator.specErrors, collisions: input.collisions };
  const status = desiredPoolStatus(
    pool,
    records.addresses as IPAddress[],
    records.capiAddresses as CapiIPAddress[],
    allocator.capacity(),
    health,
    input.now,
  );
  input.metrics.poolCapacity(input.ref, status.total ?? 0, status.used ?? 0, status.free ?? 0);
  input.metrics.pendingClaims(input.ref, records.pending);
  if (sameStatus(status, pool.status) || adoptedAsIs(pool, status)) return undefined;
  const before = pool.status?.conditions?.find((c) => c.type === "Ready");
  const after = status.conditions?.find((c) => c.type === "Ready");
  const newlyNotReady =
    after && after.status === "False" && (before?.reason !== after.reason || before?.message !== after.message);
  return {
    patch: { ...status, indexes: indexesPatch(pool.status, status) },
    viewOnly: pool.status !== undefined && isEqual(pool.status.conditions, status.conditions),
    ...(newlyNotReady ? { notReady: { reason: after.reason, message: after.message } } : {}),
  };
}

/**
 * A ready pool whose status Metal3's controller wrote (indexes, no conditions) and whose indexes are still right is
 * left as it is: a migration rewrites nothing. Our counts and condition appear with the next change.
 */
function adoptedAsIs(pool: IPPool, desired: IPPoolStatus): boolean {
  const current = pool.status;
  const ready = desired.conditions?.find((c) => c.type === "Ready")?.status === "True";
  return (
    ready &&
    current?.conditions === undefined &&
    current?.indexes !== undefined &&
    isEqual(current.indexes, desired.indexes)
  );
}

function clusterOwnerRef(cluster: Cluster): OwnerReference {
  return {
    apiVersion: cluster.apiVersion ?? apiVersionOf(CLUSTER),
    kind: CLUSTER.kind,
    name: cluster.metadata.name ?? "",
    uid: cluster.metadata.uid ?? "",
  };
}
