/**
 * netBoxClient: the NetBoxClient contract (types.ts) over NetBox's REST API. Pure HTTP: it knows nothing of
 * Kubernetes. The query filters it relies on are listed, as checked on NetBox 4.7.3, in src/netbox/README.md.
 */
import { inRange, rangeToCidrs, usablePrefixSize } from "./cidr.js";
import { NetBoxError } from "./errors.js";
import { NetBoxHttp, type NetBoxRequest } from "./http.js";
import {
  addressOf,
  allocationBody,
  pageOf,
  prefixOf,
  rangeOf,
  type PrefixRecord,
  type RangeRecord,
} from "./records.js";
import {
  DEFAULT_LIST_LIMITS,
  type AllocationRequest,
  type NetBoxAddress,
  type NetBoxClient,
  type NetBoxClientOptions,
  type NetBoxEndpoint,
  type ListLimits,
  type NetBoxParent,
  type PrefixInfo,
  type RangeInfo,
} from "./types.js";

export * from "./types.js";
export { NetBoxError, isNetBoxError } from "./errors.js";

/** NetBox's default MAX_PAGE_SIZE: the most one page may hold. */
const DEFAULT_PAGE_SIZE = 1000;
/** Records deleted per bulk DELETE: one NetBox transaction each, short enough not to hold its locks long. */
const DELETE_CHUNK = 100;

const ROUTES = {
  prefix: "/api/ipam/prefixes/{id}/",
  prefixes: "/api/ipam/prefixes/",
  range: "/api/ipam/ip-ranges/{id}/",
  ranges: "/api/ipam/ip-ranges/",
  address: "/api/ipam/ip-addresses/{id}/",
  addresses: "/api/ipam/ip-addresses/",
  tags: "/api/extras/tags/",
  available: {
    prefix: "/api/ipam/prefixes/{id}/available-ips/",
    "ip-range": "/api/ipam/ip-ranges/{id}/available-ips/",
  },
} as const;

/**
 * Filter values per query, so a request line stays within what servers in front of NetBox take (gunicorn's default
 * limit is 4094 bytes; the parent and paging filters take the rest).
 */
const QUERY_VALUES_BYTES = 2_000;

/** `values` cut into lists whose encoded length stays within {@link QUERY_VALUES_BYTES} each. */
export function queryChunks(values: readonly string[]): string[][] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const value of values) {
    const size = encodeURIComponent(value).length + 16;
    if (current.length > 0 && bytes + size > QUERY_VALUES_BYTES) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(value);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** The block of one host address: `10.0.0.5/32`, `2001:db8::5/128`. */
const hostBlock = (host: string): string => `${host}/${host.includes(":") ? 128 : 32}`;

/**
 * Whether a list that has read `read` so far and is not finished may read another page: undefined when it may, else
 * what it went past, for the error's message.
 */
export function listOverLimits(limits: ListLimits, read: ListLimits): string | undefined {
  const more = "and NetBox says more are left: the controller reads at most";
  if (read.pages >= limits.pages) return `took ${read.pages} pages ${more} ${limits.pages}`;
  if (read.records >= limits.records) return `holds ${read.records} records ${more} ${limits.records}`;
  if (read.bytes >= limits.bytes) return `took ${read.bytes} bytes ${more} ${limits.bytes}`;
  return undefined;
}

/** The `vrf_id` filter value of a VRF: its id, or `null` for the global table. */
const vrfFilter = (vrfId: number | undefined): string => (vrfId === undefined ? "null" : String(vrfId));

/** A client for one endpoint. Keep it for the endpoint's life: it holds the endpoint's keep-alive connections. */
export function netBoxClient(endpoint: NetBoxEndpoint, options: NetBoxClientOptions): NetBoxClient & { close(): void } {
  const http = new NetBoxHttp(endpoint, options);
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const limits = options.listLimits ?? DEFAULT_LIST_LIMITS;
  const get = async (req: Omit<NetBoxRequest, "method">): Promise<unknown> =>
    (await http.send({ ...req, method: "GET" })).body;

  /** The one record a list query finds; NotFound for none, BadRequest for several. */
  const only = async (route: string, query: NetBoxRequest["query"], what: string): Promise<unknown> => {
    const page = pageOf(await get({ route, query: { ...query, limit: 2 } }), what);
    if (page.count === 0) throw new NetBoxError(`NetBox has no ${what}`, "NotFound", 404);
    if (page.count > 1) throw new NetBoxError(`NetBox has ${page.count} of ${what}: name it by id`, "BadRequest");
    return page.results[0];
  };

  const prefixRecord = async (q: { id?: number; cidr?: string; vrfId?: number }): Promise<PrefixRecord> => {
    if (q.id !== undefined) return prefixOf(await get({ route: ROUTES.prefix, params: { id: q.id } }));
    if (!q.cidr) throw new NetBoxError("findPrefix needs an id or a CIDR", "BadRequest");
    const what = `prefix ${q.cidr} in ${q.vrfId === undefined ? "the global table" : `VRF ${q.vrfId}`}`;
    return prefixOf(await only(ROUTES.prefixes, { prefix: q.cidr, vrf_id: vrfFilter(q.vrfId) }, what));
  };

  const rangeRecord = async (q: {
    id?: number;
    start?: string;
    end?: string;
    vrfId?: number;
  }): Promise<RangeRecord> => {
    if (q.id !== undefined) return rangeOf(await get({ route: ROUTES.range, params: { id: q.id } }));
    if (!q.start || !q.end) throw new NetBoxError("findRange needs an id or a start and an end", "BadRequest");
    const what = `IP range ${q.start}-${q.end} in ${q.vrfId === undefined ? "the global table" : `VRF ${q.vrfId}`}`;
    const query = { start_address: q.start, end_address: q.end, vrf_id: vrfFilter(q.vrfId) };
    return rangeOf(await only(ROUTES.ranges, query, what));
  };

  /** The `parent` and `vrf_id` filters that select the addresses inside a parent. */
  const scopeOf = async (parent: NetBoxParent): Promise<{ parents: string[]; vrfId?: number; range?: RangeRecord }> => {
    if (parent.kind === "prefix") {
      const p = await prefixRecord({ id: parent.id });
      return { parents: [p.prefix], ...(p.vrfId !== undefined ? { vrfId: p.vrfId } : {}) };
    }
    const r = await rangeRecord({ id: parent.id });
    return { parents: rangeToCidrs(r.start, r.end), range: r, ...(r.vrfId !== undefined ? { vrfId: r.vrfId } : {}) };
  };

  /**
   * Records matching `filters` inside the scope, every page, by ascending id: each page asks for ids above the last
   * one seen (keyset paging, so records created or deleted meanwhile shift nothing), and the answer's `count` (what
   * is left) says when the page was the last, whatever page size the server caps `limit` at (its MAX_PAGE_SIZE).
   * Bounded whatever the server answers: a page whose records do not all lie above the last id seen is a ServerError
   * (the paging would not advance), and a list past the limits ({@link ListLimits}) is TooLarge, so a server that
   * always says more is coming costs at most the limits.
   */
  const listIn = async (
    scope: { parents: string[]; vrfId?: number },
    filters: Record<string, string | undefined>,
    anyOf: Readonly<Record<string, readonly string[]>> = {},
  ): Promise<NetBoxAddress[]> => {
    const found: NetBoxAddress[] = [];
    let bytes = 0;
    for (let after = 0, pages = 1; ; pages++) {
      const answer = await http.send({
        method: "GET",
        route: ROUTES.addresses,
        query: { vrf_id: vrfFilter(scope.vrfId), ...filters, ordering: "id", id__gt: after, limit: pageSize },
        multi: { ...anyOf, parent: scope.parents },
      });
      bytes += answer.bytes;
      const page = pageOf(answer.body, "a list of IP addresses");
      const addresses = page.results.map(addressOf);
      if (addresses.some((a) => a.id <= after))
        throw new NetBoxError(`NetBox answered ids at or below ${after} to a list of ids above it`, "ServerError");
      found.push(...addresses);
      const last = addresses[addresses.length - 1];
      if (!last || addresses.length >= page.count) return found;
      const over = listOverLimits(limits, { pages, records: found.length, bytes });
      if (over)
        throw new NetBoxError(`NetBox's list of IP addresses in ${scope.parents.join(", ")} ${over}`, "TooLarge");
      after = last.id;
    }
  };

  /** How many address records lie in the scope. */
  const countIn = async (scope: { parents: string[]; vrfId?: number }): Promise<number> => {
    const body = await http.send({
      method: "GET",
      route: ROUTES.addresses,
      query: { vrf_id: vrfFilter(scope.vrfId), limit: 1, brief: "true" },
      multi: { parent: scope.parents },
    });
    return pageOf(body.body, "a list of IP addresses").count;
  };

  const deleteOne = async (id: number): Promise<void> => {
    await http.send({ method: "DELETE", route: ROUTES.address, params: { id }, accept: [404] });
  };

  return {
    close: () => http.close(),

    async findPrefix(q): Promise<PrefixInfo> {
      const p = await prefixRecord(q);
      const used = await countIn({ parents: [p.prefix], ...(p.vrfId !== undefined ? { vrfId: p.vrfId } : {}) });
      return {
        id: p.id,
        cidr: p.prefix,
        size: usablePrefixSize(p.prefix, p.isPool),
        used,
        ...(p.vrfId !== undefined ? { vrfId: p.vrfId } : {}),
      };
    },

    async findRange(q): Promise<RangeInfo> {
      const r = await rangeRecord(q);
      const used = await countIn({
        parents: rangeToCidrs(r.start, r.end),
        ...(r.vrfId !== undefined ? { vrfId: r.vrfId } : {}),
      });
      return {
        id: r.id,
        start: r.start,
        end: r.end,
        size: r.size,
        used,
        ...(r.vrfId !== undefined ? { vrfId: r.vrfId } : {}),
      };
    },

    async listOwned(parent, tag, match = {}): Promise<NetBoxAddress[]> {
      // Several values of one filter select records matching any of them (NetBox's multi-value filters).
      const queries = match.descriptions ? queryChunks(match.descriptions).map((d) => ({ description: d })) : [{}];
      if (queries.length === 0) return [];
      const whole = await scopeOf(parent);
      // Hosts narrow the scope to their own blocks (`parent=` with a /32 or /128 is one address), in the same VRF.
      const scope = match.hosts ? { ...whole, parents: match.hosts.map(hostBlock) } : whole;
      const filters = { tag, description__iew: match.descriptionEndsWith };
      const found: NetBoxAddress[] = [];
      try {
        for (const anyOf of queries) found.push(...(await listIn(scope, filters, anyOf)));
      } catch (err) {
        // NetBox refuses a filter on a tag that does not exist (400 "tag: Select a valid choice"): nothing carries it.
        if (err instanceof NetBoxError && err.status === 400 && /\btag: /.test(err.message)) return [];
        throw err;
      }
      // `parent` filters by CIDR blocks that cover a range exactly; checking the bounds again costs nothing.
      const range = scope.range;
      return range ? found.filter((a) => inRange(a.address, range.start, range.end)) : found;
    },

    async allocate(parent, requests: AllocationRequest[]): Promise<NetBoxAddress[]> {
      if (requests.length === 0) return [];
      const answer = await http.send({
        method: "POST",
        route: ROUTES.available[parent.kind],
        params: { id: parent.id },
        body: requests.map(allocationBody),
      });
      const list = Array.isArray(answer.body) ? answer.body : [answer.body];
      if (list.length !== requests.length)
        throw new NetBoxError(`NetBox created ${list.length} addresses for ${requests.length} requests`, "ServerError");
      return list.map(addressOf);
    },

    async getAddress(id): Promise<NetBoxAddress | undefined> {
      const answer = await http.send({ method: "GET", route: ROUTES.address, params: { id }, accept: [404] });
      return answer.status === 404 ? undefined : addressOf(answer.body);
    },

    async updateAddress(id, fields): Promise<NetBoxAddress> {
      const answer = await http.send({ method: "PATCH", route: ROUTES.address, params: { id }, body: fields });
      return addressOf(answer.body);
    },

    async setDescription(id, description): Promise<NetBoxAddress> {
      const answer = await http.send({ method: "PATCH", route: ROUTES.address, params: { id }, body: { description } });
      return addressOf(answer.body);
    },

    deleteAddress: deleteOne,

    async deleteAddresses(ids): Promise<void> {
      // NetBox's bulk delete: one transaction per request, refused whole (400 "n of m objects could not be found")
      // when a record is already gone; then the chunk's records are deleted one by one, a 404 counting as deleted.
      for (let i = 0; i < ids.length; i += DELETE_CHUNK) {
        const chunk = ids.slice(i, i + DELETE_CHUNK);
        try {
          await http.send({ method: "DELETE", route: ROUTES.addresses, body: chunk.map((id) => ({ id })) });
        } catch (err) {
          if (!(err instanceof NetBoxError && err.status === 400 && /could not be found/.test(err.message))) throw err;
          for (const id of chunk) await deleteOne(id);
        }
      }
    },

    async ensureTag(slug, name): Promise<void> {
      const exists = async (): Promise<boolean> =>
        pageOf(await get({ route: ROUTES.tags, query: { slug, limit: 1 } }), "a list of tags").count > 0;
      if (await exists()) return;
      try {
        await http.send({ method: "POST", route: ROUTES.tags, body: { name, slug } });
      } catch (err) {
        // Another writer may have created it between our read and our write: then it exists, which is all we want.
        // NetBox answers that race with 400 (its validation saw the other tag) or 500 (IntegrityError: it did not).
        const raced = err instanceof NetBoxError && (err.reason === "BadRequest" || err.reason === "ServerError");
        if (!(raced && (await exists()))) throw err;
      }
    },
  };
}
