/**
 * The decision for one Cluster API IPAddressClaim in one pass over its pool (spec §5), as a value. The claim is the
 * allocator's own claim of kind IPAddressClaim: no IPClaim and no ipam.metal3.io IPAddress stands in for it, and its
 * Cluster API IPAddress is its only allocation record. Pure apart from the allocator, as for IPClaims.
 */
import { IPADDRESSCLAIM_KIND, type CapiIPAddress, type IPAddressClaim } from "../../../api/capi/types.js";
import { Reasons, type Reason } from "../../../api/v1alpha1/types.js";
import type { PoolAllocator } from "../../ipam/allocator.js";
import type { PauseState } from "../clusters.js";
import { byName, isDeletedForMove, isDeleting, onlyOurFinalizers } from "../meta.js";
import { allocationRefusal, chooseAddress, requestedAddressOf } from "../pools/choose.js";
import type { ExternalAnswer, PoolKind, PoolObject } from "../pools/kind.js";
import { belongsToCapiClaim, capiHolderName, desiredCapiAddress, madeForCapiClaim, samePool } from "./translate.js";

export type CapiClaimAction =
  | { kind: "skip"; why: string }
  | { kind: "release"; claim: IPAddressClaim; addresses: CapiIPAddress[] }
  /** A deleted claim whose address rests out its pool's reuse grace period: nothing is written; look again then. */
  | { kind: "hold"; claim: IPAddressClaim; releaseInMs: number }
  | { kind: "bind"; claim: IPAddressClaim; address: CapiIPAddress; duplicates: CapiIPAddress[] }
  | { kind: "redo"; claim: IPAddressClaim; addresses: CapiIPAddress[] }
  | { kind: "create"; claim: IPAddressClaim; address: CapiIPAddress }
  | { kind: "fail"; claim: IPAddressClaim; reason: Reason; message: string };

export interface CapiClaimPlanInput {
  claim: IPAddressClaim;
  /** The kind of pool the claim's poolRef names. */
  kind: PoolKind;
  pool: PoolObject | undefined;
  /** Cluster API IPAddresses whose claimRef names this claim; the planner keeps those of its pool and incarnation. */
  claimAddresses: CapiIPAddress[];
  pause: PauseState;
  allocator: PoolAllocator | undefined;
  /** Set when the pool may not hand out new addresses (deleting); preallocated claims are still served. */
  allocationBlocked?: { reason: Reason; message: string };
  /** The claim left this cluster with `clusterctl move` (its deletion carried delete-for-move). */
  movedAway: boolean;
  /** Name lookup of Cluster API IPAddresses in the claim's namespace (name collisions, spec §3.6). */
  addressNamed: (name: string) => CapiIPAddress | undefined;
  onCollision: (message: string) => void;
  /** apiVersion of the Cluster API IPAddresses we write (the served version). */
  addressApiVersion: string;
  /** Whether another record of the pool (of either API) holds the address `record` holds. */
  heldByAnother?: (record: CapiIPAddress) => boolean;
  /** The pass's clock, for the reuse grace period of a deleted claim. */
  now: Date;
  /** The external engine's answers of this pass (kinds with one only), by holder name. */
  external?: ReadonlyMap<string, ExternalAnswer>;
  /** Why the claim's poolRef names no pool (translate.ts, capiClaimTarget); absent for a claim of a named pool. */
  refProblem?: string;
}

/** The next step for `input.claim`. */
export function planCapiClaim(input: CapiClaimPlanInput): CapiClaimAction {
  const { claim, pool, pause } = input;
  if (pause.paused) return { kind: "skip", why: pause.why };
  // Leaving with `clusterctl move`: clusterctl strips the finalizers; releasing or re-creating here would fight it.
  if (isDeletedForMove(claim.metadata) || input.movedAway) return { kind: "skip", why: "moved by clusterctl" };
  const mine = input.claimAddresses.filter((a) => belongsToCapiClaim(a, claim)).sort(byName);
  if (isDeleting(claim.metadata)) return planDeletion(input, mine);
  // Stored without the webhooks: nothing to allocate from until someone fixes the reference; it is told why.
  if (input.refProblem !== undefined) return fail(claim, Reasons.AllocationFailed, input.refProblem);
  // An existing record wins (adoption, spec §5.6); a second one we made can only come from a create whose answer
  // was lost and that was then redone: it is released once the claim names the kept one.
  const kept = mine.find((a) => a.metadata.name === claim.status?.addressRef?.name) ?? mine[0];
  // Made on a stale view and never confirmed (spec §3.4), as for IPClaims.
  if (
    kept &&
    claim.status?.addressRef?.name !== kept.metadata.name &&
    madeForCapiClaim(kept, claim) &&
    input.heldByAnother?.(kept)
  )
    return { kind: "redo", claim, addresses: [kept] };
  if (kept)
    return {
      kind: "bind",
      claim,
      address: kept,
      duplicates: mine.filter((a) => a !== kept && madeForCapiClaim(a, claim)),
    };
  if (!pool || !input.allocator)
    return fail(claim, Reasons.PoolNotReady, `${input.kind.descriptor.kind} ${claim.spec.poolRef.name} not found`);
  if (pause.clusterMissing) return fail(claim, Reasons.PoolNotReady, `Cluster ${pause.clusterMissing} not found`);
  const refusal = allocationRefusal(input.allocationBlocked, input.kind, pool, claim.metadata.name ?? "");
  if (refusal) return fail(claim, refusal.reason, refusal.message);
  return allocate(input, claim, pool, input.allocator);
}

/**
 * A deleted claim: released once no other finalizer is left (spec §5.7) and its pool's reuse grace period, counted
 * from the claim's deletionTimestamp, has passed. The period is skipped when the pool is gone or being deleted (a
 * teardown: nobody will take the address again), as the in-cluster provider skips it.
 */
function planDeletion(input: CapiClaimPlanInput, mine: CapiIPAddress[]): CapiClaimAction {
  const { claim, kind, pool } = input;
  // Another finalizer means the consumer still uses the address (spec §5.7): keep everything and wait.
  if (!onlyOurFinalizers(claim.metadata, [kind.finalizers.claim]))
    return { kind: "skip", why: "waiting for foreign finalizers" };
  const releaseInMs = pool && !isDeleting(pool.metadata) ? graceLeftMs(kind, pool, claim, input.now) : 0;
  if (releaseInMs > 0) return { kind: "hold", claim, releaseInMs };
  return { kind: "release", claim, addresses: mine };
}

/**
 * Milliseconds until `claim`'s deletionTimestamp plus the pool's grace period (0 once passed, or without a period).
 * Computed from the claim alone, so a restarted controller waits exactly as long as the one that saw the delete.
 */
export function graceLeftMs(kind: PoolKind, pool: PoolObject, claim: IPAddressClaim, now: Date): number {
  const seconds = kind.releaseGraceSeconds?.(pool) ?? 0;
  const deleted = Date.parse(claim.metadata.deletionTimestamp ?? "");
  if (!(seconds > 0) || Number.isNaN(deleted)) return 0;
  return Math.max(0, deleted + seconds * 1000 - now.getTime());
}

function fail(claim: IPAddressClaim, reason: Reason, message: string): CapiClaimAction {
  return { kind: "fail", claim, reason, message };
}

function allocate(
  input: CapiClaimPlanInput,
  claim: IPAddressClaim,
  pool: PoolObject,
  allocator: PoolAllocator,
): CapiClaimAction {
  const { kind } = input;
  const choice = chooseAddress({
    claimName: claim.metadata.name ?? "",
    holderName: capiHolderName(kind, claim.metadata.namespace ?? "", claim.metadata.name ?? ""),
    claimKind: IPADDRESSCLAIM_KIND,
    requestedAddress: kind.style.honoursRequests ? requestedAddressOf(claim.metadata) : undefined,
    kind,
    pool,
    allocator,
    nameHeldByOtherPool: (name) => {
      const holder = input.addressNamed(name);
      return holder && !samePool(holder.spec?.poolRef, claim.spec.poolRef)
        ? (holder.spec?.poolRef?.name ?? "?")
        : undefined;
    },
    onCollision: input.onCollision,
    ...(input.external ? { external: input.external } : {}),
  });
  if (!choice.ok) return fail(claim, choice.reason, choice.message);
  return {
    kind: "create",
    claim,
    address: desiredCapiAddress(
      claim,
      kind,
      pool,
      choice.name,
      choice.result,
      input.addressApiVersion,
      choice.annotations,
    ),
  };
}
