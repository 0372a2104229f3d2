/**
 * HTTP(S) proxies on the way to the API server, as client-go chooses them: a kubeconfig cluster's `proxy-url` wins;
 * else `HTTPS_PROXY` (`HTTP_PROXY` for an `http://` server) unless `NO_PROXY` names the host; `localhost` and loopback
 * addresses are never sent through an environment proxy. Only `http://` and `https://` proxies are spoken (a CONNECT tunnel);
 * SOCKS proxies are refused where the kubeconfig is read, never silently bypassed.
 */
import { isIP, type Socket } from "node:net";
import ipaddr from "ipaddr.js";
import { RequestTimeoutError } from "./errors.js";

const { request: httpRequest } = process.getBuiltinModule("node:http");
const { request: httpsRequest } = process.getBuiltinModule("node:https");

/** The proxy schemes this client speaks. */
export const PROXY_SCHEMES = ["http:", "https:"];

const env = (vars: NodeJS.ProcessEnv, name: string): string | undefined =>
  vars[name] || vars[name.toLowerCase()] || undefined;

/** Host of a URL without IPv6 brackets. */
export const bareHost = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, "$1");

/** Go's `useProxy` skips the proxy for exactly `localhost` and loopback addresses (not for `*.localhost`). */
function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === "loopback";
}

/** `host:port` or `[v6]:port` split as Go's `net.SplitHostPort` splits it; undefined when it has no port. */
function splitHostPort(entry: string): { host: string; port: string } | undefined {
  const bracketed = /^\[([^\]]*)\]:([^:]*)$/.exec(entry);
  if (bracketed) return { host: bracketed[1] ?? "", port: bracketed[2] ?? "" };
  const plain = /^([^:[\]]*):([^:]*)$/.exec(entry);
  return plain ? { host: plain[1] ?? "", port: plain[2] ?? "" } : undefined;
}

/**
 * True when one `NO_PROXY` entry matches, exactly as Go's golang.org/x/net/http/httpproxy reads it (client-go's
 * proxy): `*` matches every host; a CIDR (no port) matches the addresses in it; an IP, with an optional port, matches
 * that address; `example.com` matches it and its subdomains, `.example.com` and `*.example.com` only its subdomains,
 * each with an optional port (`example.com:6443`). A domain entry is compared as text, IP hosts included.
 */
function noProxyMatches(raw: string, host: string, port: string): boolean {
  const entry = raw.trim().toLowerCase();
  if (!entry) return false;
  if (entry === "*") return true;
  if (entry.includes("/")) {
    try {
      const [range, bits] = ipaddr.parseCIDR(entry);
      if (!ipaddr.isValid(host)) return false;
      const address = ipaddr.process(host);
      return address.kind() === range.kind() && address.match([range, bits]);
    } catch {
      // Not a CIDR: Go reads it as a host entry below.
    }
  }
  const split = splitHostPort(entry);
  const pattern = split ? split.host : entry;
  const wanted = split?.port ?? "";
  if (!pattern) return false;
  const portMatches = wanted === "" || wanted === port;
  if (ipaddr.isValid(pattern))
    return (
      portMatches && ipaddr.isValid(host) && ipaddr.process(pattern).toString() === ipaddr.process(host).toString()
    );
  const suffix = pattern.startsWith("*.") ? pattern.slice(1) : pattern;
  const matchesItself = !suffix.startsWith(".");
  const dotted = matchesItself ? `.${suffix}` : suffix;
  return portMatches && (host.endsWith(dotted) || (matchesItself && host === suffix));
}

/**
 * The proxy for `server`: `proxyUrl` (a kubeconfig's `proxy-url`) when set, else the environment's, else undefined
 * (direct). Throws for a scheme this client cannot speak.
 */
export function proxyFor(server: string, proxyUrl?: string, vars: NodeJS.ProcessEnv = process.env): string | undefined {
  if (proxyUrl) {
    checkProxyScheme(proxyUrl);
    return proxyUrl;
  }
  const target = new URL(server);
  const host = bareHost(target).toLowerCase();
  if (isLoopback(host)) return undefined;
  const fromEnv = env(vars, target.protocol === "http:" ? "HTTP_PROXY" : "HTTPS_PROXY");
  if (!fromEnv) return undefined;
  const port = target.port || (target.protocol === "http:" ? "80" : "443");
  if ((env(vars, "NO_PROXY") ?? "").split(",").some((entry) => noProxyMatches(entry, host, port))) return undefined;
  // Go reads a proxy without a scheme as http://.
  const proxy = /^[a-z][a-z0-9+.-]*:\/\//i.test(fromEnv) ? fromEnv : `http://${fromEnv}`;
  checkProxyScheme(proxy);
  return proxy;
}

/** Throws unless `proxy` is an http:// or https:// URL. */
export function checkProxyScheme(proxy: string): void {
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    throw new Error(`proxy "${proxy}" is not a URL`);
  }
  if (!PROXY_SCHEMES.includes(url.protocol))
    throw new Error(
      `proxy scheme ${url.protocol.replace(/:$/, "")} (${url.host}) is not supported: use an http:// or https:// proxy`,
    );
}

/**
 * Opens a CONNECT tunnel through `proxy` to `host:port`; resolves with the raw socket once the proxy answered 200.
 * Credentials in the proxy URL go as `Proxy-Authorization: Basic`.
 */
export async function openTunnel(proxy: string, host: string, port: number, timeoutMs: number): Promise<Socket> {
  const url = new URL(proxy);
  const headers: Record<string, string> = { Host: `${isIP(host) === 6 ? `[${host}]` : host}:${port}` };
  if (url.username)
    headers["Proxy-Authorization"] =
      `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return await new Promise<Socket>((resolve, reject) => {
    const req = send({
      host: bareHost(url),
      port: url.port || (url.protocol === "https:" ? 443 : 80),
      method: "CONNECT",
      path: headers.Host,
      headers,
      agent: false,
    });
    const timer = setTimeout(
      () => req.destroy(new RequestTimeoutError(`proxy ${url.host} did not open a tunnel within ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on("connect", (res, socket) => {
      clearTimeout(timer);
      if (res.statusCode === 200) resolve(socket);
      else {
        socket.destroy();
        reject(new Error(`proxy ${url.host} refused the tunnel to ${headers.Host}: HTTP ${res.statusCode ?? 0}`));
      }
    });
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}
