/**
 * The NetBox pool kinds (`NetBoxIPPool`, namespaced; `GlobalNetBoxIPPool`, cluster-scoped): IPAddressClaims whose
 * addresses NetBox hands out. The claim lifecycle is the one every kind shares (capi/); what is NetBox's is the engine
 * (engine.ts): the pass asks it for the claims it is about to serve, and it gives a record back when a claim goes.
 * Records in Kubernetes are named after their claim, with this kind's finalizers; the pool's status is NetBox's view.
 */
import isEqual from "lodash/isEqual.js";
import {
  NETBOX_ADDRESS_FINALIZER,
  NETBOX_CLAIM_FINALIZER,
  NETBOX_POOL_FINALIZER,
  type NetBoxIPPool,
  type NetBoxIPPoolStatus,
} from "../../../api/netbox/types.js";
import type { CapiIPAddress } from "../../../api/capi/types.js";
import { GLOBAL_NETBOX_IPPOOL, NETBOX_IPPOOL, type ResourceDescriptor } from "../../../api/registry.js";
import { Reasons } from "../../../api/v1alpha1/types.js";
import { PoolAllocator, type AddressSpace } from "../../ipam/allocator.js";
import type { CompiledEntry } from "../../ipam/entries.js";
import { setCondition } from "../conditions.js";
import { poolKindRules } from "../pools/rbac.js";
import {
  PROVIDER_STYLE,
  type KindContext,
  type PoolKind,
  type StatusDecision,
  type StatusInput,
} from "../pools/kind.js";
import { isNetBoxError, type NetBoxError } from "../../netbox/client.js";
import type { NetBoxEngine } from "./engine.js";
import type { NetBoxMetrics } from "./metrics.js";
import type { ResolvedParent } from "./parent.js";
import { URL_NOT_ALLOWED_REASON } from "./trust.js";
import { claimedCondition, recordsCondition, type PoolCondition } from "./drift.js";
import { displayOf, sourceSpecsOf, usageOf } from "./sources.js";

function netBoxKind(
  descriptor: ResourceDescriptor,
  engine: NetBoxEngine,
  metrics: NetBoxMetrics,
): PoolKind<NetBoxIPPool> {
  return {
    descriptor,
    style: PROVIDER_STYLE,
    finalizers: { pool: NETBOX_POOL_FINALIZER, claim: NETBOX_CLAIM_FINALIZER, record: NETBOX_ADDRESS_FINALIZER },
    clusterName: () => undefined,
    poolMetadata(pool, _cluster, unpaused) {
      const finalizers = pool.metadata.finalizers ?? [];
      if (!unpaused || finalizers.includes(NETBOX_POOL_FINALIZER)) return undefined;
      return { finalizers: [...finalizers, NETBOX_POOL_FINALIZER] };
    },
    openAllocator: async (pool, ctx) => PoolAllocator.fromSpace(await spaceOf(engine, pool, ctx)),
    recordName: (_pool, claimName) => claimName,
    describeNameCollision: (_pool, name, _address, otherPool) =>
      `IPAddress ${name} already exists and belongs to pool ${otherPool}; it is not this claim's`,
    preallocated: () => false,
    desiredStatus: (pool, input) => netBoxStatus(pool, input, engine, metrics),
    external: engine,
  };
}

/**
 * The allocator's space: the pool's prefixes and ranges in NetBox, one entry each in the order they are tried (each
 * with its own gateway and prefix length), so an address NetBox hands out is refused only when another record of the
 * pool holds it (or it lies outside every source). Opened on every full pass, which also lists the pool's records in
 * NetBox again (a record deleted there is noticed). When NetBox cannot be reached the space is empty and says why;
 * the engine's answers then fail the claims with the reason and the pass is retried.
 */
async function spaceOf(engine: NetBoxEngine, pool: NetBoxIPPool, ctx: KindContext): Promise<AddressSpace> {
  try {
    const parents = await engine.open(pool, ctx);
    const gateways = await engine.gatewaysOf(pool, ctx);
    const specs = sourceSpecsOf(pool.spec);
    return {
      entries: parents.map((p, i) => entryOf(i, p, specs[i]?.addressPrefix, gateways[i])),
      specErrors: [],
    };
  } catch (err) {
    if (!isNetBoxError(err)) throw err;
    const failure = err;
    const retryAfterMs = engine.failed(pool, failure);
    ctx.log.warn("NetBox call failed", { reason: failure.reason, message: failure.message, retryAfterMs });
    return { entries: [], specErrors: [`NetBox: ${failure.reason}: ${failure.message}`] };
  }
}

/** The allocator's entry of source `index`; `gateway` is the source's, or the one NetBox records (gateway.ts). */
function entryOf(
  index: number,
  parent: ResolvedParent,
  addressPrefix: number | undefined,
  gateway: string | undefined,
): CompiledEntry {
  const size = parent.last - parent.first + 1n;
  return {
    index,
    family: parent.family,
    first: parent.first,
    last: parent.last,
    size,
    bounded: true,
    indexSpace: size,
    prefix: addressPrefix ?? parent.prefixLength,
    ...(gateway ? { gateway } : {}),
  };
}

export { RECORDS_CONDITION, RECORD_MISSING_REASON } from "./drift.js";

/**
 * NetBox's utilisation, a Ready condition saying whether NetBox answers, and the drift conditions (drift.ts) with
 * their metric: a record deleted in NetBox under a live claim, and records of ours no live claim holds, are reported
 * (never replaced nor deleted: which side is right is a person's call). Drift is left as last said while the engine
 * does not know the pool's records or claims.
 */
function netBoxStatus(
  pool: NetBoxIPPool,
  input: StatusInput,
  engine: NetBoxEngine,
  metrics: NetBoxMetrics,
): StatusDecision | undefined {
  const { parents, failure } = engine.view(pool);
  const first = parents?.[0];
  const { records, claimed } = driftOf(pool, input, engine, metrics);
  const ready = readyOf(failure, parents);
  const usage = parents && usageOf(parents);
  if (usage) input.metrics.poolCapacity(input.ref, usage.total, usage.used, usage.free);
  input.metrics.pendingClaims(input.ref, input.records.pending);
  const status: NetBoxIPPoolStatus = { ...(pool.status ?? {}) };
  if (parents && first && usage) {
    status.ipAddresses = usage;
    status.netbox = sourceStatus(first);
    status.sources = parents.map((p) => ({ ...sourceStatus(p), ...usageOf([p]) }));
  }
  if (ready) status.conditions = setCondition(pool.status?.conditions, ready, input.now);
  for (const drift of first ? [records, claimed] : [])
    if (drift) status.conditions = setCondition(status.conditions, drift, input.now);
  if (isEqual(status, pool.status ?? {})) return undefined;
  const conditionsSame = isEqual(status.conditions, pool.status?.conditions);
  return {
    patch: status,
    viewOnly: pool.status !== undefined && conditionsSame,
    ...notReadyOf(conditionsSame, failure && ready, records?.status === "False" ? records : undefined),
  };
}

/** The Ready condition: NetBox failing (the failure), or serving the sources; undefined when neither is known yet. */
function readyOf(
  failure: NetBoxError | undefined,
  parents: readonly ResolvedParent[] | undefined,
): PoolCondition | undefined {
  if (failure)
    return {
      type: "Ready",
      status: "False",
      reason: failure.reason === "NotAllowed" ? URL_NOT_ALLOWED_REASON : Reasons.PoolNotReady,
      message: `NetBox: ${failure.reason}: ${failure.message}`,
    };
  return parents && parents.length > 0
    ? { type: "Ready", status: "True", reason: Reasons.PoolReady, message: `Serving NetBox ${displayOf(parents)}` }
    : undefined;
}

const sourceStatus = (p: ResolvedParent) => ({ kind: p.parent.kind, id: p.parent.id, display: p.display });

/** The drift conditions the engine can tell now (none while it does not know), with their metric. */
function driftOf(
  pool: NetBoxIPPool,
  input: StatusInput,
  engine: NetBoxEngine,
  metrics: NetBoxMetrics,
): { records: PoolCondition | undefined; claimed: PoolCondition | undefined } {
  const missing = engine.missingRecords(
    pool,
    (input.records.capiAddresses as CapiIPAddress[]).map((r) => ({
      namespace: r.metadata.namespace ?? "",
      claim: r.spec.claimRef?.name ?? "",
      address: r.spec.address,
    })),
  );
  const unclaimed = engine.unclaimedRecords(pool);
  if (missing && unclaimed) metrics.drift(input.ref, { missing: missing.length, unclaimed: unclaimed.length });
  return { records: missing && recordsCondition(missing), claimed: unclaimed && claimedCondition(unclaimed) };
}

/** The NetBox pool kinds, sharing one engine (one set of connections per NetBox instance) and their metrics. */
export function netBoxPoolKinds(
  engine: NetBoxEngine,
  metrics: NetBoxMetrics,
): [PoolKind<NetBoxIPPool>, PoolKind<NetBoxIPPool>] {
  return [netBoxKind(NETBOX_IPPOOL, engine, metrics), netBoxKind(GLOBAL_NETBOX_IPPOOL, engine, metrics)];
}

/** RBAC for serving the NetBox kinds (their tokens: NETBOX_SECRET_RULES in connect.ts, the controller's namespace). */
export const NETBOX_RULES = poolKindRules(NETBOX_IPPOOL, GLOBAL_NETBOX_IPPOOL);

/**
 * The Warning Event a changed condition deserves: NetBox failing, or records missing there. Unclaimed records get
 * none: a claim being deleted holds its record until its release, which a full pass may see in between.
 */
function notReadyOf(
  conditionsSame: boolean,
  ready: { reason: string; message: string } | undefined,
  records: { reason: string; message: string } | undefined,
): Pick<StatusDecision, "notReady"> {
  const bad = ready ?? records;
  return !conditionsSame && bad ? { notReady: { reason: bad.reason, message: bad.message } } : {};
}
