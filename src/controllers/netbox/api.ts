/**
 * What the NetBox pools need of a NetBox client (src/netbox/client.ts implements it): a structural subset, so the
 * engine's logic is written and unit-tested against the contract rather than the HTTP code.
 */

/** A prefix or an IP range in NetBox, by id. */
export interface NetBoxParent {
  kind: "prefix" | "ip-range";
  id: number;
}

/** An IP address record in NetBox, as the engine reads it. */
export interface NetBoxAddressRecord {
  id: number;
  /** With its mask length, as NetBox writes it: `10.0.0.5/24`. */
  address: string;
  description: string;
}

/** One record to create through `available-ips`. */
export interface NetBoxAllocationRequest {
  description: string;
  tags?: string[];
  tenantId?: number;
  dnsName?: string;
  comments?: string;
}

/** Why a NetBox call failed (the client's classification); `Exhausted` is a 409 from `available-ips`. */
export type NetBoxFailure =
  | "Unreachable"
  | "Timeout"
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "Throttled"
  | "Exhausted"
  | "ServerError"
  | "BadRequest";

/** The client's error: a reason, and a message that never contains the token. */
export interface NetBoxErrorLike {
  reason: NetBoxFailure;
  message: string;
  retryAfterSeconds?: number;
}

export interface NetBoxApi {
  findPrefix(q: { id?: number; cidr?: string; vrfId?: number }): Promise<{
    id: number;
    cidr: string;
    size: number;
    used: number;
  }>;
  findRange(q: { id?: number; start?: string; end?: string; vrfId?: number }): Promise<{
    id: number;
    start: string;
    end: string;
    size: number;
    used: number;
  }>;
  listOwned(parent: NetBoxParent, tag: string, description?: string): Promise<NetBoxAddressRecord[]>;
  allocate(parent: NetBoxParent, requests: NetBoxAllocationRequest[]): Promise<NetBoxAddressRecord[]>;
  deleteAddress(id: number): Promise<void>;
  ensureTag(slug: string, name: string): Promise<void>;
}

/** The error's NetBox reason, when `err` is a NetBox error (anything else: undefined). */
export function netBoxFailureOf(err: unknown): NetBoxErrorLike | undefined {
  if (typeof err !== "object" || err === null || !("reason" in err) || !("message" in err)) return undefined;
  const { reason, message } = err;
  return typeof reason === "string" && typeof message === "string" ? (err as NetBoxErrorLike) : undefined;
}
