/**
 * The little address arithmetic the client needs to phrase NetBox queries: an IP range as the CIDR blocks that
 * cover exactly it (NetBox filters addresses by `parent` CIDRs, not by ranges), and how many addresses a prefix can
 * hand out.
 */
import ipaddr from "ipaddr.js";

interface Parsed {
  family: 4 | 6;
  value: bigint;
  bits: 32 | 128;
}

/** An address without mask (`10.0.0.5`; a `/24` suffix is ignored) as a number. Throws on garbage. */
export function parseAddress(text: string): Parsed {
  const host = text.split("/")[0] ?? text;
  const parsed = ipaddr.parse(host);
  const bytes = parsed.toByteArray();
  const value = bytes.reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
  return parsed.kind() === "ipv4" ? { family: 4, value, bits: 32 } : { family: 6, value, bits: 128 };
}

function format(value: bigint, family: 4 | 6): string {
  const count = family === 4 ? 4 : 16;
  const bytes: number[] = [];
  for (let i = count - 1; i >= 0; i--) bytes.push(Number((value >> BigInt(i * 8)) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

/** Whether `address` (mask ignored) lies within [start, end] (masks ignored), same family. */
export function inRange(address: string, start: string, end: string): boolean {
  const [a, s, e] = [parseAddress(address), parseAddress(start), parseAddress(end)];
  return a.family === s.family && a.value >= s.value && a.value <= e.value;
}

/** The fewest CIDR blocks that together are exactly [start, end] (masks ignored), lowest first. */
export function rangeToCidrs(start: string, end: string): string[] {
  const s = parseAddress(start);
  const e = parseAddress(end);
  if (s.family !== e.family || s.value > e.value) throw new Error(`${start}-${end} is not a range`);
  const blocks: string[] = [];
  let low = s.value;
  while (low <= e.value) {
    // The largest block aligned at `low` that does not pass `end`.
    let size = 0;
    while (
      size < s.bits &&
      (low & ((1n << BigInt(size + 1)) - 1n)) === 0n &&
      low + (1n << BigInt(size + 1)) - 1n <= e.value
    )
      size += 1;
    blocks.push(`${format(low, s.family)}/${s.bits - size}`);
    low += 1n << BigInt(size);
  }
  return blocks;
}

/**
 * How many addresses NetBox's available-ips can hand out of a prefix (its `usable_ip_bounds`): all of a pool, of an
 * IPv4 /31-/32 or an IPv6 /127-/128; else IPv4 loses network and broadcast, IPv6 the subnet-router anycast address.
 * Child ranges marked populated are not subtracted. Beyond 2^53 the count saturates at Number.MAX_SAFE_INTEGER.
 */
export function usablePrefixSize(cidr: string, isPool: boolean): number {
  const [network = "", lengthText = ""] = cidr.split("/");
  const { family, bits } = parseAddress(network);
  const length = Number(lengthText);
  let size = 1n << BigInt(bits - length);
  if (!isPool && family === 4 && length < 31) size -= 2n;
  if (!isPool && family === 6 && length < 127) size -= 1n;
  return size > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(size);
}
