/** Carries out claim actions decided by plan.ts: the only place claim and IPAddress writes of the pool controller happen. */
import {
  IPADDRESS_FINALIZER,
  IPCLAIM_FINALIZER,
  IPCLAIM_KIND,
  READY_CONDITION,
  Reasons,
  type IPAddress,
  type IPClaim,
  type ObjectReference,
  type Reason,
} from "../../../api/v1alpha1/types.js";
import type { Holder } from "../../ipam/allocator.js";
import { describeError, isAlreadyExists, isInvalid, isLostRace, isNotFound } from "../../kube/errors.js";
import { conditionUnchanged } from "../conditions.js";
import { lostRace, NONE, REQUEUE, type PassOutcome } from "../pools/outcome.js";
import type { ApplyContext } from "../pools/pass.js";
import { metal3Caches } from "./caches.js";
import { boundByMetal3, claimStatusPatch } from "./claimstatus.js";
import type { ClaimAction } from "./plan.js";

/**
 * Applies one action; resolves to what it asks of the pool's next pass (a lost race: REQUEUE). Transient API errors
 * propagate (the queue retries with backoff); decisions never throw.
 */
export async function applyClaimAction(ctx: ApplyContext, action: ClaimAction): Promise<PassOutcome> {
  switch (action.kind) {
    case "skip":
      return NONE;
    case "release":
      await release(ctx, action.claim, action.addresses);
      return NONE;
    case "bind": {
      const outcome = await bind(ctx, action.claim, action.address);
      if (outcome !== NONE) return outcome;
      await releaseDuplicates(ctx, action.claim, action.duplicates ?? []);
      return NONE;
    }
    case "redo":
      for (const address of action.addresses) await unconfirmed(ctx, action.claim, address);
      return action.addresses.length > 0 ? REQUEUE : NONE;
    case "create":
      return await create(ctx, action.claim, action.address);
    case "fail":
      await failClaim(ctx, action.claim, action.reason, action.message);
      return NONE;
  }
}

/** Spec §3.5 order: IPAddress finalizer off, IPAddress deleted, `status.address` cleared, the claim's finalizer off. */
async function release(ctx: ApplyContext, claim: IPClaim, addresses: IPAddress[]): Promise<void> {
  for (const address of addresses) await releaseAddress(ctx, address);
  let current: IPClaim | undefined = claim;
  if (claim.status?.address) {
    try {
      current = await ctx.store.patchStatus(metal3Caches(ctx.store).claims, claim, { address: null });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return;
    }
  }
  await ctx.store.removeFinalizer(metal3Caches(ctx.store).claims, current, IPCLAIM_FINALIZER);
  if (addresses.length > 0)
    ctx.log.info("Released IPAddress", { claim: claim.metadata.name, addresses: addresses.map((a) => a.spec.address) });
}

/** Removes our finalizer from an IPAddress and deletes it; frees the address in this pass's allocator. */
export async function releaseAddress(ctx: ApplyContext, address: IPAddress): Promise<void> {
  const unlocked = await ctx.store.removeFinalizer(metal3Caches(ctx.store).addresses, address, IPADDRESS_FINALIZER);
  if (unlocked) await ctx.store.delete(metal3Caches(ctx.store).addresses, unlocked);
  ctx.allocator?.release(address.spec.address, holderOf(address));
  ctx.metrics.release("released");
}

/** Releases extra IPAddresses made for an already bound claim (see planClaim), after its status names the kept one. */
async function releaseDuplicates(ctx: ApplyContext, claim: IPClaim, duplicates: IPAddress[]): Promise<void> {
  for (const address of duplicates) {
    ctx.log.warn("Releasing duplicate IPAddress of a claim", {
      claim: claim.metadata.name,
      ipAddress: address.metadata.name,
      address: address.spec.address,
    });
    await releaseAddress(ctx, address);
  }
}

async function ensureClaimFinalizer(ctx: ApplyContext, claim: IPClaim): Promise<IPClaim> {
  return await ctx.store.addFinalizer(metal3Caches(ctx.store).claims, claim, IPCLAIM_FINALIZER);
}

/**
 * Binds `claim` to `address`: the claim's finalizer, then its status. A claim write refused with 409 or 404 (the claim
 * changed or went since the cache showed it) is a lost race: REQUEUE, the record kept and still held.
 */
async function bind(ctx: ApplyContext, claim: IPClaim, address: IPAddress): Promise<PassOutcome> {
  try {
    const withFinalizer = await ensureClaimFinalizer(ctx, claim);
    if (boundByMetal3(withFinalizer, address)) return NONE;
    await writeClaimStatus(
      ctx,
      withFinalizer,
      { name: address.metadata.name ?? "", namespace: address.metadata.namespace ?? "" },
      undefined,
      {
        reason: Reasons.Allocated,
        message: `Allocated ${address.spec.address}`,
      },
    );
    return NONE;
  } catch (err) {
    if (isLostRace(err)) return lostRace(ctx.log, { claim: claim.metadata.name }, err);
    throw err;
  }
}

async function create(ctx: ApplyContext, claim: IPClaim, address: IPAddress): Promise<PassOutcome> {
  let withFinalizer: IPClaim;
  try {
    // The finalizer comes first: a claim deleted between our decision and the create then cannot leak the address.
    withFinalizer = await ensureClaimFinalizer(ctx, claim);
  } catch (err) {
    ctx.allocator?.release(address.spec.address, holderOf(address));
    if (isLostRace(err)) return lostRace(ctx.log, { claim: claim.metadata.name }, err);
    throw err;
  }
  let created: IPAddress;
  const started = performance.now();
  try {
    created = await ctx.store.create(metal3Caches(ctx.store).addresses, address);
  } catch (err) {
    if (isAlreadyExists(err)) {
      // Someone holds that name and our cache did not show it yet: learn it, keep the address taken, retry the pass.
      await ctx.store.fetch(
        metal3Caches(ctx.store).addresses,
        address.metadata.namespace ?? "",
        address.metadata.name ?? "",
      );
      return lostRace(ctx.log, { claim: claim.metadata.name }, err);
    }
    ctx.allocator?.release(address.spec.address, holderOf(address));
    if (isInvalid(err)) {
      const message = `IPAddress ${address.metadata.name ?? ""} was rejected: ${describeError(err)}`;
      await failClaim(ctx, withFinalizer, Reasons.AllocationFailed, message);
      return NONE;
    }
    throw err;
  }
  if (ctx.confirm && !(await ctx.confirm("IPAddress", created))) {
    await unconfirmed(ctx, claim, created);
    return REQUEUE;
  }
  ctx.log.info("Allocated IPAddress", {
    claim: claim.metadata.name,
    address: created.spec.address,
    ipAddress: created.metadata.name,
  });
  const bound = await bind(ctx, withFinalizer, created);
  ctx.metrics.allocation("allocated", (performance.now() - started) / 1000);
  return bound;
}

/** A record we made whose address another record turned out to hold: released unbound (the pool runs again). */
async function unconfirmed(ctx: ApplyContext, claim: IPClaim, created: IPAddress): Promise<void> {
  ctx.log.warn("Released a new IPAddress: another record holds its address", {
    claim: claim.metadata.name,
    address: created.spec.address,
    ipAddress: created.metadata.name,
  });
  await releaseAddress(ctx, created);
}

/** The allocator's holder for an IPAddress: its IPClaim when it names one, else the object itself (a reservation). */
export function holderOf(address: IPAddress): Holder {
  const claimName = address.spec?.claim?.name;
  return claimName
    ? { kind: "claim", claimName, claimKind: IPCLAIM_KIND }
    : { kind: "other", description: `IPAddress ${address.metadata.name ?? ""}` };
}

export async function failClaim(ctx: ApplyContext, claim: IPClaim, reason: Reason, message: string): Promise<void> {
  const changed = !conditionUnchanged(claim.status?.conditions, {
    type: READY_CONDITION,
    status: "False",
    reason,
    message,
  });
  await writeClaimStatus(ctx, claim, claim.status?.address, message, { reason, message });
  if (changed) {
    ctx.metrics.allocation(reason);
    ctx.events.record(claim, "Warning", reason, message);
    ctx.log.info("Allocation failed", { claim: claim.metadata.name, reason, message });
  }
}

/** Writes the claim's status when it differs: address, errorMessage (cleared with null) and the Ready condition. */
async function writeClaimStatus(
  ctx: ApplyContext,
  claim: IPClaim,
  address: ObjectReference | undefined,
  errorMessage: string | undefined,
  ready: { reason: Reason; message: string },
): Promise<void> {
  const patch = claimStatusPatch(claim, address, errorMessage, ready, ctx.now);
  if (!patch) return;
  try {
    await ctx.store.patchStatus(metal3Caches(ctx.store).claims, claim, patch);
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
}
