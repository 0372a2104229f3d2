/**
 * What the controller asked of NetBox, and how long its passes took, read from its own /metrics
 * (`metal3_ipam_netbox_requests_total{route,method,code}`, `metal3_ipam_netbox_request_duration_seconds_sum`,
 * `metal3_ipam_workqueue_work_duration_seconds_{count,sum}{controller}`), as deltas over a measured window. Pure
 * parsing here, besides the one fetch of the text.
 */

/** Calls to one route with one method (`POST /api/ipam/prefixes/{id}/available-ips/`). */
export interface RouteCalls {
  count: number;
  /** Time the client spent waiting for these calls, seconds (the histogram's sum). */
  seconds: number;
  /** Calls by outcome: HTTP status, or the failure reason when there was none. */
  codes: Record<string, number>;
}

/** The controller's NetBox calls by `<METHOD> <route>`, and its passes by controller. */
export interface ControllerActivity {
  netbox: Record<string, RouteCalls>;
  /** Keys reconciled (`count`) and the time spent in them (`seconds`), by controller (`ippool`, …). */
  passes: Record<string, { count: number; seconds: number }>;
}

// Label values may hold braces (`route="/api/ipam/prefixes/{id}/"`): the label set is read as quoted values.
const SAMPLE = /^(metal3_ipam_\w+)\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\} ([0-9.e+-]+|NaN)$/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** One sample line's metric name, labels and value; undefined for anything else (comments, unlabelled series). */
function sampleOf(line: string): { name: string; labels: Map<string, string>; value: number } | undefined {
  const m = SAMPLE.exec(line);
  if (!m) return undefined;
  const labels = new Map([...(m[2] ?? "").matchAll(LABEL)].map((l): [string, string] => [l[1] ?? "", l[2] ?? ""]));
  return { name: m[1] ?? "", labels, value: Number(m[3]) };
}

/** Parses the controller's /metrics text into {@link ControllerActivity}. */
export function parseActivity(text: string): ControllerActivity {
  const netbox: Record<string, RouteCalls> = {};
  const passes: Record<string, { count: number; seconds: number }> = {};
  const route = (labels: Map<string, string>): RouteCalls => {
    const key = `${labels.get("method") ?? "?"} ${labels.get("route") ?? "?"}`;
    return (netbox[key] ??= { count: 0, seconds: 0, codes: {} });
  };
  for (const line of text.split("\n")) {
    const s = sampleOf(line);
    if (!s) continue;
    if (s.name === "metal3_ipam_netbox_requests_total") {
      const calls = route(s.labels);
      const code = s.labels.get("code") ?? "?";
      calls.count += s.value;
      calls.codes[code] = (calls.codes[code] ?? 0) + s.value;
    } else if (s.name === "metal3_ipam_netbox_request_duration_seconds_sum") {
      route(s.labels).seconds += s.value;
    } else if (s.name.startsWith("metal3_ipam_workqueue_work_duration_seconds_")) {
      const controller = s.labels.get("controller") ?? "?";
      const entry = (passes[controller] ??= { count: 0, seconds: 0 });
      if (s.name.endsWith("_count")) entry.count += s.value;
      else if (s.name.endsWith("_sum")) entry.seconds += s.value;
    }
  }
  return { netbox, passes };
}

const minus = (a: number, b: number | undefined): number => a - (b ?? 0);

/** `after - before`, keeping the routes and controllers that changed. */
export function activityDelta(before: ControllerActivity, after: ControllerActivity): ControllerActivity {
  const netbox: Record<string, RouteCalls> = {};
  for (const [key, calls] of Object.entries(after.netbox)) {
    const was = before.netbox[key];
    const count = minus(calls.count, was?.count);
    if (count <= 0) continue;
    const codes: Record<string, number> = {};
    for (const [code, n] of Object.entries(calls.codes)) {
      const d = minus(n, was?.codes[code]);
      if (d > 0) codes[code] = d;
    }
    netbox[key] = { count, seconds: minus(calls.seconds, was?.seconds), codes };
  }
  const passes: Record<string, { count: number; seconds: number }> = {};
  for (const [controller, p] of Object.entries(after.passes)) {
    const was = before.passes[controller];
    const count = minus(p.count, was?.count);
    if (count > 0) passes[controller] = { count, seconds: minus(p.seconds, was?.seconds) };
  }
  return { netbox, passes };
}

/** Calls and client-side seconds summed over every route. */
export function totalCalls(calls: Readonly<Record<string, RouteCalls>>): { count: number; seconds: number } {
  const all = Object.values(calls);
  return { count: all.reduce((n, c) => n + c.count, 0), seconds: all.reduce((s, c) => s + c.seconds, 0) };
}

/** The activity of the controller serving /metrics on 127.0.0.1:`port`. */
export async function readActivity(port: number): Promise<ControllerActivity> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (res.status !== 200) throw new Error(`GET 127.0.0.1:${port}/metrics: HTTP ${res.status}`);
  return parseActivity(await res.text());
}
