/**
 * Lists are bounded whatever the server answers: a loopback server plays a NetBox whose pages never end (every page
 * full, `count` far above what it sent, a `next` link), one whose paging does not advance, and one with huge records.
 * What NetBox really does when paging is tested against a real one (e2e/netbox-client.test.ts).
 */
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DEFAULT_LIST_LIMITS, NetBoxError, netBoxClient, type ListLimits } from "./client.js";

const PREFIX = { id: 7, prefix: "10.0.0.0/8", vrf: null, is_pool: false };
const MiB = 1024 * 1024;

/** One IP address record of `id`, padded with a description of `pad` characters. */
const record = (id: number, pad: number): Record<string, unknown> => ({
  id,
  address: `10.${(id >> 16) & 255}.${(id >> 8) & 255}.${id & 255}/8`,
  description: `IPAddressClaim ns/claim-${id}${"x".repeat(pad)}`,
  dns_name: "",
  status: { value: "active", label: "Active" },
  tags: [{ slug: "metal3-ipam-ts" }],
  vrf: null,
});

interface Endless {
  /** Records per page. */
  perPage: number;
  /** Characters of padding in each record's description. */
  pad?: number;
  /** Answers ids from 1 on every page, whatever id__gt asks. */
  stuck?: boolean;
  /**
   * Pages after which the server finally answers a last page: far past the client's limits, so that a client without
   * limits ends (and fails the test's assertions) instead of running the test process out of memory.
   */
  giveUpAfter: number;
}

describe("NetBox client: bounded lists (loopback server)", () => {
  let server: Server | undefined;
  let pagesServed = 0;

  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
    server = undefined;
    pagesServed = 0;
  });

  async function endless(how: Endless, limits?: ListLimits): Promise<ReturnType<typeof netBoxClient>> {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://x");
      const send = (body: unknown): void =>
        void res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(body));
      if (url.pathname === `/api/ipam/prefixes/${PREFIX.id}/`) return send(PREFIX);
      pagesServed++;
      const after = how.stuck ? 0 : Number(url.searchParams.get("id__gt") ?? "0");
      const results = Array.from({ length: how.perPage }, (_, i) => record(after + i + 1, how.pad ?? 0));
      const last = pagesServed >= how.giveUpAfter;
      send({
        count: last ? results.length : 1_000_000_000,
        next: last ? null : `http://${req.headers.host}/api/ipam/ip-addresses/?id__gt=${after + how.perPage}`,
        previous: null,
        results,
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return netBoxClient(
      { url: `http://127.0.0.1:${port}`, token: "nbt_key.secretsecretsecret" },
      { timeoutMs: 10_000, userAgent: "metal3-ipam-ts/test", ...(limits ? { listLimits: limits } : {}) },
    );
  }

  async function failure(list: Promise<unknown>): Promise<NetBoxError> {
    const outcome = await list.then(
      (found) => new Error(`the list ended with ${(found as unknown[]).length} records`),
      (err: unknown) => err,
    );
    expect(outcome).to.be.instanceOf(NetBoxError);
    return outcome as NetBoxError;
  }

  it("a server whose pages never end: the list fails TooLarge at the record limit, and the heap stays bounded", async () => {
    const api = await endless({ perPage: 1000, giveUpAfter: 400 });
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
    try {
      const err = await failure(api.listOwned({ kind: "prefix", id: PREFIX.id }, "metal3-ipam-ts"));
      expect(err.reason).to.equal("TooLarge");
      expect(err.message).to.include(`at most ${DEFAULT_LIST_LIMITS.records}`);
    } finally {
      clearInterval(sampler);
      api.close();
    }
    expect(pagesServed).to.equal(DEFAULT_LIST_LIMITS.records / 1000);
    // 100,000 small records and the page being read; without limits the 400 pages hold four times as many.
    expect((peak - before) / MiB, "heap growth (MiB)").to.be.below(192);
  });

  it("a server that pages one record at a time: the list fails TooLarge at the page limit", async () => {
    const api = await endless({ perPage: 1, giveUpAfter: 100 }, { pages: 20, records: 1_000, bytes: MiB });
    const err = await failure(api.listOwned({ kind: "prefix", id: PREFIX.id }, "metal3-ipam-ts"));
    expect([err.reason, pagesServed]).to.deep.equal(["TooLarge", 20]);
    expect(err.message).to.include("took 20 pages").and.include("10.0.0.0/8");
    api.close();
  });

  it("a server of huge records: the list fails TooLarge at the byte limit", async () => {
    const api = await endless(
      { perPage: 2, pad: 50_000, giveUpAfter: 100 },
      { pages: 1_000, records: 1_000, bytes: MiB },
    );
    const err = await failure(api.listOwned({ kind: "prefix", id: PREFIX.id }, "metal3-ipam-ts"));
    expect(err.reason).to.equal("TooLarge");
    expect(err.message).to.include("bytes");
    expect(pagesServed).to.equal(11);
    api.close();
  });

  it("a server whose paging does not advance (the same ids on every page): a ServerError at the second page", async () => {
    const api = await endless({ perPage: 5, stuck: true, giveUpAfter: 100 });
    const err = await failure(api.listOwned({ kind: "prefix", id: PREFIX.id }, "metal3-ipam-ts"));
    expect([err.reason, pagesServed]).to.deep.equal(["ServerError", 2]);
    api.close();
  });
});
