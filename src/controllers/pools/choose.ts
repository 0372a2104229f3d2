/**
 * Choosing a claim's address in a pool of any kind: shared by both claim lifecycles. Pure apart from the allocator,
 * whose reservations it updates so that the next decision of the pass sees this one's address as taken.
 */
import { IP_ADDRESS_ANNOTATION, Reasons, type ObjectMeta, type Reason } from "../../../api/v1alpha1/types.js";
import type { AllocationResult, PoolAllocator } from "../../ipam/allocator.js";
import type { ExternalAnswer, PoolKind, PoolObject } from "./kind.js";

/** The `ipAddress` annotation as a request; empty means absent, as Metal3 reads it (spec §6). */
export function requestedAddressOf(meta: ObjectMeta): string | undefined {
  const value = meta.annotations?.[IP_ADDRESS_ANNOTATION];
  return value === undefined || value === "" ? undefined : value;
}

/**
 * Why claim `claimName` may not get a new address in this pass, if it may not: a deleting pool hands out nothing new
 * but keeps honouring preallocations (spec §3.5; Metal3 drops them). Shared by both claim kinds.
 */
export function allocationRefusal(
  blocked: { reason: Reason; message: string } | undefined,
  kind: PoolKind,
  pool: PoolObject,
  claimName: string,
): { reason: Reason; message: string } | undefined {
  return blocked && !kind.preallocated(pool, claimName) ? blocked : undefined;
}

/** What {@link chooseAddress} needs: the claim's identity and request, and how to see names held by other pools. */
export interface AddressChoiceInput {
  /** The claim's name (record names and preallocations use it). */
  claimName: string;
  /** The name the claim holds addresses under in the allocator (see capiHolderName); `claimName` by default. */
  holderName?: string;
  claimKind: string;
  requestedAddress: string | undefined;
  kind: PoolKind;
  pool: PoolObject;
  allocator: PoolAllocator;
  /** The pool of the object (of the kind the claim's record will be) that already bears `name`, when not this pool. */
  nameHeldByOtherPool: (name: string) => string | undefined;
  onCollision: (message: string) => void;
  /** The external engine's answers of this pass (kinds with one only), by holder name. */
  external?: ReadonlyMap<string, ExternalAnswer>;
}

type Allocated = Extract<AllocationResult, { ok: true }>;

/** An address, the record name it gets (and the annotations the engine gave it), or why there is none. */
export type AddressChoice =
  | { ok: true; name: string; result: Allocated; annotations?: Readonly<Record<string, string>> }
  | { ok: false; reason: Reason; message: string };

/**
 * Decides one claim's address and reserves it in the allocator for that claim (kind and holder name), so the next
 * decision of the pass sees it taken. When the record name the kind gives is already borne by another pool's object:
 * a kind naming records by address skips that address and reports it (Metal3's shared namePrefix, spec §3.6; a claim
 * that asked for exactly that address fails); a kind naming records after the claim fails the claim.
 */
export function chooseAddress(input: AddressChoiceInput): AddressChoice {
  const { claimName, claimKind, kind, pool, allocator } = input;
  const holderName = input.holderName ?? claimName;
  const external = input.external && externalRequest(input.external, holderName);
  if (external && !external.ok) return { ok: false, reason: external.reason, message: external.message };
  // An engine's address is the claim's request: the allocator still refuses it when another record holds it.
  const requestedAddress = external ? external.address : input.requestedAddress;
  // Each round either succeeds or marks one colliding address taken, so this ends within the pool's size; the cap
  // only bounds a pathological pass (the claim then fails and is retried on the next event).
  for (let round = 0; round < 256; round++) {
    const result = allocator.allocate({
      claimName: holderName,
      claimKind,
      ...(requestedAddress !== undefined ? { requestedAddress } : {}),
    });
    if (!result.ok) return refusalOf(result, kind, pool, allocator);
    const name = kind.recordName(pool, claimName, result.address);
    const otherPool = input.nameHeldByOtherPool(name);
    if (otherPool !== undefined) {
      const message = kind.describeNameCollision(pool, name, result.address, otherPool);
      if (!kind.style.recordNamedByAddress) return { ok: false, reason: Reasons.AllocationFailed, message };
      allocator.reserve(result.address, { kind: "other", description: `IPAddress ${name} of another pool` });
      input.onCollision(message);
      if (requestedAddress !== undefined || kind.preallocated(pool, claimName))
        return { ok: false, reason: Reasons.AllocationFailed, message };
      continue;
    }
    allocator.reserve(result.address, { kind: "claim", claimName: holderName, claimKind });
    return { ok: true, name, result, ...(external?.annotations ? { annotations: external.annotations } : {}) };
  }
  return { ok: false, reason: Reasons.AllocationFailed, message: "Too many name collisions in one pass; will retry" };
}

/**
 * Why the allocator gave no address. A pool whose spec yields no address at all and has errors (no spec, no entries,
 * reversed ranges: what the CRD schema admits with the webhooks off) is not ready, and the claim is told the errors;
 * an empty pool without errors (a /32 subnet) is exhausted.
 */
function refusalOf(
  result: Extract<AllocationResult, { ok: false }>,
  kind: PoolKind,
  pool: PoolObject,
  allocator: PoolAllocator,
): { ok: false; reason: Reason; message: string } {
  if (allocator.specErrors.length > 0 && allocator.capacity().total === 0n) {
    const errors = allocator.specErrors.slice(0, MAX_ERRORS_TOLD).join("; ");
    const more = allocator.specErrors.length - MAX_ERRORS_TOLD;
    return {
      ok: false,
      reason: Reasons.PoolNotReady,
      message: `${kind.descriptor.kind} ${pool.metadata.name ?? ""} has no usable address range: ${errors}${more > 0 ? `; and ${more} more` : ""}`,
    };
  }
  const reason = result.reason === "PoolExhausted" ? Reasons.PoolExhausted : Reasons.AllocationFailed;
  return { ok: false, reason, message: result.message };
}

/** Spec errors a claim's message repeats at most (the pool's own condition lists them all). */
const MAX_ERRORS_TOLD = 5;

/**
 * The engine's address for `holder` as a request, or why there is none. No answer means the claim arrived after the
 * engine was asked (it is planned again on the next pass).
 */
function externalRequest(answers: ReadonlyMap<string, ExternalAnswer>, holder: string): ExternalAnswer {
  return (
    answers.get(holder) ?? {
      ok: false,
      reason: Reasons.AllocationFailed,
      message: "Waiting for the address engine to be asked for this claim",
    }
  );
}
