/**
 * The alerts and the dashboard against live metrics: a real Prometheus (built from Go modules by `npm run binaries`)
 * on loopback scrapes a controller process on the local plane as config/prometheus/monitor.yaml has it scrape (HTTPS,
 * the token of a ServiceAccount bound to metrics-reader), with our rules loaded (short `for:`). A pool is
 * exhausted with a claim waiting, Metal3IPAMPoolExhausted fires and resolves once an address is freed, and every
 * dashboard query runs without error and returns data. The in-cluster provider's pools have the same series, told
 * apart by `pool_kind` (a global pool's without a namespace), and the same alert serves them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { claimPort } from "../hack/testkit/ports.js";
import { startControllerProcess, type ControllerProcess } from "../hack/testkit/controller.js";
import {
  DASHBOARD_PATH,
  labelValuesAsQuery,
  loadDashboard,
  panelQueries,
  substituteVariables,
  variableQueries,
} from "../hack/monitoring/dashboard.js";
import {
  activeAlerts,
  instantQuery,
  startPrometheus,
  type PromAlert,
  type PrometheusServer,
} from "../hack/monitoring/prometheus.js";
import { ALERTS_PATH, loadRuleFile, mapAlerts } from "../hack/monitoring/rules.js";
import { resolveCachedTool } from "../hack/testkit/binaries.js";
import { WEBHOOK_PATHS } from "../src/webhooks/server.js";
import { httpsCall, loopbackPki, writeCertDir } from "../src/webhooks/https.testutil.js";
import { freshNamespace, repoRoot, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { claim, clients, pool, type Clients } from "../hack/testkit/ipam.js";
import { CONTROLLER_NAMESPACE, scraperToken, serviceAccountKubeconfigFile } from "../hack/testkit/serviceaccount.js";
import { eventually } from "../hack/testkit/wait.js";
import { metricSample, scrapeSecure } from "../hack/testkit/metrics.js";
import { addressClaim, inClusterClients, inClusterPool, ref, GLOBAL, IN } from "../hack/testkit/incluster.js";

const EXHAUSTED = "Metal3IPAMPoolExhausted";

function poolReview(uid: string, subnet: string): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "ipam.metal3.io", version: "v1alpha1", kind: "IPPool" },
      operation: "CREATE",
      namespace: "webhook-probe",
      name: "probe",
      object: {
        metadata: { name: "probe", namespace: "webhook-probe" },
        spec: { namePrefix: "probe", pools: [{ subnet }] },
      },
    },
  });
}

function exhaustedAlert(
  alerts: readonly PromAlert[],
  ns: string | undefined,
  poolName: string,
  poolKind = "IPPool",
): PromAlert | undefined {
  return alerts.find(
    (a) =>
      a.labels.alertname === EXHAUSTED &&
      a.labels.namespace === ns &&
      a.labels.pool === poolName &&
      a.labels.pool_kind === poolKind,
  );
}

describe("alerts and dashboard on a real Prometheus scraping the controller", function () {
  this.timeout(300_000);
  let admin: KubeConfig;
  let c: Clients;
  let dir: string;
  let controller: ControllerProcess | undefined;
  let prometheus: PrometheusServer | undefined;
  let metricsPort: number;
  let webhookPort: number;
  /** A token of a ServiceAccount bound to the metrics-reader ClusterRole: what Prometheus scrapes with. */
  let token: string;
  const pki = loopbackPki();
  const scrape = async (): Promise<string> => (await scrapeSecure("127.0.0.1", metricsPort, token)).body;

  before(async function () {
    // The controller runs here as a process whose /metrics Prometheus reaches on loopback.
    if (usingExistingCluster()) this.skip();
    const binary = await resolveCachedTool("prometheus");
    admin = (await sharedCluster()).kubeConfig;
    c = clients(admin);
    dir = mkdtempSync(join(tmpdir(), "monitoring-test-"));
    const kubeconfig = await serviceAccountKubeconfigFile(admin, dir);
    [metricsPort, webhookPort] = [await claimPort(), await claimPort()];
    token = await scraperToken(admin, "prometheus", true);
    controller = startControllerProcess({
      kubeconfigPath: kubeconfig,
      logDir: dir,
      logName: "controller.log",
      logLevel: "warn",
      // The shipped default: HTTPS, each scrape's token reviewed by the API server.
      diagnosticsAddress: `127.0.0.1:${metricsPort}`,
      flags: [
        "--leader-elect",
        `--leader-election-namespace=${CONTROLLER_NAMESPACE}`,
        `--leader-election-id=monitoring-${process.pid}`,
        `--webhook-port=${webhookPort}`,
        `--webhook-cert-dir=${writeCertDir(pki.serving, mkdtempSync(join(dir, "certs-")))}`,
      ],
    });
    await eventually(
      "the controller to lead",
      async () => (await scrape()).includes("metal3_ipam_leader 1"),
      60_000,
      250,
    );
    // Our rules as shipped, with `for:` short enough for a test; the expressions are untouched.
    const rules = mapAlerts(loadRuleFile(join(repoRoot, ALERTS_PATH)), (r) => ({ ...r, for: "2s" }));
    // The target label a ServiceMonitor adds: the controller's namespace, for series without their own.
    prometheus = await startPrometheus({
      binary,
      rules,
      targets: [{ address: `127.0.0.1:${metricsPort}`, labels: { namespace: CONTROLLER_NAMESPACE } }],
      bearerToken: token,
    });
    const url = prometheus.url;
    await eventually(
      "Prometheus to scrape the controller",
      async () => (await instantQuery(url, 'up{job="metal3-ipam"} == 1')).length === 1,
      30_000,
      250,
    );
  });

  after(async () => {
    await prometheus?.stop();
    await controller?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("fires Metal3IPAMPoolExhausted for a full pool with a waiting claim, and resolves it once an address is freed", async () => {
    const url = prometheus!.url;
    const ns = await freshNamespace(admin, "alerts");
    await c.pools.create(ns, pool(ns, "tiny", { pools: [{ start: "10.61.0.1", end: "10.61.0.2" }] }));
    for (const name of ["first", "second", "waiting"]) await c.claims.create(ns, claim(ns, name, "tiny"));

    const firing = await eventually(
      `${EXHAUSTED} to fire for ${ns}/tiny`,
      async () => {
        const alert = exhaustedAlert(await activeAlerts(url), ns, "tiny");
        return alert?.state === "firing" ? alert : undefined;
      },
      90_000,
      500,
    );
    expect(firing.labels.severity).to.equal("critical");
    expect(firing.annotations.description).to.include(`IPPool tiny in namespace ${ns}`);
    expect(firing.annotations.runbook_url).to.match(/docs\/runbooks\.md#metal3ipampoolexhausted$/);
    // The controller leads: the live leader series keeps Metal3IPAMNoLeader quiet.
    expect((await activeAlerts(url)).map((a) => a.labels.alertname)).to.not.include("Metal3IPAMNoLeader");

    await c.claims.delete(ns, "first");
    await eventually(
      `${EXHAUSTED} to resolve for ${ns}/tiny`,
      async () => exhaustedAlert(await activeAlerts(url), ns, "tiny") === undefined,
      90_000,
      500,
    );
    const waiting = await c.claims.get(ns, "waiting");
    expect(waiting.status?.address?.name, "the waiting claim got the freed address").to.be.a("string");
  });

  it("exports an InClusterIPPool's and a GlobalInClusterIPPool's series by pool_kind, alerts on them, and forgets them with the pool", async () => {
    const url = prometheus!.url;
    const k = inClusterClients(admin);
    const ns = await freshNamespace(admin, "alerts-ic");
    const globalName = `mon-global-${process.pid}`;
    await k.pools.create(ns, inClusterPool(ns, "ic", { addresses: ["10.62.0.1-10.62.0.3"], prefix: 24 }));
    await k.globals.create("", inClusterPool(undefined, globalName, { addresses: ["10.63.0.1"], prefix: 24 }));
    await k.claims.create(ns, addressClaim(ns, "ic-1", ref(IN, "ic")));
    for (const name of ["g-1", "g-2"]) await k.claims.create(ns, addressClaim(ns, name, ref(GLOBAL, globalName)));

    const series = (expr: string): Promise<Record<string, string>[]> =>
      instantQuery(url, expr).then((r) => r.map((x) => x.metric));
    const inCluster = await eventually(
      "the InClusterIPPool's used series",
      async () => {
        const [s] = await instantQuery(url, `metal3_ipam_pool_addresses_used{pool="ic", namespace="${ns}"}`);
        return s?.value[1] === "1" ? s.metric : undefined;
      },
      60_000,
      500,
    );
    expect(inCluster.pool_kind).to.equal("InClusterIPPool");
    expect(await series(`metal3_ipam_pool_addresses_total{pool="ic", pool_kind="InClusterIPPool"}`)).to.have.length(1);
    // The global pool has no namespace: not its own (it has none), nor the controller's the target would lend it.
    const globalFree = await series(`metal3_ipam_pool_addresses_free{pool="${globalName}"}`);
    expect(globalFree).to.have.length(1);
    expect(globalFree[0]!.pool_kind).to.equal("GlobalInClusterIPPool");
    expect(globalFree[0]!.namespace).to.equal(undefined);
    // One address, two claims: the same rule as for Metal3 pools fires, with the pool's kind and no namespace.
    const firing = await eventually(
      `${EXHAUSTED} for GlobalInClusterIPPool ${globalName}`,
      async () => {
        const alert = exhaustedAlert(await activeAlerts(url), undefined, globalName, "GlobalInClusterIPPool");
        return alert?.state === "firing" ? alert : undefined;
      },
      90_000,
      500,
    );
    expect(firing.annotations.summary).to.equal(
      `GlobalInClusterIPPool ${globalName} is exhausted and claims are waiting`,
    );
    const pending = await series(`metal3_ipam_pool_claims_pending{pool="${globalName}", kind="IPAddressClaim"} == 1`);
    expect(pending.map((m) => m.pool_kind)).to.deep.equal(["GlobalInClusterIPPool"]);

    // Deleted pools take their series with them.
    for (const name of ["g-1", "g-2"]) await k.claims.delete(ns, name);
    await k.globals.delete("", globalName);
    await k.claims.delete(ns, "ic-1");
    await k.pools.delete(ns, "ic");
    await eventually(
      "the deleted pools' series to go",
      async () => {
        const text = await scrape();
        return (
          metricSample(text, "metal3_ipam_pool_addresses_total", { pool: globalName }) === undefined &&
          metricSample(text, "metal3_ipam_pool_claims_pending", { namespace: ns, pool: "ic" }) === undefined
        );
      },
      60_000,
      500,
    );
  });

  it("runs every dashboard query without error, and each returns data", async () => {
    const url = prometheus!.url;
    // Webhook traffic for the webhook panels: one request allowed, one denied.
    expect(
      (await httpsCall(webhookPort, pki.ca.certPem, WEBHOOK_PATHS.validateIPPool, poolReview("ok", "10.70.0.0/24")))
        .status,
    ).to.equal(200);
    expect(
      (await httpsCall(webhookPort, pki.ca.certPem, WEBHOOK_PATHS.validateIPPool, poolReview("bad", "not-a-subnet")))
        .status,
    ).to.equal(200);
    const dashboard = loadDashboard(join(repoRoot, DASHBOARD_PATH));
    const queries = panelQueries(dashboard);
    expect(queries.length).to.be.greaterThan(10);
    for (const q of queries) {
      const expr = substituteVariables(dashboard, q.expr, "2m");
      expect(expr, `${q.panel} ${q.refId}: every variable replaced`).to.not.match(/\$\w|\[\[/);
      // A bad expression fails at once (no retry hides it); data may need a scrape or two.
      await instantQuery(url, expr);
      await eventually(
        `data for "${q.panel}" (${expr})`,
        async () => (await instantQuery(url, expr)).length > 0,
        30_000,
        500,
      );
    }
    for (const v of variableQueries(dashboard)) {
      const expr = labelValuesAsQuery(substituteVariables(dashboard, v.query, "2m"));
      expect(expr, `variable ${v.name} uses label_values(selector, label)`).to.be.a("string");
      expect((await instantQuery(url, expr ?? "")).length, `values of variable ${v.name}`).to.be.greaterThan(0);
    }
  });
});
