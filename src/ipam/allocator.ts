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
 * provider's, src/ipam/incluster.ts) and allocates from them sequentially, with no preallocations. Either source can
 * be compiled once (`PoolAllocator.compile`) and allocators opened on it as often as needed (`new PoolAllocator(c)`).
 *
 * Cost: a decision, `reserve` and `release` are O(log n + log r) for n entries and r runs of addresses in use,
 * whatever the entries (overlapping, thousands of ranges): see allocator-order.ts. Compiling is O(n log n), and can
 * be run in steps that let the caller's thread breathe ({@link compileSteps}).
 */
import type { IPPoolSpec } from "../../api/v1alpha1/types.js";
import { addressKey, canonicalAddress, formatAddress, parseAddress, sameAddress } from "./address.js";
import type { Addr, Family } from "./address.js";
import { EntryLayout, FreePieces } from "./allocator-order.js";
import { addressListErrors, compileEntry, entryDefaults, entryUnion } from "./entries.js";
import type { CompiledEntry, CompiledPool } from "./entries.js";
import { formatFieldError } from "./fielderror.js";
import { FreeSet } from "./freeset.js";
import { randomBelow } from "./random.js";
import { runSteps, STEP_ITEMS, type Steps } from "./steps.js";
import type { Rng } from "./random.js";
import { validateCompiledSpec } from "./validation.js";

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

/** What a {@link CompiledSpace} is made of; see {@link compileSteps}. */
interface CompiledParts {
  entries: readonly CompiledEntry[];
  specErrors: readonly string[];
  random: boolean;
  preallocations: ReadonlyMap<string, Addr | undefined>;
  preallocatedKeys: ReadonlyMap<string, readonly string[]>;
  layout: EntryLayout;
  union: Record<Family, ReadonlyArray<readonly [bigint, bigint]>>;
}

/**
 * What every allocator of one unchanged pool shares: its entries, problems, strategy, parsed preallocations and scan
 * order (allocator-order.ts). Immutable; made by {@link PoolAllocator.compile} or {@link compileSteps}, which validate
 * the spec once.
 */
export class CompiledSpace {
  /** Spaces compiled since the process started (each validated its spec once); for tests. */
  static compilations = 0;
  /** The usable entries, in scan order. */
  readonly entries: readonly CompiledEntry[];
  readonly specErrors: readonly string[];
  readonly random: boolean;
  /** Preallocated address per claim name; `undefined` when the text is not an address. */
  readonly preallocations: ReadonlyMap<string, Addr | undefined>;
  /** Claim names per preallocated address (its `addressKey`). */
  readonly preallocatedKeys: ReadonlyMap<string, readonly string[]>;
  readonly layout: EntryLayout;
  readonly union: Record<Family, ReadonlyArray<readonly [bigint, bigint]>>;
  readonly total: bigint;

  /** From its parts, made by {@link compileSteps}. */
  constructor(parts: CompiledParts) {
    CompiledSpace.compilations++;
    this.entries = parts.entries;
    this.specErrors = parts.specErrors;
    this.random = parts.random;
    this.preallocations = parts.preallocations;
    this.preallocatedKeys = parts.preallocatedKeys;
    this.layout = parts.layout;
    this.union = parts.union;
    let total = 0n;
    for (const family of [4, 6] as const) for (const [lo, hi] of this.union[family]) total += hi - lo + 1n;
    this.total = total;
  }
}

/**
 * The compilation of `source` as steps, for callers whose thread must not be held by a pool of a hundred thousand
 * entries (the controller's event loop renews the leader's Lease): each `yield` is a point where the caller may let
 * other work run before asking for the next step, and the generator returns the compiled space. A step is at most
 * `slice` items of a per-item loop (entries, preallocations), or one stage that has none (validation, the scan order,
 * the union, each O(n log n)). Driven to its end without pausing (`runSteps`) it is {@link PoolAllocator.compile}.
 */
export function* compileSteps(source: IPPoolSpec | AddressSpace, slice = STEP_ITEMS): Steps<CompiledSpace> {
  const spec = "entries" in source ? undefined : source;
  let entries: CompiledEntry[];
  let specErrors: readonly string[];
  if (spec) {
    // compileEntries(spec), a slice of entries at a time.
    const compiled: CompiledPool = { entries: [], errors: [] };
    const defaults = entryDefaults(spec);
    const pools = spec.pools ?? [];
    for (let i = 0; i < pools.length; i++) {
      const r = compileEntry(pools[i] ?? {}, i, defaults);
      if (r.entry) compiled.entries.push(r.entry);
      for (const e of r.errors) compiled.errors.push(e);
      if ((i + 1) % slice === 0) yield;
    }
    for (const e of addressListErrors(spec.gateway, spec.dnsServers, "spec")) compiled.errors.push(e);
    yield;
    entries = compiled.entries;
    specErrors = validateCompiledSpec(spec, compiled).map(formatFieldError);
  } else {
    const space = source as AddressSpace;
    entries = [...space.entries];
    specErrors = [...space.specErrors];
  }
  yield;
  const layout = new EntryLayout(entries);
  yield;
  const union = entryUnion(entries);
  const preallocations = new Map<string, Addr | undefined>();
  const keys = new Map<string, string[]>();
  let n = 0;
  for (const [claimName, text] of Object.entries(spec?.preAllocations ?? {})) {
    if (++n % slice === 0) yield;
    const addr = parseAddress(text);
    preallocations.set(claimName, addr);
    if (!addr) continue;
    const key = addressKey(addr);
    const names = keys.get(key);
    if (names) names.push(claimName);
    else keys.set(key, [claimName]);
  }
  return new CompiledSpace({
    entries,
    specErrors,
    random: spec?.allocationStrategy === "random",
    preallocations,
    preallocatedKeys: keys,
    layout,
    union,
  });
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

/**
 * A copy of `h` with its own fields only, built as a literal: smaller than a spread copy, and free of whatever else
 * the caller's object carries.
 */
function copyHolder(h: Holder): Holder {
  if (h.kind === "other") return { kind: "other", description: h.description };
  return "claimKind" in h
    ? { kind: "claim", claimName: h.claimName, claimKind: h.claimKind }
    : { kind: "claim", claimName: h.claimName };
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
  private readonly compiled: CompiledSpace;
  private readonly rng: Rng;
  /** Held (by `reserve`) ∪ preallocated: what allocation must avoid. */
  private readonly inUse: Record<Family, FreeSet> = { 4: new FreeSet(), 6: new FreeSet() };
  /** Held by `reserve` only: what `used` counts. */
  private readonly held: Record<Family, FreeSet> = { 4: new FreeSet(), 6: new FreeSet() };
  /** Which pieces of the scan order have an address not in `inUse`. */
  private readonly free: FreePieces;
  private readonly holders = new Map<string, Holder[]>();

  /**
   * From a Metal3 pool spec, from a space compiled elsewhere (see {@link PoolAllocator.fromSpace}), or from either
   * compiled once ({@link PoolAllocator.compile}): then nothing is parsed or validated again.
   */
  constructor(source: IPPoolSpec | AddressSpace | CompiledSpace, options: PoolAllocatorOptions = {}) {
    this.compiled = source instanceof CompiledSpace ? source : runSteps(compileSteps(source));
    this.specErrors = this.compiled.specErrors;
    this.entries = this.compiled.entries;
    this.rng = options.rng ?? Math.random;
    this.free = new FreePieces(this.compiled.layout.pieces.length);
    for (const addr of this.compiled.preallocations.values()) if (addr) this.markInUse(addr);
  }

  /**
   * Compiles and validates `source` once, for allocators opened on it later (`new PoolAllocator(compiled)`): what a
   * caller keeps while the pool's spec is unchanged.
   */
  static compile(source: IPPoolSpec | AddressSpace): CompiledSpace {
    return runSteps(compileSteps(source));
  }

  /**
   * An allocator over entries compiled elsewhere (see {@link AddressSpace}): sequential strategy, no preallocations,
   * `specErrors` as given. Everything else (reserve, release, requests, capacity, holders) works as for a Metal3 pool,
   * at the same cost. The entries are copied: later changes to the array do not reach the allocator.
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
    return this.inUse[4].work + this.inUse[6].work + this.held[4].work + this.held[6].work + this.free.work;
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
    // An array of exactly its holders (a push reserves room for more): nearly every address has one holder, in the
    // allocator of every pool a pass keeps.
    if (!list.some((h) => sameHolder(h, holder))) this.holders.set(key, list.concat([copyHolder(holder)]));
    this.held[a.family].markUsed(a.value);
    this.markInUse(a);
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
    if (!this.compiled.preallocatedKeys.has(key) && this.inUse[a.family].unmark(a.value)) this.refresh(a);
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
    return a ? [...(this.compiled.preallocatedKeys.get(addressKey(a)) ?? [])] : [];
  }

  /** Whether some entry yields `address`. */
  contains(address: string): boolean {
    return this.entryOf(address) !== undefined;
  }

  /** The first entry (declaration order) that yields `address`. */
  entryOf(address: string): CompiledEntry | undefined {
    const a = parseAddress(address);
    return a ? this.compiled.layout.ownerOf(a) : undefined;
  }

  /** Exact counts; see {@link Capacity}. O(k log n) for k disjoint ranges. */
  capacity(): Capacity {
    let used = 0n;
    for (const family of [4, 6] as const) {
      for (const [lo, hi] of this.compiled.union[family]) used += this.held[family].countUsed(lo, hi);
    }
    const total = this.compiled.total;
    return { total, used, free: total - used };
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
    if (this.compiled.preallocations.has(claimName)) {
      const pre = this.compiled.preallocations.get(claimName);
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
    const entry = addr && this.compiled.layout.ownerOf(addr);
    if (!addr || !entry) return failed(AllocationMessages.preallocatedOutOfBounds);
    const other = (this.holders.get(addressKey(addr)) ?? []).find((h) => !isClaim(h, claimName, claimKind));
    if (other) return failed(AllocationMessages.preallocatedHeld(formatAddress(addr), other));
    return this.result(entry, addr.value);
  }

  private allocateRequested(claimName: string, claimKind: string | undefined, addr: Addr): AllocationResult {
    const entry = this.compiled.layout.ownerOf(addr);
    if (!entry) return failed(AllocationMessages.requestedOutOfBounds(formatAddress(addr)));
    const key = addressKey(addr);
    const heldByOther = (this.holders.get(key) ?? []).some((h) => !isClaim(h, claimName, claimKind));
    const preallocatedToOther = (this.compiled.preallocatedKeys.get(key) ?? []).some((c) => c !== claimName);
    if (heldByOther || preallocatedToOther) return failed(AllocationMessages.requestedNotAvailable);
    return this.result(entry, addr.value);
  }

  /**
   * The first piece of the scan order with a free address belongs to the first entry with one (every entry before it
   * is full, allocator-order.ts): sequential takes the piece's lowest free address, which is that entry's lowest.
   * Random draws its index in that entry only: a full entry's draw could not change the outcome, so the addresses are
   * distributed as when every full entry before it drew too.
   */
  private allocateFree(): AllocationResult {
    const rank = this.free.first();
    const piece = this.compiled.layout.pieces[rank];
    if (!piece) return { ok: false, reason: "PoolExhausted", message: AllocationMessages.exhausted };
    const entry = piece.entry;
    const value = this.compiled.random ? this.pickRandom(entry) : this.inUse[piece.family].nextFree(piece.lo, piece.hi);
    if (value === undefined) throw new Error("allocator: a piece counted free has no free address");
    return this.result(entry, value);
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

  /** Marks `a` in use (held or preallocated) and updates its piece. */
  private markInUse(a: Addr): void {
    if (this.inUse[a.family].markUsed(a.value)) this.refresh(a);
  }

  /** Records whether the piece holding `a` (if an entry yields it) still has an address not in use. O(log n). */
  private refresh(a: Addr): void {
    const rank = this.compiled.layout.rankOf(a.family, a.value);
    const piece = this.compiled.layout.pieces[rank];
    if (piece) this.free.set(rank, this.inUse[a.family].nextFree(piece.lo, piece.hi) !== undefined);
  }
}
