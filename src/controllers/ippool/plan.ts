/**
 * The decision for one claim in one pass over its pool, as a value. Pure apart from the allocator it is given, whose
 * reservations it updates so that the next claim of the same pass sees this one's address as taken.
 */
import {
  API_VERSION,
  IP_ADDRESS_ANNOTATION,
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
import { ipAddressName } from "../../ipam/naming.js";
import type { PauseState } from "../clusters.js";
import { isDeletedForMove, isDeleting, onlyOurFinalizers } from "../meta.js";

export type ClaimAction =
  | { kind: "skip"; why: string }
  | { kind: "release"; claim: IPClaim; addresses: IPAddress[] }
  | { kind: "bind"; claim: IPClaim; address: IPAddress; duplicates?: IPAddress[] }
  | { kind: "create"; claim: IPClaim; address: IPAddress }
  | { kind: "fail"; claim: IPClaim; reason: Reason; message: string };

export interface ClaimPlanInput {
  claim: IPClaim;
  pool: IPPool | undefined;
  /** IPAddresses naming this claim (any pool); the planner keeps those of the claim's pool and incarnation. */
  claimAddresses: IPAddress[];
  pause: PauseState;
  allocator: PoolAllocator | undefined;
  /** Set when the pool may not hand out new addresses (deleting, invalid). */
  allocationBlocked?: { reason: Reason; message: string };
  /** Name lookup of IPAddresses in the claim's namespace (name collisions, spec §3.6). */
  addressNamed: (name: string) => IPAddress | undefined;
  /** Called for an address skipped because another pool's IPAddress holds its name. */
  onCollision: (message: string) => void;
  /** Address of an existing Cluster API IPAddress naming this claim: adopted, never re-allocated (spec §5.6). */
  adoptAddress?: string | undefined;
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
  return uid !== undefined && (address.metadata.ownerReferences ?? []).some((o) => o.kind === IPCLAIM_KIND && o.uid === uid);
}

/** The next step for `input.claim`. */
export function planClaim(input: ClaimPlanInput): ClaimAction {
  const { claim, pool, pause } = input;
  if (pause.paused) return { kind: "skip", why: pause.why };
  const mine = input.claimAddresses.filter((a) => belongsToClaim(a, claim)).sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  if (isDeleting(claim.metadata)) {
    // Taken away by `clusterctl move`: release nothing (spec §7), even when no paused Cluster covers the claim.
    if (isDeletedForMove(claim.metadata)) return { kind: "skip", why: "deleted by clusterctl move" };
    // Another finalizer (CAPM3's metal3data one) means the address is still in use: keep everything and wait.
    if (!onlyOurFinalizers(claim.metadata, [IPCLAIM_FINALIZER])) return { kind: "skip", why: "waiting for foreign finalizers" };
    return { kind: "release", claim, addresses: mine };
  }
  const poolNamespace = claim.spec?.pool?.namespace;
  if (poolNamespace && poolNamespace !== claim.metadata.namespace) {
    return fail(claim, Reasons.AllocationFailed, `IPPool ${poolNamespace}/${claim.spec.pool.name} is in another namespace; an IPClaim can only use a pool of its own namespace`);
  }
  // The address the claim's status already names stays its address (spec §3.4: it never changes while the claim
  // lives). A second one we made for the same claim can only come from an allocation whose create succeeded unseen
  // (a lost answer, a timeout, a crash) and was then redone: it is released, so nothing leaks.
  const kept = mine.find((a) => a.metadata.name === claim.status?.address?.name) ?? mine[0];
  if (kept) return { kind: "bind", claim, address: kept, duplicates: mine.filter((a) => a !== kept && madeFor(a, claim)) };
  if (!pool || !input.allocator) return fail(claim, Reasons.PoolNotFound, `IPPool ${claim.spec?.pool?.name ?? ""} not found`);
  if (!pause.paused && pause.clusterMissing) return fail(claim, Reasons.ClusterNotFound, `Cluster ${pause.clusterMissing} not found`);
  if (input.allocationBlocked) return fail(claim, input.allocationBlocked.reason, input.allocationBlocked.message);
  return allocate(input, claim, pool, input.allocator);
}

function fail(claim: IPClaim, reason: Reason, message: string): ClaimAction {
  return { kind: "fail", claim, reason, message };
}

function allocate(input: ClaimPlanInput, claim: IPClaim, pool: IPPool, allocator: PoolAllocator): ClaimAction {
  const claimName = claim.metadata.name ?? "";
  // `ipAddress: ""` is no request (as in Metal3): a name collision then moves on to the next address.
  const requestedAddress = input.adoptAddress ?? (claim.metadata.annotations?.[IP_ADDRESS_ANNOTATION] || undefined);
  // Each round either succeeds or marks one colliding address taken, so this ends within the pool's size; the cap
  // only bounds a pathological pass (the claim then fails and is retried on the next event).
  for (let round = 0; round < 256; round++) {
    const result = allocator.allocate({ claimName, ...(requestedAddress !== undefined ? { requestedAddress } : {}) });
    if (!result.ok) return fail(claim, result.reason === "PoolExhausted" ? Reasons.PoolExhausted : Reasons.AllocationFailed, result.message);
    const name = ipAddressName(pool.spec.namePrefix, result.address);
    const holder = input.addressNamed(name);
    if (holder && holder.spec?.pool?.name !== pool.metadata.name) {
      const message = `IPAddress ${name} for ${result.address} already exists and belongs to IPPool ${holder.spec?.pool?.name ?? "?"} (same namePrefix "${pool.spec.namePrefix}"); address skipped`;
      allocator.reserve(result.address, { kind: "other", description: `IPAddress ${name} of another pool` });
      input.onCollision(message);
      if (requestedAddress !== undefined || pool.spec.preAllocations?.[claimName] !== undefined) return fail(claim, Reasons.AllocationFailed, message);
      continue;
    }
    allocator.reserve(result.address, { kind: "claim", claimName });
    return { kind: "create", claim, address: newAddress(pool, claim, name, result) };
  }
  return fail(claim, Reasons.AllocationFailed, "Too many name collisions in one pass; will retry");
}

function newAddress(
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
        { apiVersion: API_VERSION, kind: IPPOOL_KIND, name: pool.metadata.name ?? "", uid: pool.metadata.uid ?? "", controller: true },
        { apiVersion: API_VERSION, kind: IPCLAIM_KIND, name: claim.metadata.name ?? "", uid: claim.metadata.uid ?? "" },
      ],
    },
    spec: {
      address: result.address,
      prefix: result.prefix,
      ...(result.gateway !== undefined ? { gateway: result.gateway } : {}),
      ...(result.dnsServers !== undefined && result.dnsServers.length > 0 ? { dnsServers: result.dnsServers } : {}),
      pool: { name: pool.metadata.name ?? "", namespace },
      claim: { name: claim.metadata.name ?? "", namespace },
    },
  };
}
