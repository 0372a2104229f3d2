import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ClusterAccess } from "./access.js";
import { AnswerTooLargeError, MAX_ANSWER_BYTES } from "./transport.js";
import { streamWatch, type WatchEvent } from "./watch.js";

describe("watch stream (lines → events)", () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  /** Serves `pieces` as one watch body, each written on its own after a short pause (so each is its own chunk). */
  async function streamOf(pieces: readonly Buffer[], events: WatchEvent[] = []): Promise<WatchEvent[]> {
    server = createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      let i = 0;
      const next = (): void => {
        if (i === pieces.length) {
          res.end();
          return;
        }
        res.write(pieces[i++]);
        setTimeout(next, 2);
      };
      next();
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const access: ClusterAccess = {
      server: `http://127.0.0.1:${port}`,
      requestOptions: () => Promise.resolve({ headers: {} }),
    };
    await streamWatch(access, {
      path: "/w",
      query: {},
      signal: new AbortController().signal,
      onEvent: (e) => events.push(e),
    });
    return events;
  }

  const line = (name: string, extra: object = {}): string =>
    `${JSON.stringify({ type: "MODIFIED", object: { metadata: { name }, ...extra } })}\n`;
  const names = (events: WatchEvent[]): string[] =>
    events.map((e) => (e.object as { metadata: { name: string } }).metadata.name);

  it("joins an event cut into many chunks, and splits a chunk holding several events and part of the next", async () => {
    // A pool status of 10,000 claims: one event of about 300 KB, which arrives in many chunks.
    const indexes = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, i) => [`claim-${i}`, `10.0.${i >> 8}.${i & 255}`]),
    );
    const big = Buffer.from(line("big", { status: { indexes } }));
    const small = Buffer.from(line("a") + line("b") + "\n" + line("c").slice(0, 10));
    const rest = Buffer.from(line("c").slice(10) + line("d").trimEnd()); // the last line has no newline
    const pieces: Buffer[] = [];
    for (let at = 0; at < big.length; at += 16_384) pieces.push(big.subarray(at, at + 16_384));
    const events = await streamOf([...pieces, small, rest]);
    expect(names(events)).to.deep.equal(["big", "a", "b", "c", "d"]);
    const status = (events[0]?.object as { status: { indexes: Record<string, string> } }).status;
    expect(Object.keys(status.indexes)).to.have.length(10_000);
    expect(status.indexes["claim-9999"]).to.equal("10.0.39.15");
  });

  it("ends with AnswerTooLargeError on a line longer than the answer bound, after the events before it", async () => {
    const chunk = Buffer.alloc(1024 * 1024, "x");
    const pieces = [
      Buffer.from(line("a")),
      ...Array.from({ length: MAX_ANSWER_BYTES / chunk.length + 2 }, () => chunk),
    ];
    const seen: WatchEvent[] = [];
    const failure = await streamOf(pieces, seen).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).to.be.instanceOf(AnswerTooLargeError);
    expect(names(seen)).to.deep.equal(["a"]);
  });

  it("skips lines that are not JSON and keeps going", async () => {
    const events = await streamOf([Buffer.from(`${line("a")}not json\n{"type":\n${line("b")}`)]);
    expect(names(events)).to.deep.equal(["a", "b"]);
  });
});
