/**
 * A real Prometheus as a supervised child process on loopback: temporary data folder, our rules, static scrape
 * targets, and small readers of its HTTP API. Used by the e2e monitoring suite; the process dies with the test run
 * (hack/testkit/process.ts kills every supervised child on exit).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dump } from "js-yaml";
import { eventually } from "../testkit/wait.js";
import { claimPort } from "../testkit/ports.js";
import { exitedWithError, startProcess, type Supervised } from "../testkit/process.js";
import { writeRuleFile, type RuleFile } from "./rules.js";

/** A target Prometheus scrapes, with the target labels a ServiceMonitor would add. */
export interface ScrapeTarget {
  /** `host:port` serving /metrics. */
  address: string;
  labels?: Record<string, string>;
}

/** Options of {@link startPrometheus}. */
export interface PrometheusOptions {
  binary: string;
  targets: ScrapeTarget[];
  rules: RuleFile;
  /** Scrape and rule evaluation interval; default 1s, so that a test sees changes within seconds. */
  interval?: string;
  /**
   * Scrape over HTTPS with this bearer token, the target's certificate unverified, as config/prometheus/monitor.yaml
   * has the Prometheus Operator scrape. Default: plain HTTP without credentials.
   */
  bearerToken?: string;
}

/** A running Prometheus. */
export interface PrometheusServer {
  /** Base URL of its HTTP API, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  readonly proc: Supervised;
  /** Stops the process and removes its data folder. */
  stop(): Promise<void>;
}

/** One sample of an instant query. */
export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** One alert as `/api/v1/alerts` reports it. */
export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: "pending" | "firing";
}

/** Prometheus's scrape settings for HTTPS with a bearer token read from `tokenFile`. */
function secureScrape(tokenFile: string): Record<string, unknown> {
  return {
    scheme: "https",
    authorization: { type: "Bearer", credentials_file: tokenFile },
    tls_config: { insecure_skip_verify: true },
  };
}

function config(targets: readonly ScrapeTarget[], interval: string, tokenFile: string | undefined): string {
  return dump({
    global: { scrape_interval: interval, evaluation_interval: interval },
    rule_files: ["rules.yaml"],
    scrape_configs: [
      {
        job_name: "metal3-ipam",
        // As config/prometheus/monitor.yaml: the pool's own `namespace` label wins over the target's.
        honor_labels: true,
        ...(tokenFile ? secureScrape(tokenFile) : {}),
        static_configs: targets.map((t) => ({ targets: [t.address], labels: t.labels ?? {} })),
      },
    ],
  });
}

/** Starts Prometheus on a free loopback port and resolves once it is ready (rules loaded, scraping). */
export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), "metal3-ipam-prometheus-"));
  writeRuleFile(dir, options.rules);
  const tokenFile = options.bearerToken === undefined ? undefined : join(dir, "token");
  if (tokenFile) writeFileSync(tokenFile, options.bearerToken ?? "", { mode: 0o600 });
  writeFileSync(join(dir, "prometheus.yml"), config(options.targets, options.interval ?? "1s", tokenFile));
  const port = await claimPort();
  const proc = startProcess(
    "prometheus",
    options.binary,
    [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    join(dir, "prometheus.log"),
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ready = eventually("Prometheus to be ready", async () => (await fetch(`${url}/-/ready`)).ok, 30_000, 200);
    await Promise.race([ready, exitedWithError(proc)]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, proc, stop };
}

interface ApiAnswer<T> {
  status: "success" | "error";
  data?: T;
  error?: string;
  errorType?: string;
}

async function api<T>(url: string): Promise<T> {
  const res = await fetch(url);
  const body = (await res.json()) as ApiAnswer<T>;
  if (body.status !== "success" || body.data === undefined)
    throw new Error(`Prometheus answered ${res.status} ${body.errorType ?? ""}: ${body.error ?? "no data"} (${url})`);
  return body.data;
}

/** Runs an instant query; rejects when Prometheus reports an error (a bad expression, say). */
export async function instantQuery(base: string, expr: string): Promise<PromSample[]> {
  const data = await api<{ resultType: string; result: PromSample[] | [number, string] }>(
    `${base}/api/v1/query?query=${encodeURIComponent(expr)}`,
  );
  // A scalar answer (e.g. `time()`) is one value without labels.
  return data.resultType === "scalar"
    ? [{ metric: {}, value: data.result as [number, string] }]
    : (data.result as PromSample[]);
}

/** The pending and firing alerts. */
export async function activeAlerts(base: string): Promise<PromAlert[]> {
  return (await api<{ alerts: PromAlert[] }>(`${base}/api/v1/alerts`)).alerts;
}
