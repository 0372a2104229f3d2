/**
 * The admission rules of the Cluster API in-cluster provider's pools (`InClusterIPPool`, `GlobalInClusterIPPool`,
 * docs/incluster.md "Webhook messages"), with its messages word for word. Pure: the caller reads the IPAddresses in
 * use and passes their addresses (or their count) in. The entry grammar, the inferred subnet and the set of addresses
 * a pool hands out are incluster-set.ts's, the same the allocator uses (incluster.ts), so the webhook and the
 * allocator never disagree on what a pool holds.
 *
 * Three verdicts, as the provider answers them (src/webhooks/incluster.ts sends them):
 * - create, and update with a changed spec: {@link validateInClusterPool}, field errors for a 422 Invalid answer;
 * - update, once those pass: {@link droppedInUse}, a 400 BadRequest message when an address in use is one the new
 *   spec no longer hands out (it left `addresses`, or became excluded, the gateway or reserved);
 * - delete: {@link deleteRefusal}, a 400 BadRequest message while IPAddresses refer to the pool.
 *
 * Values in field errors are shown as the provider's Go code shows them (`field.Invalid`): strings quoted, lists as
 * Go literals (`[]string{"10.0.0.1"}`, `[]string(nil)` when absent), numbers bare. Where we differ, on purpose:
 * - `a valid prefix is required` shows the prefix; the provider shows `spec.addresses` there (a slip upstream).
 * - The gateway's parse error is Go's `netip.ParseAddr` text for input with no `.`, `:` or `%` (`unable to parse IP`),
 *   a `%` first (`missing IPv6 address`) and dotted input (Go's IPv4 reasons); other IPv6 input gets our own reason.
 *   IPv6 zones and IPv4-embedded IPv6, which Go reads, are refused (this codebase's one grammar, address.ts).
 * - Go's quoting (`strconv.Quote`) and ours (JSON) differ only for control and non-printable characters.
 *
 * Prefix: absent is the provider's Go zero value 0, and /0 is allowed ("/0 and empty prefix allowed" in its tests):
 * with /0 the inferred subnet is the whole family, so every entry lies inside it and nothing is refused. The CRD
 * marks `prefix` required, so through the API server an absent prefix never reaches the webhook.
 */
import type { InClusterIPPool, InClusterIPPoolSpec } from "../../api/incluster/types.js";
import { SKIP_VALIDATE_DELETE_ANNOTATION } from "../../api/incluster/types.js";
import { formatAddress, parseAddress } from "./address.js";
import type { FieldError } from "./fielderror.js";
import { inClusterAllocatable, inClusterPrefix, inferredSubnet, parseInClusterEntry } from "./incluster-set.js";
import { normalizeRanges, rangesContain } from "./ipset.js";
import type { IPRange } from "./ipset.js";

/** The provider's messages. */
export const InClusterMessages = {
  addressesRequired: "addresses is required",
  prefixRequired: "a valid prefix is required",
  notAnEntry: "provided address is not a valid IP, range, nor CIDR",
  mixedFamilies: "provided addresses are of mixed IP families",
  gatewayMixed: "provided gateway and addresses are of mixed IP families",
  excludedMixed: "addresses and excluded addresses are of mixed IP families",
  graceNegative: "addressReuseGracePeriodSeconds must not be negative",
  prefixNotValid: "provided prefix is not valid",
  differentSubnet: "provided address belongs to a different subnet than others",
  /** `ranges` as {@link droppedInUse} writes them. */
  notContained: (ranges: string): string => `pool addresses do not contain allocated addresses: ${ranges}`,
  deleteInUse: "Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed.",
} as const;

/** A Go string as `%q` prints it (JSON quoting; the two differ only for control and non-printable characters). */
function goQuote(v: unknown): string {
  return JSON.stringify(typeof v === "string" ? v : String(v));
}

/** A `[]string` as Go's `%#v` prints it: `[]string(nil)` when absent, else `[]string{"a", "b"}`. */
function goStringList(list: unknown): string {
  if (list === undefined || list === null) return "[]string(nil)";
  if (!Array.isArray(list)) return goQuote(list);
  return `[]string{${list.map(goQuote).join(", ")}}`;
}

/** The reason of Go's `netip.ParseAddr` for dotted input (IPv4), or undefined when it parses. */
function ipv4Reason(s: string): string | undefined {
  let dots = 0;
  let digits = 0;
  let value = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (c >= "0" && c <= "9") {
      if (digits === 1 && value === 0) return "IPv4 field has octet with leading zero";
      value = value * 10 + Number(c);
      digits++;
      if (value > 255) return "IPv4 field has value >255";
    } else if (c !== ".") {
      return `unexpected character (at ${goQuote(s.slice(i))})`;
    } else if (i === 0 || i === s.length - 1 || s.charAt(i - 1) === ".") {
      return `IPv4 field must have at least one digit (at ${goQuote(s.slice(i))})`;
    } else if (dots === 3) {
      return "IPv4 address too long";
    } else {
      dots++;
      value = 0;
      digits = 0;
    }
  }
  return dots < 3 ? "IPv4 address too short" : undefined;
}

/** The error text for a gateway that does not parse, in Go's `ParseAddr("...")` form (see the top of the file). */
export function gatewayParseError(text: string): string {
  const separator = /[.:%]/.exec(text)?.[0];
  let reason = "unable to parse IP";
  if (separator === "%") reason = "missing IPv6 address";
  else if (separator === ".") reason = ipv4Reason(text) ?? reason;
  else if (separator === ":") reason = "not an IPv6 address (zones and embedded IPv4 are not accepted either)";
  return `ParseAddr(${goQuote(text)}): ${reason}`;
}

interface Families {
  v4: boolean;
  v6: boolean;
}

/** Entry errors of one list, and the families of its parsable entries. A field that is not a list has none. */
function entryErrors(list: unknown, field: string, errors: FieldError[]): Families {
  const families = { v4: false, v6: false };
  if (!Array.isArray(list)) return families;
  for (const text of list as unknown[]) {
    const r = parseInClusterEntry(text);
    if (!r) {
      const value = typeof text === "string" ? text : JSON.stringify(text);
      errors.push({ field, type: "Invalid", value, detail: InClusterMessages.notAnEntry });
    } else if (r.family === 4) families.v4 = true;
    else families.v6 = true;
  }
  return families;
}

function gatewayErrors(gateway: unknown, families: Families): FieldError[] {
  if (gateway === undefined || gateway === null || gateway === "") return [];
  const text = typeof gateway === "string" ? gateway : JSON.stringify(gateway);
  const field = "spec.gateway";
  const a = parseAddress(text);
  if (!a) return [{ field, type: "Invalid", value: text, detail: gatewayParseError(text) }];
  if ((a.family === 6 && families.v4) || (a.family === 4 && families.v6)) {
    return [{ field, type: "Invalid", value: text, detail: InClusterMessages.gatewayMixed }];
  }
  return [];
}

function excludedErrors(excluded: unknown, families: Families): FieldError[] {
  const errors: FieldError[] = [];
  const field = "spec.excludedAddresses";
  const own = entryErrors(excluded, field, errors);
  const rendered = goStringList(excluded);
  if (own.v4 && own.v6) errors.push({ field, type: "Invalid", rendered, detail: InClusterMessages.mixedFamilies });
  if ((families.v4 && own.v6) || (families.v6 && own.v4)) {
    errors.push({ field, type: "Invalid", rendered, detail: InClusterMessages.excludedMixed });
  }
  return errors;
}

/** Run last, only on an otherwise valid spec (as the provider does): the prefix fits, every entry lies inside. */
function subnetErrors(spec: Partial<InClusterIPPoolSpec>): FieldError[] {
  const subnet = inferredSubnet(spec);
  if (!subnet) {
    const rendered = String(spec.prefix ?? 0);
    return [{ field: "spec.prefix", type: "Invalid", rendered, detail: InClusterMessages.prefixNotValid }];
  }
  const errors: FieldError[] = [];
  for (const text of spec.addresses ?? []) {
    const r = parseInClusterEntry(text);
    if (r && (r.family !== subnet.family || r.first < subnet.first || r.last > subnet.last)) {
      errors.push({ field: "spec.addresses", type: "Invalid", value: text, detail: InClusterMessages.differentSubnet });
    }
  }
  return errors;
}

/**
 * The provider's create and update rules, in its order: `addresses` non-empty; `prefix` not negative; every entry of
 * `addresses` and `excludedAddresses` a single IP, `a-b` range (a reversed one is not) or CIDR; one family among
 * addresses, among excluded addresses, and between the two and the gateway (a gateway that is not an address is
 * refused); `addressReuseGracePeriodSeconds` not negative; then, only when all of that holds, a prefix that fits the
 * family and every address entry inside the inferred subnet (incluster-set.ts). Not checked, as by the provider:
 * gateway or excluded addresses inside that subnet. `old` is accepted for symmetry: the provider has no immutable
 * field and no rule that looks at the old spec (the webhook lets an update with an unchanged spec through first).
 */
export function validateInClusterPool(pool: InClusterIPPool, old?: InClusterIPPool): FieldError[] {
  void old;
  const s: Partial<InClusterIPPoolSpec> = pool.spec ?? {};
  let errors: FieldError[] = [];
  if (!Array.isArray(s.addresses) || s.addresses.length === 0) {
    const rendered = goStringList(s.addresses);
    errors.push({ field: "spec.addresses", type: "Invalid", rendered, detail: InClusterMessages.addressesRequired });
  }
  const prefix = inClusterPrefix(s.prefix);
  if (prefix === undefined || prefix < 0) {
    const rendered = typeof s.prefix === "number" ? String(s.prefix) : goQuote(s.prefix);
    errors.push({ field: "spec.prefix", type: "Invalid", rendered, detail: InClusterMessages.prefixRequired });
  }
  const families = entryErrors(s.addresses, "spec.addresses", errors);
  if (families.v4 && families.v6) {
    const rendered = goStringList(s.addresses);
    errors.push({ field: "spec.addresses", type: "Invalid", rendered, detail: InClusterMessages.mixedFamilies });
  }
  // concat, not push(...): a list of that many arguments overflows the stack.
  errors = errors.concat(gatewayErrors(s.gateway, families), excludedErrors(s.excludedAddresses, families));
  const grace = s.addressReuseGracePeriodSeconds;
  if (typeof grace === "number" && grace < 0) {
    const field = "spec.addressReuseGracePeriodSeconds";
    errors.push({ field, type: "Invalid", rendered: String(grace), detail: InClusterMessages.graceNegative });
  }
  if (errors.length > 0) return errors;
  return subnetErrors(s);
}

/** Ranges as the provider's Go prints its IP set (`%v` of netipx ranges): sorted, merged, `from-to` even for one. */
function rangesText(set: readonly IPRange[]): string {
  const text = (family: IPRange["family"], value: bigint): string => formatAddress({ family, value });
  return `[${set.map((r) => `${text(r.family, r.first)}-${text(r.family, r.last)}`).join(" ")}]`;
}

/**
 * The provider's refusal of an update whose pool would no longer hand out an address in use:
 * `pool addresses do not contain allocated addresses: [10.0.0.10-10.0.0.11 10.0.0.15-10.0.0.15]` (consecutive such
 * addresses merged into one range, canonical spelling, IPv4 first; a single address written `a-a` as Go writes it),
 * or undefined when every readable address of `inUse` is one `pool` hands out (incluster-set.ts). As the provider
 * does, every address in use counts, also one that the old spec did not hand out either; unreadable ones are
 * ignored. Precondition: `pool` passed {@link validateInClusterPool}.
 */
export function droppedInUse(pool: InClusterIPPool, inUse: readonly string[]): string | undefined {
  const allocatable = inClusterAllocatable(pool.spec ?? {});
  const dropped: IPRange[] = [];
  for (const text of inUse) {
    const a = parseAddress(text);
    if (a && !rangesContain(allocatable, a)) dropped.push({ family: a.family, first: a.value, last: a.value });
  }
  if (dropped.length === 0) return undefined;
  return InClusterMessages.notContained(rangesText(normalizeRanges(dropped)));
}

/**
 * The provider's refusal to delete a pool that IPAddresses still refer to (`inUseCount` of them), or undefined: none
 * refers to it, or the pool carries the annotation `ipam.cluster.x-k8s.io/skip-validate-delete-webhook` (any value;
 * clusterctl move deletes source pools that way).
 */
export function deleteRefusal(pool: InClusterIPPool, inUseCount: number): string | undefined {
  if (Object.hasOwn(pool.metadata?.annotations ?? {}, SKIP_VALIDATE_DELETE_ANNOTATION)) return undefined;
  if (inUseCount <= 0) return undefined;
  return InClusterMessages.deleteInUse;
}
