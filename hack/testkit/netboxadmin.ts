/**
 * What a NetBox administrator does around our controller, for tests: make the prefixes, ranges, VRFs, tenants and
 * tags a pool points at, reserve an address by hand, delete a record, make and revoke tokens. Plain REST on the
 * run's superuser token; deliberately not src/netbox, so the client under test is never its own witness.
 */

export interface CreatedPrefix {
  id: number;
  cidr: string;
}

export interface CreatedRange {
  id: number;
  start: string;
  end: string;
  /** The /24 the range was carved from (not created as a prefix unless asked). */
  cidr: string;
}

/** A failed admin request: the status and NetBox's answer, never the token. */
export class NetBoxAdminError extends Error {
  override name = "NetBoxAdminError";
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export class NetBoxAdmin {
  /** Fresh /24s are numbered from here inside 10.0.0.0/8: one NetBox per run, so a counter keeps them apart. */
  private next24 = 0;

  constructor(
    readonly url: string,
    private readonly token: () => string,
  ) {}

  /**
   * One REST call; rejects with the status and NetBox's words. Each call has a connection of its own (`Connection:
   * close`): gunicorn closes an idle keep-alive connection after 2 s without announcing it, and fetch's pool keeps
   * idle connections for 4 s, so a call about 2 s after the previous one could go out on a connection the server was
   * closing and fail with "other side closed" (about one in eight such calls here; it failed a CI run). A new
   * loopback connection per admin call costs nothing a test notices. src/netbox handles this for the controller.
   */
  async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${this.token()}`,
        Accept: "application/json",
        Connection: "close",
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (!res.ok) throw new NetBoxAdminError(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`, res.status);
    return text ? (JSON.parse(text) as unknown) : undefined;
  }

  private async create(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return (await this.request("POST", path, body)) as Record<string, unknown>;
  }

  /** A /24 no other test of this run has: `10.<a>.<b>.0/24` (its first three octets, for building addresses). */
  fresh24(): { cidr: string; base: string } {
    const n = ++this.next24;
    const base = `10.${Math.floor(n / 256) % 256}.${n % 256}`;
    return { cidr: `${base}.0/24`, base };
  }

  async createPrefix(
    cidr: string,
    opts: { vrfId?: number; isPool?: boolean; tenantId?: number } = {},
  ): Promise<CreatedPrefix> {
    const created = await this.create("/api/ipam/prefixes/", {
      prefix: cidr,
      ...(opts.vrfId !== undefined ? { vrf: opts.vrfId } : {}),
      ...(opts.isPool !== undefined ? { is_pool: opts.isPool } : {}),
      ...(opts.tenantId !== undefined ? { tenant: opts.tenantId } : {}),
    });
    return { id: created.id as number, cidr: created.prefix as string };
  }

  /**
   * `2^(24 - length)` consecutive fresh /24s aligned as a /`length` (16 ≤ length ≤ 24), as the CIDR of that block:
   * `10.0.4.0/22`. NetBox refuses a prefix whose address has host bits set, so the block starts on its own boundary;
   * the /24s skipped to reach it are never handed out.
   */
  freshBlock(length: number): string {
    if (!Number.isInteger(length) || length < 16 || length > 24)
      throw new Error(`freshBlock takes a length of 16 to 24, not ${length}`);
    const blocks = 2 ** (24 - length);
    const start = Math.ceil((this.next24 + 1) / blocks) * blocks;
    this.next24 = start + blocks - 1;
    return `10.${Math.floor(start / 256) % 256}.${start % 256}.0/${length}`;
  }

  /**
   * A prefix of its own for one test: a fresh /24, or a smaller block at its start (`length` 28: 14 usable
   * addresses, quick to exhaust), or a larger aligned block of fresh /24s (`length` 22: 1,022 usable addresses).
   */
  async freshPrefix(length = 24, opts: { vrfId?: number; isPool?: boolean } = {}): Promise<CreatedPrefix> {
    const cidr = length < 24 ? this.freshBlock(length) : `${this.fresh24().base}.0/${length}`;
    return await this.createPrefix(cidr, opts);
  }

  async createRange(start: string, end: string, opts: { vrfId?: number } = {}): Promise<{ id: number }> {
    const created = await this.create("/api/ipam/ip-ranges/", {
      start_address: start,
      end_address: end,
      ...(opts.vrfId !== undefined ? { vrf: opts.vrfId } : {}),
    });
    return { id: created.id as number };
  }

  /** A range `.first`–`.last` (with mask /24) in a fresh /24. */
  async freshRange(first: number, last: number, opts: { vrfId?: number } = {}): Promise<CreatedRange> {
    const { cidr, base } = this.fresh24();
    const [start, end] = [`${base}.${first}/24`, `${base}.${last}/24`];
    const { id } = await this.createRange(start, end, opts);
    return { id, start, end, cidr };
  }

  async createVrf(name: string): Promise<number> {
    return (await this.create("/api/ipam/vrfs/", { name })).id as number;
  }

  async createTenant(name: string): Promise<number> {
    return (await this.create("/api/tenancy/tenants/", { name, slug: name.toLowerCase().replace(/[^a-z0-9-]/g, "-") }))
      .id as number;
  }

  /** A custom field of IP address records (`type`: text, integer, decimal, boolean, ...). */
  async createCustomField(name: string, type: string): Promise<number> {
    return (await this.create("/api/extras/custom-fields/", { name, type, object_types: ["ipam.ipaddress"] }))
      .id as number;
  }

  async createTag(slug: string, name = slug): Promise<number> {
    return (await this.create("/api/extras/tags/", { name, slug })).id as number;
  }

  /** An address record made by hand (status `reserved` by default): what our controller must never be offered. */
  async reserveAddress(
    address: string,
    opts: { vrfId?: number; status?: string; description?: string; tags?: string[] } = {},
  ): Promise<number> {
    const created = await this.create("/api/ipam/ip-addresses/", {
      address,
      status: opts.status ?? "reserved",
      description: opts.description ?? "reserved by hand",
      ...(opts.vrfId !== undefined ? { vrf: opts.vrfId } : {}),
      ...(opts.tags ? { tags: opts.tags.map((slug) => ({ slug })) } : {}),
    });
    return created.id as number;
  }

  /** Deletes a record, e.g. `deleteRecord("ipam/ip-addresses", 12)`. */
  async deleteRecord(type: string, id: number): Promise<void> {
    await this.request("DELETE", `/api/${type}/${id}/`);
  }

  /** A new v2 token of the run's superuser, as NetBox shows it once: `nbt_<key>.<secret>`. */
  async createToken(opts: { writeEnabled?: boolean } = {}): Promise<string> {
    const me = (await this.request("GET", "/api/users/users/?username=admin")) as { results: { id: number }[] };
    const created = await this.create("/api/users/tokens/", {
      user: me.results[0]?.id,
      write_enabled: opts.writeEnabled ?? true,
    });
    return `nbt_${String(created.key)}.${String(created.token)}`;
  }

  /** Deletes the token (`nbt_<key>.<secret>`): requests carrying it are refused from now on. */
  async revokeToken(token: string): Promise<void> {
    const key = /^nbt_([^.]+)\./.exec(token)?.[1];
    if (!key) throw new Error("not a v2 token");
    const found = (await this.request("GET", `/api/users/tokens/?key=${encodeURIComponent(key)}`)) as {
      results: { id: number }[];
    };
    const id = found.results[0]?.id;
    if (id === undefined) throw new Error("no such token");
    await this.deleteRecord("users/tokens", id);
  }
}
