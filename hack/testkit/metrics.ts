/**
 * Reading a controller's /metrics (Prometheus text format): plain HTTP on loopback (`--insecure-diagnostics`) for the
 * e2e suites and the soak, or HTTPS with a bearer token as a scraper does.
 */
import { request } from "node:https";

/** The /metrics text of the controller whose metrics server listens on `port` of 127.0.0.1. */
export async function scrapeMetrics(port: number, timeoutMs = 5_000): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  return await res.text();
}

/** Every sample of `metric` in a /metrics text: its labels as written (`{...}`, "" without any) and its value. */
function* samplesOf(text: string, metric: string): Generator<{ labels: string; value: number }> {
  for (const line of text.split("\n")) {
    if (!line.startsWith(metric)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === metric) yield { labels: m[2] ?? "", value: Number(m[3]) };
  }
}

/** One sample of `metric` (with all of `labels`) from a /metrics text; undefined when absent. */
export function metricSample(text: string, metric: string, labels: Record<string, string> = {}): number | undefined {
  for (const sample of samplesOf(text, metric))
    if (Object.entries(labels).every(([k, v]) => sample.labels.includes(`${k}="${v}"`))) return sample.value;
  return undefined;
}

/** The sum of every sample of `metric` in a /metrics text, whatever their labels (0 when it has none). */
export function metricTotal(text: string, metric: string): number {
  let total = 0;
  for (const sample of samplesOf(text, metric)) total += sample.value;
  return total;
}

/**
 * `GET https://host:port/metrics` with `token` as bearer token (none: unauthenticated), as Prometheus scrapes it:
 * the controller's self-signed certificate is not verified. Resolves with the status and body; rejects when nothing
 * answers within `timeoutMs`.
 */
export async function scrapeSecure(
  host: string,
  port: number,
  token?: string,
  timeoutMs = 5_000,
): Promise<{ status: number; body: string }> {
  const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  return await new Promise((resolve, reject) => {
    const req = request(
      { host, port, path: "/metrics", headers, rejectUnauthorized: false, timeout: timeoutMs },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`GET https://${host}:${port}/metrics timed out`)));
    req.on("error", reject);
    req.end();
  });
}
