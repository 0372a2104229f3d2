/**
 * The Cluster API in-cluster IPAM provider's pools as pool kinds: `InClusterIPPool` (namespaced) and
 * `GlobalInClusterIPPool` (cluster-scoped, claims of every namespace), served as that provider serves them
 * (docs/incluster.md): the lowest free address of `addresses` minus excluded, reserved and gateway; records named after
 * their claim with its finalizers; counts in `status.ipAddresses`. Only IPAddressClaims use them.
 */
import {
  PROTECT_ADDRESS_FINALIZER,
  PROTECT_POOL_FINALIZER,
  RELEASE_ADDRESS_FINALIZER,
  type InClusterIPPool,
  type InClusterIPPoolStatus,
} from "../../../api/incluster/types.js";
import { GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL, type ResourceDescriptor } from "../../../api/registry.js";
import { compileSteps, PoolAllocator } from "../../ipam/allocator.js";
import { inClusterSpaceSteps, inClusterUsage } from "../../ipam/incluster.js";
import { poolKindRules } from "../pools/rbac.js";
import { PROVIDER_STYLE, type PoolKind, type StatusDecision, type StatusInput } from "../pools/kind.js";
import { SpecCache } from "../pools/speccache.js";

/**
 * Each in-cluster pool's allocatable set, problems and scan order, computed once per generation
 * (pools/speccache.ts), for its allocators and its status. Pools of both kinds have uids of their own.
 */
export const inClusterSpecs = new SpecCache(function* (pool: InClusterIPPool) {
  const space = yield* inClusterSpaceSteps(pool.spec);
  return { space, compiled: yield* compileSteps(space) };
});

function inClusterKind(descriptor: ResourceDescriptor): PoolKind<InClusterIPPool> {
  return {
    descriptor,
    style: PROVIDER_STYLE,
    finalizers: { pool: PROTECT_POOL_FINALIZER, claim: RELEASE_ADDRESS_FINALIZER, record: PROTECT_ADDRESS_FINALIZER },
    // These pools name no Cluster; their claims do (spec.clusterName or the cluster-name label).
    clusterName: () => undefined,
    poolMetadata(pool, _cluster, unpaused) {
      const finalizers = pool.metadata.finalizers ?? [];
      if (!unpaused || finalizers.includes(PROTECT_POOL_FINALIZER)) return undefined;
      return { finalizers: [...finalizers, PROTECT_POOL_FINALIZER] };
    },
    openAllocator: async (pool) => new PoolAllocator((await inClusterSpecs.load(pool)).compiled),
    recordName: (_pool, claimName) => claimName,
    describeNameCollision: (_pool, name, _address, otherPool) =>
      `IPAddress ${name} already exists and belongs to pool ${otherPool}; it is not this claim's`,
    preallocated: () => false,
    releaseGraceSeconds: (pool) => pool.spec.addressReuseGracePeriodSeconds,
    desiredStatus: (pool, input) => inClusterStatus(pool, input),
  };
}

/**
 * `status.ipAddresses` from the pool's records, as the provider counts (docs/incluster.md); the same counts, and the
 * claims waiting, as the pool's metrics series (like Metal3 pools', so one alert serves every kind).
 */
function inClusterStatus(pool: InClusterIPPool, input: StatusInput): StatusDecision | undefined {
  const usage = inClusterUsage(
    inClusterSpecs.get(pool).space,
    input.records.capiAddresses.map((r) => r.spec.address),
  );
  input.metrics.poolCapacity(input.ref, usage.total, usage.used, usage.free);
  input.metrics.pendingClaims(input.ref, input.records.pending);
  const current = pool.status?.ipAddresses;
  if (
    current &&
    current.total === usage.total &&
    current.used === usage.used &&
    current.free === usage.free &&
    current.outOfRange === usage.outOfRange
  )
    return undefined;
  const status: InClusterIPPoolStatus = { ipAddresses: usage };
  // Counts are a view: changes after the first write are coalesced like Metal3's indexes.
  return { patch: status, viewOnly: current !== undefined };
}

/** `InClusterIPPool`: namespaced; claims of its namespace. */
export const INCLUSTER_POOL_KIND = inClusterKind(INCLUSTER_IPPOOL);
/** `GlobalInClusterIPPool`: cluster-scoped; claims of every namespace. */
export const GLOBAL_INCLUSTER_POOL_KIND = inClusterKind(GLOBAL_INCLUSTER_IPPOOL);

/** RBAC for serving the in-cluster kinds: the pools, their status, and owner references with blockOwnerDeletion. */
export const INCLUSTER_RULES = poolKindRules(INCLUSTER_IPPOOL, GLOBAL_INCLUSTER_IPPOOL);
