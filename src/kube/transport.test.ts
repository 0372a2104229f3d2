import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ClusterAccess } from "./access.js";
import { apiRequest, MAX_CONNECTIONS } from "./transport.js";

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
    expect(wave).to.be.at.most(MAX_CONNECTIONS);
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
