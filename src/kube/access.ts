/**
 * How to reach the API server: its URL, and per request the TLS material and headers. Everything in src/ that talks to
 * the API server takes a {@link Kube}: either a {@link ClusterAccess} (what the controller loads itself, see
 * kubeconfig.ts) or a client-node KubeConfig (what tests and tools hold), used through its public surface only, so
 * that src/ never loads client-node at run time unless a kubeconfig needs it (exec and auth-provider credentials).
 */
import type { RequestOptions } from "node:https";
import { proxyFor } from "./proxy.js";

/**
 * Options of one request: TLS material (ca, cert, key, rejectUnauthorized, servername) and headers (credentials,
 * impersonation; a header sent several times, as `Impersonate-Group`, is an array).
 */
export type AccessOptions = Pick<RequestOptions, "ca" | "cert" | "key" | "rejectUnauthorized" | "servername"> & {
  headers: Record<string, string | string[]>;
};

/** The API server and the credentials of one identity. */
export interface ClusterAccess {
  /**
   * `https://host:port` (or `http://` for test servers), with the path of a gateway in front of the API server when
   * there is one (every request goes below it); no trailing slash, no user information ({@link parseServer}).
   */
  readonly server: string;
  /** The http(s) proxy to reach it through (a kubeconfig's `proxy-url`, or the environment's; proxy.ts). */
  readonly proxy?: string | undefined;
  /** TLS material and headers for the next request; called per request, so rotated tokens are picked up. */
  requestOptions(): Promise<AccessOptions>;
}

/** The part of client-node's KubeConfig this project uses (structural, so no run-time import is needed). */
export interface KubeConfigLike {
  getCurrentCluster(): { server: string; proxyUrl?: string | undefined } | null;
  applyToHTTPSOptions(opts: RequestOptions): Promise<void>;
}

/** Anything that says how to reach the API server. */
export type Kube = ClusterAccess | KubeConfigLike;

const fromKubeConfigs = new WeakMap<KubeConfigLike, ClusterAccess>();

function isKubeConfig(kube: Kube): kube is KubeConfigLike {
  return typeof (kube as Partial<KubeConfigLike>).applyToHTTPSOptions === "function";
}

/** The {@link ClusterAccess} of `kube` (the same object for the same KubeConfig, so connections are shared). */
export function accessOf(kube: Kube): ClusterAccess {
  if (!isKubeConfig(kube)) return kube;
  let access = fromKubeConfigs.get(kube);
  if (!access) {
    access = accessFromKubeConfig(kube);
    fromKubeConfigs.set(kube, access);
  }
  return access;
}

/** A kubeconfig `server` as a {@link ClusterAccess} holds it, and the basic credentials of its user information. */
export interface ParsedServer {
  server: string;
  /** `Basic …` from `https://user:password@host`, or undefined. */
  basic: string | undefined;
}

const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * Splits a kubeconfig `server` as client-go reads it: its path is kept (requests go below it); user information
 * (`https://user:password@host`) is basic auth, which Go's HTTP client sends when no other `Authorization` is set;
 * a query or fragment is dropped (client-go replaces the query of every request). The credentials leave the URL here,
 * so no message or log that names the server carries them, and the transport refuses them over plain `http://` as it
 * refuses every credential. Throws when `server` is not a URL.
 */
export function parseServer(server: string): ParsedServer {
  const url = new URL(server);
  const basic =
    url.username || url.password
      ? `Basic ${Buffer.from(`${decoded(url.username)}:${decoded(url.password)}`).toString("base64")}`
      : undefined;
  return { server: `${url.origin}${url.pathname}`.replace(/\/+$/, ""), basic };
}

function accessFromKubeConfig(kc: KubeConfigLike): ClusterAccess {
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new Error("the kubeconfig has no current cluster");
  const { server, basic } = parseServer(cluster.server);
  return {
    server,
    proxy: proxyFor(server, cluster.proxyUrl),
    async requestOptions(): Promise<AccessOptions> {
      const opts: RequestOptions = {};
      // Client certificates, CA and bearer tokens (exec and auth providers included), as for any client-node call.
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string | string[]> = {};
      for (const [key, value] of Object.entries(opts.headers ?? {}))
        if (value !== undefined) headers[key] = Array.isArray(value) ? value.map(String) : String(value);
      // client-node puts basic auth in `auth`, not in a header.
      if (opts.auth && !headers.Authorization)
        headers.Authorization = `Basic ${Buffer.from(opts.auth).toString("base64")}`;
      if (basic && !headers.Authorization) headers.Authorization = basic;
      return {
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        rejectUnauthorized: opts.rejectUnauthorized,
        servername: opts.servername,
        headers,
      };
    },
  };
}
