/**
 * Carries out Cluster API claim actions decided by plan.ts, inside the pool pass (the same queue slot and allocator
 * as IPClaims, spec §3.4): the only place IPAddressClaim and Cluster API IPAddress writes happen.
 */
import { IPADDRESSCLAIM_KIND, type CapiIPAddress, type IPAddressClaim } from "../../../api/capi/types.js";
import { Reasons } from "../../../api/v1alpha1/types.js";
import type { Holder } from "../../ipam/allocator.js";
import { describeError, isAlreadyExists, isConflict, isInvalid, isLostRace, isNotFound } from "../../kube/errors.js";
import type { PoolKind } from "../pools/kind.js";
import { lostRace, NONE, REQUEUE, wakeIn, type PassOutcome } from "../pools/outcome.js";
import type { ApplyContext, Pass } from "../pools/pass.js";
import type { CapiInformers } from "../store.js";
import type { CapiClaimAction } from "./plan.js";
import {
  capiClaimClusterName,
  capiHolderName,
  capiBoundByMetal3,
  capiReason,
  claimStatusWrite,
  recordRepair,
  type ReadyInput,
} from "./translate.js";

/**
 * Applies one action; resolves to what it asks of the pool's next pass (a lost race: REQUEUE; a grace period: a wake
 * when it ends). Transient API errors propagate (the queue retries with backoff); decisions never throw.
 */
export async function applyCapiClaimAction(
  pass: Pass,
  capi: CapiInformers,
  action: CapiClaimAction,
): Promise<PassOutcome> {
  const { ctx, kind } = pass;
  switch (action.kind) {
    case "skip":
      return NONE;
    case "release":
      await releaseExternal(pass, action.claim);
      await release(ctx, kind, capi, action.claim, action.addresses);
      return NONE;
    case "hold":
      // The address stays held by its record; the pool runs again when the period ends (the claim stays unsettled,
      // so every pass in between plans it again and asks anew).
      ctx.log.debug("Address reuse grace period: the release waits", {
        ipAddressClaim: action.claim.metadata.name,
        releaseInMs: action.releaseInMs,
      });
      return wakeIn(Math.ceil(action.releaseInMs));
    case "bind": {
      const outcome = await bind(pass, capi, action.claim, action.address);
      if (outcome !== NONE) return outcome;
      for (const duplicate of action.duplicates) {
        ctx.log.warn("Releasing duplicate IPAddress of an IPAddressClaim", {
          claim: action.claim.metadata.name,
          ipAddress: duplicate.metadata.name,
        });
        await releaseCapiAddress(ctx, kind, capi, duplicate);
      }
      return NONE;
    }
    case "redo":
      for (const address of action.addresses) await unconfirmed(ctx, kind, capi, action.claim, address);
      return action.addresses.length > 0 ? REQUEUE : NONE;
    case "create":
      return await create(pass, capi, action.claim, action.address);
    case "fail":
      await writeStatus(ctx, capi, action.claim, undefined, {
        status: "False",
        reason: capiReason(action.reason),
        message: action.message,
      });
      return NONE;
  }
}

/** Spec §5.7 order: the IPAddress's finalizer off, the IPAddress deleted, the address freed, the claim's finalizer off. */
async function release(
  ctx: ApplyContext,
  kind: PoolKind,
  capi: CapiInformers,
  claim: IPAddressClaim,
  addresses: CapiIPAddress[],
): Promise<void> {
  for (const address of addresses) await releaseCapiAddress(ctx, kind, capi, address);
  await ctx.store.removeFinalizer(capi.claims, claim, kind.finalizers.claim);
  if (addresses.length > 0)
    ctx.log.info("Released IPAddress", {
      ipAddressClaim: claim.metadata.name,
      addresses: addresses.map((a) => a.spec.address),
    });
}

/**
 * Gives back what an external engine (NetBox) recorded for `claim`, before anything is released here: if the engine
 * cannot be reached the pass fails, the claim keeps its finalizer and the release is retried, so nothing is left
 * behind in the engine. A pool that is gone names no engine to ask: logged, and the release goes on.
 */
async function releaseExternal(pass: Pass, claim: IPAddressClaim): Promise<void> {
  const { kind, pool, ctx } = pass;
  if (!kind.external) return;
  const identity = {
    namespace: claim.metadata.namespace ?? "",
    name: claim.metadata.name ?? "",
    cluster: capiClaimClusterName(claim, kind, pool),
  };
  if (!pool) {
    ctx.log.warn("Pool is gone: its engine's record of the claim cannot be released", identity);
    return;
  }
  await kind.external.release(pool, identity, { store: ctx.store, log: ctx.log });
}

/** The allocator's holder of a Cluster API IPAddress in a pool of `kind`: its claim. */
export function capiRecordHolder(kind: PoolKind, address: CapiIPAddress): Holder {
  return {
    kind: "claim",
    claimName: capiHolderName(kind, address.metadata.namespace ?? "", address.spec?.claimRef?.name ?? ""),
    claimKind: IPADDRESSCLAIM_KIND,
  };
}

/** Removes the kind's finalizer from a Cluster API IPAddress and deletes it; frees the address in this pass's allocator. */
export async function releaseCapiAddress(
  ctx: ApplyContext,
  kind: PoolKind,
  capi: CapiInformers,
  address: CapiIPAddress,
): Promise<void> {
  const unlocked = await ctx.store.removeFinalizer(capi.addresses, address, kind.finalizers.record);
  if (unlocked) await ctx.store.delete(capi.addresses, unlocked);
  ctx.allocator?.release(address.spec.address, capiRecordHolder(kind, address));
  ctx.metrics.release("released");
}

/**
 * Binds `claim` to `address`: the claim's finalizer, the record's repair, the claim's status. A write refused with 409
 * or 404 (the claim or the record changed or went since the cache showed it) is a lost race: REQUEUE, the record kept
 * and still held.
 */
async function bind(
  pass: Pass,
  capi: CapiInformers,
  claim: IPAddressClaim,
  address: CapiIPAddress,
): Promise<PassOutcome> {
  const { ctx, kind, pool } = pass;
  let withFinalizer: IPAddressClaim;
  try {
    withFinalizer = await ctx.store.addFinalizer(capi.claims, claim, kind.finalizers.claim);
  } catch (err) {
    if (isLostRace(err)) return lostRace(ctx.log, { ipAddressClaim: claim.metadata.name }, err);
    throw err;
  }
  // An adopted record (Metal3's, the in-cluster provider's, or a restore) gets the kind's finalizer too, and the
  // owners it lacks where the kind repairs them; a deleting one stays as it is (its deletion is blocked by the
  // finalizer until the claim goes, spec §5.8).
  const repair = address.metadata.deletionTimestamp ? undefined : recordRepair(kind, pool, withFinalizer, address);
  try {
    if (repair) await ctx.store.patchMetadata(capi.addresses, address, repair);
  } catch (err) {
    if (isLostRace(err)) return lostRace(ctx.log, { ipAddressClaim: claim.metadata.name }, err);
    throw err;
  }
  if (capiBoundByMetal3(withFinalizer, address)) return NONE;
  return await writeAllocated(ctx, capi, withFinalizer, address);
}

/**
 * The claim's Ready=True naming `address`. A 409 (the claim changed since the cache showed it) is a lost race:
 * REQUEUE, and the next pass binds the claim to its record; writeStatus already takes a 404 as done.
 */
async function writeAllocated(
  ctx: ApplyContext,
  capi: CapiInformers,
  claim: IPAddressClaim,
  address: CapiIPAddress,
): Promise<PassOutcome> {
  try {
    await writeStatus(ctx, capi, claim, address.metadata.name ?? "", {
      status: "True",
      reason: Reasons.Allocated,
      message: `Allocated ${address.spec.address}`,
    });
    return NONE;
  } catch (err) {
    if (isConflict(err)) return lostRace(ctx.log, { ipAddressClaim: claim.metadata.name }, err);
    throw err;
  }
}

/** A record we made whose address another record turned out to hold: released unbound (the pool runs again). */
async function unconfirmed(
  ctx: ApplyContext,
  kind: PoolKind,
  capi: CapiInformers,
  claim: IPAddressClaim,
  created: CapiIPAddress,
): Promise<void> {
  ctx.log.warn("Released a new IPAddress: another record holds its address", {
    ipAddressClaim: claim.metadata.name,
    address: created.spec.address,
    ipAddress: created.metadata.name,
  });
  await releaseCapiAddress(ctx, kind, capi, created);
}

async function create(
  pass: Pass,
  capi: CapiInformers,
  claim: IPAddressClaim,
  address: CapiIPAddress,
): Promise<PassOutcome> {
  const { ctx, kind } = pass;
  const holder = capiRecordHolder(kind, address);
  let withFinalizer: IPAddressClaim;
  try {
    // The finalizer comes first: a claim deleted between our decision and the create then cannot leak the address,
    // and it marks the claim so that the next pass reads addresses with a quorum read (a lost create answer).
    withFinalizer = await ctx.store.addFinalizer(capi.claims, claim, kind.finalizers.claim);
  } catch (err) {
    ctx.allocator?.release(address.spec.address, holder);
    if (isLostRace(err)) return lostRace(ctx.log, { ipAddressClaim: claim.metadata.name }, err);
    throw err;
  }
  let created: CapiIPAddress;
  const started = performance.now();
  try {
    created = await ctx.store.create(capi.addresses, address);
  } catch (err) {
    if (isAlreadyExists(err)) {
      // Someone holds that name and our cache did not show it yet: learn it, keep the address taken, retry the pass.
      await ctx.store.fetch(capi.addresses, address.metadata.namespace ?? "", address.metadata.name ?? "");
      return lostRace(ctx.log, { ipAddressClaim: claim.metadata.name }, err);
    }
    ctx.allocator?.release(address.spec.address, holder);
    if (isInvalid(err)) {
      const message = `IPAddress ${address.metadata.name ?? ""} was rejected: ${describeError(err)}`;
      await writeStatus(ctx, capi, withFinalizer, undefined, {
        status: "False",
        reason: Reasons.AllocationFailed,
        message,
      });
      return NONE;
    }
    throw err;
  }
  if (ctx.confirm && !(await ctx.confirm("CapiIPAddress", created))) {
    await unconfirmed(ctx, kind, capi, claim, created);
    return REQUEUE;
  }
  ctx.log.info("Allocated IPAddress", {
    ipAddressClaim: claim.metadata.name,
    address: created.spec.address,
    ipAddress: created.metadata.name,
  });
  const outcome = await writeAllocated(ctx, capi, withFinalizer, created);
  ctx.metrics.allocation("allocated", (performance.now() - started) / 1000);
  return outcome;
}

/** Writes the claim's status when it differs; a new failure is also an Event and counts in the metrics. */
async function writeStatus(
  ctx: ApplyContext,
  capi: CapiInformers,
  claim: IPAddressClaim,
  addressName: string | undefined,
  ready: ReadyInput,
): Promise<void> {
  const write = claimStatusWrite(claim, capi.version, addressName, ready, ctx.now);
  if (!write) return;
  try {
    await ctx.store.patchStatus(capi.claims, claim, write.status);
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  if (write.newFailure) {
    ctx.metrics.allocation(ready.reason);
    ctx.events.record(claim, "Warning", ready.reason, ready.message);
    ctx.log.info("Allocation failed", {
      ipAddressClaim: claim.metadata.name,
      reason: ready.reason,
      message: ready.message,
    });
  }
}
