/**
 * The NetBox kinds' own metrics, made on the controller's registry through `ControllerMetrics.extend`: every NetBox
 * request, and each pool's drift (per-pool series, dropped with the pool).
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { NetBoxObservation } from "../../netbox/client.js";
import { POOL_LABELS, PREFIX, poolLabels, type MetricsExtension, type PoolLabels } from "../../runtime/metrics.js";

/** The kinds of drift between NetBox and a pool's claims (the `drift` label). */
export type NetBoxDriftKind = "missing" | "unclaimed";
const NETBOX_DRIFT_KINDS: readonly NetBoxDriftKind[] = ["missing", "unclaimed"];

export interface NetBoxMetrics {
  /** One finished NetBox request: templated route, method, HTTP status or failure reason, duration. */
  request(o: NetBoxObservation): void;
  /** A NetBox pool's drift: IPAddresses whose record is gone, records of ours no claim holds (drift.ts). */
  drift(pool: PoolLabels, counts: Readonly<Record<NetBoxDriftKind, number>>): void;
  /** Drops the drift series of a pool that no longer exists. */
  poolGone(pool: PoolLabels): void;
}

function createNetBoxMetrics(registry: Registry): NetBoxMetrics {
  const requests = new Counter({
    name: `${PREFIX}netbox_requests_total`,
    help: "NetBox API requests by templated route, method and outcome (HTTP status, or the failure reason)",
    labelNames: ["route", "method", "code"],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: `${PREFIX}netbox_request_duration_seconds`,
    help: "NetBox API request latency by templated route and method",
    labelNames: ["route", "method"],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const driftRecords = new Gauge({
    name: `${PREFIX}netbox_drift_records`,
    help: "NetBox pool drift: IPAddresses whose NetBox record is gone (missing), records of ours no claim holds (unclaimed)",
    labelNames: [...POOL_LABELS, "drift"],
    registers: [registry],
  });
  return {
    request(o) {
      const code = o.status !== undefined ? String(o.status) : (o.reason ?? "unknown");
      requests.inc({ route: o.route, method: o.method, code });
      seconds.observe({ route: o.route, method: o.method }, o.seconds);
    },
    drift(pool, counts) {
      for (const drift of NETBOX_DRIFT_KINDS) driftRecords.set({ ...poolLabels(pool), drift }, counts[drift]);
    },
    poolGone(pool) {
      const labels = poolLabels(pool);
      for (const drift of NETBOX_DRIFT_KINDS) driftRecords.remove({ ...labels, drift });
    },
  };
}

export const NETBOX_METRICS: MetricsExtension<NetBoxMetrics> = {
  create: createNetBoxMetrics,
  none: { request: () => undefined, drift: () => undefined, poolGone: () => undefined },
};
