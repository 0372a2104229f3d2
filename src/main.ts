/**
 * The controller process: flags → logger → probes and metrics → webhooks and warm caches (every replica) →
 * reconciliation (the leader only, when leader election is on). SIGTERM drains in-flight reconciles and releases the
 * Lease, so a successor takes over at once; a lost Lease ends the process at once (a restart begins from the API
 * server's state, which the allocation path is designed for).
 */
import { hostname } from "node:os";
import { selfSignedCertificate } from "./certs/selfsigned.js";
import { CONVERSION_CRDS } from "./conversioncrds.js";
import { Manager } from "./controllers/manager.js";
import { parseFlags, USAGE, type Flags } from "./flags.js";
import type { ClusterAccess } from "./kube/access.js";
import { loadClusterAccess } from "./kube/kubeconfig.js";
import { setRateLimit } from "./kube/ratelimit.js";
import { LeaderElector } from "./runtime/leader.js";
import { createLogger, type Logger } from "./runtime/logger.js";
import { startDiagnosticsServer, type DiagnosticsServer } from "./runtime/diagnostics.js";
import { eventLoopQuiet, memoryReducingCollection, MemoryReleaser } from "./runtime/memory.js";
import { PrometheusMetrics } from "./runtime/metrics.js";
import { startProbeServer } from "./runtime/probes.js";
import { kubeAccessReviewer } from "./runtime/reviews.js";
import { ScrapeGate } from "./runtime/scrapeauth.js";
import { startWebhookServer, type WebhookServer } from "./webhooks/server.js";

function readFlags(): Flags {
  try {
    return parseFlags(process.argv.slice(2), process.env);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(message === "help" ? USAGE : `${message}\n\n${USAGE}`);
    process.exit(message === "help" ? 0 : 2);
  }
}

async function startWebhooks(
  flags: Flags,
  kc: ClusterAccess,
  logger: Logger,
  metrics: PrometheusMetrics,
): Promise<WebhookServer | undefined> {
  if (flags.webhookPort === 0) return undefined;
  const selfManaged = flags.webhookSelfManaged
    ? {
        kubeConfig: kc,
        mutatingName: flags.webhookMutatingName,
        validatingName: flags.webhookValidatingName,
        serviceName: flags.webhookServiceName,
        namespace: flags.leaderElectionNamespace,
        conversionCrds: CONVERSION_CRDS,
        ...(flags.webhookSecretName ? { secretName: flags.webhookSecretName } : {}),
      }
    : undefined;
  return await startWebhookServer({
    port: flags.webhookPort,
    ...(flags.webhookCertDir ? { certDir: flags.webhookCertDir } : {}),
    ...(selfManaged ? { selfManaged } : {}),
    kubeConfig: kc,
    logger: logger.child({ component: "webhook" }),
    metrics,
    endpointKinds: flags.endpointKinds,
    endpointPendingLimit: flags.endpointPendingClaims,
    endpointClaimGraceMs: flags.endpointClaimGraceMs,
  });
}

/** RSS growth over its settled size that is worth a memory-reducing collection (see src/runtime/memory.ts). */
const MEMORY_RELEASE_MIN_GROWTH_BYTES = 2 * 1024 * 1024;

/** Starts giving freed heap pages back to the OS, when the flag and Node (`--expose-gc`) allow it. */
function startMemoryReleaser(flags: Flags, logger: Logger, metrics: PrometheusMetrics): MemoryReleaser | undefined {
  if (flags.memoryReleaseIntervalMs === 0) return undefined;
  const collect = memoryReducingCollection();
  if (!collect) {
    logger.info("Memory release is off: Node runs without --expose-gc (the image passes it)");
    return undefined;
  }
  const releaser = new MemoryReleaser({
    intervalMs: flags.memoryReleaseIntervalMs,
    minGrowthBytes: MEMORY_RELEASE_MIN_GROWTH_BYTES,
    collect,
    // A due release waits for a minute in which the controller was not serving claims (at most four busy ones).
    quiet: eventLoopQuiet(),
    onRelease: (release) => {
      metrics.memoryRelease(release);
      logger.debug("Gave freed heap pages back to the OS", {
        rssBeforeBytes: release.beforeBytes,
        rssAfterBytes: release.afterBytes,
        durationMs: Math.round(release.durationMs),
      });
    },
    onError: (err) =>
      logger.warn("Memory release failed and is off from now on", {
        error: err instanceof Error ? err.message : String(err),
      }),
  });
  releaser.start();
  return releaser;
}

/**
 * Starts /metrics where `--diagnostics-address` says: HTTPS with a self-signed certificate made now (scrapers skip its
 * verification and prove themselves with a token) and the API server's reviews of every scraper, or plain HTTP.
 */
async function startDiagnostics(
  flags: Flags,
  kc: ClusterAccess,
  logger: Logger,
  metrics: PrometheusMetrics,
): Promise<DiagnosticsServer | undefined> {
  if (flags.diagnosticsAddress === "0") return undefined;
  const log = logger.child({ component: "diagnostics" });
  const secure = flags.insecureDiagnostics
    ? undefined
    : {
        certificate: selfSignedCertificate([hostname(), "localhost", "127.0.0.1"]),
        gate: new ScrapeGate(kubeAccessReviewer(kc)),
      };
  const server = await startDiagnosticsServer({
    address: flags.diagnosticsAddress,
    registry: metrics.registry,
    ...(secure ? { secure } : {}),
    onReviewError: (reason) => log.warn("Refused a scrape: the API server did not review its token", { reason }),
  });
  log.info("Serving /metrics", {
    address: flags.diagnosticsAddress,
    port: server.port,
    scheme: secure ? "https" : "http",
    authentication: secure ? "TokenReview and SubjectAccessReview" : "none",
  });
  return server;
}

async function main(): Promise<void> {
  const flags = readFlags();
  const logger = createLogger({ level: flags.logLevel, format: flags.logFormat });
  for (const warning of flags.warnings) logger.warn(warning);
  setRateLimit(flags.kubeApiQps, flags.kubeApiBurst);
  // Every client of the process (informers, writes, Events, the Lease) shares its keep-alive connections.
  const kc = await loadClusterAccess(flags.kubeconfig || undefined);
  const metrics = new PrometheusMetrics();
  const manager = new Manager(kc, {
    namespace: flags.namespace,
    poolConcurrency: flags.poolConcurrency,
    logger,
    metrics,
    controllerNamespace: flags.leaderElectionNamespace,
    serveInClusterPools: flags.serveInClusterPools,
    serveLoadBalancers: flags.serveLoadBalancers,
    inClusterProviderNamespace: flags.inClusterProviderNamespace,
    ...(flags.netBoxInstallationId ? { netBoxInstallationId: flags.netBoxInstallationId } : {}),
    netBoxAllowHttp: flags.netBoxAllowHttp,
    endpointClaimGraceMs: flags.endpointClaimGraceMs,
  });
  const webhook = await startWebhooks(flags, kc, logger, metrics);
  const releaser = startMemoryReleaser(flags, logger, metrics);
  if (webhook)
    metrics.webhookCertificate(flags.webhookSelfManaged ? "self-managed" : "cert-dir", () =>
      webhook.certificateExpiry(),
    );
  const closers: (() => Promise<void>)[] = [];
  if (flags.healthAddress !== "0") {
    const readiness = { webhook: () => !webhook || webhook.ready(), caches: () => manager.synced };
    closers.push((await startProbeServer({ address: flags.healthAddress, readiness })).close);
  }
  const diagnostics = await startDiagnostics(flags, kc, logger, metrics);
  if (diagnostics) closers.push(() => diagnostics.close());

  const failed = (err: unknown): never => {
    logger.error("Controller failed to start", { error: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  };
  const becomeLeader = (): void => {
    metrics.leader(true);
    manager.lead().catch(failed);
  };
  const elector = flags.leaderElect
    ? new LeaderElector(kc, {
        namespace: flags.leaderElectionNamespace,
        name: flags.leaderElectionId,
        leaseDurationMs: flags.leaseDurationMs,
        renewDeadlineMs: flags.renewDeadlineMs,
        retryPeriodMs: flags.retryPeriodMs,
        logger,
        onStartedLeading: becomeLeader,
        onStoppedLeading: () => process.exit(1),
      })
    : undefined;

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info("Shutting down", { signal });
    void (async () => {
      releaser?.stop();
      await manager.stop();
      await elector?.stop();
      await webhook?.stop();
      await Promise.all(closers.map((c) => c()));
      process.exit(0);
    })();
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  if (elector) {
    // A replica waiting for the Lease fills its caches meanwhile, so that elected it serves at once.
    manager.warm().catch(failed);
    elector.start();
  } else becomeLeader();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
