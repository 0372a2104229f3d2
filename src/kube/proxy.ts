/**
 * HTTP(S) proxies on the way to the API server, as client-go chooses them: a kubeconfig cluster's `proxy-url` wins;
 * else `HTTPS_PROXY` (`HTTP_PROXY` for an `http://` server) unless `NO_PROXY` names the host; loopback servers are
 * never sent through an environment proxy. Only `http://` and `https://` proxies are spoken (a CONNECT tunnel);
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

function isLoopback(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === "loopback";
}

/** True when one `NO_PROXY` entry (a host, a `.domain` or domain suffix, an IP, a CIDR, `*`; optional `:port`) matches. */
function noProxyMatches(entry: string, host: string, port: string): boolean {
  let pattern = entry.trim().toLowerCase();
  if (!pattern) return false;
  if (pattern === "*") return true;
  const portMatch = /^(.*):(\d+)$/.exec(pattern);
  if (portMatch && !pattern.includes("]") && (portMatch[1] ?? "").split(":").length === 1) {
    if (portMatch[2] !== port) return false;
    pattern = portMatch[1] ?? "";
  }
  pattern = pattern.replace(/^\[(.*)\]$/, "$1");
  if (pattern.includes("/") && ipaddr.isValid(host)) {
    try {
      const [range, bits] = ipaddr.parseCIDR(pattern);
      const address = ipaddr.process(host);
      return address.kind() === range.kind() && address.match([range, bits]);
    } catch {
      return false;
    }
  }
  if (ipaddr.isValid(pattern))
    return ipaddr.isValid(host) && ipaddr.process(pattern).toString() === ipaddr.process(host).toString();
  const domain = pattern.replace(/^\*?\./, "");
  return host === domain || host.endsWith(`.${domain}`);
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
