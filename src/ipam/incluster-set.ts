/**
 * The address set of an in-cluster provider pool (`InClusterIPPool`, `GlobalInClusterIPPool`; docs/incluster.md),
 * computed as that provider computes it. Pure functions, no I/O; never throw.
 *
 * Entries of `addresses` and `excludedAddresses` take three forms, told apart as the provider does: text with a `-`
 * is a range `a-b` (both ends one family, `a <= b`; reversed ranges are refused), else text with a `/` is a CIDR
 * (every address of the masked network, `10.0.0.10/24` is `10.0.0.0-10.0.0.255`), else a single address.
 *
 * Grammar: addresses are parsed with this codebase's one grammar (address.ts), which refuses two things Go's
 * `netip.ParseAddr` takes: IPv6 zones (`fe80::1%eth0`) and IPv4-embedded IPv6 (`::ffff:10.0.0.1`). Prefix lengths
 * are decimal without leading zeros (`/08` is refused, as by Go's `netip.ParsePrefix`), 0..32 or 0..128.
 *
 * The allocatable set, in the provider's order: the union of `addresses`, minus `excludedAddresses`, minus (unless
 * `allocateReservedIPAddresses`) the first address of the inferred subnet and, on IPv4, its last one (network and
 * broadcast; on IPv6 the subnet-router anycast address), minus the gateway. The inferred subnet is (the LOWEST address
 * of the union of `addresses`)/prefix, masked. Entries that do not parse contribute nothing (validation reports them).
 */
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import { familyBits, maxValue, parseAddress } from "./address.js";
import type { Family } from "./address.js";
import { normalizeRanges, subtractRanges } from "./ipset.js";
import type { IPRange } from "./ipset.js";

const BITS_RE = /^(0|[1-9][0-9]{0,2})$/;

function parseCidr(text: string): IPRange | undefined {
  const slash = text.indexOf("/");
  const base = parseAddress(text.slice(0, slash));
  const bitsText = text.slice(slash + 1);
  if (!base || !BITS_RE.test(bitsText)) return undefined;
  const bits = Number(bitsText);
  if (bits > familyBits(base.family)) return undefined;
  const hostMask = (1n << BigInt(familyBits(base.family) - bits)) - 1n;
  const first = base.value & (maxValue(base.family) ^ hostMask);
  return { family: base.family, first, last: first | hostMask };
}

function parseRange(text: string): IPRange | undefined {
  const dash = text.indexOf("-");
  const from = parseAddress(text.slice(0, dash));
  const to = parseAddress(text.slice(dash + 1));
  if (!from || !to || from.family !== to.family || to.value < from.value) return undefined;
  return { family: from.family, first: from.value, last: to.value };
}

/**
 * One entry of `addresses` or `excludedAddresses` as a range of addresses, or `undefined` when the provider refuses
 * it (`provided address is not a valid IP, range, nor CIDR`). Non-strings are refused.
 */
export function parseInClusterEntry(text: unknown): IPRange | undefined {
  if (typeof text !== "string") return undefined;
  if (text.includes("-")) return parseRange(text);
  if (text.includes("/")) return parseCidr(text);
  const a = parseAddress(text);
  return a && { family: a.family, first: a.value, last: a.value };
}

/** The parsable entries of a list (absent or not a list: none), in list order. */
export function parsedEntries(list: unknown): IPRange[] {
  if (!Array.isArray(list)) return [];
  return list.map(parseInClusterEntry).filter((r): r is IPRange => r !== undefined);
}

/**
 * `spec.prefix` as the provider's Go code sees it: absent (or null) is Go's zero value 0; an integer is itself;
 * anything else (a fraction, a string: only reachable without the CRD's schema) is `undefined`, not a prefix.
 */
export function inClusterPrefix(prefix: unknown): number | undefined {
  if (prefix === undefined || prefix === null) return 0;
  return typeof prefix === "number" && Number.isInteger(prefix) ? prefix : undefined;
}

/**
 * The subnet the provider infers for a pool: (lowest parsable address of `addresses`)/prefix, masked, or `undefined`
 * when no entry parses or the prefix does not fit that address's family (negative, above 32 on IPv4 or 128 on
 * IPv6; the provider then reserves nothing, and its webhook says `provided prefix is not valid`).
 */
export function inferredSubnet(spec: Partial<Pick<InClusterIPPoolSpec, "addresses" | "prefix">>): IPRange | undefined {
  return subnetOf(normalizeRanges(parsedEntries(spec.addresses))[0], spec.prefix);
}

/** {@link inferredSubnet} from the lowest range of the pool's normalized `addresses`. */
function subnetOf(lowest: IPRange | undefined, prefixValue: unknown): IPRange | undefined {
  const prefix = inClusterPrefix(prefixValue);
  if (!lowest || prefix === undefined || prefix < 0 || prefix > familyBits(lowest.family)) return undefined;
  const hostMask = (1n << BigInt(familyBits(lowest.family) - prefix)) - 1n;
  const first = lowest.first & (maxValue(lowest.family) ^ hostMask);
  return { family: lowest.family, first, last: first | hostMask };
}

function single(family: Family, value: bigint): IPRange {
  return { family, first: value, last: value };
}

/** The reserved addresses of the inferred subnet (`addresses`: normalized): its first, and on IPv4 its last. */
function reservedOf(spec: Partial<InClusterIPPoolSpec>, addresses: readonly IPRange[]): IPRange[] {
  if (spec.allocateReservedIPAddresses === true) return [];
  const subnet = subnetOf(addresses[0], spec.prefix);
  if (!subnet) return [];
  const out = [single(subnet.family, subnet.first)];
  if (subnet.family === 4) out.push(single(4, subnet.last));
  return out;
}

/**
 * The addresses the pool hands out, normalized (see ipset.ts: ascending, IPv4 first, disjoint, non-adjacent): the
 * allocatable set described at the top of this file. The provider's sequential search walks exactly this list from
 * its start, so its first free address is the lowest free one whatever the order of `addresses`.
 */
export function inClusterAllocatable(spec: Partial<InClusterIPPoolSpec>): IPRange[] {
  const addresses = normalizeRanges(parsedEntries(spec.addresses));
  const removed = [...parsedEntries(spec.excludedAddresses), ...reservedOf(spec, addresses)];
  const gateway = typeof spec.gateway === "string" && spec.gateway !== "" ? parseAddress(spec.gateway) : undefined;
  if (gateway) removed.push(single(gateway.family, gateway.value));
  return subtractRanges(addresses, normalizeRanges(removed));
}
