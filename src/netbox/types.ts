/**
 * The NetBox client's contract: what the controller asks of an external IPAM. Pure data and one
 * interface; client.ts implements it over NetBox's REST API.
 */

/** Where a NetBox answers and who we are to it. */
export interface NetBoxEndpoint {
  /** Base URL, `https://netbox.example.com` or `http://127.0.0.1:8000`; a path prefix (`/netbox`) is kept. */
  url: string;
  /**
   * An API token as NetBox shows it once at creation: a v2 token `nbt_<key>.<secret>` (sent as `Bearer`), or a
   * legacy 40-character v1 token (sent as `Token`). It never appears in an error, a log line or a thrown object.
   */
  token: string;
  /** PEM certificates trusted for an `https` URL besides the system's roots. */
  caBundle?: string;
}

/** The NetBox object addresses are allocated from. */
export type NetBoxParent = { kind: "prefix" | "ip-range"; id: number };

/** One IP address record. */
export interface NetBoxAddress {
  id: number;
  /** With its mask, as NetBox returns it: `10.0.0.5/24`. */
  address: string;
  description: string;
  dnsName: string;
  /** Tag slugs. */
  tags: string[];
  tenantId?: number;
  /** NetBox's status value: `active`, `reserved`, `deprecated`, `dhcp`, `slaac`. */
  status: string;
  /** The VRF's id; absent for the global table. */
  vrfId?: number;
}

/**
 * Filters of {@link NetBoxClient.listOwned}, each exact in NetBox and ANDed; a list matches any of its values. Lists of
 * values go into the URL: keep them to a batch.
 */
export interface OwnedMatch {
  /** Descriptions, exactly (`description=`, repeated: any of them); an empty list matches nothing. */
  descriptions?: readonly string[];
  /** A description ending, case-insensitively (`description__iew=`): the caller checks its records exactly. */
  descriptionEndsWith?: string;
  /** Only these host addresses (without mask), instead of the whole parent; each must lie inside it. */
  hosts?: readonly string[];
}

/** What one new record carries. */
export interface AllocationRequest {
  description: string;
  /** Tag slugs; each tag must exist (see ensureTag). */
  tags?: string[];
  tenantId?: number;
  dnsName?: string;
  /** Free text for people (NetBox's `comments`). */
  comments?: string;
  /** NetBox custom fields by name; each must exist for IP addresses. */
  customFields?: Readonly<Record<string, string | number | boolean>>;
}

/** A prefix and how full it is. */
export interface PrefixInfo {
  id: number;
  /** `10.0.0.0/24`. */
  cidr: string;
  vrfId?: number;
  /** Addresses NetBox may hand out: the whole prefix, less network and broadcast on IPv4 below /31 unless a pool. */
  size: number;
  /** IP address records inside it (same VRF). */
  used: number;
}

/** An IP range and how full it is. */
export interface RangeInfo {
  id: number;
  /** First and last address with the range's mask, as NetBox returns them: `10.0.1.10/24`. */
  start: string;
  end: string;
  vrfId?: number;
  size: number;
  used: number;
}

export interface NetBoxClient {
  /**
   * A prefix by id, or by CIDR plus VRF (no vrfId: the global table). NotFound when absent; BadRequest when a CIDR
   * names several prefixes (NetBox allows duplicates): ask by id then.
   */
  findPrefix(q: { id?: number; cidr?: string; vrfId?: number }): Promise<PrefixInfo>;
  /** An IP range by id, or by its first and last address (without mask) plus VRF. NotFound when absent. */
  findRange(q: { id?: number; start?: string; end?: string; vrfId?: number }): Promise<RangeInfo>;
  /**
   * Every address inside the parent (same VRF) that carries tag `tag` and matches `match`. Reads every page; a long
   * list of descriptions is asked in several queries, each short enough for a server's request line.
   */
  listOwned(parent: NetBoxParent, tag: string, match?: OwnedMatch): Promise<NetBoxAddress[]>;
  /**
   * One POST to the parent's available-ips with the whole list: NetBox creates one record per request, lowest free
   * addresses first, all or none, under its allocation lock. Exhausted when fewer are free than asked for.
   */
  allocate(parent: NetBoxParent, requests: AllocationRequest[]): Promise<NetBoxAddress[]>;
  /** The record, or undefined when it does not exist. */
  getAddress(id: number): Promise<NetBoxAddress | undefined>;
  /** Sets the record's description (PATCH); NotFound when it is gone. */
  setDescription(id: number, description: string): Promise<NetBoxAddress>;
  /** Sets the record's status and description; NotFound when it does not exist. */
  updateAddress(id: number, fields: { status: string; description: string }): Promise<NetBoxAddress>;
  /** Deletes the record; one already gone counts as deleted. */
  deleteAddress(id: number): Promise<void>;
  /** Deletes the records, in as few requests as NetBox takes; records already gone count as deleted. */
  deleteAddresses(ids: readonly number[]): Promise<void>;
  /** Creates the tag when no tag has this slug; an existing one is left as it is. */
  ensureTag(slug: string, name: string): Promise<void>;
}

/** One finished request, for metrics and logs. Carries no credential and no query string. */
export interface NetBoxObservation {
  method: string;
  /** The templated path: `/api/ipam/prefixes/{id}/available-ips/`. */
  route: string;
  /** The HTTP status, when an answer came. */
  status?: number;
  /** Set when the request failed. */
  reason?: NetBoxErrorReason;
  seconds: number;
}

export interface NetBoxClientOptions {
  /** Deadline of each HTTP request, from sending to the last byte of the answer. */
  timeoutMs: number;
  userAgent: string;
  observe?: (o: NetBoxObservation) => void;
  /** Records per list page; default 1000, NetBox's default MAX_PAGE_SIZE (tests make it small to see paging). */
  pageSize?: number;
  /** The most one list may read; default {@link DEFAULT_LIST_LIMITS} (tests make them small). */
  listLimits?: ListLimits;
}

/**
 * What one list (every page of it) may read before it fails with TooLarge: pages (a server that pages one record at a
 * time, or never stops), records (what is kept in memory), and bytes of answer bodies (what is read off the wire).
 */
export interface ListLimits {
  pages: number;
  records: number;
  bytes: number;
}

/**
 * A /16 of records (65,536) read at NetBox's default page of 1,000 takes 66 pages and about 100 MiB of answers;
 * the records kept of it are small (id, address, description, DNS name, tags, status).
 */
export const DEFAULT_LIST_LIMITS: ListLimits = { pages: 1_000, records: 100_000, bytes: 256 * 1024 * 1024 };

export type NetBoxErrorReason =
  | "Unreachable"
  | "Timeout"
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "Throttled"
  | "Exhausted"
  | "TooLarge"
  | "ServerError"
  | "BadRequest"
  /** The controller refused to call this NetBox (a URL its token is not for, plain http): nothing was sent. */
  | "NotAllowed";
