/**
 * What a burst costs, read from outside the controller: its CPU time (/proc), the API requests the API server served
 * (its own `apiserver_request_total`), and the ceiling a bare client reaches doing the same writes.
 */
import { readFile } from "node:fs/promises";
import { request, type RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

/** What /proc says `pid` spent so far: CPU seconds in user and kernel mode, and its minor page faults. */
export interface ProcCpu {
  userS: number;
  systemS: number;
  minorFaults: number;
}

/** {@link ProcCpu} of `pid` (Linux: /proc/<pid>/stat; times in clock ticks of 1/100 s). */
export async function procCpu(pid: number): Promise<ProcCpu> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis are space-separated.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { userS: Number(fields[11]) / 100, systemS: Number(fields[12]) / 100, minorFaults: Number(fields[7]) };
}

/** User plus system CPU time of `pid` so far, in seconds. */
export async function cpuSeconds(pid: number): Promise<number> {
  const cpu = await procCpu(pid);
  return cpu.userS + cpu.systemS;
}

/** `apiserver_request_total` summed by `<VERB> <group>/<resource>[/<subresource>]`. */
export type RequestCounts = Map<string, number>;

const LABEL = /(\w+)="([^"]*)"/g;

/**
 * Parses the API server's /metrics text into {@link RequestCounts} (all codes, all scopes): the samples of `metric`,
 * by default the request counters; `apiserver_response_sizes_sum` gives the bytes of the answers the same way.
 */
export function parseRequestCounts(text: string, metric = "apiserver_request_total"): RequestCounts {
  const sample = new RegExp(`^${metric}\\{([^}]*)\\} ([0-9.e+]+)$`);
  const counts: RequestCounts = new Map();
  for (const line of text.split("\n")) {
    const m = sample.exec(line);
    if (!m) continue;
    const labels = new Map<string, string>(
      [...(m[1] ?? "").matchAll(LABEL)].map((l): [string, string] => [l[1] ?? "", l[2] ?? ""]),
    );
    const [group, sub] = [labels.get("group"), labels.get("subresource")];
    const resource = `${group ? `${group}/` : ""}${labels.get("resource") ?? ""}${sub ? `/${sub}` : ""}`;
    const key = `${labels.get("verb") ?? "?"} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
  }
  return counts;
}

/** The API server's /metrics text, read as `kc`'s admin. */
export async function readServerMetrics(kc: KubeConfig): Promise<string> {
  const server = new URL(kc.getCurrentCluster()?.server ?? "");
  const options: RequestOptions = {
    method: "GET",
    hostname: server.hostname,
    port: server.port,
    path: "/metrics",
    headers: {},
  };
  await kc.applyToHTTPSOptions(options);
  return await new Promise<string>((resolve, reject) => {
    const req = request(options, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () =>
        res.statusCode === 200 ? resolve(text) : reject(new Error(`GET /metrics: HTTP ${res.statusCode ?? 0}`)),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** Reads the API server's request counters (or another metric of theirs, as parseRequestCounts) as `kc`'s admin. */
export async function readRequestCounts(kc: KubeConfig, metric?: string): Promise<RequestCounts> {
  return parseRequestCounts(await readServerMetrics(kc), metric);
}

/** `after - before`, keeping only what changed. */
export function requestDelta(before: RequestCounts, after: RequestCounts): RequestCounts {
  const delta: RequestCounts = new Map();
  for (const [key, n] of after) {
    const d = n - (before.get(key) ?? 0);
    if (d > 0) delta.set(key, d);
  }
  return delta;
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE", "APPLY"]);
const READS = new Set(["GET", "LIST"]);

/** Requests per claim of a burst, by class and by verb and resource. */
export interface RequestsPerClaim {
  writes: number;
  reads: number;
  /** `<VERB> <resource>` → requests per claim, requests of the API server's own machinery left out. */
  byVerb: Record<string, number>;
}

/**
 * Per-claim figures from a burst's request delta. `driverWrites` are the benchmark's own requests in the window (the
 * claim creates), subtracted from their key; Events, Leases and WATCH requests are reported in `byVerb` only.
 */
export function perClaim(delta: RequestCounts, claims: number, driverWrites: Record<string, number>): RequestsPerClaim {
  const byVerb: Record<string, number> = {};
  let writes = 0;
  let reads = 0;
  for (const [key, n] of delta) {
    const own = n - (driverWrites[key] ?? 0);
    const resource = key.slice(key.indexOf(" ") + 1);
    if (own <= 0 || !isOurs(resource)) continue;
    byVerb[key] = own / claims;
    const verb = key.slice(0, key.indexOf(" "));
    if (resource === "events" || resource.endsWith("/leases")) continue;
    if (WRITES.has(verb)) writes += own;
    if (READS.has(verb)) reads += own;
  }
  return { writes: writes / claims, reads: reads / claims, byVerb };
}

/** Resources the controller touches; everything else (the garbage collector's discovery, say) is the plane's. */
function isOurs(resource: string): boolean {
  return (
    resource.startsWith("ipam.metal3.io/") ||
    resource.startsWith("ipam.cluster.x-k8s.io/") ||
    resource.startsWith("cluster.x-k8s.io/") ||
    resource === "events" ||
    resource.endsWith("/leases")
  );
}

/** Body bytes the controller's API door counted (its own /metrics: metal3_ipam_kube_client_*_bytes_total). */
export interface DoorBytes {
  /** Request bodies sent. */
  sent: number;
  /** Answer bodies received (lists included). */
  received: number;
  /** Watch streams received. */
  watchReceived: number;
}

const DOOR_SAMPLE = /^metal3_ipam_kube_client_(sent|received)_bytes_total(?:\{stream="(\w+)"\})? ([0-9.e+]+)$/;

/** Reads {@link DoorBytes} from the controller's /metrics text; throws when a counter is missing (an older build). */
export function parseDoorBytes(text: string): DoorBytes {
  const found: Partial<DoorBytes> = {};
  for (const line of text.split("\n")) {
    const m = DOOR_SAMPLE.exec(line);
    if (!m) continue;
    const field = m[1] === "sent" ? "sent" : m[2] === "watch" ? "watchReceived" : "received";
    found[field] = Number(m[3]);
  }
  const { sent, received, watchReceived } = found;
  if (sent === undefined || received === undefined || watchReceived === undefined)
    throw new Error("the controller's /metrics has no metal3_ipam_kube_client_{sent,received}_bytes_total");
  return { sent, received, watchReceived };
}

/** The byte counts of the controller serving /metrics on 127.0.0.1:`port`. */
export async function readDoorBytes(port: number): Promise<DoorBytes> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (res.status !== 200) throw new Error(`GET 127.0.0.1:${port}/metrics: HTTP ${res.status}`);
  return parseDoorBytes(await res.text());
}
