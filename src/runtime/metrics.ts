/**
 * Prometheus metrics of the controller (spec §8). One registry per process; controllers record through the small
 * `ControllerMetrics` interface so tests can pass `noMetrics`.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { CLAIM_KINDS, type ClaimKind } from "../../api/registry.js";
import { clientStats } from "../kube/ratelimit.js";
import type { Release } from "./memory.js";
import type { WorkQueueMetrics } from "./workqueue.js";

/**
 * The pool a per-pool series is about: its kind's name as its descriptor in api/registry.ts gives it (the
 * `pool_kind` label, since `kind` already names the claim kind of the pending series), its namespace ("" for a
 * cluster-scoped kind: the series then has no `namespace` label) and its name (`pool`). A pool's `PoolLocation` is one.
 */
export interface PoolLabels {
  kind: string;
  namespace: string;
  name: string;
}

export interface ControllerMetrics {
  poolCapacity(pool: PoolLabels, total: number, used: number, free: number): void;
  /**
   * Live claims of a pool that hold no address yet, per claim kind (the series' `kind` label; what the exhausted and
   * pending alerts watch).
   */
  pendingClaims(pool: PoolLabels, counts: Readonly<Record<ClaimKind, number>>): void;
  /** Drops every per-pool series of a pool that no longer exists. */
  poolGone(pool: PoolLabels): void;
  /** `result` is "allocated" or the failure reason (PoolExhausted, AllocationFailed, …). */
  allocation(result: string, seconds?: number): void;
  release(result: "released" | "failed"): void;
  reconcileError(controller: string): void;
  queue(controller: string): WorkQueueMetrics;
  leader(isLeader: boolean): void;
  /** Whether a pool kind another provider may serve is served by us (1) or not (0), and why (one series a kind). */
  poolKindServed(kind: string, served: boolean, reason: string): void;
  /**
   * The metrics `extension` defines, made on this controller's registry the first time it is asked for and the same
   * object every time after (so several managers of one process share them); its `poolGone` runs with this one's.
   */
  extend<T extends MetricsOfPools>(extension: MetricsExtension<T>): T;
}

/** What every set of metrics an extension adds has: a way to drop a forgotten pool's series, if it keeps any. */
export interface MetricsOfPools {
  poolGone?(pool: PoolLabels): void;
}

/**
 * Metrics of one part of the controller (a pool kind's module) that the shared ones do not name: `create` makes
 * them on a registry (at most once per registry), `none` records nothing, for a controller with no registry.
 */
export interface MetricsExtension<T extends MetricsOfPools> {
  create(registry: Registry): T;
  readonly none: T;
}

export const noMetrics: ControllerMetrics = {
  poolCapacity: () => undefined,
  pendingClaims: () => undefined,
  poolGone: () => undefined,
  allocation: () => undefined,
  release: () => undefined,
  reconcileError: () => undefined,
  queue: () => ({ queued: () => undefined, processed: () => undefined }),
  leader: () => undefined,
  poolKindServed: () => undefined,
  extend: (extension) => extension.none,
};

/** How an admission request ended: answered allowed or denied, failed inside a handler, or refused at HTTP level. */
export type WebhookResult = "allowed" | "denied" | "error" | "rejected";

/** What the webhook server records; separate from ControllerMetrics because every replica serves webhooks. */
export interface WebhookMetrics {
  /** One answered request; `webhook` is the route's path ("unknown" for any other path, to bound the labels). */
  webhookRequest(webhook: string, result: WebhookResult, seconds: number): void;
}

/** The prefix of every metric name of the controller. */
export const PREFIX = "metal3_ipam_";

/** Labels of every per-pool series; the pending series adds the claim kind (`kind`). */
export const POOL_LABELS = ["namespace", "pool", "pool_kind"] as const;

/** A pool's values of POOL_LABELS. */
export function poolLabels(p: PoolLabels): Record<(typeof POOL_LABELS)[number], string> {
  return { namespace: p.namespace, pool: p.name, pool_kind: p.kind };
}

/** Every metric of the process in one registry, served at `/metrics`. */
export class PrometheusMetrics implements ControllerMetrics, WebhookMetrics {
  readonly registry = new Registry();
  private readonly total = new Gauge({
    name: `${PREFIX}pool_addresses_total`,
    help: "Addresses a pool's ranges can yield (capped at int64 max)",
    labelNames: POOL_LABELS,
    registers: [this.registry],
  });
  private readonly used = new Gauge({
    name: `${PREFIX}pool_addresses_used`,
    help: "Addresses of a pool held by IPAddress objects",
    labelNames: POOL_LABELS,
    registers: [this.registry],
  });
  private readonly free = new Gauge({
    name: `${PREFIX}pool_addresses_free`,
    help: "Addresses of a pool still free",
    labelNames: POOL_LABELS,
    registers: [this.registry],
  });
  private readonly allocations = new Counter({
    name: `${PREFIX}allocations_total`,
    help: "Allocation attempts by result",
    labelNames: ["result"],
    registers: [this.registry],
  });
  private readonly allocationSeconds = new Histogram({
    name: `${PREFIX}allocation_duration_seconds`,
    help: "Time to write an allocation (IPAddress create and claim status)",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly releases = new Counter({
    name: `${PREFIX}releases_total`,
    help: "Address releases by result",
    labelNames: ["result"],
    registers: [this.registry],
  });
  private readonly errors = new Counter({
    name: `${PREFIX}reconcile_errors_total`,
    help: "Reconciles that failed and were retried",
    labelNames: ["controller"],
    registers: [this.registry],
  });
  private readonly depth = new Gauge({
    name: `${PREFIX}workqueue_depth`,
    help: "Keys waiting in the work queue",
    labelNames: ["controller"],
    registers: [this.registry],
  });
  private readonly wait = new Histogram({
    name: `${PREFIX}workqueue_queue_duration_seconds`,
    help: "Time a key waited before being processed",
    labelNames: ["controller"],
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60],
    registers: [this.registry],
  });
  private readonly work = new Histogram({
    name: `${PREFIX}workqueue_work_duration_seconds`,
    help: "Time spent reconciling one key",
    labelNames: ["controller"],
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60],
    registers: [this.registry],
  });
  private readonly pending = new Gauge({
    name: `${PREFIX}pool_claims_pending`,
    help: "Live claims of a pool without an address yet, by claim kind",
    labelNames: [...POOL_LABELS, "kind"],
    registers: [this.registry],
  });
  private readonly webhookRequests = new Counter({
    name: `${PREFIX}webhook_requests_total`,
    help: "Admission requests by webhook path and result (allowed, denied, error, rejected)",
    labelNames: ["webhook", "result"],
    registers: [this.registry],
  });
  private readonly webhookSeconds = new Histogram({
    name: `${PREFIX}webhook_request_duration_seconds`,
    help: "Time to answer an admission request",
    labelNames: ["webhook"],
    // Up to the API server's 10 s wait: answers over the webhook's own 7 s deadline must show, not only +Inf.
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 7, 10],
    registers: [this.registry],
  });
  private readonly memoryReleases = new Counter({
    name: `${PREFIX}memory_releases_total`,
    help: "Memory-reducing collections run to give freed V8 heap pages back to the OS",
    registers: [this.registry],
  });
  private readonly memoryReleasedBytes = new Counter({
    name: `${PREFIX}memory_released_bytes_total`,
    help: "Resident memory those collections gave back (RSS before minus after)",
    registers: [this.registry],
  });
  private readonly memoryReleaseSeconds = new Counter({
    name: `${PREFIX}memory_release_seconds_total`,
    help: "Time those collections held the process (each stops it while it runs)",
    registers: [this.registry],
  });
  private readonly rssAfterRelease = new Gauge({
    name: `${PREFIX}memory_rss_after_release_bytes`,
    help: "Resident memory right after the last memory release: what the process holds with no freed pages kept",
    registers: [this.registry],
  });
  private certificate: { mode: string; expiry: () => Date | undefined } | undefined;
  private readonly leaderGauge = new Gauge({
    name: `${PREFIX}leader`,
    help: "1 when this replica is the leader and reconciles",
    registers: [this.registry],
  });

  private readonly kindServed = new Gauge({
    name: `${PREFIX}pool_kind_served`,
    help: "1 when a pool kind another provider may serve is served by this controller, 0 when not; reason says why",
    labelNames: ["pool_kind", "reason"],
    registers: [this.registry],
  });
  /** The reason label of each kind's served series. */
  private readonly kindReasons = new Map<string, string>();
  /** The metrics each extension made on this registry. */
  private readonly extensions = new Map<MetricsExtension<MetricsOfPools>, MetricsOfPools>();

  constructor() {
    // The event-loop delay histogram samples once a second instead of prom-client's every 10 ms. Each sample wakes the
    // process, and a controller serving a trickle of claims pays for every wake-up in CPU per claim. A stall that
    // covers a sample still delays it by its length, so the histogram shows long stalls;
    // nodejs_eventloop_lag_seconds measures the delay at each scrape.
    collectDefaultMetrics({ register: this.registry, prefix: PREFIX, eventLoopMonitoringPrecision: 1_000 });
    const read = (): { mode: string; expiry: () => Date | undefined } | undefined => this.certificate;
    // Read at scrape time: a renewed or remounted certificate shows up without anyone having to report it. Labelled
    // by mode so that, with no webhook server, there is no sample at all (an unlabelled gauge would export 0, which
    // an expiry alert reads as "expired in 1970").
    new Gauge({
      name: `${PREFIX}webhook_certificate_expiry_timestamp_seconds`,
      help: "Unix time at which the webhook serving certificate expires, by mode (cert-dir, self-managed)",
      labelNames: ["mode"],
      registers: [this.registry],
      collect() {
        this.reset();
        const cert = read();
        const expiry = cert?.expiry();
        if (cert && expiry) this.set({ mode: cert.mode }, expiry.getTime() / 1000);
      },
    });
    // The API door's own counts (src/kube/ratelimit.ts), read at scrape time.
    const fromClient = (name: string, help: string, value: () => number): void => {
      new Counter({
        name: `${PREFIX}${name}`,
        help,
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(value());
        },
      });
    };
    fromClient(
      "kube_client_rate_limited_requests_total",
      "API requests that waited for the client-side rate limit (--kube-api-qps, --kube-api-burst)",
      () => clientStats.rateLimitedRequests,
    );
    fromClient(
      "kube_client_rate_limited_seconds_total",
      "Time API requests waited for the client-side rate limit",
      () => clientStats.rateLimitedSeconds,
    );
    fromClient(
      "kube_client_throttled_retries_total",
      "API requests sent again after the API server answered 429 (or a 5xx) with Retry-After",
      () => clientStats.retriedAfterThrottle,
    );
    fromClient(
      "kube_client_sent_bytes_total",
      "Body bytes of the requests sent to the API server (JSON, without headers, framing or TLS)",
      () => clientStats.bytesSent,
    );
    new Counter({
      name: `${PREFIX}kube_client_received_bytes_total`,
      help: "Body bytes received from the API server: answers to requests (lists included) and watch streams",
      labelNames: ["stream"],
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc({ stream: "request" }, clientStats.bytesReceived);
        this.inc({ stream: "watch" }, clientStats.watchBytesReceived);
      },
    });
  }

  /** Where to read the serving certificate's expiry from at each scrape (the webhook server, once started). */
  webhookCertificate(mode: string, expiry: () => Date | undefined): void {
    this.certificate = { mode, expiry };
  }

  webhookRequest(webhook: string, result: WebhookResult, seconds: number): void {
    this.webhookRequests.inc({ webhook, result });
    this.webhookSeconds.observe({ webhook }, seconds);
  }

  poolCapacity(pool: PoolLabels, total: number, used: number, free: number): void {
    const labels = poolLabels(pool);
    this.total.set(labels, total);
    this.used.set(labels, used);
    this.free.set(labels, free);
  }

  pendingClaims(pool: PoolLabels, counts: Readonly<Record<ClaimKind, number>>): void {
    // Both kinds are always written, zeros included, so an alert sees "no claim waits" rather than no data.
    for (const kind of CLAIM_KINDS) this.pending.set({ ...poolLabels(pool), kind }, counts[kind]);
  }

  poolGone(pool: PoolLabels): void {
    const labels = poolLabels(pool);
    for (const g of [this.total, this.used, this.free]) g.remove(labels);
    for (const kind of CLAIM_KINDS) this.pending.remove({ ...labels, kind });
    for (const made of this.extensions.values()) made.poolGone?.(pool);
  }

  allocation(result: string, seconds?: number): void {
    this.allocations.inc({ result });
    if (seconds !== undefined) this.allocationSeconds.observe(seconds);
  }

  release(result: "released" | "failed"): void {
    this.releases.inc({ result });
  }

  reconcileError(controller: string): void {
    this.errors.inc({ controller });
  }

  queue(controller: string): WorkQueueMetrics {
    // A zero sample from the start gives rate() a baseline: the first error then shows as a rise, not as a new series.
    this.errors.inc({ controller }, 0);
    return {
      queued: (depth) => this.depth.set({ controller }, depth),
      processed: (_key, waitMs, workMs) => {
        this.wait.observe({ controller }, waitMs / 1000);
        this.work.observe({ controller }, workMs / 1000);
      },
    };
  }

  memoryRelease(release: Release): void {
    this.memoryReleases.inc();
    this.memoryReleasedBytes.inc(Math.max(0, release.beforeBytes - release.afterBytes));
    this.memoryReleaseSeconds.inc(release.durationMs / 1000);
    this.rssAfterRelease.set(release.afterBytes);
  }

  leader(isLeader: boolean): void {
    this.leaderGauge.set(isLeader ? 1 : 0);
  }

  poolKindServed(kind: string, served: boolean, reason: string): void {
    // One series a kind: the reason it is (not) served now, not every reason it ever had.
    const previous = this.kindReasons.get(kind);
    if (previous !== undefined && previous !== reason) this.kindServed.remove({ pool_kind: kind, reason: previous });
    this.kindReasons.set(kind, reason);
    this.kindServed.set({ pool_kind: kind, reason }, served ? 1 : 0);
  }

  extend<T extends MetricsOfPools>(extension: MetricsExtension<T>): T {
    const made = this.extensions.get(extension);
    if (made) return made as T;
    const created = extension.create(this.registry);
    this.extensions.set(extension, created);
    return created;
  }
}
