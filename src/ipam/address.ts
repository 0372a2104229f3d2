/**
 * IP addresses as numbers (spec §1.4). Pure functions, no I/O.
 *
 * Grammar decision: there is ONE grammar, exactly the one the Metal3 CRD patterns accept, so anything that parses here
 * can be written back into an object the API server accepts, and the webhook rejects what the CRD would:
 * - IPv4: plain dotted quad, decimal octets 0..255 without leading zeros (`010.0.0.1` is rejected: octal in some
 *   parsers, and the CRD pattern refuses it).
 * - IPv6: 1..4 hex digits per group (either case, leading zeros allowed: `2001:db8::0005`), at most one `::`;
 *   no zone (`%eth0`), no IPv4-embedded tail (`::ffff:1.2.3.4`).
 * - Subnets: an address, `/`, and a prefix length 0..32 (IPv4, no leading zeros) or 0..128 (IPv6; the CRD pattern
 *   admits a two-digit form with a leading zero such as `/08`, so we do too).
 * No surrounding whitespace is tolerated anywhere.
 *
 * Deliberate difference from Metal3's Go code: IPv6 text in `::ffff:0:0/96` stays an IPv6 address here, whereas Go's
 * `net.IP` treats it as IPv4. The CRD patterns keep such input rare; treating it by its spelling is unsurprising.
 */

/** Address family: 4 or 6. */
export type Family = 4 | 6;

/** An address as a number within its family. `value` is in `[0, maxValue(family)]`. */
export interface Addr {
  readonly family: Family;
  readonly value: bigint;
}

/** A parsed CIDR subnet. */
export interface Subnet {
  /** The address exactly as written in the CIDR (NOT masked): Metal3 counts subnet-only entries from it (spec §2). */
  readonly network: Addr;
  readonly prefixLength: number;
  /** Lowest address of the subnet (the masked network address). */
  readonly first: bigint;
  /** Highest address of the subnet (the broadcast address for IPv4), inclusive. */
  readonly last: bigint;
}

const MAX4 = (1n << 32n) - 1n;
const MAX6 = (1n << 128n) - 1n;

/** Number of bits of an address of `family` (32 or 128). */
export function familyBits(family: Family): 32 | 128 {
  return family === 4 ? 32 : 128;
}

/** Highest address value of `family`: 2^32-1 or 2^128-1. */
export function maxValue(family: Family): bigint {
  return family === 4 ? MAX4 : MAX6;
}

const HEX_GROUP_RE = /^[0-9a-fA-F]{1,4}$/;
const DOT = 46;
const ZERO = 48;

/**
 * A dotted quad read character by character (it is on the path of every address of a pool): four decimal octets of
 * one to three digits, no leading zero, each at most 255.
 */
function parseIPv4(text: string): Addr | undefined {
  let value = 0;
  let i = 0;
  for (let octet = 0; octet < 4; octet++) {
    if (octet > 0) {
      if (text.charCodeAt(i) !== DOT) return undefined;
      i++;
    }
    const start = i;
    let n = 0;
    for (; i < text.length && i - start < 4; i++) {
      const d = text.charCodeAt(i) - ZERO;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
    }
    const digits = i - start;
    if (digits === 0 || digits > 3 || n > 255 || (digits > 1 && text.charCodeAt(start) === ZERO)) return undefined;
    value = value * 256 + n;
  }
  return i === text.length ? { family: 4, value: BigInt(value) } : undefined;
}

function parseGroups(part: string): number[] | undefined {
  if (part === "") return [];
  const groups: number[] = [];
  for (const g of part.split(":")) {
    if (!HEX_GROUP_RE.test(g)) return undefined;
    groups.push(parseInt(g, 16));
  }
  return groups;
}

function parseIPv6(text: string): Addr | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0] ?? "");
  const tail = halves.length === 2 ? parseGroups(halves[1] ?? "") : [];
  if (!head || !tail) return undefined;
  const explicit = head.length + tail.length;
  // With "::" at least one group is elided; without it all eight must be written.
  if (halves.length === 2 ? explicit > 7 : explicit !== 8) return undefined;
  const groups = [...head, ...new Array<number>(8 - explicit).fill(0), ...tail];
  let value = 0n;
  for (const g of groups) value = (value << 16n) | BigInt(g);
  return { family: 6, value };
}

/**
 * Parses an address in the CRD grammar described at the top of this file.
 * @returns the address, or `undefined` for anything else (never throws).
 */
export function parseAddress(text: string): Addr | undefined {
  if (typeof text !== "string") return undefined;
  if (text.includes(":")) return parseIPv6(text);
  return parseIPv4(text);
}

function formatIPv6(value: bigint): string {
  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((value >> shift) & 0xffffn));
  // Longest run of zero groups, leftmost on ties (strict '>'), and only runs of two or more (RFC 5952).
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLen).join(":")}`;
}

/**
 * Canonical text (spec §1.4): IPv4 dotted quad without leading zeros; IPv6 lower case, no leading zeros in groups,
 * the longest run (two or more) of zero groups compressed to `::`, the leftmost on ties; never an IPv4-embedded form.
 * Precondition: `a.value` lies within its family's range (values from this module always do).
 */
export function formatAddress(a: Addr): string {
  if (a.family === 6) return formatIPv6(a.value);
  const v = a.value;
  return [24n, 16n, 8n, 0n].map((s) => ((v >> s) & 0xffn).toString()).join(".");
}

/** Canonical spelling of `text`, or `undefined` when it is not an address. */
export function canonicalAddress(text: string): string | undefined {
  const a = parseAddress(text);
  return a ? formatAddress(a) : undefined;
}

/** Whether two addresses are the same number in the same family. */
export function sameAddress(a: Addr, b: Addr): boolean {
  return a.family === b.family && a.value === b.value;
}

/** A string key unique per (family, value), for maps and sets keyed by address. */
export function addressKey(a: Addr): string {
  return `${a.family}/${a.value.toString(16)}`;
}

const PREFIX4_RE = /^([0-9]|[12][0-9]|3[0-2])$/;
const PREFIX6_RE = /^([0-9]|[0-9][0-9]|1[01][0-9]|12[0-8])$/;

/**
 * Parses `address/prefixLength` in the CRD grammar (see top of file).
 * @returns the subnet (keeping the address as written in `network`), or `undefined` (never throws).
 */
export function parseSubnet(text: string): Subnet | undefined {
  if (typeof text !== "string") return undefined;
  const slash = text.indexOf("/");
  if (slash < 0 || slash !== text.lastIndexOf("/")) return undefined;
  const network = parseAddress(text.slice(0, slash));
  const lengthText = text.slice(slash + 1);
  if (!network || !(network.family === 4 ? PREFIX4_RE : PREFIX6_RE).test(lengthText)) return undefined;
  const prefixLength = Number(lengthText);
  const hostBits = BigInt(familyBits(network.family) - prefixLength);
  const hostMask = (1n << hostBits) - 1n;
  const first = network.value & (maxValue(network.family) ^ hostMask);
  return { network, prefixLength, first, last: first | hostMask };
}
