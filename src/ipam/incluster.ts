/**
 * In-cluster provider pools (`InClusterIPPool`, `GlobalInClusterIPPool`) for the allocator and for their status:
 * the pool's allocatable set (incluster-set.ts) as compiled entries, and the usage counts the provider writes into
 * `status.ipAddresses`. Pure functions, no I/O; never throw.
 *
 * Allocation: `PoolAllocator.fromSpace(inClusterSpace(spec))` gives, like the provider, the LOWEST free address of
 * the pool whatever the order of `addresses`, because the entries are the set's disjoint ranges in ascending order
 * and the allocator's sequential strategy takes the first entry with a free address, lowest address first. Reserve
 * every address in use (IPAddresses whose poolRef names the pool) before deciding, as for Metal3 pools.
 */
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import { parseAddress } from "./address.js";
import type { AddressSpace } from "./allocator.js";
import type { CompiledEntry } from "./entries.js";
import { formatFieldError } from "./fielderror.js";
import { INT64_MAX, toInt64Capped } from "./int64.js";
import { inClusterAllocatable, inClusterPrefix } from "./incluster-set.js";
import { validateInClusterPool } from "./incluster-validation.js";
import { rangesContain, rangesSize } from "./ipset.js";
import { runSteps, STEP_ITEMS, type Steps } from "./steps.js";

/** An in-cluster pool as an allocator's address space. */
export interface InClusterSpace extends AddressSpace {
  /**
   * One entry per disjoint range of the allocatable set, ascending (IPv4 first); `index` is the position in this
   * list. Every entry carries the pool's prefix (`spec.prefix`; 0 when absent or not an integer) and its gateway as
   * written (absent when empty). An unparsable gateway is kept: the allocator then fails allocations naming it,
   * rather than hand out addresses with a broken gateway (the provider fails its reconcile there).
   */
  readonly entries: readonly CompiledEntry[];
  /**
   * Every problem the provider's webhook refuses in the spec, formatted like kubectl (`validateInClusterPool`, what
   * our webhook answers); empty for a valid spec. Entries that do not parse are skipped in `entries`.
   */
  readonly specErrors: readonly string[];
  /** Exact number of allocatable addresses (not capped). */
  readonly size: bigint;
}

/** The allocatable set of `spec` (see incluster-set.ts) as ascending, disjoint entries, with the spec's problems. */
export function inClusterSpace(spec: InClusterIPPoolSpec): InClusterSpace {
  return runSteps(inClusterSpaceSteps(spec));
}

/**
 * {@link inClusterSpace} in steps (steps.ts): the allocatable set, its entries `slice` at a time, then the validation;
 * for the controller, whose event loop must not be held by a pool of a hundred thousand addresses.
 */
export function* inClusterSpaceSteps(spec: InClusterIPPoolSpec, slice = STEP_ITEMS): Steps<InClusterSpace> {
  const ranges = inClusterAllocatable(spec);
  const prefix = inClusterPrefix(spec.prefix) ?? 0;
  const gateway = typeof spec.gateway === "string" && spec.gateway !== "" ? spec.gateway : undefined;
  const entries: CompiledEntry[] = [];
  for (let index = 0; index < ranges.length; index++) {
    if (index % slice === 0) yield;
    const r = ranges[index]!;
    const size = r.last - r.first + 1n;
    entries.push({
      index,
      family: r.family,
      first: r.first,
      last: r.last,
      size,
      bounded: true,
      indexSpace: size,
      prefix,
      ...(gateway !== undefined ? { gateway } : {}),
    });
  }
  yield;
  const specErrors = validateInClusterPool({ metadata: {}, spec }).map(formatFieldError);
  return { entries, specErrors, size: rangesSize(ranges) };
}

/**
 * `status.ipAddresses` of an in-cluster pool, as the provider counts it. Numbers for int64 fields, capped as
 * `toInt64Capped` caps the Metal3 pool status (2^63 - 1024, the largest double below 2^63: Go's `math.MaxInt`,
 * 2^63 - 1, has no exact JSON number in JavaScript).
 */
export interface InClusterUsage {
  /** Addresses of the allocatable set, capped at Go's `math.MaxInt` (then shown as 2^63 - 1024). */
  total: number;
  /** IPAddresses referring to the pool, each counted, those outside the set and unparsable ones included. */
  used: number;
  /** `total - used` (with the capped total); negative when more addresses are in use than the set holds. */
  free: number;
  /** Distinct parsable in-use addresses outside the allocatable set (the gateway, excluded, reserved, removed). */
  outOfRange: number;
}

/**
 * Counts of `space` with `inUseAddresses`: the `spec.address` of every IPAddress whose poolRef names the pool (one
 * element per IPAddress; duplicates and unparsable text are counted in `used` as the provider counts objects).
 * O(k log n) for k addresses in use and n ranges.
 */
export function inClusterUsage(space: InClusterSpace, inUseAddresses: readonly string[]): InClusterUsage {
  const total = space.size > INT64_MAX ? INT64_MAX : space.size;
  const outside = new Set<string>();
  for (const text of inUseAddresses) {
    const a = parseAddress(text);
    if (a && !rangesContain(space.entries, a)) outside.add(`${a.family}/${a.value}`);
  }
  return {
    total: toInt64Capped(total),
    used: inUseAddresses.length,
    free: toInt64Capped(total - BigInt(inUseAddresses.length)),
    outOfRange: outside.size,
  };
}
