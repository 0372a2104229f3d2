/** Reading a controller's /metrics (Prometheus text format) on loopback: for the e2e suites and the soak. */

/** The /metrics text of the controller whose metrics server listens on `port` of 127.0.0.1. */
export async function scrapeMetrics(port: number, timeoutMs = 5_000): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  return await res.text();
}

/** One sample of `metric` (with all of `labels`) from a /metrics text; undefined when absent. */
export function metricSample(text: string, metric: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(metric)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== metric) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? "").includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return undefined;
}
