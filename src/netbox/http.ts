/**
 * The one HTTP door to a NetBox: JSON requests with a deadline each, over a keep-alive connection pool per client
 * (https trusting the default roots plus an optional CA bundle, or plain http), every outcome observed and every
 * failure a NetBoxError. Requests go to the endpoint's origin only: a redirect is an answer like any other (an error
 * for the caller), never followed; the URL's userinfo is never sent and never printed.
 */
import type { IncomingMessage, OutgoingHttpHeaders } from "node:http";
import { NetBoxError, netBoxMessage, parseRetryAfter, reasonOfSocketError, reasonOfStatus, redact } from "./errors.js";
import type { NetBoxClientOptions, NetBoxEndpoint, NetBoxErrorReason } from "./types.js";

// node:http(s) through getBuiltinModule, never an ES import (see src/kube/transport.ts: the ES namespace of node:http
// loads Node's bundled undici, resident memory never used).
const { Agent: HttpAgent, request: httpRequest } = process.getBuiltinModule("node:http");
const { Agent: HttpsAgent, request: httpsRequest } = process.getBuiltinModule("node:https");
const { getCACertificates } = process.getBuiltinModule("node:tls");
type HttpAgent = InstanceType<typeof HttpAgent>;

/** Largest answer body read; a NetBox page of 1000 addresses is about 1.5 MB. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
/**
 * Idle connections are closed after this long. NetBox's gunicorn closes them after 2 s by default (`--keep-alive`),
 * proxies after longer; a request that still lands on one the server just closed is sent again (see send).
 */
const IDLE_SOCKET_MS = 1_500;

export interface NetBoxRequest {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Templated path below the base URL, e.g. `/api/ipam/prefixes/{id}/`: what observations and errors name. */
  route: string;
  /** Values for the route's `{name}` placeholders. */
  params?: Readonly<Record<string, number | string>>;
  query?: Readonly<Record<string, number | string | undefined>>;
  /** Query parameters given several times (`parent=a&parent=b`). */
  multi?: Readonly<Record<string, readonly string[]>>;
  /** Sent as JSON. */
  body?: unknown;
  /** Statuses besides 2xx that the caller handles itself (404 for a lookup); they are returned, not thrown. */
  accept?: readonly number[];
}

export interface NetBoxAnswer {
  status: number;
  /** Parsed JSON, or undefined for an empty body (204). */
  body: unknown;
  /** Length of the body as read off the wire. */
  bytes: number;
}

/** What one attempt ended with, before it is mapped to an answer or an error. */
type Outcome =
  | { kind: "answer"; status: number; headers: IncomingMessage["headers"]; text: string; bytes: number }
  | { kind: "socket"; code: string | undefined; detail: string; reusedSocket: boolean; timedOut: boolean };

export class NetBoxHttp {
  private readonly base: URL;
  private readonly origin: string;
  private readonly agent: HttpAgent;
  private readonly authorization: string;

  constructor(
    private readonly endpoint: NetBoxEndpoint,
    private readonly options: NetBoxClientOptions,
  ) {
    let url: URL;
    try {
      url = new URL(endpoint.url);
    } catch {
      // Not printed: text that is no URL may still hold a password.
      throw new NetBoxError("NetBox URL is not a URL", "BadRequest");
    }
    if (url.protocol !== "https:" && url.protocol !== "http:")
      throw new NetBoxError(`NetBox URL must be http:// or https://, not ${url.protocol}`, "BadRequest");
    this.base = url;
    this.origin = `${url.protocol}//${url.host}`;
    const agentOptions = { keepAlive: true, timeout: IDLE_SOCKET_MS };
    this.agent =
      url.protocol === "https:"
        ? new HttpsAgent({ ...agentOptions, ...(endpoint.caBundle ? { ca: trustedRoots(endpoint.caBundle) } : {}) })
        : new HttpAgent(agentOptions);
    const token = endpoint.token.trim();
    this.authorization = token.startsWith("nbt_") ? `Bearer ${token}` : `Token ${token}`;
  }

  /** Closes the pooled connections; later requests open new ones. */
  close(): void {
    this.agent.destroy();
  }

  /**
   * Sends the request; 2xx answers (and `accept`ed statuses) resolve, everything else rejects with a NetBoxError.
   * A connection reset on a reused keep-alive connection before any answer means the server had closed it while
   * idle and never read the request: that attempt is sent again once on a new connection (Node's documented
   * pattern, `request.reusedSocket`), POST included.
   */
  async send(req: NetBoxRequest): Promise<NetBoxAnswer> {
    const started = performance.now();
    let outcome = await this.attempt(req);
    if (outcome.kind === "socket" && outcome.reusedSocket && !outcome.timedOut && outcome.code === "ECONNRESET")
      outcome = await this.attempt(req);
    const seconds = (performance.now() - started) / 1000;
    if (outcome.kind === "answer" && (ok(outcome.status) || req.accept?.includes(outcome.status))) {
      this.observe(req, seconds, outcome.status);
      return { status: outcome.status, body: parseJson(outcome.text), bytes: outcome.bytes };
    }
    const error = this.errorOf(req, outcome);
    this.observe(req, seconds, error.status, error.reason);
    throw error;
  }

  private observe(req: NetBoxRequest, seconds: number, status?: number, reason?: NetBoxErrorReason): void {
    this.options.observe?.({
      method: req.method,
      route: req.route,
      ...(status !== undefined ? { status } : {}),
      ...(reason !== undefined ? { reason } : {}),
      seconds,
    });
  }

  private errorOf(req: NetBoxRequest, outcome: Outcome): NetBoxError {
    const what = `NetBox ${req.method} ${req.route}`;
    if (outcome.kind === "socket") {
      const reason: NetBoxErrorReason = outcome.timedOut ? "Timeout" : reasonOfSocketError(outcome.code);
      const message = outcome.timedOut
        ? `${what}: no answer from ${this.origin} within ${this.options.timeoutMs} ms`
        : `${what}: cannot reach ${this.origin}: ${outcome.detail}`;
      return new NetBoxError(redact(message, [this.endpoint.token]), reason);
    }
    const availableIps = req.route.endsWith("/available-ips/");
    const words = netBoxMessage(outcome.text);
    const reason = reasonOfStatus(outcome.status, availableIps, words);
    const retryAfter = parseRetryAfter(headerValue(outcome.headers["retry-after"]));
    const message = `${what}: ${outcome.status} ${reason}${words ? `: ${words}` : ""}`;
    return new NetBoxError(redact(message, [this.endpoint.token]), reason, outcome.status, retryAfter);
  }

  private url(req: NetBoxRequest): URL {
    const path = req.route.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = req.params?.[name];
      if (value === undefined) throw new Error(`route ${req.route} needs a value for {${name}}`);
      return encodeURIComponent(String(value));
    });
    const url = new URL(this.base.href);
    url.pathname = `${url.pathname.replace(/\/+$/, "")}${path}`;
    url.username = "";
    url.password = "";
    for (const [key, value] of Object.entries(req.query ?? {}))
      if (value !== undefined) url.searchParams.append(key, String(value));
    for (const [key, values] of Object.entries(req.multi ?? {}))
      for (const v of values) url.searchParams.append(key, v);
    return url;
  }

  private async attempt(req: NetBoxRequest): Promise<Outcome> {
    const url = this.url(req);
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: OutgoingHttpHeaders = {
      Accept: "application/json",
      Authorization: this.authorization,
      "User-Agent": this.options.userAgent,
      ...(payload ? { "Content-Type": "application/json", "Content-Length": payload.length } : {}),
    };
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return await new Promise<Outcome>((resolve) => {
      let timedOut = false;
      const request = send(url, { method: req.method, headers, agent: this.agent });
      const timer = setTimeout(() => {
        timedOut = true;
        request.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" }));
      }, this.options.timeoutMs);
      const fail = (err: NodeJS.ErrnoException): void => {
        clearTimeout(timer);
        resolve({
          kind: "socket",
          code: err.code,
          detail: err.code ?? err.message,
          reusedSocket: request.reusedSocket,
          timedOut,
        });
      };
      request.on("error", fail);
      request.on("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES)
            request.destroy(Object.assign(new Error("answer too large"), { code: "EMSGSIZE" }));
          else chunks.push(chunk);
        });
        res.on("error", fail);
        res.on("end", () => {
          clearTimeout(timer);
          resolve({
            kind: "answer",
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString("utf8"),
            bytes: size,
          });
        });
      });
      request.end(payload);
    });
  }
}

/**
 * The roots an https client with a CA bundle trusts: Node's default ones (bundled, `NODE_EXTRA_CA_CERTS`, the
 * system's with `--use-system-ca`) and the bundle. Node's `ca` option replaces the defaults, so they are given too.
 */
export const trustedRoots = (caBundle: string): string[] => [...getCACertificates("default"), caBundle];

const ok = (status: number): boolean => status >= 200 && status < 300;

const headerValue = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

function parseJson(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new NetBoxError(`NetBox answered with something that is not JSON: ${netBoxMessage(text)}`, "ServerError");
  }
}
