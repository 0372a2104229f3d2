/**
 * Wires informers to the pool-keyed work queue and the reconciler. Watch mappers are one-liners: every event of a
 * pool, claim, IPAddress or Cluster becomes the key of the pool(s) it affects.
 */
import { CLUSTER } from "../../api/registry.js";
import type { Kube } from "../kube/access.js";
import { servedVersion } from "../kube/discovery.js";
import { DEFAULT_ENDPOINT_CLAIM_GRACE_MS } from "../ipam/endpoint.js";
import type { Logger } from "../runtime/logger.js";
import { noMetrics, type ControllerMetrics } from "../runtime/metrics.js";
import { WorkQueue, type ReconcileResult } from "../runtime/workqueue.js";
import type { Cluster } from "./clusters.js";
import { EventRecorder, type EventSink } from "./events.js";
import { KIND_MODULES } from "./kinds.js";
import { keyOf, type Informer } from "../kube/informer.js";
import type { IPAddressClaim } from "../../api/capi/types.js";
import { Store } from "./store.js";
import { IPAddressClaimApi } from "./capi/api.js";
import { CapiBridge } from "./capi/bridge.js";
import { EndpointClaims } from "./capi/endpoint.js";
import { capiClaimToPool } from "./capi/translate.js";
import { PoolKindDiscovery } from "./pools/discovery.js";
import { ProviderGate } from "./pools/gate.js";
import { BY_CLUSTER, parsePoolKey } from "./pools/indexes.js";
import type { PoolKind } from "./pools/kind.js";
import type { AttachedCaches, CacheHook, ModuleOptions } from "./pools/module.js";
import type { SharedKinds } from "./pools/providers.js";
import { PoolReconciler } from "./pools/reconciler.js";
import { PoolKinds } from "./pools/registry.js";
import { LoadBalancerController } from "./loadbalancer/controller.js";

/**
 * The name of the pool controller in the `controller` label of the work queue and reconcile error series (one
 * controller for pools of every kind; dashboards and alerts select it by this value).
 */
const POOL_CONTROLLER = "ippool";

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
  /** The controller's own namespace: NetBox tokens are read from Secrets there (netbox/connect.ts). */
  controllerNamespace?: string;
  /** Serve the in-cluster provider's kinds (`--serve-incluster-pools`), never while it runs. Default false. */
  serveInClusterPools?: boolean;
  /** Namespace of the in-cluster provider's Lease (incluster/provider.ts). */
  inClusterProviderNamespace?: string;
  /** `--netbox-allow-http`: plain-HTTP NetBox URLs are permitted (netbox/trust.ts). Default false. */
  netBoxAllowHttp?: boolean;
  /** How often other providers' Leases are read (pools/gate.ts; default 5 s). */
  providerPollMs?: number;
  /** `--netbox-installation-id`: the id in NetBox record keys; default from the kube-system Namespace's uid. */
  netBoxInstallationId?: string;
  /**
   * `--endpoint-claim-grace`: how long an endpoint claim waits for its Cluster (capi/endpoint.ts). Default
   * {@link DEFAULT_ENDPOINT_CLAIM_GRACE_MS}.
   */
  endpointClaimGraceMs?: number;
  /** `--serve-load-balancers`: addresses for Services of type LoadBalancer and our class. Default false. */
  serveLoadBalancers?: boolean;
}

/** What a warm manager has made: the caches, the reconciler and its queue (not started). */
interface Warm {
  store: Store;
  reconciler: PoolReconciler;
  queue: WorkQueue;
  bridge: CapiBridge;
}

export class Manager {
  private store?: Store;
  private queue?: WorkQueue;
  private bridge?: CapiBridge;
  private discovery?: PoolKindDiscovery;
  private gate?: ProviderGate;
  private endpoints?: EndpointClaims;
  private loadBalancers?: LoadBalancerController;
  private readonly kinds: PoolKinds;
  /** The kinds served from the start on caches their modules make (pools/module.ts); the others are discovered. */
  private readonly hooks: readonly CacheHook[];
  /** What the hooks attached to the store: claim APIs and the pools a Cluster affects. */
  private attached: AttachedCaches[] = [];
  /** The kinds another provider may serve too: one declaration per provider (pools/providers.ts). */
  private readonly shared: SharedKinds<PoolKind>[];
  private readonly metrics: ControllerMetrics;
  private readonly events: EventSink;
  /** The caches' fill, once {@link warm} or {@link lead} was called. */
  private warming?: { made: Promise<Warm>; synced: Promise<Warm> };
  /** Whether the caches' first lists are done. */
  private listed = false;
  /** Whether {@link lead} was called: passes, writes and Events are the leader's only. */
  private leading = false;
  /** Cluster API's claims, once cached (the endpoint claims' loop reads them). */
  private capiClaims?: Informer<IPAddressClaim>;
  /**
   * Pools whose pass came due while the first lists ran, by key: whether someone waits on it (a claim without an
   * address, or being deleted; WorkQueue.add's `waiting`). Those someone waits on are queued as soon as the lists
   * went past their namespace (PoolReconciler.listedFor); the rest, and every cluster-scoped pool, once every cache
   * has listed, so that passes which would only write a status do not slow the lists down.
   */
  private readonly waitingForLists = new Map<string, boolean>();
  /**
   * Queues a pool's pass (it runs from {@link lead} on); while the first lists run, it waits in
   * {@link waitingForLists} until {@link requeueListed} queues it.
   */
  private readonly add = (key: string, waiting = false): void => {
    const waited = this.waitingForLists.get(key);
    if (waiting && waited !== true && !this.listed) {
      this.options.logger.debug("A claim waits on a pool while the lists run", {
        pool: key,
        sinceStartMs: Math.round(performance.now()),
      });
      const namespace = parsePoolKey(key)?.namespace;
      if (namespace) this.store?.waitOn(namespace);
    }
    if (waited !== undefined || !this.listed) this.waitingForLists.set(key, waited === true || waiting);
    else this.queue?.add(key, waiting);
  };

  constructor(
    private readonly kubeConfig: Kube,
    private readonly options: ManagerOptions,
  ) {
    const moduleOptions: ModuleOptions = { ...options, metrics: options.metrics ?? noMetrics };
    this.kinds = new PoolKinds(KIND_MODULES.flatMap((m) => m.kinds(moduleOptions)));
    this.hooks = KIND_MODULES.flatMap((m) => m.hooks ?? []);
    this.shared = KIND_MODULES.flatMap((m) => (m.shared ? [m.shared(moduleOptions)] : []));
    this.metrics = options.metrics ?? noMetrics;
    this.events = options.events ?? new EventRecorder(kubeConfig, options.logger);
  }

  /** Discovers Cluster API, syncs caches, then starts reconciling ({@link lead}). Resolves when it reconciles. */
  async start(): Promise<void> {
    await this.lead();
  }

  /**
   * Fills and watches the caches of the claims, records, pools and Clusters, and takes nothing from them: no pass,
   * no write, no Event, the change logs paused (nobody reads them yet). A replica that is not the leader warms up
   * so that, elected, it serves at once instead of after listing everything. Idempotent; resolves when
   * the caches are synced.
   */
  async warm(): Promise<void> {
    await this.warmed().synced;
  }

  /** The caches being filled: made (informers and queue exist) and synced (every first list done). */
  private warmed(): { made: Promise<Warm>; synced: Promise<Warm> } {
    if (!this.warming) {
      const made = this.make();
      // Every cache lists at once: the API server answers one list while we fold another, and the first pass waits
      // for the slowest list, not for their sum.
      const synced = made.then(async (warm) => {
        await Promise.all([warm.store.start(), warm.bridge.start()]);
        this.listed = true;
        return warm;
      });
      this.warming = { made, synced };
    }
    return this.warming;
  }

  /**
   * Reconciles: warms up if {@link warm} was not called, serves the optional kinds (their pools listed beside the
   * other caches), then resumes the change logs and starts the endpoint claims, the load balancers and the pool queue.
   * Resolves when it reconciles.
   */
  async lead(): Promise<void> {
    const log = this.options.logger;
    this.leading = true;
    const { made, synced } = this.warmed();
    const { store, reconciler, queue } = await made;
    const gate = new ProviderGate(this.shared, {
      kube: this.kubeConfig,
      logger: log,
      metrics: this.metrics,
      events: this.events,
      pollMs: this.options.providerPollMs,
    });
    this.gate = gate;
    const kindsServed = gate.start().then(() => this.discover(store, reconciler, gate, this.add));
    // A pool someone waits on is passed once the lists went past its namespace (requeueListed), not after everything.
    queue.start();
    await Promise.all([synced, kindsServed]);
    this.requeueListed(reconciler);
    // Every pool's first pass after this is full (nothing is kept yet), and each change log answers "read it whole"
    // once.
    store.pauseJournals(false);
    this.startEndpointClaims();
    await this.loadBalancers?.start();
    log.info("Caches synced; reconciling", {
      namespace: this.options.namespace || "(all)",
      clusterVersion: store.clusters.client.type.version,
    });
  }

  /** Makes the caches (not started), the reconciler and its queue (not started) and wires events to the queue. */
  private async make(): Promise<Warm> {
    const log = this.options.logger;
    const served = await servedVersion(this.kubeConfig, CLUSTER);
    if (!served) log.warn("Cluster API Clusters are not served; pools and claims naming a Cluster wait until they are");
    // Unserved, the Clusters informer watches the preferred version and keeps retrying until it appears.
    const clusterVersion = served ?? CLUSTER.versions[0];
    const store = new Store(this.kubeConfig, {
      namespace: this.options.namespace || undefined,
      clusterVersion,
      clustersServed: served !== undefined,
      resyncMs: this.options.resyncMs,
      watchTimeoutSeconds: this.options.watchTimeoutSeconds,
      logger: log.child({ component: "informer" }),
    });
    this.store = store;
    // No change log during the first lists: the first pass of every pool reads it whole, and a standby's would
    // grow until it leads.
    store.pauseJournals(true);
    const metrics = this.metrics;
    const add = this.add;
    this.attached = this.hooks.map((hook) => hook.attach(store, add));
    const apis = [...this.attached.map((a) => a.api), new IPAddressClaimApi(store, this.kinds)];
    const reconciler = new PoolReconciler(store, this.kinds, apis, this.events, log, { metrics });
    const queue = new WorkQueue((key) => this.passWhenListed(reconciler, key), {
      concurrency: this.options.poolConcurrency ?? 4,
      onMetrics: metrics.queue(POOL_CONTROLLER),
      onError: (key, err) => {
        metrics.reconcileError(POOL_CONTROLLER);
        log.error("Reconcile failed; retrying with backoff", {
          pool: key,
          error: err instanceof Error ? err.message : String(err),
        });
      },
    });
    this.queue = queue;
    store.onListProgress(() => this.requeueListed(reconciler));
    // A Cluster's change (pause, deletion, creation) can change decisions of claims that did not change themselves.
    store.clusters.on((_kind, c: Cluster) =>
      this.clusterToPools(keyOf(c)).forEach((key) => {
        reconciler.markFull(key);
        add(key);
      }),
    );
    const loadBalancers = this.options.serveLoadBalancers
      ? new LoadBalancerController(store, {
          logger: log.child({ component: "loadbalancer" }),
          events: this.events,
          metrics,
        })
      : undefined;
    this.loadBalancers = loadBalancers;
    const bridge = new CapiBridge(store, {
      onInformers: (capi) => loadBalancers?.attach(capi),
      logger: log,
      enqueuePool: add,
      kinds: this.kinds,
      discoveryRetryMs: this.options.capiDiscoveryRetryMs,
      onSynced: (claims) => {
        this.capiClaims = claims;
        this.startEndpointClaims();
      },
    });
    this.bridge = bridge;
    return { store, reconciler, queue, bridge };
  }

  /**
   * The queue's pass of pool `key`: before every cache has listed, only when the caches still hold all of its
   * namespace (PoolReconciler.listedFor; a first list that failed starts over); otherwise it waits again in
   * {@link waitingForLists} (only pools someone waits on are queued while the lists run).
   */
  private async passWhenListed(reconciler: PoolReconciler, key: string): Promise<ReconcileResult> {
    if (this.listed) return await reconciler.reconcile(key);
    if (reconciler.listedFor(key)) {
      const started = performance.now();
      const result = await reconciler.reconcile(key);
      // Where a restart's first claims spend their time: the lists, or the pass.
      this.options.logger.debug("Passed a pool while the lists run", {
        pool: key,
        sinceStartMs: Math.round(started),
        ms: Math.round(performance.now() - started),
      });
      return result;
    }
    this.waitingForLists.set(key, true);
  }

  /**
   * Queues the pools of {@link waitingForLists} someone waits on whose namespace the lists went past, and all of them
   * once the lists are done.
   */
  private requeueListed(reconciler: PoolReconciler): void {
    for (const [key, waited] of this.waitingForLists) {
      if (!this.listed && !(waited && reconciler.listedFor(key))) continue;
      this.waitingForLists.delete(key);
      this.queue?.add(key, waited);
    }
  }

  /** The endpoint claims' loop, once leading and Cluster API's claims are cached (whichever comes last). */
  private startEndpointClaims(): void {
    const store = this.store;
    if (!this.leading || !this.capiClaims || !store || this.endpoints) return;
    this.endpoints = new EndpointClaims({
      store,
      claims: this.capiClaims,
      logger: this.options.logger.child({ component: "endpoint-claims" }),
      graceMs: this.options.endpointClaimGraceMs ?? DEFAULT_ENDPOINT_CLAIM_GRACE_MS,
    });
    this.endpoints.start();
  }

  /** Serves the optional kinds found, once the gate knows which of them another provider serves. */
  private async discover(
    store: Store,
    reconciler: PoolReconciler,
    gate: ProviderGate,
    add: (key: string) => void,
  ): Promise<void> {
    this.discovery = new PoolKindDiscovery(store, this.optionalKinds(), {
      logger: this.options.logger,
      enqueuePool: add,
      retryMs: this.options.capiDiscoveryRetryMs,
      held: (kind) => gate.held(kind),
      onHeldPool: (kind, pool) => gate.heldPool(kind, pool),
      resumePool: (key) => {
        reconciler.markFull(key);
        add(key);
      },
    });
    gate.attach(this.discovery);
    await this.discovery.start();
  }

  /**
   * The optional kinds this manager may serve. A manager limited to one namespace sees only that namespace's claims
   * and records, so it cannot serve a cluster-scoped pool, whose claims come from every namespace: deciding without
   * the records of the other namespaces could hand out an address twice. It leaves such pools alone and says so.
   */
  private optionalKinds(): PoolKind[] {
    // Kinds another provider may serve are looked for only when the operator enabled them.
    const off = new Set(this.shared.filter((group) => !group.enabled).flatMap((group) => group.kinds));
    const cached = new Set(this.hooks.map((hook) => hook.kind));
    const optional = this.kinds.all.filter((kind) => !cached.has(kind) && !off.has(kind));
    if (!this.options.namespace) return optional;
    const scoped = optional.filter((kind) => !kind.descriptor.namespaced);
    for (const kind of scoped)
      this.options.logger.info("Cluster-scoped pools are not served by a controller limited to one namespace", {
        kind: kind.descriptor.kind,
        namespace: this.options.namespace,
      });
    return optional.filter((kind) => kind.descriptor.namespaced);
  }

  /** Pools affected by a Cluster: those naming it, and the pools of claims (every claim API's) that name it. */
  private clusterToPools(clusterKey: string): string[] {
    const store = this.store;
    if (!store) return [];
    return [
      ...this.attached.flatMap((a) => a.poolsOfCluster(clusterKey)),
      ...(store.capi?.claims.byIndex(BY_CLUSTER, clusterKey).flatMap((c) => capiClaimToPool(this.kinds, c)) ?? []),
    ];
  }

  /** Whether every cache has listed once (Cluster API's too, where served) and the store's are in sync now. */
  get synced(): boolean {
    return this.listed && (this.store?.synced ?? false);
  }

  /** Resolves when no pool is queued or being reconciled (tests, shutdown). */
  async idle(): Promise<void> {
    await this.queue?.onIdle();
    await this.loadBalancers?.idle();
  }

  /** Stops watching and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    this.store?.stop();
    this.bridge?.stop();
    this.discovery?.stop();
    this.gate?.stop();
    await Promise.all([this.queue?.shutdown(), this.endpoints?.stop(), this.loadBalancers?.stop()]);
  }
}
