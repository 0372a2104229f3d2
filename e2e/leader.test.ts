/**
 * Two controller processes with leader election on a Lease (as the Deployment runs them): exactly one reconciles,
 * a SIGKILLed leader is replaced within the lease duration without a duplicate address, and SIGTERM hands over at
 * once. Plus /metrics gauges that match the pools' status.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { claimPort } from "../hack/testkit/ports.js";
import { startControllerProcess, type ControllerProcess } from "../hack/testkit/controller.js";
import { Manager } from "../src/controllers/manager.js";
import { silentLogger } from "../src/runtime/logger.js";
import { PrometheusMetrics } from "../src/runtime/metrics.js";
import { LeaderElector } from "../src/runtime/leader.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import { startDiagnosticsServer } from "../src/runtime/diagnostics.js";
import { freshNamespace, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { claim, clients, pool, type Clients } from "../hack/testkit/ipam.js";
import { freshTarget, type TargetKind } from "../hack/testkit/pooltarget.js";
import {
  CONTROLLER_NAMESPACE,
  serviceAccountKubeConfig,
  serviceAccountKubeconfigFile,
} from "../hack/testkit/serviceaccount.js";
import { metricSample as sample, scrapeMetrics as scrape } from "../hack/testkit/metrics.js";
import { eventually } from "../hack/testkit/wait.js";

interface Replica {
  name: string;
  /** Supervised: the local plane's exit hook kills it even when this test run dies. */
  proc: ControllerProcess;
  metricsPort: number;
}

async function isLeader(r: Replica): Promise<boolean> {
  try {
    return sample(await scrape(r.metricsPort), "metal3_ipam_leader") === 1;
  } catch {
    return false;
  }
}

describe("leader election and metrics (controller processes)", function () {
  this.timeout(300_000);
  let admin: KubeConfig;
  let c: Clients;
  let dir: string;
  let kubeconfig: string;
  const replicas: Replica[] = [];

  before(async function () {
    if (usingExistingCluster()) this.skip();
    admin = (await sharedCluster()).kubeConfig;
    c = clients(admin);
    dir = mkdtempSync(join(tmpdir(), "leader-test-"));
    kubeconfig = await serviceAccountKubeconfigFile(admin, dir);
  });

  afterEach(async () => {
    for (const r of replicas.splice(0)) {
      await r.proc.kill();
    }
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function startReplica(
    name: string,
    namespace: string,
    lease: string,
    durations: [string, string, string],
    logLevel = "warn",
  ): Promise<Replica> {
    const metricsPort = await claimPort();
    const proc = startControllerProcess({
      name: `replica ${name}`,
      kubeconfigPath: kubeconfig,
      namespace,
      logDir: dir,
      logName: `${lease}-${name}.log`,
      logLevel,
      diagnosticsAddress: `127.0.0.1:${metricsPort}`,
      insecureDiagnostics: true,
      flags: [
        "--leader-elect",
        `--leader-election-namespace=${CONTROLLER_NAMESPACE}`,
        `--leader-election-id=${lease}`,
        `--leader-elect-lease-duration=${durations[0]}`,
        `--leader-elect-renew-deadline=${durations[1]}`,
        `--leader-elect-retry-period=${durations[2]}`,
      ],
    });
    const replica = { name, proc, metricsPort };
    replicas.push(replica);
    await eventually(
      `${name} to serve /metrics`,
      async () => (await scrape(metricsPort)).includes("metal3_ipam_leader"),
      60_000,
      250,
    );
    return replica;
  }

  async function boundAddresses(ns: string): Promise<string[]> {
    const byName = new Map((await c.addresses.list(ns)).items.map((a) => [a.metadata.name ?? "", a.spec.address]));
    return (await c.claims.list(ns)).items
      .map((x) => byName.get(x.status?.address?.name ?? ""))
      .filter((a): a is string => a !== undefined);
  }

  /**
   * Two replicas on one Lease; once the leader has bound some of 500 claims it is SIGKILLed while the rest are
   * created, and the follower takes over within the lease duration and binds every claim once.
   */
  async function leaderKilled(kind: TargetKind): Promise<void> {
    const t = await freshTarget(kind, admin, "leader-kill", "p");
    await t.createPool({ subnet: "10.50.0.0/22" });
    const lease = `lease-${t.namespaces[0] ?? ""}`;
    const a = await startReplica("a", t.watchNamespace, lease, ["6s", "4s", "500ms"]);
    const b = await startReplica("b", t.watchNamespace, lease, ["6s", "4s", "500ms"]);
    const leader = await eventually(
      "a leader",
      async () => {
        const flags = await Promise.all([isLeader(a), isLeader(b)]);
        return flags.filter(Boolean).length === 1 ? (flags[0] ? a : b) : undefined;
      },
      30_000,
      250,
    );
    const follower = leader === a ? b : a;
    const refs = t.claimRefs(500, (i) => `k-${String(i).padStart(3, "0")}`);
    for (let i = 0; i < 100; i += 25) await Promise.all(refs.slice(i, i + 25).map((r) => t.createClaim(r)));
    await eventually(
      "some claims bound by the leader",
      async () => (await t.boundAddresses()).length >= 50,
      60_000,
      200,
    );
    const followerMetrics = await scrape(follower.metricsPort);
    expect(sample(followerMetrics, "metal3_ipam_allocations_total", { result: "allocated" }) ?? 0).to.equal(0);
    expect(sample(followerMetrics, "metal3_ipam_leader")).to.equal(0);

    const rest = refs.slice(100);
    const creating = (async () => {
      for (let i = 0; i < rest.length; i += 25) await Promise.all(rest.slice(i, i + 25).map((r) => t.createClaim(r)));
    })();
    leader.proc.signal("SIGKILL");
    const killedAt = Date.now();
    await eventually("the follower to take over", () => isLeader(follower), 30_000, 100);
    const takeoverMs = Date.now() - killedAt;
    // A follower takes over after it has seen the Lease unchanged for the lease duration (6 s), checked every retry
    // period; the margin covers one retry period and scheduling on a loaded machine.
    expect(takeoverMs).to.be.lessThan(6_000 + 500 + 4_000);
    await creating;
    const addresses = await eventually(
      "all 500 bound",
      async () => {
        const got = await t.boundAddresses();
        return got.length === 500 ? got : undefined;
      },
      180_000,
      500,
    );
    expect(new Set(addresses).size).to.equal(500);
    expect(await t.records()).to.equal(500);
    t.expectSound(await t.audit(), 500);
  }

  it("lets exactly one replica reconcile, and replaces a SIGKILLed leader within the lease duration without duplicates", () =>
    leaderKilled("IPPool"));

  it("GlobalInClusterIPPool: replaces a SIGKILLed leader serving IPAddressClaims of 3 namespaces (replicas of all namespaces) without duplicates", () =>
    leaderKilled("GlobalInClusterIPPool"));

  /** The messages of a replica's JSON log, in order, with the resource each names (informer lines). */
  function logLines(r: Replica): { msg: string; resource?: string }[] {
    return readFileSync(r.proc.logFile, "utf8")
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { msg: string; resource?: string });
  }

  it("hands over at once on SIGTERM to a standby whose caches are already filled: it lists nothing to lead", async () => {
    const ns = await freshNamespace(admin, "leader-term");
    const lease = `lease-${ns}`;
    const a = await startReplica("a", ns, lease, ["15s", "10s", "500ms"], "info");
    const b = await startReplica("b", ns, lease, ["15s", "10s", "500ms"], "info");
    const leader = await eventually(
      "a leader",
      async () => ((await isLeader(a)) ? a : (await isLeader(b)) ? b : undefined),
      30_000,
      250,
    );
    const follower = leader === a ? b : a;
    await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.51.0.1", end: "10.51.0.9" }] }));
    await c.claims.create(ns, claim(ns, "before", "p"));
    expect(await eventually("the leader to allocate", async () => (await boundAddresses(ns))[0], 30_000)).to.equal(
      "10.51.0.1",
    );
    // The standby filled its caches at its start, while the other replica led, and passed nothing.
    const standby = logLines(follower);
    const filled = (lines: typeof standby): string[] =>
      lines.filter((l) => l.msg === "Cache filled").map((l) => l.resource ?? "");
    expect(filled(standby)).to.include.members(["ippools", "ipclaims", "ipaddresses"]);
    expect(standby.map((l) => l.msg)).to.not.include("Caches synced; reconciling");
    leader.proc.signal("SIGTERM");
    const at = Date.now();
    await leader.proc.exited;
    await eventually("the follower to lead", () => isLeader(follower), 15_000, 100);
    expect(Date.now() - at).to.be.lessThan(15_000 / 2);
    await c.claims.create(ns, claim(ns, "after", "p"));
    const both = await eventually(
      "the new leader to allocate",
      async () => {
        const got = await boundAddresses(ns);
        return got.length === 2 ? got.sort() : undefined;
      },
      30_000,
    );
    expect(both).to.deep.equal(["10.51.0.1", "10.51.0.2"]);
    // Elected, it reconciled from the caches it had: no cache listed a first time after it became leader.
    const lines = logLines(follower);
    const elected = lines.findIndex((l) => l.msg === "Became leader");
    expect(elected, "the follower's log says it became leader").to.be.greaterThan(-1);
    const warmed = ["ippools", "ipclaims", "ipaddresses", "ipaddressclaims"];
    expect(filled(lines.slice(elected)).filter((r) => warmed.includes(r))).to.deep.equal([]);
  });

  it("stops leading as soon as it cannot renew: another holder took the Lease", async () => {
    const name = `stolen-${Date.now()}`;
    let lost = 0;
    const elector = new LeaderElector(admin, {
      namespace: CONTROLLER_NAMESPACE,
      name,
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 200,
      logger: silentLogger(),
      onStartedLeading: () => undefined,
      onStoppedLeading: () => lost++,
    });
    elector.start();
    try {
      await eventually("leadership", () => elector.isLeader, 10_000, 50);
      const leases = new ResourceClient<KubeObject & { spec?: object }>(admin, {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        kind: "Lease",
        namespaced: true,
      });
      // Someone else renews the Lease every 200 ms (as a rival leader after a network partition would).
      const rival = setInterval(() => {
        void leases
          .patch(CONTROLLER_NAMESPACE, name, {
            spec: {
              holderIdentity: "rival",
              renewTime: new Date().toISOString().replace("Z", "000Z"),
              leaseDurationSeconds: 3,
            },
          })
          .catch(() => undefined);
      }, 200);
      const stolenAt = Date.now();
      try {
        await eventually("the elector to give up", () => lost === 1, 10_000, 50);
      } finally {
        clearInterval(rival);
      }
      expect(elector.isLeader).to.equal(false);
      // It gives up once it has failed to renew for the renew deadline (2 s), checked every retry period.
      expect(Date.now() - stolenAt).to.be.lessThan(2_000 + 200 + 3_000);
    } finally {
      await elector.stop();
    }
  });

  it("holds its API requests to --kube-api-qps/--kube-api-burst, and counts the waits on /metrics", async () => {
    const ns = await freshNamespace(admin, "qps");
    await c.pools.create(ns, pool(ns, "q", { pools: [{ start: "10.53.0.1", end: "10.53.0.40" }] }));
    const metricsPort = await claimPort();
    const proc = startControllerProcess({
      name: "rate-limited",
      kubeconfigPath: kubeconfig,
      namespace: ns,
      logDir: dir,
      logName: "qps.log",
      logLevel: "warn",
      diagnosticsAddress: `127.0.0.1:${metricsPort}`,
      insecureDiagnostics: true,
      flags: ["--kube-api-qps=4", "--kube-api-burst=1"],
    });
    replicas.push({ name: "rate-limited", proc, metricsPort });
    for (let i = 0; i < 6; i++) await c.claims.create(ns, claim(ns, `q-${i}`, "q"));
    await eventually("6 bound", async () => (await boundAddresses(ns)).length === 6, 60_000, 250);
    const text = await scrape(metricsPort);
    // Six claims take at least 18 writes: at 4 a second after a burst of 1, most of them waited.
    expect(sample(text, "metal3_ipam_kube_client_rate_limited_requests_total")).to.be.greaterThan(10);
    expect(sample(text, "metal3_ipam_kube_client_rate_limited_seconds_total")).to.be.greaterThan(1);
  });

  it("exposes per-pool gauges on /metrics that match the pools' status after claims and releases", async () => {
    const ns = await freshNamespace(admin, "metrics");
    const metrics = new PrometheusMetrics();
    const manager = new Manager(await serviceAccountKubeConfig(admin), {
      namespace: ns,
      logger: silentLogger(),
      metrics,
    });
    await manager.start();
    const probe = await startDiagnosticsServer({ address: "127.0.0.1:0", registry: metrics.registry });
    try {
      await c.pools.create(ns, pool(ns, "m", { pools: [{ start: "10.52.0.1", end: "10.52.0.40" }] }));
      for (let i = 0; i < 25; i++) await c.claims.create(ns, claim(ns, `x-${i}`, "m"));
      await eventually("25 bound", async () => (await boundAddresses(ns)).length === 25, 60_000);
      for (let i = 0; i < 10; i++) await c.claims.delete(ns, `x-${i}`);
      const status = await eventually(
        "status used = 15",
        async () => {
          const p = await c.pools.get(ns, "m");
          return p.status?.used === 15 ? p.status : undefined;
        },
        30_000,
      );
      const text = await eventually("gauges to match", async () => {
        const t = await scrape(probe.port);
        return sample(t, "metal3_ipam_pool_addresses_used", { namespace: ns, pool: "m" }) === status.used
          ? t
          : undefined;
      });
      expect(sample(text, "metal3_ipam_pool_addresses_total", { namespace: ns, pool: "m" })).to.equal(status.total);
      expect(sample(text, "metal3_ipam_pool_addresses_free", { namespace: ns, pool: "m" })).to.equal(status.free);
      expect(sample(text, "metal3_ipam_allocations_total", { result: "allocated" })).to.equal(25);
      expect(sample(text, "metal3_ipam_releases_total", { result: "released" })).to.equal(10);
      expect(text)
        .to.include("metal3_ipam_workqueue_depth")
        .and.include("metal3_ipam_allocation_duration_seconds_bucket");
    } finally {
      await probe.close();
      await manager.stop();
    }
  });
});
