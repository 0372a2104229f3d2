/**
 * HTTP/2 connections to an API server, as client-go makes them: one multiplexed TLS connection per identity, whose
 * liveness is probed with HTTP/2 PING when it has been silent, so that
 * - a slow answer (an admission webhook may take 30 s) only delays its own request: the connection still answers
 *   pings, and every other request on it goes on;
 * - a dead connection (a frozen server, a NAT entry gone, a proxy that stopped forwarding) is noticed within
 *   {@link READ_IDLE_MS} + {@link PING_TIMEOUT_MS}, and only the requests on it fail (their outcome is unknown).
 */
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http2";
import { isIP } from "node:net";
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from "node:tls";
import { AnswerTooLargeError, RequestTimeoutError } from "./errors.js";
import { bareHost, openTunnel } from "./proxy.js";
import { clientStats } from "./ratelimit.js";

const http2 = process.getBuiltinModule("node:http2");

/** A connection that has heard nothing for this long is pinged (client-go: 30 s; ours is shorter, it is cheap). */
export const READ_IDLE_MS = 10_000;
/** A ping unanswered this long means the connection is dead. */
export const PING_TIMEOUT_MS = 5_000;
/** Deadline of a TCP connect, proxy tunnel and TLS handshake together. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Receive windows of a stream and of a whole connection. */
const STREAM_WINDOW_BYTES = 4 * 1024 * 1024;
const CONNECTION_WINDOW_BYTES = 64 * 1024 * 1024;
/** Client stream IDs run out after 2^30 streams; a connection is retired a little before. */
const MAX_STREAMS_PER_CONNECTION = 2 ** 30 - 1_000;

/** TLS material of one identity; a change of any of it means a new connection. */
export interface TlsMaterial {
  ca?: Buffer | string | undefined;
  cert?: Buffer | string | undefined;
  key?: Buffer | string | undefined;
  rejectUnauthorized?: boolean | undefined;
  servername?: string | undefined;
}

const sameBytes = (a: Buffer | string | undefined, b: Buffer | string | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && Buffer.from(a).equals(Buffer.from(b)));

function sameMaterial(a: TlsMaterial, b: TlsMaterial): boolean {
  return (
    a.rejectUnauthorized === b.rejectUnauthorized &&
    a.servername === b.servername &&
    sameBytes(a.cert, b.cert) &&
    sameBytes(a.key, b.key) &&
    sameBytes(a.ca, b.ca)
  );
}

/** A request that never left this client (its connection was closing): safe to send again on a new one. */
export class NotSentError extends Error {
  override name = "NotSentError";
}

/** The answer to one request. */
export interface H2Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTP/2 connection and what rides on it (exported for its tests; {@link H2Pool} makes them). */
export class Connection {
  private lastHeard = Date.now();
  private streams = 0;
  private readonly failers = new Set<(err: Error) => void>();
  /** Wakes when the connection may have been silent for READ_IDLE_MS; it is not woken more often than that. */
  private watchdog: NodeJS.Timeout | undefined;
  /** False once the connection takes no new streams (closing, gone away, dead, or out of stream IDs). */
  open = true;

  constructor(
    private readonly session: ClientHttp2Session,
    readonly material: TlsMaterial,
  ) {
    session.on("goaway", () => this.retire());
    session.on("close", () => this.fail(new RequestTimeoutError("the connection to the API server closed")));
    session.on("error", (err: Error) => this.fail(err));
    session.on("ping", () => this.heard());
    this.armWatchdog(READ_IDLE_MS);
  }

  /**
   * Checks the connection after `ms`. One timer per READ_IDLE_MS at most, not a tick a second: an idle controller's
   * every wake-up costs CPU, and a connection in use moves `lastHeard` without touching the timer.
   */
  private armWatchdog(ms: number): void {
    this.watchdog = setTimeout(() => this.check(), ms);
    this.watchdog.unref();
  }

  private heard(): void {
    this.lastHeard = Date.now();
  }

  /** Takes no new streams; open ones finish. */
  retire(): void {
    if (!this.open) return;
    this.open = false;
    if (this.failers.size === 0) this.close();
  }

  private close(): void {
    clearTimeout(this.watchdog);
    if (!this.session.closed && !this.session.destroyed) this.session.close();
  }

  /** Ends the connection: every request on it fails with `err`. */
  fail(err: Error): void {
    this.open = false;
    clearTimeout(this.watchdog);
    for (const failer of [...this.failers]) failer(err);
    this.failers.clear();
    if (!this.session.destroyed) this.session.destroy();
  }

  /** Pings a connection that has been silent for READ_IDLE_MS; one that does not answer is dead. */
  private check(): void {
    if (this.session.closed || this.session.destroyed) return;
    const silentMs = Date.now() - this.lastHeard;
    if (silentMs < READ_IDLE_MS) {
      this.armWatchdog(READ_IDLE_MS - silentMs);
      return;
    }
    const deadline = setTimeout(() => {
      this.fail(
        new RequestTimeoutError(
          `the connection to the API server went silent: no answer to a ping within ${PING_TIMEOUT_MS} ms`,
        ),
      );
    }, PING_TIMEOUT_MS);
    deadline.unref();
    const sent = this.session.ping((err) => {
      clearTimeout(deadline);
      if (err) this.fail(err);
      else {
        this.heard();
        this.armWatchdog(READ_IDLE_MS);
      }
    });
    if (!sent) {
      clearTimeout(deadline);
      this.armWatchdog(READ_IDLE_MS);
    }
  }

  /**
   * Sends one request; resolves with the whole answer. Rejects with RequestTimeoutError when `timeoutMs` passes, with
   * AnswerTooLargeError once the answer's body passes `maxAnswerBytes` (either way only this stream is cancelled), or
   * when the connection dies.
   */
  send(
    headers: OutgoingHttpHeaders,
    payload: string | undefined,
    { timeoutMs, what, maxAnswerBytes }: { timeoutMs: number; what: string; maxAnswerBytes: number },
  ): Promise<H2Answer> {
    if (++this.streams >= MAX_STREAMS_PER_CONNECTION) this.retire();
    return new Promise<H2Answer>((resolve, reject) => {
      let stream: ClientHttp2Stream | undefined;
      let status = 0;
      let answerHeaders: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      let bytes = 0;
      const onResponse = (h: IncomingHttpHeaders): void => {
        this.heard();
        status = Number(h[":status"] ?? 0);
        answerHeaders = h;
      };
      const onData = (chunk: Buffer): void => {
        this.heard();
        clientStats.bytesReceived += chunk.length;
        bytes += chunk.length;
        if (bytes > maxAnswerBytes) {
          chunks.length = 0;
          failer(new AnswerTooLargeError(what, maxAnswerBytes));
          return;
        }
        chunks.push(chunk);
      };
      const onEnd = (): void => finish(undefined, { status, headers: answerHeaders, body: Buffer.concat(chunks) });
      const onError = (err: Error): void => finish(err);
      // A stream closed by the server without an end (RST_STREAM) settles here.
      const onClose = (): void => {
        if (this.failers.has(failer))
          finish(new Error(`${what}: the API server reset the stream (code ${stream?.rstCode ?? "?"})`));
      };
      const finish = (err?: Error, answer?: H2Answer): void => {
        clearTimeout(timer);
        this.failers.delete(failer);
        if (!this.open && this.failers.size === 0) this.close();
        detach();
        if (err) reject(err);
        else if (answer) resolve(answer);
      };
      /**
       * Node keeps a stream's object until a full collection (a native handle holds it through every scavenge), so
       * whatever its listeners reach (this promise, the answer, the chunks) would be promoted to the old generation
       * with it, for every request. Settled, the stream lets go of them; a late error still has a listener.
       */
      const detach = (): void => {
        if (!stream) return;
        stream.off("response", onResponse);
        stream.off("data", onData);
        stream.off("end", onEnd);
        stream.off("error", onError);
        stream.off("close", onClose);
        stream.on("error", ignoreLateError);
      };
      const failer = (err: Error): void => {
        stream?.close(http2.constants.NGHTTP2_CANCEL);
        finish(err);
      };
      const timer = setTimeout(
        () => failer(new RequestTimeoutError(`${what} got no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.failers.add(failer);
      try {
        stream = this.session.request(headers, { endStream: payload === undefined });
      } catch (err) {
        // The session closed under us (GOAWAY, destroyed): nothing was sent, the caller may send again.
        this.retire();
        finish(new NotSentError(`${what}: ${err instanceof Error ? err.message : String(err)}`));
        return;
      }
      stream.on("response", onResponse);
      stream.on("data", onData);
      stream.on("end", onEnd);
      stream.on("error", onError);
      stream.on("close", onClose);
      if (payload !== undefined) {
        clientStats.bytesSent += Buffer.byteLength(payload);
        stream.end(payload);
      }
    });
  }
}

/** A settled request's stream may still report an error (a reset after its end): nobody waits for it any more. */
function ignoreLateError(): void {}

/** Where and how to connect. */
export interface Endpoint {
  /** `https://host:port`. */
  server: string;
  /** An http(s) proxy to tunnel through. */
  proxy?: string | undefined;
}

/** What a connection attempt found: HTTP/2, or a server that only speaks HTTP/1.1. */
type Opened = { connection: Connection } | { http1: true };

/**
 * The connections of one endpoint: one open connection at a time (a new one when the TLS material changes or the old
 * one retires); `undefined` from {@link H2Pool.connection} means the server does not speak HTTP/2 (use HTTP/1.1).
 */
export class H2Pool {
  private current: Connection | undefined;
  private opening: { material: TlsMaterial; promise: Promise<Opened> } | undefined;
  private http1 = false;

  constructor(private readonly endpoint: Endpoint) {}

  /** The open connection for `material`, if there is one (no new connection is started). */
  ready(material: TlsMaterial): Connection | undefined {
    const current = this.current;
    return current?.open && sameMaterial(current.material, material) ? current : undefined;
  }

  async connection(material: TlsMaterial): Promise<Connection | undefined> {
    if (this.http1) return undefined;
    const open = this.ready(material);
    if (open) return open;
    if (!this.opening || !sameMaterial(this.opening.material, material)) {
      const promise = this.open(material);
      this.opening = { material, promise };
      promise.then(
        () => {
          if (this.opening?.promise === promise) this.opening = undefined;
        },
        () => {
          if (this.opening?.promise === promise) this.opening = undefined;
        },
      );
    }
    const opened = await this.opening.promise;
    if ("http1" in opened) return undefined;
    return opened.connection;
  }

  private async open(material: TlsMaterial): Promise<Opened> {
    const url = new URL(this.endpoint.server);
    const host = bareHost(url);
    const port = Number(url.port || 443);
    const started = Date.now();
    const tunnel = this.endpoint.proxy
      ? await openTunnel(this.endpoint.proxy, host, port, CONNECT_TIMEOUT_MS)
      : undefined;
    const options: ConnectionOptions = {
      ...(tunnel ? { socket: tunnel } : { host, port }),
      ca: material.ca,
      cert: material.cert,
      key: material.key,
      ...(material.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
      servername: material.servername ?? (isIP(host) ? undefined : host),
      ALPNProtocols: ["h2", "http/1.1"],
    };
    const socket = await handshake(options, CONNECT_TIMEOUT_MS - (Date.now() - started), this.endpoint.server);
    if (socket.alpnProtocol !== "h2") {
      socket.destroy();
      this.http1 = true;
      return { http1: true };
    }
    // Flow-control windows as Go's HTTP/2 client sets them (4 MiB a stream, more for the connection): with HTTP/2's
    // default 64 KiB, a list of 10,000 objects would wait for a window update every 64 KiB.
    const session = http2.connect(this.endpoint.server, {
      createConnection: () => socket,
      settings: { initialWindowSize: STREAM_WINDOW_BYTES },
    });
    session.on("error", () => undefined); // reported through the connection's requests
    session.on("connect", () => session.setLocalWindowSize(CONNECTION_WINDOW_BYTES));
    session.unref();
    socket.unref();
    const connection = new Connection(session, material);
    const previous = this.current;
    this.current = connection;
    previous?.retire();
    return { connection };
  }
}

/** A TLS connection, after its handshake; rejects with RequestTimeoutError when it takes longer than `timeoutMs`. */
function handshake(options: ConnectionOptions, timeoutMs: number, server: string): Promise<TLSSocket> {
  return new Promise<TLSSocket>((resolve, reject) => {
    const socket = tlsConnect(options);
    const timer = setTimeout(
      () => {
        socket.destroy();
        reject(new RequestTimeoutError(`no TLS connection to ${server} within ${CONNECT_TIMEOUT_MS} ms`));
      },
      Math.max(timeoutMs, 1),
    );
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once("error", (err: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}
