import { expect } from "chai";
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { Connection } from "./h2.js";
import { writeEndlessly } from "./endless.testutil.js";
import { AnswerTooLargeError } from "./errors.js";
import { MAX_ANSWER_BYTES } from "./transport.js";

type Listener = (...args: unknown[]) => void;

const EVENTS = ["response", "data", "end", "error", "close"];

interface Connected {
  server: Http2Server;
  session: ClientHttp2Session;
  connection: Connection;
  streams: ClientHttp2Stream[];
  /** The listeners the Connection added to each stream: those there right after `request`, less Node's own. */
  added: Map<ClientHttp2Stream, Listener[]>;
  close(): void;
}

/**
 * A cleartext HTTP/2 server answering every stream with `answer`, and a Connection to it whose streams the test can
 * see (the session's `request` is wrapped: a Connection keeps its streams to itself).
 */
async function connected(answer: (stream: http2.ServerHttp2Stream) => void): Promise<Connected> {
  const server = http2.createServer();
  server.on("stream", (stream) => {
    stream.on("error", () => {
      // The server's side of a reset.
    });
    answer(stream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const streams: ClientHttp2Stream[] = [];
  const added = new Map<ClientHttp2Stream, Listener[]>();
  const request = session.request.bind(session);
  session.request = (...args: Parameters<ClientHttp2Session["request"]>): ClientHttp2Stream => {
    const stream = request(...args);
    streams.push(stream);
    const before = new Set(EVENTS.flatMap((e) => stream.listeners(e)));
    // The Connection adds its listeners as soon as `request` returns, before any microtask runs.
    queueMicrotask(() => {
      added.set(
        stream,
        EVENTS.flatMap((e) => stream.listeners(e) as Listener[]).filter((f) => !before.has(f)),
      );
    });
    return stream;
  };
  return {
    server,
    session,
    connection: new Connection(session, {}),
    streams,
    added,
    close: () => {
      session.destroy();
      server.close();
    },
  };
}

/** The events on which one of the Connection's listeners still listens to `stream`. */
function stillListening(test: Connected, stream: ClientHttp2Stream): string[] {
  const ours = test.added.get(stream) ?? [];
  return EVENTS.filter((e) => stream.listeners(e).some((f) => ours.includes(f as Listener)));
}

describe("HTTP/2 connection", () => {
  let test: Connected | undefined;
  afterEach(() => test?.close());

  it("answers a request, and the settled stream keeps none of the request's listeners", async () => {
    test = await connected((stream) => {
      stream.respond({ ":status": 201, "content-type": "application/json" });
      stream.end('{"kind":"IPAddress"}');
    });
    const answer = await test.connection.send({ ":method": "POST", ":path": "/x" }, '{"a":1}', {
      timeoutMs: 5_000,
      what: "create x",
      maxAnswerBytes: MAX_ANSWER_BYTES,
    });
    expect(answer.status).to.equal(201);
    expect(answer.body.toString()).to.equal('{"kind":"IPAddress"}');
    const [stream] = test.streams as [ClientHttp2Stream];
    // Node keeps a stream's object until a full collection; what its listeners reach would be kept with it.
    expect(test.added.get(stream), "the request's listeners").to.have.length.of.at.least(4);
    expect(stillListening(test, stream)).to.deep.equal([]);
    expect(() => stream.emit("error", new Error("a reset after the answer"))).not.to.throw();
  });

  it("settles a request whose stream the server resets, never as a success, and serves the next one", async () => {
    let served = 0;
    test = await connected((stream) => {
      if (served++ === 0) {
        stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        return;
      }
      stream.respond({ ":status": 200 });
      stream.end("{}");
    });
    // Rejected, or an answer without a status (the transport's "HTTP 0").
    const reset = await test.connection
      .send({ ":method": "GET", ":path": "/x" }, undefined, {
        timeoutMs: 5_000,
        what: "get x",
        maxAnswerBytes: MAX_ANSWER_BYTES,
      })
      .then(
        (answer) => answer.status,
        (err: unknown) => String(err),
      );
    expect(reset).to.satisfy((r: unknown) => r === 0 || (typeof r === "string" && /stream|reset/i.test(r)));
    expect(stillListening(test, test.streams[0] as ClientHttp2Stream)).to.deep.equal([]);
    const answer = await test.connection.send({ ":method": "GET", ":path": "/y" }, undefined, {
      timeoutMs: 5_000,
      what: "get y",
      maxAnswerBytes: MAX_ANSWER_BYTES,
    });
    expect(answer.status).to.equal(200);
    expect(test.connection.open).to.equal(true);
  });

  it("times out a request the server never answers, and its stream keeps none of the request's listeners", async () => {
    test = await connected(() => {
      // Never answered.
    });
    const failure = await test.connection
      .send({ ":method": "GET", ":path": "/slow" }, undefined, {
        timeoutMs: 100,
        what: "get slow",
        maxAnswerBytes: MAX_ANSWER_BYTES,
      })
      .then(
        () => "answered",
        (err: unknown) => String(err),
      );
    expect(failure).to.include("get slow got no answer within 100 ms");
    const [stream] = test.streams as [ClientHttp2Stream];
    expect(test.added.get(stream), "the request's listeners").to.have.length.of.at.least(4);
    expect(stillListening(test, stream)).to.deep.equal([]);
  });

  it("cancels a request whose answer grows past its bound, and serves the next one on the connection", async () => {
    let endless: http2.ServerHttp2Stream | undefined;
    test = await connected((stream) => {
      stream.respond({ ":status": 200 });
      if (endless) {
        stream.end("{}");
        return;
      }
      // The first answer never ends.
      endless = stream;
      writeEndlessly(stream);
    });
    const failure = await test.connection
      .send({ ":method": "GET", ":path": "/big" }, undefined, {
        timeoutMs: 5_000,
        what: "list big",
        maxAnswerBytes: 100_000,
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).to.be.instanceOf(AnswerTooLargeError);
    expect(String(failure)).to.include("list big: the answer exceeded 100000 bytes");
    expect(stillListening(test, test.streams[0] as ClientHttp2Stream)).to.deep.equal([]);
    const answer = await test.connection.send({ ":method": "GET", ":path": "/small" }, undefined, {
      timeoutMs: 5_000,
      what: "get small",
      maxAnswerBytes: 100_000,
    });
    expect(answer.body.toString()).to.equal("{}");
    expect(test.connection.open).to.equal(true);
  });
});
