import { expect } from "chai";
import { Gauge } from "prom-client";
import { clientStats } from "../kube/ratelimit.js";
import {
  POOL_LABELS,
  PrometheusMetrics,
  noMetrics,
  poolLabels,
  type MetricsExtension,
  type PoolLabels,
} from "./metrics.js";

/** The value of the one sample of `name` whose labels include `labels`, from the registry's text format. */
async function sample(
  metrics: PrometheusMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const text = await metrics.registry.metrics();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z0-9_:]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ?? "";
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return undefined;
}

describe("Prometheus metrics", () => {
  it("exports pending claims per pool and kind, zeros included, and drops them with the pool", async () => {
    const m = new PrometheusMetrics();
    m.pendingClaims({ kind: "IPPool", namespace: "ns", name: "p" }, { IPClaim: 3, IPAddressClaim: 0 });
    const labels = { namespace: "ns", pool: "p", pool_kind: "IPPool" };
    expect(await sample(m, "metal3_ipam_pool_claims_pending", { ...labels, kind: "IPClaim" })).to.equal(3);
    expect(await sample(m, "metal3_ipam_pool_claims_pending", { ...labels, kind: "IPAddressClaim" })).to.equal(0);
    m.poolGone({ kind: "IPPool", namespace: "ns", name: "p" });
    expect(await sample(m, "metal3_ipam_pool_claims_pending", { pool: "p" })).to.equal(undefined);
  });

  it("makes an extension's metrics once per registry and tells them when a pool is gone", async () => {
    let made = 0;
    const extension: MetricsExtension<{ set(pool: PoolLabels): void; poolGone(pool: PoolLabels): void }> = {
      create(registry) {
        made++;
        const g = new Gauge({ name: "test_extension", help: "h", labelNames: POOL_LABELS, registers: [registry] });
        return { set: (pool) => g.set(poolLabels(pool), 1), poolGone: (pool) => g.remove(poolLabels(pool)) };
      },
      none: { set: () => undefined, poolGone: () => undefined },
    };
    const m = new PrometheusMetrics();
    const first = m.extend(extension);
    // A second manager of the process asks again: the same metrics, not a second registration (which would throw).
    expect(m.extend(extension)).to.equal(first);
    expect(made).to.equal(1);
    first.set({ kind: "K", namespace: "ns", name: "p" });
    first.set({ kind: "K", namespace: "ns", name: "q" });
    m.poolGone({ kind: "K", namespace: "ns", name: "p" });
    expect(await sample(m, "test_extension", { pool: "p" })).to.equal(undefined);
    expect(await sample(m, "test_extension", { pool: "q" })).to.equal(1);
    expect(noMetrics.extend(extension)).to.equal(extension.none);
    expect(made).to.equal(1);
  });

  it("labels every per-pool series with its pool kind; pools of one name but other kinds are apart", async () => {
    const m = new PrometheusMetrics();
    const metal3 = { kind: "IPPool", namespace: "ns", name: "p" };
    const inCluster = { kind: "InClusterIPPool", namespace: "ns", name: "p" };
    const global = { kind: "GlobalInClusterIPPool", namespace: "", name: "p" };
    m.poolCapacity(metal3, 10, 1, 9);
    m.poolCapacity(inCluster, 20, 2, 18);
    m.poolCapacity(global, 30, 3, 27);
    m.pendingClaims(global, { IPClaim: 0, IPAddressClaim: 4 });
    const free = (kind: string): Promise<number | undefined> =>
      sample(m, "metal3_ipam_pool_addresses_free", { pool: "p", pool_kind: kind });
    expect([await free("IPPool"), await free("InClusterIPPool"), await free("GlobalInClusterIPPool")]).to.deep.equal([
      9, 18, 27,
    ]);
    expect(
      await sample(m, "metal3_ipam_pool_claims_pending", {
        pool_kind: "GlobalInClusterIPPool",
        kind: "IPAddressClaim",
      }),
    ).to.equal(4);
    // A cluster-scoped pool's series has an empty namespace, which Prometheus stores as no label at all.
    const text = await m.registry.metrics();
    expect(text).to.include(
      'metal3_ipam_pool_addresses_total{namespace="",pool="p",pool_kind="GlobalInClusterIPPool"} 30',
    );
    m.poolGone(inCluster);
    expect(await free("InClusterIPPool")).to.equal(undefined);
    expect(await free("IPPool")).to.equal(9);
    expect(await free("GlobalInClusterIPPool")).to.equal(27);
  });

  it("reads the webhook certificate's expiry at scrape time, and exports nothing without a webhook server", async () => {
    const m = new PrometheusMetrics();
    expect(await sample(m, "metal3_ipam_webhook_certificate_expiry_timestamp_seconds")).to.equal(undefined);
    let expiry = new Date("2030-01-02T03:04:05Z");
    m.webhookCertificate("cert-dir", () => expiry);
    expect(await sample(m, "metal3_ipam_webhook_certificate_expiry_timestamp_seconds", { mode: "cert-dir" })).to.equal(
      expiry.getTime() / 1000,
    );
    expiry = new Date("2031-01-01T00:00:00Z");
    expect(await sample(m, "metal3_ipam_webhook_certificate_expiry_timestamp_seconds")).to.equal(
      expiry.getTime() / 1000,
    );
  });

  it("starts each controller's error counter at zero, so rate() has a baseline before the first error", async () => {
    const m = new PrometheusMetrics();
    expect(await sample(m, "metal3_ipam_reconcile_errors_total", { controller: "ippool" })).to.equal(undefined);
    m.queue("ippool");
    expect(await sample(m, "metal3_ipam_reconcile_errors_total", { controller: "ippool" })).to.equal(0);
    m.reconcileError("ippool");
    expect(await sample(m, "metal3_ipam_reconcile_errors_total", { controller: "ippool" })).to.equal(1);
  });

  it("counts memory releases, the RSS they gave back and their time, and keeps the RSS after the last one", async () => {
    const m = new PrometheusMetrics();
    expect(await sample(m, "metal3_ipam_memory_releases_total")).to.equal(0);
    m.memoryRelease({ beforeBytes: 110, afterBytes: 100, durationMs: 20 });
    // A release that gave nothing back (RSS rose while it ran) adds nothing to the bytes.
    m.memoryRelease({ beforeBytes: 104, afterBytes: 105, durationMs: 30 });
    expect(await sample(m, "metal3_ipam_memory_releases_total")).to.equal(2);
    expect(await sample(m, "metal3_ipam_memory_released_bytes_total")).to.equal(10);
    expect(await sample(m, "metal3_ipam_memory_release_seconds_total")).to.be.closeTo(0.05, 1e-9);
    expect(await sample(m, "metal3_ipam_memory_rss_after_release_bytes")).to.equal(105);
  });

  it("counts webhook requests by path and result and observes their duration", async () => {
    const m = new PrometheusMetrics();
    m.webhookRequest("/validate", "allowed", 0.002);
    m.webhookRequest("/validate", "allowed", 0.003);
    m.webhookRequest("/validate", "denied", 0.001);
    expect(await sample(m, "metal3_ipam_webhook_requests_total", { webhook: "/validate", result: "allowed" })).to.equal(
      2,
    );
    expect(await sample(m, "metal3_ipam_webhook_requests_total", { webhook: "/validate", result: "denied" })).to.equal(
      1,
    );
    expect(await sample(m, "metal3_ipam_webhook_request_duration_seconds_count", { webhook: "/validate" })).to.equal(3);
  });

  it("tells webhook answers past the 7 s deadline but within the API server's 10 s from later ones", async () => {
    const m = new PrometheusMetrics();
    m.webhookRequest("/validate", "error", 8);
    m.webhookRequest("/validate", "error", 12);
    const bucket = (le: string) =>
      sample(m, "metal3_ipam_webhook_request_duration_seconds_bucket", { webhook: "/validate", le });
    expect(await bucket("7")).to.equal(0);
    expect(await bucket("10")).to.equal(1);
    expect(await bucket("+Inf")).to.equal(2);
  });

  it("exports the API door's byte counts at scrape time: sent, and received by request answers and watch streams", async () => {
    const m = new PrometheusMetrics();
    clientStats.bytesSent += 1_000;
    clientStats.bytesReceived += 2_000;
    clientStats.watchBytesReceived += 3_000;
    expect(await sample(m, "metal3_ipam_kube_client_sent_bytes_total")).to.equal(clientStats.bytesSent);
    expect(await sample(m, "metal3_ipam_kube_client_received_bytes_total", { stream: "request" })).to.equal(
      clientStats.bytesReceived,
    );
    expect(await sample(m, "metal3_ipam_kube_client_received_bytes_total", { stream: "watch" })).to.equal(
      clientStats.watchBytesReceived,
    );
  });
});
