/**
 * The allocation decision of one pool (spec §3.2): which address a claim gets, from the pool spec and the set of
 * addresses in use. Pure and synchronous; one instance per pool, fed by the controller.
 *
 * Contract with the caller (spec §3.4, read your own writes):
 * - Build it from the pool spec, then `reserve` every address in use: IPAddress objects of the pool (any origin) and
 *   CAPI IPAddresses referencing it. Preallocations are reserved for their claims by the constructor.
 * - `allocate` only DECIDES; it does not mark the address used. After creating the IPAddress object successfully the
 *   caller calls `reserve(address, { kind: "claim", claimName })` before the next decision. Without that `reserve`
 *   the next decision may hand out the same address again (sequential always does).
 * - `release` when an IPAddress object is gone. A preallocated address stays reserved for its claim.
 *
 * Two ways to build one: `new PoolAllocator(spec)` compiles a Metal3 IPPoolSpec (strategy and preallocations
 * included); `PoolAllocator.fromSpace(space)` takes entries already compiled from another kind of pool (the in-cluster
 * provider's, src/ipam/incluster.ts) and allocates from them sequentially, with no preallocations.
 */
import type { IPPoolSpec } from "../../api/v1alpha1/types.js";
import { addressKey, canonicalAddress, formatAddress, parseAddress, sameAddress } from "./address.js";
import type { Addr, Family } from "./address.js";
import { compileEntries, entryUnion, firstEntryContaining } from "./entries.js";
import type { CompiledEntry } from "./entries.js";
import { formatFieldError } from "./fielderror.js";
import { FreeSet } from "./freeset.js";
import { randomBelow } from "./random.js";
import type { Rng } from "./random.js";
import { validateIPPoolSpec } from "./validation.js";

export { toInt64Capped, INT64_MAX, INT64_MAX_NUMBER } from "./int64.js";

/**
 * Who holds an address: a claim, or something else, described for people. A claim is identified by its kind and
 * name (spec §5.3): an IPClaim and a Cluster API IPAddressClaim of one name are two claims with two addresses.
 * `claimKind` omitted is a kind of its own (callers that serve one kind may leave it out).
 */
export type Holder = { kind: "claim"; claimName: string; claimKind?: string } | { kind: "other"; description: string };

/**
 * A request for claim `claimName` of kind `claimKind`; `requestedAddress` is the raw `ipAddress` annotation when
 * present (`""` = none). Preallocations are looked up by name alone: they apply to every kind of claim of that name.
 */
export interface AllocationRequest {
  claimName: string;
  claimKind?: string;
  requestedAddress?: string;
}

/** The decision. On success `address` is canonical and prefix/gateway/DNS are resolved per spec §1.1. */
export type AllocationResult =
  | {
      ok: true;
      address: string;
      prefix: number;
      gateway?: string;
      dnsServers?: string[];
      /** Position in `spec.pools` of the entry the address came from. */
      entryIndex: number;
    }
  | { ok: false; reason: "PoolExhausted" | "AllocationFailed"; message: string };

/** Address counts of a pool. */
export interface Capacity {
  /** Distinct addresses the entries can yield; overlapping entries are counted once. */
  total: bigint;
  /** Reserved (held) addresses inside the entries. Preallocations nobody holds yet are NOT counted. */
  used: bigint;
  /** `total - used`. */
  free: bigint;
}

/**
 * Entries compiled from something other than a Metal3 IPPoolSpec, for {@link PoolAllocator.fromSpace}.
 * Each entry must be well formed (`size` is `last - first + 1`, or `0n` with `last < first`); entries may overlap.
 */
export interface AddressSpace {
  /**
   * Tried in this order by the sequential strategy: the first entry with a free address gives its lowest free one.
   * An entry's `index` is what results report as `entryIndex`; its `prefix` and `gateway` go into the result.
   */
  readonly entries: readonly CompiledEntry[];
  /** Problems of the pool the entries come from, formatted for people; they become the allocator's `specErrors`. */
  readonly specErrors: readonly string[];
}

/** Options of {@link PoolAllocator}. */
export interface PoolAllocatorOptions {
  /** Source of uniform numbers in [0, 1) for `random` pools; defaults to `Math.random`. */
  rng?: Rng;
}

/** The messages of spec §3.2 (Metal3's text where Metal3 has one) and ours. */
export const AllocationMessages = {
  invalidAnnotation: (v: string): string => `Invalid ipAddress annotation "${v}": not a valid IP address`,
  conflicting: "PreAllocation and requested ip address are conflicting",
  requestedNotAvailable: "Requested IP not available",
  preallocatedOutOfBounds: "Pre-allocated IP out of bounds",
  exhausted: "Exhausted IP Pools",
  requestedOutOfBounds: (address: string): string =>
    `Requested IP ${address} is out of bounds: it lies in no range of the pool`,
  preallocatedHeld: (address: string, holder: Holder): string =>
    `Pre-allocated IP ${address} is held by ${describeHolder(holder)}`,
  invalidGateway: (gateway: string, entryIndex: number): string =>
    `Invalid gateway "${gateway}" for addresses of spec.pools[${entryIndex}]: not a valid IP address`,
  invalidDnsServer: (dns: string, entryIndex: number): string =>
    `Invalid DNS server "${dns}" for addresses of spec.pools[${entryIndex}]: not a valid IP address`,
} as const;

/** Human description of a holder, as used in messages: `claim "x"` or the description. */
export function describeHolder(h: Holder): string {
  return h.kind === "claim" ? `${h.claimKind ?? "claim"} "${h.claimName}"` : h.description;
}

function sameHolder(a: Holder, b: Holder): boolean {
  if (a.kind === "claim") return isClaim(b, a.claimName, a.claimKind);
  return b.kind === "other" && a.description === b.description;
}

function isClaim(h: Holder, claimName: string, claimKind: string | undefined): boolean {
  return h.kind === "claim" && h.claimName === claimName && h.claimKind === claimKind;
}

function failed(message: string): AllocationResult {
  return { ok: false, reason: "AllocationFailed", message };
}

/**
 * Allocation state of one pool. Construction never throws: problems of the spec are listed in `specErrors` (the same
 * texts the webhook would reject with) and entries whose arithmetic is undefined are skipped.
 */
export class PoolAllocator {
  /** Every problem the webhook would reject in the spec, formatted like kubectl. Empty for a valid spec. */
  readonly specErrors: readonly string[];
  /** The usable entries, in declaration order. */
  readonly entries: readonly CompiledEntry[];
  private readonly random: boolean;
  private readonly rng: Rng;
  /** Held (by `reserve`) ∪ preallocated: what allocation must avoid. */
  private readonly inUse: Record<Family, FreeSet> = { 4: new FreeSet(), 6: new FreeSet() };
  /** Held by `reserve` only: what `used` counts. */
  private readonly held: Record<Family, FreeSet> = { 4: new FreeSet(), 6: new FreeSet() };
  private readonly holders = new Map<string, Holder[]>();
  private readonly preallocations = new Map<string, Addr | undefined>();
  private readonly preallocatedKeys = new Map<string, string[]>();
  private readonly union: Record<Family, Array<[bigint, bigint]>>;
  private readonly total: bigint;

  /** From a Metal3 pool spec, or from a space compiled elsewhere (see {@link PoolAllocator.fromSpace}). */
  constructor(source: IPPoolSpec | AddressSpace, options: PoolAllocatorOptions = {}) {
    const spec = "entries" in source ? undefined : source;
    if (spec) {
      this.entries = compileEntries(spec).entries;
      this.specErrors = validateIPPoolSpec(spec).map(formatFieldError);
    } else {
      const space = source as AddressSpace;
      this.entries = [...space.entries];
      this.specErrors = [...space.specErrors];
    }
    this.random = spec?.allocationStrategy === "random";
    this.rng = options.rng ?? Math.random;
    this.union = entryUnion(this.entries);
    let total = 0n;
    for (const family of [4, 6] as const) for (const [lo, hi] of this.union[family]) total += hi - lo + 1n;
    this.total = total;
    for (const [claimName, text] of Object.entries(spec?.preAllocations ?? {})) this.addPreallocation(claimName, text);
  }

  /**
   * An allocator over entries compiled elsewhere (see {@link AddressSpace}): sequential strategy, no preallocations,
   * `specErrors` as given. Everything else (reserve, release, requests, capacity, holders) works as for a Metal3 pool;
   * each decision costs O(log n) per entry tried, as there. The entries are copied: later changes to the array do not
   * reach the allocator.
   */
  static fromSpace(space: AddressSpace): PoolAllocator {
    return new PoolAllocator(space);
  }

  /** How many distinct addresses are held (by `reserve`): about the pool's number of records. O(1). */
  get heldCount(): number {
    return this.holders.size;
  }

  /** Tree nodes visited by the free-space structures so far; for cost assertions (O(log n) per decision). */
  get work(): number {
    return this.inUse[4].work + this.inUse[6].work + this.held[4].work + this.held[6].work;
  }

  /**
   * Marks `address` in use by `holder` (any spelling; compared as a number). Idempotent per (address, holder); an
   * address may have several holders (a Metal3 IPAddress and the CAPI IPAddress mirroring it). Addresses outside
   * every entry are tracked too (for `holderOf` and requests) but not counted in `used`.
   * @returns false, changing nothing, when `address` is not an address.
   */
  reserve(address: string, holder: Holder): boolean {
    const a = parseAddress(address);
    if (!a) return false;
    const key = addressKey(a);
    const list = this.holders.get(key) ?? [];
    if (!list.some((h) => sameHolder(h, holder))) list.push({ ...holder });
    this.holders.set(key, list);
    this.held[a.family].markUsed(a.value);
    this.inUse[a.family].markUsed(a.value);
    return true;
  }

  /**
   * Drops `holder`'s hold on `address`, or every hold when `holder` is omitted. The address becomes free once no
   * holder is left, unless it is preallocated (it then stays reserved for its claim). Unknown addresses are ignored.
   */
  release(address: string, holder?: Holder): void {
    const a = parseAddress(address);
    if (!a) return;
    const key = addressKey(a);
    const remaining = holder ? (this.holders.get(key) ?? []).filter((h) => !sameHolder(h, holder)) : [];
    if (remaining.length > 0) {
      this.holders.set(key, remaining);
      return;
    }
    this.holders.delete(key);
    this.held[a.family].unmark(a.value);
    if (!this.preallocatedKeys.has(key)) this.inUse[a.family].unmark(a.value);
  }

  /** The first (earliest reserved) holder of `address`; `undefined` when nobody holds it (preallocations aside). */
  holderOf(address: string): Holder | undefined {
    return this.holdersOf(address)[0];
  }

  /** Every holder of `address`, earliest first. */
  holdersOf(address: string): Holder[] {
    const a = parseAddress(address);
    return a ? (this.holders.get(addressKey(a)) ?? []).map((h) => ({ ...h })) : [];
  }

  /** Claim names `address` is preallocated to (normally zero or one). */
  preallocatedTo(address: string): string[] {
    const a = parseAddress(address);
    return a ? [...(this.preallocatedKeys.get(addressKey(a)) ?? [])] : [];
  }

  /** Whether some entry yields `address`. */
  contains(address: string): boolean {
    return this.entryOf(address) !== undefined;
  }

  /** The first entry (declaration order) that yields `address`. */
  entryOf(address: string): CompiledEntry | undefined {
    const a = parseAddress(address);
    return a ? firstEntryContaining(this.entries, a) : undefined;
  }

  /** Exact counts; see {@link Capacity}. O(k log n) for k disjoint ranges. */
  capacity(): Capacity {
    let used = 0n;
    for (const family of [4, 6] as const) {
      for (const [lo, hi] of this.union[family]) used += this.held[family].countUsed(lo, hi);
    }
    return { total: this.total, used, free: this.total - used };
  }

  /**
   * Decides the address for a claim (spec §3.2), checking in this order:
   * 1. annotation present but not an address → `Invalid ipAddress annotation "<v>": not a valid IP address`; an empty
   *    annotation is no request at all (Metal3 treats `""` as absent, and its webhook accepts it);
   * 2. a preallocation P and an annotation naming another address → `PreAllocation and requested ip address are conflicting`;
   * 3. with P: P in no entry (or unparsable) → `Pre-allocated IP out of bounds`; P held by another claim or a
   *    person-made reservation → a message naming the holder (ours, §3.6); else P;
   * 4. with an annotation A: A in no entry → a message saying so (ours); A held by someone else or preallocated to
   *    another claim → `Requested IP not available`; else A;
   * 5. otherwise entries in order: sequential takes the lowest free candidate, random starts at a uniform index of
   *    Metal3's index space and walks forward with wrap-around; nothing → `Exhausted IP Pools` (PoolExhausted).
   * Addresses held by claim N (same name and kind) count as N's (the decision is idempotent). An entry's unparsable gateway or DNS
   * server fails the allocation with a message naming it. Does not mark anything used: see the file header.
   */
  allocate(request: AllocationRequest): AllocationResult {
    const { claimName, claimKind, requestedAddress } = request;
    let requested: Addr | undefined;
    if (requestedAddress !== undefined && requestedAddress !== "") {
      requested = parseAddress(requestedAddress);
      if (!requested) return failed(AllocationMessages.invalidAnnotation(requestedAddress));
    }
    if (this.preallocations.has(claimName)) {
      const pre = this.preallocations.get(claimName);
      if (requested && !(pre && sameAddress(pre, requested))) return failed(AllocationMessages.conflicting);
      return this.allocatePreallocated(claimName, claimKind, pre);
    }
    if (requested) return this.allocateRequested(claimName, claimKind, requested);
    return this.allocateFree();
  }

  private allocatePreallocated(
    claimName: string,
    claimKind: string | undefined,
    addr: Addr | undefined,
  ): AllocationResult {
    const entry = addr && firstEntryContaining(this.entries, addr);
    if (!addr || !entry) return failed(AllocationMessages.preallocatedOutOfBounds);
    const other = (this.holders.get(addressKey(addr)) ?? []).find((h) => !isClaim(h, claimName, claimKind));
    if (other) return failed(AllocationMessages.preallocatedHeld(formatAddress(addr), other));
    return this.result(entry, addr.value);
  }

  private allocateRequested(claimName: string, claimKind: string | undefined, addr: Addr): AllocationResult {
    const entry = firstEntryContaining(this.entries, addr);
    if (!entry) return failed(AllocationMessages.requestedOutOfBounds(formatAddress(addr)));
    const key = addressKey(addr);
    const heldByOther = (this.holders.get(key) ?? []).some((h) => !isClaim(h, claimName, claimKind));
    const preallocatedToOther = (this.preallocatedKeys.get(key) ?? []).some((c) => c !== claimName);
    if (heldByOther || preallocatedToOther) return failed(AllocationMessages.requestedNotAvailable);
    return this.result(entry, addr.value);
  }

  private allocateFree(): AllocationResult {
    for (const entry of this.entries) {
      if (entry.size === 0n) continue;
      const value = this.random ? this.pickRandom(entry) : this.inUse[entry.family].nextFree(entry.first, entry.last);
      if (value !== undefined) return this.result(entry, value);
    }
    return { ok: false, reason: "PoolExhausted", message: AllocationMessages.exhausted };
  }

  private pickRandom(entry: CompiledEntry): bigint | undefined {
    // Metal3 cannot size a start-only entry (the webhook rejects random then); its exact size is the sane fallback.
    const space = entry.indexSpace ?? entry.size;
    const index = randomBelow(space, this.rng);
    // Indices at or past `size` are out of bounds: walking forward over them wraps to index 0.
    const offset = index < entry.size ? index : 0n;
    return this.inUse[entry.family].nextFreeWrapping(entry.first + offset, entry.first, entry.last);
  }

  private result(entry: CompiledEntry, value: bigint): AllocationResult {
    let gateway: string | undefined;
    if (entry.gateway !== undefined) {
      gateway = canonicalAddress(entry.gateway);
      if (gateway === undefined) return failed(AllocationMessages.invalidGateway(entry.gateway, entry.index));
    }
    const dnsServers: string[] = [];
    for (const dns of entry.dnsServers ?? []) {
      const c = canonicalAddress(dns);
      if (c === undefined) return failed(AllocationMessages.invalidDnsServer(dns, entry.index));
      dnsServers.push(c);
    }
    return {
      ok: true,
      address: formatAddress({ family: entry.family, value }),
      prefix: entry.prefix,
      ...(gateway !== undefined ? { gateway } : {}),
      ...(dnsServers.length > 0 ? { dnsServers } : {}),
      entryIndex: entry.index,
    };
  }

  private addPreallocation(claimName: string, text: string): void {
    const addr = parseAddress(text);
    this.preallocations.set(claimName, addr);
    if (!addr) return;
    const key = addressKey(addr);
    this.preallocatedKeys.set(key, [...(this.preallocatedKeys.get(key) ?? []), claimName]);
    this.inUse[addr.family].markUsed(addr.value);
  }
}
