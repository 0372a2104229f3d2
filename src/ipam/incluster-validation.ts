/**
 * The admission rules of the Cluster API in-cluster provider's pools (`InClusterIPPool`, `GlobalInClusterIPPool`,
 * docs/incluster.md "Webhook messages"), with its messages word for word. Pure: the caller reads the IPAddresses in
 * use and passes their addresses (or their count) in.
 *
 * Grammar: an entry of `addresses` or `excludedAddresses` is one address, a range `a-b` (same family, a ≤ b) or a CIDR
 * (the whole masked subnet); addresses in this module's one grammar (address.ts).
 */
import type { InClusterIPPool } from "../../api/incluster/types.js";
import { SKIP_VALIDATE_DELETE_ANNOTATION } from "../../api/incluster/types.js";
import { familyBits, formatAddress, maxValue, parseAddress, parseSubnet } from "./address.js";
import type { Family } from "./address.js";
import type { FieldError } from "./fielderror.js";

/** Inclusive run of addresses of one family. */
interface Run {
  family: Family;
  from: bigint;
  to: bigint;
}

const NOT_AN_ENTRY = "provided address is not a valid IP, range, nor CIDR";
const MIXED = "provided addresses are of mixed IP families";

/** The run an entry stands for, or undefined when it is none of address, range, CIDR. */
function parseEntry(text: unknown): Run | undefined {
  if (typeof text !== "string") return undefined;
  if (text.includes("-")) {
    const [a, b, ...rest] = text.split("-").map(parseAddress);
    if (!a || !b || rest.length > 0 || a.family !== b.family || b.value < a.value) return undefined;
    return { family: a.family, from: a.value, to: b.value };
  }
  if (text.includes("/")) {
    const s = parseSubnet(text);
    return s && { family: s.network.family, from: s.first, to: s.last };
  }
  const a = parseAddress(text);
  return a && { family: a.family, from: a.value, to: a.value };
}

/** The entries of a list field as written; a field that is not a list has none. */
function entriesOf(value: unknown): unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}

const shown = (entry: unknown): string => (typeof entry === "string" ? entry : JSON.stringify(entry));

/** Parses every entry of `field`, one error per unreadable entry; the families seen. */
function parseList(field: string, list: unknown[], errors: FieldError[]): { runs: Run[]; families: Set<Family> } {
  const runs: Run[] = [];
  for (const entry of list) {
    const run = parseEntry(entry);
    if (run) runs.push(run);
    else errors.push({ field, type: "Invalid", value: shown(entry), detail: NOT_AN_ENTRY });
  }
  return { runs, families: new Set(runs.map((r) => r.family)) };
}

/** `spec.prefix` as the provider reads it: absent is 0 (Go's zero value). */
function prefixOf(spec: Partial<InClusterIPPool["spec"]>): unknown {
  return spec.prefix ?? 0;
}

/** The lowest address of the union of `runs` (the provider's subnet anchor). Precondition: one family, non-empty. */
function lowest(runs: readonly Run[]): Run {
  return runs.reduce((a, b) => (b.from < a.from ? b : a));
}

/** The subnet `(lowest address)/prefix`, or undefined when the prefix does not fit the family. */
function anchorSubnet(runs: readonly Run[], prefix: number): Run | undefined {
  const first = lowest(runs);
  const bits = familyBits(first.family);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) return undefined;
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  const network = first.from & (maxValue(first.family) ^ hostMask);
  return { family: first.family, from: network, to: network | hostMask };
}

/** Whether some family of `a` differs from some family of `b` (the provider's "mixed IP families" test). */
function mixed(a: Iterable<Family>, b: Iterable<Family>): boolean {
  const others = [...b];
  return [...a].some((f) => others.some((g) => g !== f));
}

function gatewayErrors(gateway: unknown, families: ReadonlySet<Family>, errors: FieldError[]): void {
  if (gateway === undefined || gateway === "") return;
  const text = shown(gateway);
  const a = typeof gateway === "string" ? parseAddress(gateway) : undefined;
  if (!a) {
    const detail = `ParseAddr(${JSON.stringify(text)}): unable to parse IP`;
    errors.push({ field: "spec.gateway", type: "Invalid", value: text, detail });
  } else if (mixed(families, [a.family])) {
    const detail = "provided gateway and addresses are of mixed IP families";
    errors.push({ field: "spec.gateway", type: "Invalid", value: text, detail });
  }
}

function excludedErrors(
  spec: Partial<InClusterIPPool["spec"]>,
  families: ReadonlySet<Family>,
  errors: FieldError[],
): void {
  const field = "spec.excludedAddresses";
  const excluded = parseList(field, entriesOf(spec.excludedAddresses), errors);
  if (excluded.families.size > 1) errors.push({ field, type: "Invalid", detail: MIXED });
  if (mixed(families, excluded.families))
    errors.push({ field, type: "Invalid", detail: "addresses and excluded addresses are of mixed IP families" });
}

/** Every entry of `addresses` inside `(lowest address)/prefix`; run only on an otherwise valid spec. */
function subnetErrors(addresses: unknown[], runs: readonly Run[], prefix: number): FieldError[] {
  const subnet = anchorSubnet(runs, prefix);
  if (!subnet) {
    return [{ field: "spec.prefix", type: "Invalid", value: String(prefix), detail: "provided prefix is not valid" }];
  }
  const outside = addresses.filter((entry) => {
    const run = parseEntry(entry);
    return run !== undefined && (run.from < subnet.from || run.to > subnet.to);
  });
  return outside.map((entry) => ({
    field: "spec.addresses",
    type: "Invalid",
    value: shown(entry),
    detail: "provided address belongs to a different subnet than others",
  }));
}

/**
 * The provider's create and update rules, in its order: addresses required; prefix not negative; every address and
 * excluded address readable (a reversed range is not); one family among addresses, among excluded addresses, and
 * between the two and the gateway (a gateway that is not an address is refused); grace period not negative; then,
 * only when all of that holds, a prefix that fits the family and every address entry inside
 * `(lowest address)/prefix`. Not checked, as by the provider: gateway or excluded addresses inside that subnet.
 * `old` is accepted for symmetry: the provider has no immutable field and no rule that looks at the old spec.
 */
export function validateInClusterPool(pool: InClusterIPPool, old?: InClusterIPPool): FieldError[] {
  void old;
  const spec: Partial<InClusterIPPool["spec"]> = pool.spec ?? {};
  const errors: FieldError[] = [];
  const addresses = entriesOf(spec.addresses);
  if (addresses.length === 0)
    errors.push({ field: "spec.addresses", type: "Invalid", detail: "addresses is required" });
  const prefix = prefixOf(spec);
  if (typeof prefix !== "number" || !Number.isInteger(prefix) || prefix < 0) {
    errors.push({ field: "spec.prefix", type: "Invalid", value: shown(prefix), detail: "a valid prefix is required" });
  }
  const { runs, families } = parseList("spec.addresses", addresses, errors);
  if (families.size > 1) errors.push({ field: "spec.addresses", type: "Invalid", detail: MIXED });
  gatewayErrors(spec.gateway, families, errors);
  excludedErrors(spec, families, errors);
  const grace = spec.addressReuseGracePeriodSeconds;
  if (typeof grace === "number" && grace < 0) {
    const detail = "addressReuseGracePeriodSeconds must not be negative";
    errors.push({ field: "spec.addressReuseGracePeriodSeconds", type: "Invalid", value: String(grace), detail });
  }
  if (errors.length > 0) return errors;
  return subnetErrors(addresses, runs, prefix as number);
}

/** Whether `value` of `family` lies in one of `runs`. */
const within = (runs: readonly Run[], family: Family, value: bigint): boolean =>
  runs.some((r) => r.family === family && r.from <= value && value <= r.to);

/**
 * A predicate for the addresses `pool` hands out: its addresses, less excluded addresses, less the gateway, less the
 * subnet's reserved addresses unless `allocateReservedIPAddresses` (the first address of `(lowest address)/prefix`,
 * and on IPv4 the last). Unreadable entries count for nothing.
 */
function poolMembership(pool: InClusterIPPool): (family: Family, value: bigint) => boolean {
  const spec: Partial<InClusterIPPool["spec"]> = pool.spec ?? {};
  const runs = entriesOf(spec.addresses).flatMap((e) => parseEntry(e) ?? []);
  const excluded = entriesOf(spec.excludedAddresses).flatMap((e) => parseEntry(e) ?? []);
  const gateway = typeof spec.gateway === "string" ? parseAddress(spec.gateway) : undefined;
  if (gateway) excluded.push({ family: gateway.family, from: gateway.value, to: gateway.value });
  const prefix = prefixOf(spec);
  const subnet = runs.length > 0 && typeof prefix === "number" ? anchorSubnet(runs, prefix) : undefined;
  if (subnet && spec.allocateReservedIPAddresses !== true) {
    excluded.push({ ...subnet, to: subnet.from });
    if (subnet.family === 4) excluded.push({ ...subnet, from: subnet.to });
  }
  return (family, value) => within(runs, family, value) && !within(excluded, family, value);
}

/** Sorted runs of consecutive values (IPv4 first), as `from-to` texts: the provider's rendering of an IP set. */
function rangesText(addresses: ReadonlyArray<{ family: Family; value: bigint }>): string {
  const sorted = [...addresses].sort((a, b) =>
    a.family !== b.family ? a.family - b.family : a.value < b.value ? -1 : a.value > b.value ? 1 : 0,
  );
  const runs: Run[] = [];
  for (const a of sorted) {
    const last = runs[runs.length - 1];
    if (last && last.family === a.family && a.value <= last.to + 1n) last.to = a.value > last.to ? a.value : last.to;
    else runs.push({ family: a.family, from: a.value, to: a.value });
  }
  const text = (family: Family, value: bigint): string => formatAddress({ family, value });
  return `[${runs.map((r) => `${text(r.family, r.from)}-${text(r.family, r.to)}`).join(" ")}]`;
}

/**
 * The provider's refusal of an update whose pool would no longer hand out an address in use:
 * `pool addresses do not contain allocated addresses: [a-b c-c]` (runs of such addresses), or undefined when every
 * readable address of `inUse` is still one `pool` hands out. An in-use address that became the gateway, an excluded
 * address or a reserved one counts as dropped. Unreadable in-use addresses are ignored, as by the provider.
 * Precondition: `pool` passed {@link validateInClusterPool}.
 */
export function droppedInUse(pool: InClusterIPPool, inUse: readonly string[]): string | undefined {
  const member = poolMembership(pool);
  const dropped = inUse.flatMap((text) => {
    const a = parseAddress(text);
    return a && !member(a.family, a.value) ? [a] : [];
  });
  if (dropped.length === 0) return undefined;
  return `pool addresses do not contain allocated addresses: ${rangesText(dropped)}`;
}

/**
 * The provider's refusal to delete a pool that IPAddresses still refer to (`inUseCount` of them), or undefined: none
 * refers to it, or the pool carries the annotation `ipam.cluster.x-k8s.io/skip-validate-delete-webhook` (any value;
 * clusterctl move deletes source pools that way).
 */
export function deleteRefusal(pool: InClusterIPPool, inUseCount: number): string | undefined {
  if (Object.hasOwn(pool.metadata?.annotations ?? {}, SKIP_VALIDATE_DELETE_ANNOTATION)) return undefined;
  if (inUseCount <= 0) return undefined;
  return "Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed.";
}
