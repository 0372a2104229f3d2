/**
 * The one HTTP door to the API server: JSON requests with a deadline over keep-alive connections, one connection pool
 * per {@link ClusterAccess}. (client-node opens a new connection, with a TLS handshake on both sides, for every
 * request; on two cores that cost the API server much of its CPU, issue 13.)
 */
import type { IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from "node:https";
import { accessOf, type ClusterAccess, type Kube } from "./access.js";

// node:http through getBuiltinModule, never an ES import: building the ES namespace reads every export, and reading
// `WebSocket` loads Node's bundled undici, about 15 MiB resident the controller never uses (nodejs/node#59686).
const { Agent: HttpAgent, request: httpRequest } = process.getBuiltinModule("node:http");
type HttpAgent = InstanceType<typeof HttpAgent>;

/** Thrown when a request got no answer within its deadline. Whether a write took effect is then unknown. */
export class RequestTimeoutError extends Error {
  override name = "RequestTimeoutError";
}

/**
 * A non-2xx answer. `code` is the HTTP status and `body` the parsed Kubernetes Status (or the raw text), the shape
 * errors.ts classifies.
 */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    message: string,
    readonly code: number,
    readonly body: unknown,
  ) {
    super(message);
  }
}

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
  /** Deadline from sending to the last byte of the answer. */
  timeoutMs: number;
  /** What the request does, for error messages ("create ippools"). */
  what: string;
}

/**
 * A request that receives nothing for this long sits on a connection that went silent (a frozen server, a dead path
 * that never sent a reset): it fails, and the whole pool is replaced, since its other connections are suspect too.
 * Ordinary answers take milliseconds; even a large list starts streaming at once.
 */
export const SILENT_CONNECTION_MS = 15_000;

const agents = new WeakMap<ClusterAccess, HttpAgent>();

/** Drops the pool of `access` (its connections close); the next request opens a fresh one. */
function resetPool(access: ClusterAccess, agent: HttpAgent): void {
  if (agents.get(access) === agent) agents.delete(access);
  agent.destroy();
}

/** Requests to one API server in flight at once; more wait for a free connection. */
export const MAX_CONNECTIONS = 64;

/**
 * The keep-alive connection pool of `access`. Connections it opened stay open while idle: a pool pass writes in
 * waves (up to its write concurrency, then its tail), and closing the idle ones between waves meant a new TLS
 * handshake, on both sides, for each of them in the next wave.
 */
function agentOf(access: ClusterAccess): HttpAgent {
  let agent = agents.get(access);
  if (!agent) {
    const options = {
      keepAlive: true,
      maxSockets: MAX_CONNECTIONS,
      maxFreeSockets: MAX_CONNECTIONS,
      scheduling: "lifo" as const,
    };
    agent = access.server.startsWith("http:") ? new HttpAgent(options) : new HttpsAgent(options);
    agents.set(access, agent);
  }
  return agent;
}

/** URL of `path` with `query` on the server of `access`. */
export function urlOf(access: ClusterAccess, path: string, query: Query = {}): URL {
  const url = new URL(access.server + path);
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== "") url.searchParams.set(key, String(value));
  return url;
}

/**
 * Watches hold their connection for minutes: they get connections of their own, outside the pool, so that however
 * many watches run they never take a slot an ordinary request waits for (one handshake per watch is negligible).
 */
const watchAgents = { http: new HttpAgent({ keepAlive: false }), https: new HttpsAgent({ keepAlive: false }) };

/**
 * Node request options with the credentials of `access`: on its keep-alive pool, or (`longLived`, for watches) on a
 * connection of its own.
 */
export async function requestOptionsFor(
  access: ClusterAccess,
  method: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
  longLived = false,
): Promise<RequestOptions> {
  const { headers: credentials, ...tls } = await access.requestOptions();
  const agent = longLived
    ? access.server.startsWith("http:")
      ? watchAgents.http
      : watchAgents.https
    : agentOf(access);
  return {
    ...tls,
    method,
    agent,
    headers: { ...credentials, Accept: "application/json", ...headers },
    ...(signal ? { signal } : {}),
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

/** Sends `req`; resolves with the parsed JSON answer (undefined when empty), rejects with ApiError or RequestTimeoutError. */
export async function apiRequest<T>(kube: Kube, req: ApiRequest): Promise<T> {
  const access = accessOf(kube);
  const url = urlOf(access, req.path, req.query);
  const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
  const headers: Record<string, string> =
    payload === undefined
      ? {}
      : { "Content-Type": req.contentType ?? "application/json", "Content-Length": String(Buffer.byteLength(payload)) };
  const options = await requestOptionsFor(access, req.method, headers);
  return await new Promise<T>((resolve, reject) => {
    const request = sendRequest(url, options, (res) => {
      readBody(res).then((text) => settle(res.statusCode ?? 0, text, req.what, resolve, reject), reject);
    });
    const timer = setTimeout(
      () => request.destroy(new RequestTimeoutError(`${req.what} got no answer within ${req.timeoutMs} ms`)),
      req.timeoutMs,
    );
    timer.unref();
    request.setTimeout(Math.min(SILENT_CONNECTION_MS, req.timeoutMs), () => {
      request.destroy(
        new RequestTimeoutError(`${req.what}: the connection went silent for ${SILENT_CONNECTION_MS} ms`),
      );
      resetPool(access, options.agent as HttpAgent);
    });
    request.on("close", () => clearTimeout(timer));
    request.on("error", reject);
    request.end(payload);
  });
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (chunk: Buffer) => chunks.push(chunk));
    res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
  });
}

function settle<T>(
  status: number,
  text: string,
  what: string,
  resolve: (value: T) => void,
  reject: (err: Error) => void,
): void {
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (a proxy's error page, say): keep the text.
  }
  if (status >= 200 && status < 300) {
    resolve(parsed as T);
    return;
  }
  const message =
    typeof parsed === "object" && parsed !== null && typeof (parsed as { message?: unknown }).message === "string"
      ? (parsed as { message: string }).message
      : text.slice(0, 200);
  reject(new ApiError(`${what}: HTTP ${status}: ${message}`, status, parsed));
}
