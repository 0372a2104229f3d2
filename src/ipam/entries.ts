/**
 * IPPool entries (`spec.pools[i]`) compiled to intervals, following Metal3's address arithmetic bit for bit (spec §2).
 *
 * Metal3 produces candidate i of an entry by arithmetic and its sequential scan stops at the first index that is out
 * of bounds. Every bound is monotone in i, so the candidates of an entry are always ONE contiguous interval of values,
 * starting at candidate 0. We keep only that interval, which is what lets the free-space structure answer in O(log n).
 *
 * Consequences worth knowing (all follow from "the scan stops at the first out-of-bounds index"):
 * - `start` below its `subnet`: candidate 0 is outside the subnet, so the entry yields NOTHING (not the part of the
 *   range inside the subnet).
 * - `start` with `subnet` and without `end` is bounded by the subnet; `start` alone runs to the top of the family.
 * - subnet only: candidates run from (address as written in the CIDR) + 1 to the last address of the subnet, so
 *   `192.168.0.0/30` yields .1 .2 .3, `192.168.0.10/24` yields .11 … .255, a /32 or /128 yields nothing.
 * - `end` without `start` is ignored by Metal3's arithmetic: an entry with `subnet` and `end` but no `start` is a
 *   subnet-only entry, and an entry with only `end` yields nothing.
 * - Nothing ever wraps: the top of the family ends every entry.
 * The same interval is used for both strategies, for requested and preallocated addresses, and for capacity, so all
 * of them agree on what an entry contains.
 */
import type { IPPoolSpec, Pool } from "../../api/v1alpha1/types.js";
import { maxValue, parseAddress, parseSubnet } from "./address.js";
import type { Addr, Family, Subnet } from "./address.js";
import type { FieldError } from "./fielderror.js";

/** Pool-wide values an entry falls back to (spec §1.1). */
export interface PoolDefaults {
  prefix?: number;
  gateway?: string;
  dnsServers?: string[];
}

/**
 * One entry as an interval of candidate values. The entry yields exactly the values `first..last` (inclusive), in
 * that order; it yields nothing when `size === 0n` (then `last < first`).
 */
export interface CompiledEntry {
  /** Position in `spec.pools`. */
  readonly index: number;
  readonly family: Family;
  /** Candidate 0. */
  readonly first: bigint;
  /** Last candidate, inclusive. */
  readonly last: bigint;
  /** Number of candidates: `last - first + 1`, or `0n`. */
  readonly size: bigint;
  /** False only for a start-only entry (it runs to the top of the family). */
  readonly bounded: boolean;
  /**
   * Metal3's index space for `random` (spec §2): `end - start + 1`; start+subnet: `last(subnet) - start + 1`;
   * subnet only: `last(subnet) - network(subnet)`; `undefined` when Metal3 cannot size the entry (start only, end
   * only). Never smaller than `size`; indices at or past `size` fall outside the entry.
   */
  readonly indexSpace: bigint | undefined;
  /** Resolved prefix: the entry's own if non-zero, else the pool's, else 0. */
  readonly prefix: number;
  /** Resolved gateway, as written (the entry's own if set, else the pool's). May be unparsable: see `errors`. */
  readonly gateway?: string;
  /** Resolved DNS servers, as written (the entry's own if non-empty, else the pool's); absent when empty. */
  readonly dnsServers?: string[];
}

/**
 * Outcome of compiling one entry. `entry` is present whenever Metal3's arithmetic is well defined for it (possibly
 * yielding nothing); `errors` lists every problem the webhook rejects (spec §6), including non-fatal ones such as
 * an unparsable gateway or an end before start (that entry simply yields nothing, as in Metal3).
 */
export interface CompileResult {
  entry: CompiledEntry | undefined;
  errors: FieldError[];
  /**
   * Problems Metal3's webhook accepts and we only warn about (spec §6): start, end and subnet of different address
   * families. Such an entry has no arithmetic here (`entry` is undefined, it yields nothing) but is not an error.
   */
  warnings: string[];
}

const NOT_AN_IP = "not a valid IP address";

function isSet<T>(v: T | null | undefined): v is T {
  return v !== undefined && v !== null;
}

interface ParsedFields {
  start?: Addr;
  end?: Addr;
  subnet?: Subnet;
}

/** Parses start/end/subnet, reporting unparsable ones. `fatal` is set when the arithmetic cannot be defined. */
function parseFields(entry: Pool, path: string, errors: FieldError[]): { fields: ParsedFields; fatal: boolean } {
  const fields: ParsedFields = {};
  let fatal = false;
  if (isSet(entry.start)) {
    fields.start = parseAddress(entry.start);
    if (!fields.start) {
      errors.push({ field: `${path}.start`, type: "Invalid", value: String(entry.start), detail: NOT_AN_IP });
      fatal = true;
    }
  }
  if (isSet(entry.end)) {
    fields.end = parseAddress(entry.end);
    if (!fields.end) {
      errors.push({ field: `${path}.end`, type: "Invalid", value: String(entry.end), detail: NOT_AN_IP });
      // Without start Metal3 never reads end.
      fatal ||= isSet(entry.start) || !isSet(entry.subnet);
    }
  }
  if (isSet(entry.subnet)) {
    fields.subnet = parseSubnet(entry.subnet);
    if (!fields.subnet) {
      const detail = "not a valid subnet (address/prefix length)";
      errors.push({ field: `${path}.subnet`, type: "Invalid", value: String(entry.subnet), detail });
      fatal = true;
    }
  }
  return { fields, fatal };
}

const MIXED_FAMILIES = "start, end and subnet are of different address families";

/**
 * Cross-field checks: end not before start (an error, as in Metal3), families agree (a warning only: Metal3 accepts
 * mixed entries). Returns true when the arithmetic is undefined here (mixed families), so the entry yields nothing.
 */
function checkRelations(entry: Pool, f: ParsedFields, path: string, errors: FieldError[], warnings: string[]): boolean {
  const { start, end, subnet } = f;
  let undefinedArithmetic = false;
  if (start && end && start.family !== end.family) {
    warnings.push(`${path}.end "${String(entry.end)}": ${MIXED_FAMILIES}: the entry yields no address`);
    undefinedArithmetic = true;
  }
  if (start && subnet && start.family !== subnet.network.family) {
    warnings.push(`${path}.subnet "${String(entry.subnet)}": ${MIXED_FAMILIES}: the entry yields no address`);
    undefinedArithmetic = true;
  }
  if (!start && end && subnet && end.family !== subnet.network.family) {
    warnings.push(`${path}.end "${String(entry.end)}": ${MIXED_FAMILIES} (end is ignored without start)`);
  }
  if (start && end && start.family === end.family && end.value < start.value) {
    errors.push({ field: `${path}.end`, type: "Invalid", value: String(entry.end), detail: "end is before start" });
  }
  return undefinedArithmetic;
}

/**
 * Errors for a gateway and DNS server list (entry-level or pool-wide) that are not addresses.
 * `path` is the parent path (`spec` or `spec.pools[i]`).
 */
export function addressListErrors(
  gateway: string | null | undefined,
  dnsServers: readonly string[] | null | undefined,
  path: string,
): FieldError[] {
  const errors: FieldError[] = [];
  if (isSet(gateway) && !parseAddress(gateway)) {
    errors.push({ field: `${path}.gateway`, type: "Invalid", value: String(gateway), detail: NOT_AN_IP });
  }
  (dnsServers ?? []).forEach((dns, j) => {
    if (!parseAddress(dns)) {
      errors.push({ field: `${path}.dnsServers[${j}]`, type: "Invalid", value: String(dns), detail: NOT_AN_IP });
    }
  });
  return errors;
}

interface Interval {
  family: Family;
  first: bigint;
  last: bigint;
  bounded: boolean;
  indexSpace: bigint | undefined;
}

function startInterval(start: Addr, end: Addr | undefined, subnet: Subnet | undefined): Interval {
  const family = start.family;
  let last = maxValue(family);
  if (end) last = end.value < last ? end.value : last;
  if (subnet) {
    // Candidate 0 outside the subnet ends the scan before it starts.
    const inside = start.value >= subnet.first && start.value <= subnet.last;
    last = !inside ? start.value - 1n : subnet.last < last ? subnet.last : last;
  }
  let indexSpace: bigint | undefined;
  if (end) indexSpace = end.value - start.value + 1n;
  else if (subnet) indexSpace = subnet.last - start.value + 1n;
  return { family, first: start.value, last, bounded: !!(end || subnet), indexSpace };
}

function intervalOf(f: ParsedFields): Interval | undefined {
  if (f.start) return startInterval(f.start, f.end, f.subnet);
  if (f.subnet) {
    const s = f.subnet;
    return {
      family: s.network.family,
      first: s.network.value + 1n,
      last: s.last,
      bounded: true,
      indexSpace: s.last - s.first,
    };
  }
  if (f.end) return { family: f.end.family, first: 0n, last: -1n, bounded: true, indexSpace: undefined };
  return undefined;
}

function resolve(entry: Pool, defaults: PoolDefaults): Pick<CompiledEntry, "prefix" | "gateway" | "dnsServers"> {
  const prefix = entry.prefix ? entry.prefix : (defaults.prefix ?? 0);
  const gateway = isSet(entry.gateway) ? entry.gateway : defaults.gateway;
  const dns = entry.dnsServers && entry.dnsServers.length > 0 ? entry.dnsServers : defaults.dnsServers;
  return {
    prefix,
    ...(isSet(gateway) ? { gateway } : {}),
    ...(dns && dns.length > 0 ? { dnsServers: [...dns] } : {}),
  };
}

/**
 * Compiles entry `index` of a pool. Never throws; see {@link CompileResult} for what `entry` and `errors` mean.
 * An entry with none of start/end/subnet gets a Required error and no `entry`.
 */
export function compileEntry(entry: Pool, index: number, defaults: PoolDefaults = {}): CompileResult {
  const path = `spec.pools[${index}]`;
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  if (!isSet(entry.start) && !isSet(entry.end) && !isSet(entry.subnet)) {
    errors.push({ field: path, type: "Required", detail: "one of start, end or subnet is required" });
    errors.push(...addressListErrors(entry.gateway, entry.dnsServers, path));
    return { entry: undefined, errors, warnings };
  }
  const parsed = parseFields(entry, path, errors);
  const relationsFatal = checkRelations(entry, parsed.fields, path, errors, warnings);
  errors.push(...addressListErrors(entry.gateway, entry.dnsServers, path));
  const interval = parsed.fatal || relationsFatal ? undefined : intervalOf(parsed.fields);
  if (!interval) return { entry: undefined, errors, warnings };
  const empty = interval.last < interval.first;
  const size = empty ? 0n : interval.last - interval.first + 1n;
  let indexSpace = interval.indexSpace;
  if (indexSpace !== undefined && indexSpace < size) indexSpace = size;
  const compiled: CompiledEntry = {
    index,
    family: interval.family,
    first: interval.first,
    last: empty ? interval.first - 1n : interval.last,
    size,
    bounded: interval.bounded,
    indexSpace,
    ...resolve(entry, defaults),
  };
  return { entry: compiled, errors, warnings };
}

/** All entries of a pool compiled, plus pool-wide problems. */
export interface CompiledPool {
  /** Entries whose arithmetic is defined, in declaration order (`index` tells their position in `spec.pools`). */
  entries: CompiledEntry[];
  /** Every entry error and every pool-wide gateway/dnsServers error, in field order. */
  errors: FieldError[];
}

/** The pool-level values entries inherit (spec §1.1). */
export function entryDefaults(spec: Pick<IPPoolSpec, "prefix" | "gateway" | "dnsServers">): PoolDefaults {
  const defaults: PoolDefaults = {};
  if (isSet(spec.prefix)) defaults.prefix = spec.prefix;
  if (isSet(spec.gateway)) defaults.gateway = spec.gateway;
  if (isSet(spec.dnsServers)) defaults.dnsServers = spec.dnsServers;
  return defaults;
}

/** Compiles every entry of `spec.pools` with the pool-wide defaults. Never throws. */
export function compileEntries(spec: Pick<IPPoolSpec, "pools" | "prefix" | "gateway" | "dnsServers">): CompiledPool {
  const defaults = entryDefaults(spec);
  const entries: CompiledEntry[] = [];
  const errors: FieldError[] = [];
  (spec.pools ?? []).forEach((pool, i) => {
    const r = compileEntry(pool ?? {}, i, defaults);
    if (r.entry) entries.push(r.entry);
    errors.push(...r.errors);
  });
  errors.push(...addressListErrors(spec.gateway, spec.dnsServers, "spec"));
  return { entries, errors };
}

/** Whether `entry` yields the address `a`. */
export function entryContains(entry: CompiledEntry, a: Addr): boolean {
  return entry.family === a.family && a.value >= entry.first && a.value <= entry.last;
}

/** The first entry (in declaration order) that yields `a`, as Metal3's in-order scan finds it. */
export function firstEntryContaining(entries: readonly CompiledEntry[], a: Addr): CompiledEntry | undefined {
  return entries.find((e) => entryContains(e, a));
}

/**
 * Union of the entries' intervals per family: sorted, disjoint, non-adjacent `[first, last]` pairs.
 * Empty entries contribute nothing.
 */
export function entryUnion(entries: readonly CompiledEntry[]): Record<Family, Array<[bigint, bigint]>> {
  const out: Record<Family, Array<[bigint, bigint]>> = { 4: [], 6: [] };
  for (const family of [4, 6] as const) {
    const spans = entries
      .filter((e) => e.family === family && e.size > 0n)
      .map((e): [bigint, bigint] => [e.first, e.last])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const merged = out[family];
    for (const [lo, hi] of spans) {
      const top = merged[merged.length - 1];
      if (top && lo <= top[1] + 1n) {
        if (hi > top[1]) top[1] = hi;
      } else {
        merged.push([lo, hi]);
      }
    }
  }
  return out;
}

/** Orders addresses as Go's `netip.Addr.Compare` does: every IPv4 address before every IPv6 one, then by value. */
function compareAddr(a: Addr, b: Addr): number {
  if (a.family !== b.family) return a.family - b.family;
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

/** Whether `a` passes the box test of one entry; false for an entry with an unparsable bound (it is skipped). */
function insideBox(entry: Pool, a: Addr): boolean {
  if (!isSet(entry.start) && !isSet(entry.end) && !isSet(entry.subnet)) return false;
  if (isSet(entry.start)) {
    const start = parseAddress(entry.start);
    if (!start || compareAddr(start, a) > 0) return false;
  }
  if (isSet(entry.end)) {
    const end = parseAddress(entry.end);
    if (!end || compareAddr(end, a) < 0) return false;
  }
  if (isSet(entry.subnet)) {
    const subnet = parseSubnet(entry.subnet);
    if (!subnet || subnet.network.family !== a.family || a.value < subnet.first || a.value > subnet.last) return false;
  }
  return true;
}

/**
 * Whether `a` lies inside the bounds Metal3's webhook checks preallocations and addresses in use against: some entry
 * with `start <= a` (if start is set), `a <= end` (if end is set) and `a` in `subnet` (if set). That is a box test,
 * looser than the arithmetic of {@link compileEntry} (it takes a subnet's network address, an `end` without `start`,
 * a `start` below its subnet). What fails it Metal3 refuses, and so do we; what passes it but no entry yields is only
 * worth a warning (spec §6: what Metal3 accepts, we accept).
 */
export function withinMetal3Bounds(pools: readonly (Pool | null | undefined)[] | null | undefined, a: Addr): boolean {
  return (pools ?? []).some((entry) => !!entry && insideBox(entry, a));
}
