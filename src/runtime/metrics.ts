/**
 * Prometheus metrics of the controller (spec §8). One registry per process; controllers record through the small
 * `ControllerMetrics` interface so tests can pass `noMetrics`.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { WorkQueueMetrics } from "./workqueue.js";

export interface ControllerMetrics {
  poolCapacity(namespace: string, pool: string, total: number, used: number, free: number): void;
  poolGone(namespace: string, pool: string): void;
  /** `result` is "allocated" or the failure reason (PoolExhausted, AllocationFailed, …). */
  allocation(result: string, seconds?: number): void;
  release(result: "released" | "failed"): void;
  reconcileError(controller: string): void;
  queue(controller: string): WorkQueueMetrics;
  leader(isLeader: boolean): void;
}

export const noMetrics: ControllerMetrics = {
  poolCapacity: () => undefined,
  poolGone: () => undefined,
  allocation: () => undefined,
  release: () => undefined,
  reconcileError: () => undefined,
  queue: () => ({ queued: () => undefined, processed: () => undefined }),
  leader: () => undefined,
};

const PREFIX = "metal3_ipam_";

export class PrometheusMetrics implements ControllerMetrics {
  readonly registry = new Registry();
  private readonly total = new Gauge({ name: `${PREFIX}pool_addresses_total`, help: "Addresses a pool's ranges can yield (capped at int64 max)", labelNames: ["namespace", "pool"], registers: [this.registry] });
  private readonly used = new Gauge({ name: `${PREFIX}pool_addresses_used`, help: "Addresses of a pool held by IPAddress objects", labelNames: ["namespace", "pool"], registers: [this.registry] });
  private readonly free = new Gauge({ name: `${PREFIX}pool_addresses_free`, help: "Addresses of a pool still free", labelNames: ["namespace", "pool"], registers: [this.registry] });
  private readonly allocations = new Counter({ name: `${PREFIX}allocations_total`, help: "Allocation attempts by result", labelNames: ["result"], registers: [this.registry] });
  private readonly allocationSeconds = new Histogram({ name: `${PREFIX}allocation_duration_seconds`, help: "Time to write an allocation (IPAddress create and claim status)", buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers: [this.registry] });
  private readonly releases = new Counter({ name: `${PREFIX}releases_total`, help: "Address releases by result", labelNames: ["result"], registers: [this.registry] });
  private readonly errors = new Counter({ name: `${PREFIX}reconcile_errors_total`, help: "Reconciles that failed and were retried", labelNames: ["controller"], registers: [this.registry] });
  private readonly depth = new Gauge({ name: `${PREFIX}workqueue_depth`, help: "Keys waiting in the work queue", labelNames: ["controller"], registers: [this.registry] });
  private readonly wait = new Histogram({ name: `${PREFIX}workqueue_queue_duration_seconds`, help: "Time a key waited before being processed", labelNames: ["controller"], buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60], registers: [this.registry] });
  private readonly work = new Histogram({ name: `${PREFIX}workqueue_work_duration_seconds`, help: "Time spent reconciling one key", labelNames: ["controller"], buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60], registers: [this.registry] });
  private readonly leaderGauge = new Gauge({ name: `${PREFIX}leader`, help: "1 when this replica is the leader and reconciles", registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
  }

  poolCapacity(namespace: string, pool: string, total: number, used: number, free: number): void {
    this.total.set({ namespace, pool }, total);
    this.used.set({ namespace, pool }, used);
    this.free.set({ namespace, pool }, free);
  }

  poolGone(namespace: string, pool: string): void {
    for (const g of [this.total, this.used, this.free]) g.remove({ namespace, pool });
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
    return {
      queued: (depth) => this.depth.set({ controller }, depth),
      processed: (_key, waitMs, workMs) => {
        this.wait.observe({ controller }, waitMs / 1000);
        this.work.observe({ controller }, workMs / 1000);
      },
    };
  }

  leader(isLeader: boolean): void {
    this.leaderGauge.set(isLeader ? 1 : 0);
  }
}
