import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ClusterAccess } from "./access.js";
import { clientStats } from "./ratelimit.js";
import {
  AnswerTooLargeError,
  apiRequest,
  MAX_IN_FLIGHT,
  requestTarget,
  RequestTimeoutError,
  urlOf,
} from "./transport.js";
import { USER_AGENT } from "./useragent.js";
import { writeEndlessly } from "./endless.testutil.js";

/** A plain HTTP server that holds each answer until `wave` requests are waiting, so they all overlap. */
function overlappingServer(wave: number): { server: Server; connections: () => number } {
  let connections = 0;
  let waiting: (() => void)[] = [];
  const server = createServer((_req, res) => {
    waiting.push(() => res.writeHead(200, { "Content-Type": "application/json" }).end('{"ok":true}'));
    if (waiting.length < wave) return;
    const answers = waiting;
    waiting = [];
    for (const answer of answers) answer();
  });
  server.on("connection", () => connections++);
  return { server, connections: () => connections };
}

describe("apiRequest connections", () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  it("keeps the connections of a wave open for the next wave instead of opening new ones", async () => {
    const wave = 32;
    expect(wave).to.be.at.most(MAX_IN_FLIGHT);
    const test = overlappingServer(wave);
    server = test.server;
    await new Promise<void>((resolve) => test.server.listen(0, "127.0.0.1", resolve));
    const { port } = test.server.address() as AddressInfo;
    // A fresh access object has a pool of its own.
    const access: ClusterAccess = {
      server: `http://127.0.0.1:${port}`,
      requestOptions: () => Promise.resolve({ headers: {} }),
    };
    const send = (): Promise<unknown> =>
      apiRequest(access, { method: "GET", path: "/x", timeoutMs: 5_000, what: "get x" });

    const first = await Promise.all(Array.from({ length: wave }, send));
    expect(first).to.have.length(wave);
    expect(test.connections(), "connections after the first wave").to.equal(wave);
    // Let the pool see every connection free again, as between two passes.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await Promise.all(Array.from({ length: wave }, send));
    expect(test.connections(), "connections after the second wave").to.equal(wave);
  });
});

describe("apiRequest answers", () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  /** A local server answering with `answer(n)` for the n-th request (from 0); returns an access to it. */
  async function serve(
    answer: (n: number, path: string) => { status: number; headers?: Record<string, string>; delayMs?: number },
  ): Promise<{ access: ClusterAccess; requests: () => number }> {
    let n = 0;
    server = createServer((req, res) => {
      const a = answer(n++, req.url ?? "");
      setTimeout(
        () => res.writeHead(a.status, { "Content-Type": "application/json", ...a.headers }).end("{}"),
        a.delayMs ?? 0,
      );
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return {
      access: { server: `http://127.0.0.1:${port}`, requestOptions: () => Promise.resolve({ headers: {} }) },
      requests: () => n,
    };
  }

  it("sends a request again after 429 Too Many Requests once Retry-After has passed", async () => {
    const { access, requests } = await serve((n) =>
      n < 2 ? { status: 429, headers: { "Retry-After": "1" } } : { status: 200 },
    );
    const before = clientStats.retriedAfterThrottle;
    const answer = await apiRequest(access, {
      method: "POST",
      path: "/x",
      body: {},
      timeoutMs: 10_000,
      what: "create x",
    });
    expect(answer).to.deep.equal({});
    expect(requests()).to.equal(3);
    expect(clientStats.retriedAfterThrottle - before).to.equal(2);
  });

  it("gives the 429 to the caller when its deadline would pass first", async () => {
    const { access, requests } = await serve(() => ({ status: 429, headers: { "Retry-After": "5" } }));
    const err = await apiRequest(access, { method: "GET", path: "/x", timeoutMs: 2_000, what: "get x" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as { code?: number }).code).to.equal(429);
    expect(requests()).to.equal(1);
  });

  it("retries a 5xx with Retry-After for reads only: a write may have happened", async () => {
    const { access, requests } = await serve((n) =>
      n === 0 || n === 2 ? { status: 503, headers: { "Retry-After": "1" } } : { status: 200 },
    );
    expect(await apiRequest(access, { method: "GET", path: "/x", timeoutMs: 10_000, what: "get x" })).to.deep.equal({});
    const err = await apiRequest(access, {
      method: "POST",
      path: "/x",
      body: {},
      timeoutMs: 10_000,
      what: "create x",
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as { code?: number }).code).to.equal(503);
    expect(requests()).to.equal(3);
  });

  it("times out one request without ending its neighbours", async () => {
    const { access } = await serve((_n, path) => ({ status: 200, delayMs: path === "/slow" ? 3_000 : 500 }));
    const slow = apiRequest(access, { method: "GET", path: "/slow", timeoutMs: 300, what: "get slow" }).then(
      () => "answered",
      (e: unknown) => (e instanceof RequestTimeoutError ? "timed out" : String(e)),
    );
    const neighbours = Array.from({ length: 5 }, () =>
      apiRequest(access, { method: "GET", path: "/ok", timeoutMs: 5_000, what: "get ok" }).then(() => "answered"),
    );
    expect(await Promise.all([slow, ...neighbours])).to.deep.equal([
      "timed out",
      ...Array.from({ length: 5 }, () => "answered"),
    ]);
  });

  it("cancels a request whose answer grows past its bound (over HTTP/1.1), and answers the next one", async () => {
    let endless = true;
    server = createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      if (!endless) {
        res.end("{}");
        return;
      }
      // The first answer never ends.
      endless = false;
      writeEndlessly(res);
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const access: ClusterAccess = {
      server: `http://127.0.0.1:${port}`,
      requestOptions: () => Promise.resolve({ headers: {} }),
    };
    const failure = await apiRequest(access, {
      method: "GET",
      path: "/big",
      timeoutMs: 5_000,
      what: "list big",
      maxAnswerBytes: 100_000,
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).to.be.instanceOf(AnswerTooLargeError);
    expect(String(failure)).to.include("list big: the answer exceeded 100000 bytes");
    const answer = await apiRequest(access, { method: "GET", path: "/small", timeoutMs: 5_000, what: "get small" });
    expect(answer).to.deep.equal({});
  });

  it("sends its User-Agent", async () => {
    let agent = "";
    server = createServer((req, res) => {
      agent = req.headers["user-agent"] ?? "";
      res.writeHead(200).end();
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const access: ClusterAccess = {
      server: `http://127.0.0.1:${port}`,
      requestOptions: () => Promise.resolve({ headers: {} }),
    };
    await apiRequest(access, { method: "GET", path: "/", timeoutMs: 2_000, what: "get" });
    expect(agent).to.equal(USER_AGENT);
    expect(agent).to.match(/^metal3-ipam-ts\/0\.\d+\.\d+ \(linux\/\w+\) node\/v24\./);
  });
});

describe("request targets", () => {
  it("appends the query, encoded, and leaves out empty and undefined values", () => {
    const target = requestTarget("/apis/ipam.metal3.io/v1alpha1/namespaces/a/ipaddresses", {
      labelSelector: "ipam.metal3.io/pool-name=p, x in (a,b)",
      resourceVersion: "42",
      limit: 500,
      allowWatchBookmarks: true,
      continue: "",
      fieldSelector: undefined,
    });
    const url = new URL(`https://h${target}`);
    expect(url.pathname).to.equal("/apis/ipam.metal3.io/v1alpha1/namespaces/a/ipaddresses");
    expect([...url.searchParams]).to.deep.equal([
      ["labelSelector", "ipam.metal3.io/pool-name=p, x in (a,b)"],
      ["resourceVersion", "42"],
      ["limit", "500"],
      ["allowWatchBookmarks", "true"],
    ]);
    expect(requestTarget("/api/v1/namespaces")).to.equal("/api/v1/namespaces");
  });

  it("gives the URL of a watch on the access's server", () => {
    const access = { server: "https://127.0.0.1:6443" } as ClusterAccess;
    expect(urlOf(access, "/api/v1/pods", { watch: true }).href).to.equal(
      "https://127.0.0.1:6443/api/v1/pods?watch=true",
    );
  });
});
