/**
 * Wires informers to the pool-keyed work queue and the reconciler. Watch mappers are one-liners: every event of a
 * pool, claim, IPAddress or Cluster becomes the key of the pool(s) it affects.
 */
import { CLUSTER } from "../../api/registry.js";
import type { Kube } from "../kube/access.js";
import { servedVersion } from "../kube/discovery.js";
import type { IPAddress, IPClaim, IPPool } from "../../api/v1alpha1/types.js";
import type { Logger } from "../runtime/logger.js";
import { noMetrics, type ControllerMetrics } from "../runtime/metrics.js";
import { WorkQueue } from "../runtime/workqueue.js";
import type { Cluster } from "./clusters.js";
import { EventRecorder, type EventSink } from "./events.js";
import { addressToPool, BY_CLUSTER, claimToPool, poolKey } from "./ippool/indexes.js";
import { PoolReconciler } from "./ippool/reconciler.js";
import { keyOf } from "../kube/informer.js";
import { Store } from "./store.js";
import { CapiBridge } from "./capi/bridge.js";
import { capiClaimToPool } from "./capi/translate.js";

export interface ManagerOptions {
  /** Namespace to watch; empty or undefined watches all. */
  namespace?: string;
  /** Pools reconciled in parallel. */
  poolConcurrency?: number;
  logger: Logger;
  events?: EventSink;
  resyncMs?: number;
  watchTimeoutSeconds?: number;
  metrics?: ControllerMetrics;
  /** Retry period of Cluster API IPAM discovery while it is not served (default 30 s). */
  capiDiscoveryRetryMs?: number;
}

export class Manager {
  private store?: Store;
  private queue?: WorkQueue;
  private bridge?: CapiBridge;

  constructor(
    private readonly kubeConfig: Kube,
    private readonly options: ManagerOptions,
  ) {}

  /** Discovers Cluster API, syncs caches, then starts reconciling. Resolves when caches are synced. */
  async start(): Promise<void> {
    const log = this.options.logger;
    const served = await servedVersion(this.kubeConfig, CLUSTER);
    if (!served) log.warn("Cluster API Clusters are not served; pools and claims naming a Cluster wait until they are");
    // Unserved, the Clusters informer watches the preferred version and keeps retrying until it appears.
    const clusterVersion = served ?? CLUSTER.versions[0];
    const store = new Store(this.kubeConfig, {
      namespace: this.options.namespace || undefined,
      clusterVersion,
      resyncMs: this.options.resyncMs,
      watchTimeoutSeconds: this.options.watchTimeoutSeconds,
      logger: log.child({ component: "informer" }),
    });
    this.store = store;
    const events = this.options.events ?? new EventRecorder(this.kubeConfig, log);
    const metrics = this.options.metrics ?? noMetrics;
    const reconciler = new PoolReconciler(store, events, log, { metrics });
    const queue = new WorkQueue((key) => reconciler.reconcile(key), {
      concurrency: this.options.poolConcurrency ?? 4,
      onMetrics: metrics.queue("ippool"),
      onError: (key, err) => {
        metrics.reconcileError("ippool");
        log.error("Reconcile failed; retrying with backoff", {
          pool: key,
          error: err instanceof Error ? err.message : String(err),
        });
      },
    });
    this.queue = queue;
    const add = (key: string): void => queue.add(key);
    store.pools.on((_kind, p: IPPool) => add(poolKey(p)));
    store.claims.on((_kind, c: IPClaim) => add(claimToPool(c)));
    store.addresses.on((_kind, a: IPAddress) => add(addressToPool(a)));
    store.clusters.on((_kind, c: Cluster) => this.clusterToPools(keyOf(c)).forEach(add));
    await store.start();
    this.bridge = new CapiBridge(store, {
      logger: log,
      enqueuePool: add,
      discoveryRetryMs: this.options.capiDiscoveryRetryMs,
    });
    await this.bridge.start();
    queue.start();
    log.info("Caches synced; reconciling", { namespace: this.options.namespace || "(all)", clusterVersion });
  }

  /** Pools affected by a Cluster: those naming it, and the pools of claims (both kinds) that name it themselves. */
  private clusterToPools(clusterKey: string): string[] {
    const store = this.store;
    if (!store) return [];
    return [
      ...store.pools.byIndex(BY_CLUSTER, clusterKey).map(poolKey),
      ...store.claims.byIndex(BY_CLUSTER, clusterKey).map(claimToPool),
      ...(store.capi?.claims.byIndex(BY_CLUSTER, clusterKey).flatMap(capiClaimToPool) ?? []),
    ];
  }

  get synced(): boolean {
    return this.store?.synced ?? false;
  }

  /** Resolves when no pool is queued or being reconciled (tests, shutdown). */
  async idle(): Promise<void> {
    await this.queue?.onIdle();
  }

  /** Stops watching and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    this.store?.stop();
    this.bridge?.stop();
    await this.queue?.shutdown();
  }
}
