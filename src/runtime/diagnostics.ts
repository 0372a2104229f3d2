/**
 * The diagnostics endpoint: `/metrics` (Prometheus text format) served as Cluster API's providers serve it. Secure (the
 * default): HTTPS, and every request carries a bearer token that the API server authenticates and whose user it
 * authorizes for `get` on the non-resource URL `/metrics` (see scrapeauth.ts); 401 without a valid token, 403 without
 * the right. Insecure (`--insecure-diagnostics`): plain HTTP to anyone who reaches the port.
 *
 * Bounded for hostile input: request headers of at most {@link MAX_HEADER_BYTES}, sent within
 * {@link HEADERS_TIMEOUT_MS} (a TLS handshake within as long), at most {@link MAX_CONNECTIONS} connections, and the
 * review limits of {@link ScrapeGate}. Only GET and HEAD of `/metrics` are served; a request body is never read.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { parseAddress } from "./probes.js";
import type { ScrapeGate, Verdict } from "./scrapeauth.js";

// Not an ES import of node:http: that loads Node's bundled undici (see src/kube/transport.ts).
const { createServer: createHttpServer } = process.getBuiltinModule("node:http");

export const METRICS_PATH = "/metrics";
export const MAX_HEADER_BYTES = 16 * 1024;
export const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
export const MAX_CONNECTIONS = 64;

/** A TLS serving certificate and its key, both PEM. */
export interface ServingPair {
  certPem: string;
  keyPem: string;
}

export interface DiagnosticsOptions {
  /** `host:port` or `:port`; port 0 picks a free one, reported in the result. */
  address: string;
  registry: Registry;
  /** HTTPS with this certificate, each request decided by `gate`. Absent: plain HTTP without authentication. */
  secure?: { certificate: ServingPair; gate: ScrapeGate };
  /** Told of every request the gate could not decide because the reviews failed (503). */
  onReviewError?: (reason: string) => void;
}

export interface DiagnosticsServer {
  readonly port: number;
  readonly secure: boolean;
  /** Stops accepting connections and drops open ones. */
  close(): Promise<void>;
}

function answer(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", ...headers }).end(`${text}\n`);
}

/**
 * What a refused scraper is told: the status's meaning only. The reasons (whose token, what the API server answered)
 * are for the log; a caller without a valid token learns nothing from them.
 */
function refusal(status: Exclude<Verdict["status"], 200>): { text: string; headers: Record<string, string> } {
  switch (status) {
    case 401:
      return { text: "Unauthorized", headers: { "WWW-Authenticate": 'Bearer realm="metrics"' } };
    case 403:
      return { text: "Forbidden", headers: {} };
    case 429:
      return { text: "Too many new tokens to review: retry", headers: { "Retry-After": "1" } };
    case 503:
      return { text: "The API server could not review the token", headers: {} };
  }
}

/** Starts the endpoint; resolves once it listens. Rejects when the address is invalid or cannot be bound. */
export async function startDiagnosticsServer(options: DiagnosticsOptions): Promise<DiagnosticsServer> {
  const { registry, secure } = options;
  const serveMetrics = (req: IncomingMessage, res: ServerResponse): void => {
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { "Content-Type": registry.contentType });
        res.end(req.method === "HEAD" ? undefined : text);
      },
      (err: unknown) => answer(res, 500, err instanceof Error ? err.message : String(err)),
    );
  };
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== METRICS_PATH) return answer(res, 404, "not found");
    if (req.method !== "GET" && req.method !== "HEAD")
      return answer(res, 405, "method not allowed", { Allow: "GET, HEAD" });
    if (!secure) return serveMetrics(req, res);
    // Kubernetes authorizes non-resource URLs by the lower-case HTTP verb; HEAD is a read like GET.
    void secure.gate.decide(req.headers.authorization, METRICS_PATH, "get").then((verdict) => {
      if (verdict.status === 200) return serveMetrics(req, res);
      if (verdict.status === 503) options.onReviewError?.(verdict.reason);
      const { text, headers } = refusal(verdict.status);
      answer(res, verdict.status, text, headers);
    });
  };
  const limits = {
    maxHeaderSize: MAX_HEADER_BYTES,
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
  };
  const server = secure
    ? createHttpsServer(
        {
          ...limits,
          cert: secure.certificate.certPem,
          key: secure.certificate.keyPem,
          minVersion: "TLSv1.2",
          handshakeTimeout: HEADERS_TIMEOUT_MS,
        },
        handle,
      )
    : createHttpServer(limits, handle);
  server.maxConnections = MAX_CONNECTIONS;
  const { host, port } = parseAddress(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    secure: secure !== undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
