/**
 * The decision for one claim in one pass over its pool, as a value. Pure apart from the allocator it is given, whose
 * reservations it updates so that the next claim of the same pass sees this one's address as taken.
 */
import {
  API_VERSION,
  IPADDRESS_FINALIZER,
  IPADDRESS_KIND,
  IPCLAIM_FINALIZER,
  IPCLAIM_KIND,
  IPPOOL_KIND,
  Reasons,
  type IPAddress,
  type IPClaim,
  type IPPool,
  type Reason,
} from "../../../api/v1alpha1/types.js";
import type { PoolAllocator } from "../../ipam/allocator.js";
import type { PauseState } from "../clusters.js";
import { byName, isDeletedForMove, isDeleting, onlyOurFinalizers } from "../meta.js";
import { allocationRefusal, chooseAddress, requestedAddressOf } from "../pools/choose.js";
import { METAL3_POOL_KIND } from "./kind.js";

export type ClaimAction =
  | { kind: "skip"; why: string }
  | { kind: "release"; claim: IPClaim; addresses: IPAddress[] }
  | { kind: "bind"; claim: IPClaim; address: IPAddress; duplicates?: IPAddress[] }
  | { kind: "redo"; claim: IPClaim; addresses: IPAddress[] }
  | { kind: "create"; claim: IPClaim; address: IPAddress }
  | { kind: "fail"; claim: IPClaim; reason: Reason; message: string };

export interface ClaimPlanInput {
  claim: IPClaim;
  pool: IPPool | undefined;
  /** IPAddresses naming this claim (any pool); the planner keeps those of the claim's pool and incarnation. */
  claimAddresses: IPAddress[];
  pause: PauseState;
  allocator: PoolAllocator | undefined;
  /** Set when the pool may not hand out new addresses (deleting); preallocated claims are still served. */
  allocationBlocked?: { reason: Reason; message: string };
  /** Name lookup of IPAddresses in the claim's namespace (name collisions, spec §3.6). */
  addressNamed: (name: string) => IPAddress | undefined;
  /** Called for an address skipped because another pool's IPAddress holds its name. */
  onCollision: (message: string) => void;
  /** Whether another record of the pool (of either API) holds the address `record` holds. */
  heldByAnother?: (record: IPAddress) => boolean;
}

/** Whether `address` is this claim's: same pool, and owned by this incarnation of the claim when it names one. */
export function belongsToClaim(address: IPAddress, claim: IPClaim): boolean {
  if (address.spec?.pool?.name !== claim.spec?.pool?.name) return false;
  const owner = (address.metadata.ownerReferences ?? []).find((o) => o.kind === IPCLAIM_KIND);
  return !owner || !claim.metadata.uid || owner.uid === claim.metadata.uid;
}

/** Whether this controller made `address` for this incarnation of `claim` (its IPClaim owner reference says so). */
function madeFor(address: IPAddress, claim: IPClaim): boolean {
  const uid = claim.metadata.uid;
  return (
    uid !== undefined && (address.metadata.ownerReferences ?? []).some((o) => o.kind === IPCLAIM_KIND && o.uid === uid)
  );
}

/** The next step for a deleting claim holding `mine`. */
function planDeletion(claim: IPClaim, mine: IPAddress[]): ClaimAction {
  // Taken away by `clusterctl move`: release nothing (spec §7), even when no paused Cluster covers the claim.
  if (isDeletedForMove(claim.metadata)) return { kind: "skip", why: "deleted by clusterctl move" };
  // Another finalizer (CAPM3's metal3data one) means the address is still in use: keep everything and wait.
  if (!onlyOurFinalizers(claim.metadata, [IPCLAIM_FINALIZER]))
    return { kind: "skip", why: "waiting for foreign finalizers" };
  return { kind: "release", claim, addresses: mine };
}

/**
 * A record we made that the claim's status does not name yet, whose address another record holds: made on a stale
 * view and never confirmed (spec §3.4; the controller stopped in between). The claim was never bound to it.
 */
function unconfirmed(kept: IPAddress, input: ClaimPlanInput): boolean {
  const { claim } = input;
  return claim.status?.address?.name !== kept.metadata.name && madeFor(kept, claim) && !!input.heldByAnother?.(kept);
}

/**
 * Why `claim` names no IPPool, or undefined when it names one. The CRDs require `spec.pool` but not `spec`, and
 * Metal3's not even `spec.pool.name`: without the webhooks such claims are stored. They are keyed under the pool
 * with the empty name (indexes.ts), which the pass never asks the API server about.
 */
export function ipClaimRefProblem(claim: IPClaim): string | undefined {
  if (!claim.spec) return "spec is missing: the claim names no IPPool (spec.pool.name)";
  if (!claim.spec.pool?.name) return "spec.pool.name is empty: the claim names no IPPool";
  return undefined;
}

/**
 * The failure of a claim whose `spec.pool` names no pool it may use: none at all (only possible where no webhook
 * guards it: nothing to allocate from until someone fixes it), or one of another namespace.
 */
function referenceRefusal(claim: IPClaim): ClaimAction | undefined {
  const problem = ipClaimRefProblem(claim);
  if (problem !== undefined) return fail(claim, Reasons.AllocationFailed, problem);
  const poolNamespace = claim.spec.pool.namespace;
  if (poolNamespace && poolNamespace !== claim.metadata.namespace) {
    return fail(
      claim,
      Reasons.AllocationFailed,
      `IPPool ${poolNamespace}/${claim.spec.pool.name} is in another namespace; an IPClaim can only use a pool of its own namespace`,
    );
  }
  return undefined;
}

/** The next step for `input.claim`. */
export function planClaim(input: ClaimPlanInput): ClaimAction {
  const { claim, pool, pause } = input;
  if (pause.paused) return { kind: "skip", why: pause.why };
  const mine = input.claimAddresses.filter((a) => belongsToClaim(a, claim)).sort(byName);
  if (isDeleting(claim.metadata)) return planDeletion(claim, mine);
  const unusable = referenceRefusal(claim);
  if (unusable) return unusable;
  // The address the claim's status already names stays its address (spec §3.4: it never changes while the claim
  // lives). A second one we made for the same claim can only come from an allocation whose create succeeded unseen
  // (a lost answer, a timeout, a crash) and was then redone: it is released, so nothing leaks.
  const kept = mine.find((a) => a.metadata.name === claim.status?.address?.name) ?? mine[0];
  if (kept && unconfirmed(kept, input)) return { kind: "redo", claim, addresses: [kept] };
  if (kept)
    return { kind: "bind", claim, address: kept, duplicates: mine.filter((a) => a !== kept && madeFor(a, claim)) };
  if (!pool || !input.allocator)
    return fail(claim, Reasons.PoolNotFound, `IPPool ${claim.spec?.pool?.name ?? ""} not found`);
  if (!pause.paused && pause.clusterMissing)
    return fail(claim, Reasons.ClusterNotFound, `Cluster ${pause.clusterMissing} not found`);
  const refusal = allocationRefusal(input.allocationBlocked, METAL3_POOL_KIND, pool, claim.metadata.name ?? "");
  if (refusal) return fail(claim, refusal.reason, refusal.message);
  return allocate(input, claim, pool, input.allocator);
}

function fail(claim: IPClaim, reason: Reason, message: string): ClaimAction {
  return { kind: "fail", claim, reason, message };
}

function allocate(input: ClaimPlanInput, claim: IPClaim, pool: IPPool, allocator: PoolAllocator): ClaimAction {
  const choice = chooseAddress({
    claimName: claim.metadata.name ?? "",
    claimKind: IPCLAIM_KIND,
    requestedAddress: requestedAddressOf(claim.metadata),
    kind: METAL3_POOL_KIND,
    pool,
    allocator,
    nameHeldByOtherPool: (name) => {
      const holder = input.addressNamed(name);
      return holder && holder.spec?.pool?.name !== pool.metadata.name ? (holder.spec?.pool?.name ?? "?") : undefined;
    },
    onCollision: input.onCollision,
  });
  if (!choice.ok) return fail(claim, choice.reason, choice.message);
  return { kind: "create", claim, address: newAddress(pool, claim, choice.name, choice.result) };
}

/**
 * The IPAddress this controller creates for `claim` in `pool`: its labels, finalizer and owners (the pool as
 * controller, the claim). Exported for the bench, which writes held addresses as the controller leaves them.
 */
export function newAddress(
  pool: IPPool,
  claim: IPClaim,
  name: string,
  result: { address: string; prefix: number; gateway?: string; dnsServers?: string[] },
): IPAddress {
  const namespace = claim.metadata.namespace ?? "";
  return {
    apiVersion: API_VERSION,
    kind: IPADDRESS_KIND,
    metadata: {
      name,
      namespace,
      labels: { ...(claim.metadata.labels ?? {}) },
      finalizers: [IPADDRESS_FINALIZER],
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: IPPOOL_KIND,
          name: pool.metadata.name ?? "",
          uid: pool.metadata.uid ?? "",
          controller: true,
        },
        { apiVersion: API_VERSION, kind: IPCLAIM_KIND, name: claim.metadata.name ?? "", uid: claim.metadata.uid ?? "" },
      ],
    },
    spec: {
      address: result.address,
      // Go clients omit a zero prefix; writing 0 would make their full updates look like a change (spec §1.3).
      ...(result.prefix !== 0 ? { prefix: result.prefix } : {}),
      ...(result.gateway !== undefined ? { gateway: result.gateway } : {}),
      ...(result.dnsServers !== undefined && result.dnsServers.length > 0 ? { dnsServers: result.dnsServers } : {}),
      pool: { name: pool.metadata.name ?? "", namespace },
      claim: { name: claim.metadata.name ?? "", namespace },
    },
  };
}
