import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ClusterAccess } from "./access.js";
import { clientStats } from "./ratelimit.js";
import { apiRequest } from "./transport.js";
import { streamWatch, type WatchEvent } from "./watch.js";

/** Counters of the door as they stand, to compare before and after. */
const snapshot = (): { sent: number; received: number; watch: number } => ({
  sent: clientStats.bytesSent,
  received: clientStats.bytesReceived,
  watch: clientStats.watchBytesReceived,
});

describe("API door byte counters (clientStats)", () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  async function listen(handler: Parameters<typeof createServer>[1]): Promise<ClusterAccess> {
    server = createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { server: `http://127.0.0.1:${port}`, requestOptions: () => Promise.resolve({ headers: {} }) };
  }

  it("counts the request body sent and the answer body received, in bytes (not characters)", async () => {
    // Multi-byte characters both ways: a count of characters would come out short.
    const answer = JSON.stringify({ items: ["é".repeat(500), "x".repeat(3000)] });
    let receivedByServer = 0;
    const access = await listen((req, res) => {
      req.on("data", (chunk: Buffer) => (receivedByServer += chunk.length));
      req.on("end", () => res.writeHead(200, { "Content-Type": "application/json" }).end(answer));
    });
    const body = { spec: { note: "ü".repeat(100) } };
    const before = snapshot();
    await apiRequest(access, { method: "POST", path: "/x", body, timeoutMs: 5_000, what: "create x" });
    const after = snapshot();
    expect(after.sent - before.sent).to.equal(receivedByServer);
    expect(after.sent - before.sent).to.equal(Buffer.byteLength(JSON.stringify(body)));
    expect(after.received - before.received).to.equal(Buffer.byteLength(answer));
    expect(after.watch - before.watch, "a request is not a watch").to.equal(0);
  });

  it("counts every byte of a watch stream apart from requests, and keeps a character split across chunks", async () => {
    const event = (n: number): string =>
      `${JSON.stringify({ type: "ADDED", object: { metadata: { name: `ä-${n}` } } })}\n`;
    const stream = Buffer.from(event(1) + event(2) + event(3));
    // Cut inside the two bytes of the first "ä": a decoder that does not carry bytes over would mangle it.
    const cut = stream.indexOf(Buffer.from("ä")) + 1;
    const access = await listen((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write(stream.subarray(0, cut));
      setTimeout(() => res.end(stream.subarray(cut)), 20);
    });
    const events: WatchEvent[] = [];
    const before = snapshot();
    await streamWatch(access, {
      path: "/w",
      query: {},
      signal: new AbortController().signal,
      onEvent: (e) => events.push(e),
    });
    const after = snapshot();
    expect(events.map((e) => (e.object as { metadata: { name: string } }).metadata.name)).to.deep.equal([
      "ä-1",
      "ä-2",
      "ä-3",
    ]);
    expect(after.watch - before.watch).to.equal(stream.length);
    expect(after.received - before.received, "a watch is not a request").to.equal(0);
    expect(after.sent - before.sent, "a watch sends no body").to.equal(0);
  });
});
