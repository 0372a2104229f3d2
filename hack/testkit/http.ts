/** Minimal HTTPS/HTTP GET used for health probes of the plane's own processes (before any client exists). */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

export interface TlsIdentity {
  ca: string;
  cert: string;
  key: string;
}

/** GETs `url`; resolves with status and body, rejects on network errors or after `timeoutMs`. */
export async function get(
  url: string,
  tls?: TlsIdentity,
  timeoutMs = 3_000,
): Promise<{ status: number; body: string }> {
  const requester = url.startsWith("https:") ? httpsRequest : httpRequest;
  return await new Promise((resolve, reject) => {
    const req = requester(url, { method: "GET", timeout: timeoutMs, ...(tls ?? {}) }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url} timed out after ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}
