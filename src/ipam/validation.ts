/**
 * The one validation module (spec §6), shared by the admission webhooks and the controllers (defence in depth).
 * Every function collects all errors and never throws, even on objects that are missing required parts.
 */
import isEqual from "lodash/isEqual.js";
import cloneDeep from "lodash/cloneDeep.js";
import { IP_ADDRESS_ANNOTATION } from "../../api/v1alpha1/types.js";
import type { IPAddress, IPClaim, IPPool, IPPoolSpec, ObjectRef, Pool } from "../../api/v1alpha1/types.js";
import { addressKey, formatAddress, parseAddress } from "./address.js";
import { addressListErrors, compileEntries, compileEntry, type CompiledPool } from "./entries.js";
import type { CompiledEntry, CompileResult } from "./entries.js";
import { AddressIndex, OverlapCounter } from "./entryindex.js";
import type { Addr, Family } from "./address.js";
import type { FieldError } from "./fielderror.js";

export { formatFieldError } from "./fielderror.js";
export type { FieldError, FieldErrorType } from "./fielderror.js";

const NOT_AN_IP = "not a valid IP address";
const IMMUTABLE = "field is immutable";

function strategyErrors(spec: IPPoolSpec, entries: readonly CompiledEntry[]): FieldError[] {
  const strategy = spec.allocationStrategy;
  const field = "spec.allocationStrategy";
  if (strategy !== undefined && strategy !== null && !["", "sequential", "random"].includes(strategy)) {
    return [{ field, type: "Invalid", value: String(strategy), detail: 'supported values: "sequential", "random"' }];
  }
  if (strategy !== "random") return [];
  return entries
    .filter((e) => e.indexSpace === undefined)
    .map((e) => ({
      field,
      type: "Invalid" as const,
      value: "random",
      detail: `spec.pools[${e.index}] has no known size: random needs start with end or subnet, or a subnet`,
    }));
}

function preallocationErrors(spec: IPPoolSpec, entries: readonly CompiledEntry[]): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Map<string, string>();
  const yielded = AddressIndex.yielded(entries);
  let bounds: AddressIndex | undefined;
  for (const claimName of Object.keys(spec.preAllocations ?? {}).sort()) {
    const text = spec.preAllocations?.[claimName] ?? "";
    const field = `spec.preAllocations[${claimName}]`;
    const a = parseAddress(text);
    if (!a) {
      errors.push({ field, type: "Invalid", value: text, detail: NOT_AN_IP });
      continue;
    }
    // Outside Metal3's own bounds check Metal3 refuses too; inside it but yielded by no entry is only a warning.
    if (!yielded.has(a) && !(bounds ??= AddressIndex.metal3Bounds(spec.pools)).has(a)) {
      errors.push({
        field,
        type: "Invalid",
        value: text,
        detail: "out of bounds: the address lies in no entry of spec.pools",
      });
    }
    const first = seen.get(addressKey(a));
    if (first !== undefined) {
      errors.push({ field, type: "Duplicate", value: text, detail: `same address as spec.preAllocations[${first}]` });
    } else {
      seen.set(addressKey(a), claimName);
    }
  }
  return errors;
}

/**
 * Create-time checks of an IPPool spec (everything of spec §6 that does not need the old object), limited to what
 * Metal3's webhook and CRD refuse: namePrefix present, entries and pool-wide gateway/DNS parsable, end not before
 * start (same family), an entry with one of start/end/subnet, preallocations that are addresses inside Metal3's
 * bounds (see {@link withinMetal3Bounds}) and not repeated (compared as numbers), a known strategy, and `random` only
 * with entries of known size. Mixed families and preallocations no entry yields are warnings ({@link ipPoolWarnings}).
 */
export function validateIPPoolSpec(spec: IPPoolSpec): FieldError[] {
  return validateCompiledSpec(spec, compileEntries(spec));
}

/** {@link validateIPPoolSpec} of a spec whose entries were compiled already (`compileEntries(spec)`). */
export function validateCompiledSpec(spec: IPPoolSpec, compiled: CompiledPool): FieldError[] {
  const errors: FieldError[] = [];
  if (!spec.namePrefix) {
    errors.push({ field: "spec.namePrefix", type: "Required", detail: "a non-empty prefix for IPAddress names" });
  }
  // concat, not push(...): a list of that many arguments overflows the stack.
  return errors.concat(
    compiled.errors,
    strategyErrors(spec, compiled.entries),
    preallocationErrors(spec, compiled.entries),
  );
}

function normalStrategy(s: string | null | undefined): string {
  return s ? s : "sequential";
}

/**
 * Addresses in use that the old entries yield and the new ones do not, each once, split by Metal3's bounds check:
 * `outside` ones Metal3 refuses too; `inside` ones only leave the ranges of our arithmetic (a warning).
 */
function droppedInUse(
  pool: IPPool,
  old: IPPool,
  inUseAddresses: readonly string[],
): { outside: Addr[]; inside: Addr[] } {
  const before = AddressIndex.yielded(compileEntries(old.spec ?? {}).entries);
  const after = AddressIndex.yielded(compileEntries(pool.spec ?? {}).entries);
  const bounds = AddressIndex.metal3Bounds(pool.spec?.pools);
  const dropped = { outside: [] as Addr[], inside: [] as Addr[] };
  const seen = new Set<string>();
  for (const text of inUseAddresses) {
    const a = parseAddress(text);
    if (!a || seen.has(addressKey(a))) continue;
    seen.add(addressKey(a));
    // Addresses that were outside the ranges already (person-made reservations) do not block updates.
    if (!before.has(a) || after.has(a)) continue;
    (bounds.has(a) ? dropped.inside : dropped.outside).push(a);
  }
  return dropped;
}

function inUseErrors(pool: IPPool, old: IPPool, inUseAddresses: readonly string[]): FieldError[] {
  const detail = "the address is in use and would be out of bounds of the pools";
  return droppedInUse(pool, old, inUseAddresses).outside.map((a) => ({
    field: "spec.pools",
    type: "Invalid" as const,
    value: formatAddress(a),
    detail,
  }));
}

/**
 * Admission warnings of an IPPool update that need the addresses in use (see {@link validateIPPool}): addresses the
 * old entries yielded that the new ones do not, while still inside Metal3's bounds (Metal3 accepts such an update, so
 * we do too). They stay held by their IPAddresses. Empty on create and for an unchanged spec.
 */
export function ipPoolUpdateWarnings(
  pool: IPPool,
  old: IPPool | undefined,
  inUseAddresses: readonly string[],
): string[] {
  if (!old?.spec || isEqual(old.spec, pool.spec)) return [];
  return droppedInUse(pool, old, inUseAddresses).inside.map(
    (a) => `spec.pools: ${formatAddress(a)} is in use and no entry yields it any more (it stays held by its IPAddress)`,
  );
}

/**
 * Validates an IPPool on create (`old` absent) or update. On update only spec changes are validated: an unchanged
 * spec passes, so metadata and status writes never bounce. An update also rejects a changed `namePrefix`, a changed
 * strategy (`""`, absent and `sequential` are the same), and pools that no longer contain an address of
 * `inUseAddresses` that the old pools contained.
 * @returns every error found, empty when valid.
 */
export function validateIPPool(pool: IPPool, old?: IPPool, inUseAddresses: readonly string[] = []): FieldError[] {
  const spec: IPPoolSpec = pool.spec ?? { namePrefix: "" };
  if (old && isEqual(old.spec, spec)) return [];
  const errors = validateIPPoolSpec(spec);
  if (!old?.spec) return errors;
  if (old.spec.namePrefix !== spec.namePrefix) {
    errors.push({ field: "spec.namePrefix", type: "Invalid", value: String(spec.namePrefix), detail: IMMUTABLE });
  }
  if (normalStrategy(old.spec.allocationStrategy) !== normalStrategy(spec.allocationStrategy)) {
    const value = String(spec.allocationStrategy ?? "");
    errors.push({ field: "spec.allocationStrategy", type: "Invalid", value, detail: IMMUTABLE });
  }
  return errors.concat(inUseErrors({ ...pool, spec }, old, inUseAddresses));
}

/** A copy of `pool` with defaults applied: `allocationStrategy` absent or `""` becomes `sequential`. */
export function defaultIPPool(pool: IPPool): IPPool {
  const copy = cloneDeep(pool);
  if (copy.spec && !copy.spec.allocationStrategy) copy.spec.allocationStrategy = "sequential";
  return copy;
}

function emptyEntryReason(start: boolean, subnet: boolean): string {
  if (start && subnet) return "start lies outside subnet";
  if (subnet) return "no address follows the one written in subnet";
  if (start) return "start is the end of its range";
  return "without start or subnet an entry yields nothing";
}

function selfWarnings(pool: IPPool, compiled: readonly CompileResult[]): string[] {
  const warnings: string[] = [];
  const pools = pool.spec?.pools ?? [];
  compiled.forEach((r, i) => {
    warnings.push(...r.warnings);
    const raw = pools[i];
    if (r.errors.length > 0 || !r.entry || !raw) return;
    if (raw.end && !raw.start && raw.subnet) {
      warnings.push(`spec.pools[${i}].end is ignored: without start an entry is its subnet`);
    }
    if (r.entry.size === 0n) {
      warnings.push(`spec.pools[${i}] yields no address: ${emptyEntryReason(!!raw.start, !!raw.subnet)}`);
    }
  });
  const mixed = mixedFamilyWarning(pools, compiled);
  if (mixed) warnings.push(mixed);
  return [...warnings, ...preallocationWarnings(pool.spec ?? { namePrefix: "" }, definedEntries(compiled))];
}

function definedEntries(compiled: readonly CompileResult[]): CompiledEntry[] {
  return compiled.flatMap((r) => (r.entry ? [r.entry] : []));
}

/**
 * The warning for entries that yield addresses of both families (Metal3 accepts such a pool, and so do we). A claim
 * cannot ask for a family, so claims that request no address take the entries in order (spec §3.2): one
 * family until its entries run out, then the other. And the pool-wide `spec.prefix`, which every entry without its
 * own prefix takes, fits at most one family. Undefined when the yielding entries are of one family.
 */
function mixedFamilyWarning(
  pools: readonly (Pool | null | undefined)[],
  compiled: readonly CompileResult[],
): string | undefined {
  const runs: { family: Family; fields: string[] }[] = [];
  const onPoolPrefix: string[] = [];
  compiled.forEach(({ entry }, i) => {
    if (!entry || entry.size === 0n) return;
    const field = `spec.pools[${i}]`;
    if (!pools[i]?.prefix) onPoolPrefix.push(field);
    const last = runs.at(-1);
    if (last?.family === entry.family) last.fields.push(field);
    else runs.push({ family: entry.family, fields: [field] });
  });
  if (new Set(runs.map((r) => r.family)).size < 2) return undefined;
  const order = runs
    .map((r, i) => `${i === 0 ? `IPv${r.family} addresses` : `then IPv${r.family} ones`} (${r.fields.join(", ")})`)
    .join(" until those run out, ");
  const prefix =
    onPoolPrefix.length > 0
      ? `; and one spec.prefix cannot suit both families: set a prefix on each entry (${onPoolPrefix.join(", ")} ${onPoolPrefix.length === 1 ? "has" : "have"} none)`
      : "";
  return `spec.pools mixes IPv4 and IPv6 entries: claims that request no address get ${order}${prefix}`;
}

/** Preallocations Metal3's bounds check accepts but no entry yields: their claims will fail, so say so now. */
function preallocationWarnings(spec: IPPoolSpec, entries: readonly CompiledEntry[]): string[] {
  const yielded = AddressIndex.yielded(entries);
  let bounds: AddressIndex | undefined;
  const warnings: string[] = [];
  for (const claimName of Object.keys(spec.preAllocations ?? {}).sort()) {
    const a = parseAddress(spec.preAllocations?.[claimName] ?? "");
    if (!a || yielded.has(a) || !(bounds ??= AddressIndex.metal3Bounds(spec.pools)).has(a)) continue;
    warnings.push(
      `spec.preAllocations[${claimName}]: no entry of spec.pools yields ${formatAddress(a)}: ` +
        `claim "${claimName}" will fail with "Pre-allocated IP out of bounds"`,
    );
  }
  return warnings;
}

/** Warnings in order, of which the first `max` texts are kept and the rest only counted. */
class WarningList {
  private readonly kept: string[] = [];
  private total = 0;

  constructor(private readonly max: number) {}

  add(texts: readonly string[]): void {
    for (const text of texts) {
      if (this.kept.length < this.max) this.kept.push(text);
      this.total++;
    }
  }

  /** `count` warnings, of which `make(n)` writes the first `n`: those that are kept. */
  addCounted(count: number, make: (n: number) => string[]): void {
    const n = Math.min(count, Math.max(0, this.max - this.kept.length));
    if (n > 0) this.add(make(n));
    this.total += count - n;
  }

  /** At most `max` texts: when there are more, the first `max - 1` and one that counts the rest. */
  texts(): string[] {
    if (this.total <= this.max) return [...this.kept];
    return [...this.kept.slice(0, this.max - 1), `and ${this.total - this.max + 1} more warnings`];
  }
}

/**
 * At most `max` (at least 1) of `warnings`: when there are more, the first `max - 1` and `and N more warnings` for the
 * rest (the API server truncates long lists of warnings).
 */
export function capWarnings(warnings: readonly string[], max: number): string[] {
  const list = new WarningList(max);
  list.add(warnings);
  return list.texts();
}

function overlaps(a: CompiledEntry, b: CompiledEntry): boolean {
  return a.family === b.family && a.size > 0n && b.size > 0n && a.first <= b.last && b.first <= a.last;
}

/**
 * Admission warnings (never rejections) for `pool` among `others` (the pools of its namespace; the pool itself and
 * pools of other namespaces are skipped): ranges overlapping another pool, a namePrefix shared with another pool
 * (together they make IPAddress names collide, spec §3.6), entries that yield no address, an entry mixing address
 * families, entries of both families in one pool, an `end` that Metal3's arithmetic ignores, and preallocations no
 * entry yields (while inside Metal3's bounds, so not refused). At most `max` of them, as {@link capWarnings} cuts
 * them; overlaps beyond those are counted, not written, so the cost stays O(n log n) in the entries of all pools.
 */
export function ipPoolWarnings(pool: IPPool, others: readonly IPPool[], max = Number.POSITIVE_INFINITY): string[] {
  const compiled = (pool.spec?.pools ?? []).map((raw, i) => compileEntry(raw ?? {}, i));
  const list = new WarningList(max);
  list.add(selfWarnings(pool, compiled));
  const mine = definedEntries(compiled);
  const counter = new OverlapCounter(mine);
  for (const other of others) {
    if (!isNeighbour(pool, other)) continue;
    const name = other.metadata?.name ?? "";
    const prefix = pool.spec?.namePrefix;
    if (prefix && other.spec?.namePrefix === prefix) {
      list.add([
        `namePrefix "${prefix}" is also used by IPPool "${name}": names of IPAddresses of overlapping ranges collide`,
      ]);
    }
    const theirs = compileEntries(other.spec ?? {}).entries;
    let count = 0;
    for (const f of theirs) count += counter.overlapping(f);
    list.addCounted(count, (n) => overlapWarnings(mine, theirs, name, n));
  }
  return list.texts();
}

/** Whether `other` is another pool of the namespace of `pool` (a pool without a namespace is everyone's). */
function isNeighbour(pool: IPPool, other: IPPool): boolean {
  const ns = pool.metadata?.namespace;
  const otherNs = other.metadata?.namespace;
  if (ns && otherNs && ns !== otherNs) return false;
  return other.metadata?.name !== pool.metadata?.name;
}

/**
 * The first `n` overlaps of `mine` with `theirs` (IPPool `name`), ordered by my entry, then theirs. Only entries that
 * meet the union of theirs are compared one by one, and each of them writes at least one warning.
 */
function overlapWarnings(
  mine: readonly CompiledEntry[],
  theirs: readonly CompiledEntry[],
  name: string,
  n: number,
): string[] {
  const union = AddressIndex.yielded(theirs);
  const out: string[] = [];
  for (const e of mine) {
    if (out.length >= n) break;
    if (e.size === 0n || !union.meets(e)) continue;
    for (const f of theirs) {
      if (out.length >= n) break;
      if (overlaps(e, f)) out.push(`spec.pools[${e.index}] overlaps spec.pools[${f.index}] of IPPool "${name}"`);
    }
  }
  return out;
}

function refKey(ref: ObjectRef | undefined, ownNamespace: string | undefined): string {
  // An empty namespace means the referrer's own (spec §1.2).
  return JSON.stringify([ref?.name ?? "", ref?.namespace || ownNamespace || ""]);
}

/**
 * Validates an IPClaim: `spec.pool.name` required, the `ipAddress` annotation an address unless absent or `""` (Metal3
 * treats `""` as absent, and so does the allocator), and on update `spec.pool` unchanged (an empty namespace and the
 * claim's own namespace are the same reference).
 */
export function validateIPClaim(claim: IPClaim, old?: IPClaim): FieldError[] {
  const errors: FieldError[] = [];
  if (!claim.spec?.pool?.name) {
    errors.push({ field: "spec.pool.name", type: "Required", detail: "the name of the IPPool to allocate from" });
  }
  const requested = claim.metadata?.annotations?.[IP_ADDRESS_ANNOTATION];
  if (requested !== undefined && requested !== "" && !parseAddress(requested)) {
    const field = `metadata.annotations[${IP_ADDRESS_ANNOTATION}]`;
    errors.push({ field, type: "Invalid", value: requested, detail: NOT_AN_IP });
  }
  if (old) {
    const ns = claim.metadata?.namespace ?? old.metadata?.namespace;
    if (refKey(old.spec?.pool, ns) !== refKey(claim.spec?.pool, ns)) {
      errors.push({ field: "spec.pool", type: "Forbidden", detail: IMMUTABLE });
    }
  }
  return errors;
}

/**
 * Admission warnings for an IPClaim: an `ipAddress` annotation set to `""` (accepted and treated as absent, as
 * Metal3 does). Only when the annotation newly became `""`, so later writes of the same claim stay quiet.
 */
export function ipClaimWarnings(claim: IPClaim, old?: IPClaim): string[] {
  const requested = claim.metadata?.annotations?.[IP_ADDRESS_ANNOTATION];
  if (requested !== "" || old?.metadata?.annotations?.[IP_ADDRESS_ANNOTATION] === "") return [];
  return [
    `metadata.annotations[${IP_ADDRESS_ANNOTATION}] is empty: treated as absent, the claim gets any free address`,
  ];
}

/** One field of an object reference as Go clients read it: absent and `""` are the same. */
function refField(ref: ObjectRef | undefined, field: "name" | "namespace" | "kind"): string {
  return ref?.[field] ?? "";
}

function refChanged(
  before: ObjectRef | undefined,
  after: ObjectRef | undefined,
  fields: readonly ("name" | "namespace" | "kind")[],
): boolean {
  return fields.some((f) => refField(before, f) !== refField(after, f));
}

/**
 * Metal3's immutability of an IPAddress: `address`, `pool` (name, namespace, kind) and `claim` (name, namespace).
 * prefix, gateway and dnsServers may change; absent and `""` are equal, so a Go client's full update never differs.
 */
function ipAddressImmutabilityErrors(
  spec: IPAddress["spec"] | undefined,
  old: IPAddress["spec"] | undefined,
): FieldError[] {
  const errors: FieldError[] = [];
  if ((spec?.address ?? "") !== (old?.address ?? "")) {
    errors.push({ field: "spec.address", type: "Invalid", value: spec?.address ?? "", detail: IMMUTABLE });
  }
  if (refChanged(old?.pool, spec?.pool, ["name", "namespace", "kind"])) {
    errors.push({ field: "spec.pool", type: "Forbidden", detail: IMMUTABLE });
  }
  if (refChanged(old?.claim, spec?.claim, ["name", "namespace"])) {
    errors.push({ field: "spec.claim", type: "Forbidden", detail: IMMUTABLE });
  }
  return errors;
}

/**
 * Validates an IPAddress: `spec.pool.name`, `spec.claim.name` and `spec.address` required, the address (and any
 * gateway or DNS server) an address, and on update `address`, `pool` and `claim` unchanged as Metal3's webhook
 * requires; `prefix`, `gateway` and `dnsServers` may change.
 */
export function validateIPAddress(addr: IPAddress, old?: IPAddress): FieldError[] {
  const errors: FieldError[] = [];
  const spec = addr.spec;
  if (!spec?.pool?.name)
    errors.push({ field: "spec.pool.name", type: "Required", detail: "the IPPool of the address" });
  if (!spec?.claim?.name)
    errors.push({ field: "spec.claim.name", type: "Required", detail: "the claim of the address" });
  if (!spec?.address) {
    errors.push({ field: "spec.address", type: "Required", detail: "the address" });
  } else if (!parseAddress(spec.address)) {
    errors.push({ field: "spec.address", type: "Invalid", value: spec.address, detail: NOT_AN_IP });
  }
  errors.push(...addressListErrors(spec?.gateway, spec?.dnsServers, "spec"));
  if (old) errors.push(...ipAddressImmutabilityErrors(spec, old.spec));
  return errors;
}
