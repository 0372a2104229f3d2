/**
 * The prefix or IP range a NetBox pool names, resolved in NetBox: its id (what `available-ips` takes), its bounds (the
 * allocator's space: an address NetBox hands out outside them is refused) and NetBox's utilisation (the pool's status).
 */
import type { NetBoxIPPoolSpec } from "../../../api/netbox/types.js";
import { canonicalAddress, formatAddress, parseAddress, parseSubnet, type Family } from "../../ipam/address.js";
import { NetBoxError, type NetBoxClient, type NetBoxParent } from "../../netbox/client.js";
import { splitCidr } from "./identity.js";

export interface ResolvedParent {
  parent: NetBoxParent;
  /** How people name it: `prefix 10.0.0.0/24 (#7)`, `ip-range 10.0.0.10-10.0.0.20 (#3)`. */
  display: string;
  family: Family;
  first: bigint;
  last: bigint;
  /** The mask length NetBox gives its addresses (the prefix's, the range's). */
  prefixLength: number;
  /** NetBox's utilisation: addresses it counts, and those in use (ours and everyone's). */
  size: number;
  used: number;
  /** The VRF of the prefix or range; absent for the global table. */
  vrfId?: number;
}

/** A pool whose spec names no usable parent: a BadRequest, so its claims and its Ready condition say so. */
const specError = (message: string): NetBoxError => new NetBoxError(message, "BadRequest");

/** The prefix or range `spec` names (the pool's own, or a fallback's), resolved in NetBox. */
export async function resolveParent(
  api: NetBoxClient,
  spec: Pick<NetBoxIPPoolSpec, "prefix" | "range">,
): Promise<ResolvedParent> {
  if (spec.prefix) {
    const found = await api.findPrefix(spec.prefix);
    const subnet = parseSubnet(found.cidr);
    if (!subnet) throw specError(`NetBox prefix #${found.id} has an unreadable CIDR ${found.cidr}`);
    return {
      parent: { kind: "prefix", id: found.id },
      display: `prefix ${found.cidr} (#${found.id})`,
      family: subnet.network.family,
      first: subnet.first,
      last: subnet.last,
      prefixLength: subnet.prefixLength,
      size: found.size,
      used: found.used,
      ...(found.vrfId !== undefined ? { vrfId: found.vrfId } : {}),
    };
  }
  if (spec.range) {
    const found = await api.findRange(spec.range);
    const start = splitCidr(found.start);
    const end = splitCidr(found.end);
    const first = parseAddress(start.address);
    const last = parseAddress(end.address);
    if (!first || !last || first.family !== last.family || start.length === undefined)
      throw specError(`NetBox IP range #${found.id} has unreadable bounds ${found.start}-${found.end}`);
    return {
      parent: { kind: "ip-range", id: found.id },
      display: `ip-range ${start.address}-${end.address} (#${found.id})`,
      family: first.family,
      first: first.value,
      last: last.value,
      prefixLength: start.length,
      size: found.size,
      used: found.used,
      ...(found.vrfId !== undefined ? { vrfId: found.vrfId } : {}),
    };
  }
  throw specError("spec names neither a prefix nor a range");
}

/**
 * Why the pool may not use `resolved`: it served `recorded` (its status says so) and its spec now names another
 * prefix or range, so the records it made in `recorded` would be left there, held by nobody. The CRD refuses such a
 * change; this holds where it was made anyway (the CRD's rules were not installed then). Undefined when it may.
 */
export function changedParent(
  recorded: { kind: string; id: number; display?: string } | undefined,
  resolved: ResolvedParent,
): string | undefined {
  if (!recorded || (recorded.kind === resolved.parent.kind && recorded.id === resolved.parent.id)) return undefined;
  const before = recorded.display ?? `${recorded.kind} #${recorded.id}`;
  return (
    `the pool served NetBox ${before} and its spec now names ${resolved.display}: its records in ${before} would ` +
    "be left behind, so it serves neither; put its prefix or range back, or create a new pool"
  );
}

/**
 * Addresses of the parent no claim may get, whatever NetBox offers: the pool's gateway, and the network and broadcast
 * addresses of an IPv4 prefix shorter than /31 (NetBox offers them in a prefix marked as a pool). Canonical text.
 */
export function neverHandedOut(parent: ResolvedParent, gateway: string | undefined): Set<string> {
  const out = new Set<string>();
  const gw = gateway ? canonicalAddress(gateway) : undefined;
  if (gw) out.add(gw);
  if (parent.parent.kind === "prefix" && parent.family === 4 && parent.prefixLength < 31) {
    out.add(formatAddress({ family: 4, value: parent.first }));
    out.add(formatAddress({ family: 4, value: parent.last }));
  }
  return out;
}
