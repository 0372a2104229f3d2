/**
 * The one HTTP door to the API server: JSON requests with a deadline, over one multiplexed HTTP/2 connection per
 * {@link ClusterAccess} (h2.ts; HTTP/1.1 keep-alive connections for `http://` servers and servers without HTTP/2).
 * One connection, not one per request: a new connection costs a TLS handshake on both sides, which would take much
 * of the API server's CPU. Every request:
 * - carries {@link USER_AGENT};
 * - waits for the process's client-side rate limit (ratelimit.ts);
 * - is sent again after a `429 Too Many Requests` (API Priority and Fairness rejected it unexecuted) once its
 *   `Retry-After` has passed, and after a 5xx with `Retry-After` when it is a read, while its deadline allows;
 * - fails alone when its deadline passes: other requests, on the same connection or not, are untouched;
 * - fails alone, cancelled, once its answer grows past its bound ({@link MAX_ANSWER_BYTES} unless it names one): the
 *   objects in an answer are written by tenants, and a list page of many large ones must not take the process's memory;
 * - never sends credentials over plain `http://`.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from "node:https";
import { accessOf, type ClusterAccess, type Kube } from "./access.js";
import { AnswerTooLargeError, ApiError, RequestTimeoutError } from "./errors.js";
import { H2Pool, NotSentError, type TlsMaterial } from "./h2.js";
import { clientStats, throttleDelay } from "./ratelimit.js";
import { USER_AGENT } from "./useragent.js";

// node:http through getBuiltinModule, never an ES import: building the ES namespace reads every export, and reading
// `WebSocket` loads Node's bundled undici, resident memory the controller never uses (nodejs/node#59686).
const { Agent: HttpAgent, request: httpRequest } = process.getBuiltinModule("node:http");
type HttpAgent = InstanceType<typeof HttpAgent>;

export { AnswerTooLargeError, ApiError, RequestTimeoutError };

export type Query = Record<string, string | number | boolean | undefined>;

/** One API request. */
export interface ApiRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path below the server, e.g. `/apis/ipam.metal3.io/v1alpha1/namespaces/ns/ippools`. */
  path: string;
  query?: Query;
  /** Sent as JSON. */
  body?: unknown;
  /** Default `application/json`; patches name their kind (`application/merge-patch+json`, `application/json-patch+json`). */
  contentType?: string;
  /**
   * The `Accept` header; default `application/json`. A read of metadata only asks for
   * {@link PARTIAL_OBJECT_METADATA}: the API server then sends the object's `metadata` and no spec or status.
   */
  accept?: string;
  /** Deadline from sending to the last byte of the answer, throttling and retries included. */
  timeoutMs: number;
  /** What the request does, for error messages ("create ippools"). */
  what: string;
  /** The largest answer body taken, in bytes; default {@link MAX_ANSWER_BYTES}. */
  maxAnswerBytes?: number;
}

/** The `Accept` of a metadata-only read: the object as a `meta.k8s.io/v1` PartialObjectMetadata. */
export const PARTIAL_OBJECT_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
/** Accept header of a list printed by the API server (a `meta.k8s.io/v1` Table). */
export const PRINTED_TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1";

/**
 * The largest answer body a request takes by default. The API server bounds each object it stores, far below this;
 * a page of a list holds up to hundreds of them, and its size is the sum of what tenants wrote. Large enough for a page
 * of ordinary objects many times over; a small share of the shipped memory limit, where an unbounded page could be
 * larger than the limit itself.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Requests to one API server in flight at once; more wait their turn. */
export const MAX_IN_FLIGHT = 64;
/** Sends of one request after 429s before its answer is given to the caller (client-go: 10). */
const MAX_THROTTLE_RETRIES = 10;
/** Longest wait a `Retry-After` may ask for; longer ones are capped (the deadline bounds it anyway). */
const MAX_RETRY_AFTER_MS = 10_000;

/** Per access: its HTTP/2 connections, its HTTP/1.1 pool, and the requests waiting for a slot. */
interface Door {
  /** `https://host:port` of the server: where requests go. */
  origin: string;
  /**
   * The path of the server URL, no trailing slash ("" for none): every request's path goes below it, as client-go
   * keeps it (a gateway in front of the API server, as Rancher's `https://rancher.example/k8s/clusters/c-abc`).
   */
  base: string;
  h2: H2Pool;
  h1: HttpAgent | undefined;
  inFlight: number;
  waiting: (() => void)[];
}

const doors = new WeakMap<ClusterAccess, Door>();

function doorOf(access: ClusterAccess): Door {
  let door = doors.get(access);
  if (!door) {
    const url = new URL(access.server);
    door = {
      origin: url.origin,
      base: url.pathname.replace(/\/+$/, ""),
      h2: new H2Pool({ server: access.server, proxy: access.proxy }),
      h1: undefined,
      inFlight: 0,
      waiting: [],
    };
    doors.set(access, door);
  }
  return door;
}

/** Node's built-in proxy support, for HTTP/1.1 agents: CONNECT for https servers, forwarding for http ones. */
const proxyOptions = (access: ClusterAccess): { proxyEnv?: NodeJS.ProcessEnv } =>
  access.proxy ? { proxyEnv: { HTTPS_PROXY: access.proxy, HTTP_PROXY: access.proxy } } : {};

/**
 * The HTTP/1.1 keep-alive pool of `access`. Connections it opened stay open while idle: a pool pass writes in waves,
 * and closing the idle ones between waves meant a new TLS handshake, on both sides, for each in the next wave.
 */
function http1AgentOf(access: ClusterAccess, door: Door): HttpAgent {
  if (!door.h1) {
    const options = {
      keepAlive: true,
      maxSockets: MAX_IN_FLIGHT,
      maxFreeSockets: MAX_IN_FLIGHT,
      scheduling: "lifo" as const,
      ...proxyOptions(access),
    };
    door.h1 = access.server.startsWith("http:") ? new HttpAgent(options) : new HttpsAgent(options);
  }
  return door.h1;
}

/** URL of `path` with `query` on the server of `access`, below the server's own path (a gateway's) when it has one. */
export function urlOf(access: ClusterAccess, path: string, query: Query = {}): URL {
  return new URL(access.server + requestTarget(path, query));
}

/**
 * `path` followed by `query` (its empty and undefined values left out), as the request line carries it. Built as a
 * string: parsing a URL object for every request cost about 2% of the controller's CPU in a trickle of claims.
 */
export function requestTarget(path: string, query: Query = {}): string {
  let target = path;
  let separator = path.includes("?") ? "&" : "?";
  for (const key in query) {
    const value = query[key];
    if (value === undefined || value === "") continue;
    target += `${separator}${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`;
    separator = "&";
  }
  return target;
}

/**
 * Throws before anything is sent when credentials would cross plain `http://` (client-go and kubectl refuse too): an
 * `Authorization` header, or a user name or password in the URL (Node would send those as basic auth). The message
 * names the origin only, never the URL's user information.
 */
function refuseCleartextCredentials(url: URL, headers: Record<string, string | string[]>): void {
  if (url.protocol !== "http:") return;
  if (url.username || url.password || Object.keys(headers).some((name) => name.toLowerCase() === "authorization"))
    throw new Error(
      `refusing to send credentials (a bearer token or basic auth) to ${url.origin} over plain http://: use https://`,
    );
}

/** Watches hold their connection for minutes: each gets a connection of its own, outside the request pool. */
const watchAgents = new Map<string, HttpAgent>();

function watchAgentOf(access: ClusterAccess): HttpAgent {
  const key = `${access.server.startsWith("http:") ? "http" : "https"} ${access.proxy ?? ""}`;
  let agent = watchAgents.get(key);
  if (!agent) {
    const options = { keepAlive: false, ...proxyOptions(access) };
    agent = access.server.startsWith("http:") ? new HttpAgent(options) : new HttpsAgent(options);
    watchAgents.set(key, agent);
  }
  return agent;
}

/** Node request options of a watch: the credentials of `access`, on a connection of its own. */
export async function watchRequestOptions(
  access: ClusterAccess,
  url: URL,
  signal: AbortSignal,
): Promise<RequestOptions> {
  const { headers: credentials, ...tls } = await access.requestOptions();
  refuseCleartextCredentials(url, credentials);
  return {
    ...tls,
    method: "GET",
    agent: watchAgentOf(access),
    headers: { ...credentials, Accept: "application/json", "User-Agent": USER_AGENT },
    signal,
  };
}

/** Starts a request to `url` over node:http or node:https, as its scheme says; the caller ends it. */
export function sendRequest(
  url: URL,
  options: RequestOptions,
  onResponse: (res: IncomingMessage) => void,
): ReturnType<typeof httpsRequest> {
  return url.protocol === "http:" ? httpRequest(url, options, onResponse) : httpsRequest(url, options, onResponse);
}

/** One answer, whole. */
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One send of a request, as HTTP/2 or HTTP/1.1. */
interface Send {
  method: string;
  /** The server's origin (`https://host:port`, no path). */
  server: string;
  /** The path with its query, below the server's path: what the request line (HTTP/2's `:path`) carries. */
  target: string;
  headers: Record<string, string>;
  payload: string | undefined;
  timeoutMs: number;
  what: string;
  maxAnswerBytes: number;
}

/** Sends `req`; resolves with the parsed JSON answer (undefined when empty), rejects with ApiError or RequestTimeoutError. */
export async function apiRequest<T>(kube: Kube, req: ApiRequest): Promise<T> {
  const access = accessOf(kube);
  const door = doorOf(access);
  const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
  const headers: Record<string, string> =
    payload === undefined
      ? {}
      : { "Content-Type": req.contentType ?? "application/json", "Content-Length": String(Buffer.byteLength(payload)) };
  if (req.accept !== undefined) headers.Accept = req.accept;
  const deadline = Date.now() + req.timeoutMs;
  const target = door.base + requestTarget(req.path, req.query);
  const maxAnswerBytes = req.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  const send = { method: req.method, server: door.origin, target, headers, payload, what: req.what, maxAnswerBytes };
  for (let attempt = 0; ; attempt++) {
    const throttledMs = throttleDelay();
    if (throttledMs > 0) await sleep(throttledMs);
    const timeoutMs = deadline - Date.now();
    if (timeoutMs <= 0) throw new RequestTimeoutError(`${req.what} got no answer within ${req.timeoutMs} ms`);
    const answer = await withSlot(door, () => sendOnce(access, door, { ...send, timeoutMs }));
    const waitMs = throttledWait(answer, req.method);
    if (waitMs === undefined || attempt >= MAX_THROTTLE_RETRIES || Date.now() + waitMs >= deadline)
      return settle<T>(answer, req.what);
    clientStats.retriedAfterThrottle++;
    await sleep(waitMs);
  }
}

/**
 * How long to wait before sending again, or undefined when the answer is final: a 429 is always retried (the server
 * did not execute the request); a 5xx only with a `Retry-After` and only for a read, since a write may have happened.
 */
function throttledWait(answer: Answer, method: string): number | undefined {
  const retryAfter = answer.headers["retry-after"];
  const seconds = Number(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
  const waitMs = Math.min(MAX_RETRY_AFTER_MS, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000);
  if (answer.status === 429) return waitMs;
  if (answer.status >= 500 && retryAfter !== undefined && method === "GET") return waitMs;
  return undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `fn` once fewer than {@link MAX_IN_FLIGHT} requests of `door` are in flight. */
async function withSlot<T>(door: Door, fn: () => Promise<T>): Promise<T> {
  if (door.inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => door.waiting.push(resolve));
  door.inFlight++;
  try {
    return await fn();
  } finally {
    door.inFlight--;
    door.waiting.shift()?.();
  }
}

async function sendOnce(access: ClusterAccess, door: Door, send: Send): Promise<Answer> {
  const { headers: credentials, ...tls } = await access.requestOptions();
  const https = send.server.startsWith("https:");
  if (!https) refuseCleartextCredentials(new URL(send.server), credentials);
  const headers = { ...credentials, Accept: "application/json", "User-Agent": USER_AGENT, ...send.headers };
  if (https) {
    for (let tries = 0; tries < 2; tries++) {
      // The open connection, without a turn of the event loop; a new one is awaited.
      const connection = door.h2.ready(tls as TlsMaterial) ?? (await door.h2.connection(tls as TlsMaterial));
      if (!connection) break; // the server speaks HTTP/1.1 only
      try {
        const answer = await connection.send(h2Headers(send, headers), send.payload, send);
        return { status: answer.status, headers: answer.headers, text: answer.body.toString("utf8") };
      } catch (err) {
        if (!(err instanceof NotSentError) || tries > 0) throw err;
      }
    }
  }
  const url = new URL(send.server + send.target);
  return await sendHttp1(send, url, { ...tls, method: send.method, agent: http1AgentOf(access, door), headers });
}

function h2Headers(send: Send, headers: Record<string, string | string[]>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ":method": send.method, ":path": send.target };
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

function sendHttp1(send: Send, url: URL, options: RequestOptions): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const request = sendRequest(url, options, (res) => {
      readBody(res, send).then((text) => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }), reject);
    });
    const timer = setTimeout(
      () => request.destroy(new RequestTimeoutError(`${send.what} got no answer within ${send.timeoutMs} ms`)),
      send.timeoutMs,
    );
    timer.unref();
    request.on("close", () => clearTimeout(timer));
    request.on("error", reject);
    if (send.payload !== undefined) clientStats.bytesSent += Buffer.byteLength(send.payload);
    request.end(send.payload);
  });
}

/** The whole body of `res`; rejects with AnswerTooLargeError, dropping the connection, past `maxAnswerBytes`. */
function readBody(
  res: IncomingMessage,
  { what, maxAnswerBytes }: Pick<Send, "what" | "maxAnswerBytes">,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    res.on("data", (chunk: Buffer) => {
      clientStats.bytesReceived += chunk.length;
      bytes += chunk.length;
      if (bytes > maxAnswerBytes) {
        chunks.length = 0;
        res.destroy(new AnswerTooLargeError(what, maxAnswerBytes));
        return;
      }
      chunks.push(chunk);
    });
    res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
  });
}

function settle<T>({ status, text }: Answer, what: string): T {
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (a proxy's error page, say): keep the text.
  }
  if (status >= 200 && status < 300) return parsed as T;
  const message =
    typeof parsed === "object" && parsed !== null && typeof (parsed as { message?: unknown }).message === "string"
      ? (parsed as { message: string }).message
      : text.slice(0, 200);
  throw new ApiError(`${what}: HTTP ${status}: ${message}`, status, parsed);
}
