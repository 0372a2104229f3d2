/**
 * The controllers' view of the cluster: one informer per kind, and every write they make. Each write puts its
 * response into the cache at once (read-your-writes, spec §3.4), so the next decision never relies on a watch event
 * that has not arrived yet.
 */
import { ListPacer } from "../kube/pacer.js";
import type { Kube } from "../kube/access.js";
import { CLUSTER, resourceType, type VersionOf } from "../../api/registry.js";
import { DELETE_FOR_MOVE_ANNOTATION, type ObjectMeta } from "../../api/v1alpha1/types.js";
import { isConflict, isNotFound } from "../kube/errors.js";
import { Informer } from "../kube/informer.js";
import { ResourceClient, type KubeObject, type ResourceType } from "../kube/resource.js";
import type { Logger } from "../runtime/logger.js";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { ClusterApiVersion } from "../../api/registry.js";
import type { Cluster } from "./clusters.js";
import { unseenRecords, type CachedRecord, type PrintedColumns } from "./pools/printed.js";

/** The Cluster API side of the store, present once the bridge found `ipam.cluster.x-k8s.io` served. */
export interface CapiInformers {
  claims: Informer<IPAddressClaim>;
  addresses: Informer<CapiIPAddress>;
  /** The served version the claims' status is written for. */
  version: ClusterApiVersion;
}

/** A pool object of any kind, as the store keeps it (only its kind reads spec and status). */
export type PoolObject = KubeObject & { spec?: unknown; status?: unknown };

/** A pool kind as the store tells kinds apart: by its descriptor's group and kind (a PoolKind has one). */
export interface DescribedKind {
  descriptor: { group: string; kind: string };
}

/** The most records a printed barrier reads one by one (Store.refreshPrinted); past it a list is cheaper. */
const MAX_UNSEEN_READS = 16;

const kindName = (kind: DescribedKind): string => `${kind.descriptor.kind}.${kind.descriptor.group}`;

export interface StoreOptions {
  namespace?: string;
  /** The Cluster version to watch (the served one, see src/kube/discovery.ts). */
  clusterVersion: VersionOf<typeof CLUSTER>;
  /**
   * Whether Clusters were served at start-up. Unserved, their cache lists nothing until they are, and {@link
   * Store.covers} does not wait for it (a pool or claim naming a Cluster waits for it anyway). Default true.
   */
  clustersServed?: boolean;
  resyncMs?: number;
  watchTimeoutSeconds?: number;
  logger: Logger;
}

export class Store {
  readonly clusters: Informer<Cluster>;
  /** Cluster API IPAddressClaims and IPAddresses and their served version; set when the bridge finds them served. */
  capi?: CapiInformers;
  /**
   * UIDs of the claims (both kinds) that `clusterctl move` took away from this cluster (spec §7): gone while carrying
   * its delete-for-move annotation. An IPAddress of such a claim that is still here stayed behind with a pool that
   * did not move (no clusterName): it is in use on the other side, not an orphan to clean up. Memory only: the
   * garbage collector soon drops the vanished claim from the IPAddress's owners.
   */
  readonly movedAway = new Set<string>();

  private readonly informerOptions: ConstructorParameters<typeof Informer>[2];
  /** Informers a kind's module made and handed over (Store.track): started, awaited and stopped with the store's. */
  private readonly tracked: Informer<KubeObject>[] = [];
  /**
   * The pool informer of each kind being served (Metal3's IPPool always; others once their CRDs are found), by
   * `<Kind>.<group>`.
   */
  private readonly poolInformers = new Map<string, Informer<PoolObject>>();
  /** The informers whose change logs {@link journal} keeps. */
  private readonly journaled: Informer<KubeObject>[] = [];
  private journalsPaused = false;
  private readonly clustersServed: boolean;
  /** Whether the bridge has learnt if Cluster API's IPAM is served ({@link capi} is set by then if it is). */
  capiKnown = false;
  /** Told when a page of one of the store's caches' first lists went in ({@link onListProgress}). */
  private listProgress?: () => void;
  /** Keeps the caches' first lists from running past a namespace someone waits on ({@link waitOn}). */
  private readonly pacer = new ListPacer();

  constructor(
    readonly kubeConfig: Kube,
    options: StoreOptions,
  ) {
    const informerOptions = {
      namespace: options.namespace,
      resyncMs: options.resyncMs,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      logger: options.logger,
      pacer: this.pacer,
    };
    this.informerOptions = informerOptions;
    this.clustersServed = options.clustersServed ?? true;
    this.clusters = this.informerFor<Cluster>(resourceType(CLUSTER, options.clusterVersion));
  }

  /** Informer handler for claims of either kind: remembers those deleted by `clusterctl move`. */
  readonly recordMovedAway = (kind: string, claim: KubeObject): void => {
    if (kind === "delete" && claim.metadata.uid && DELETE_FOR_MOVE_ANNOTATION in (claim.metadata.annotations ?? {}))
      this.movedAway.add(claim.metadata.uid);
  };

  /**
   * Makes `informer` one of the store's: started by {@link start} (which waits for it to sync), counted in
   * {@link synced}, stopped by {@link stop}. For the informers a kind always serves (Metal3's, ippool/caches.ts).
   */
  track<T extends KubeObject>(informer: Informer<T>): Informer<T> {
    this.tracked.push(informer as unknown as Informer<KubeObject>);
    return informer;
  }

  /** Starts every informer; resolves when the tracked ones are synced (Clusters may be absent and keep retrying). */
  async start(): Promise<void> {
    void this.clusters.start();
    await Promise.all(this.tracked.map((i) => i.start()));
  }

  stop(): void {
    for (const i of [...this.tracked, this.clusters, this.capi?.claims, this.capi?.addresses]) i?.stop();
    const tracked = new Set<unknown>(this.tracked);
    for (const informer of this.poolInformers.values()) if (!tracked.has(informer)) informer.stop();
  }

  /** Makes `informer` the pools of `kind` (the manager registers each kind it serves once its CRD is served). */
  servePools<P extends PoolObject>(kind: DescribedKind, informer: Informer<P>): void {
    // One map for every kind: each entry pairs a kind with the informer of its own object type.
    this.poolInformers.set(kindName(kind), informer as unknown as Informer<PoolObject>);
  }

  /** Forgets the pools of `kind`: passes of its pools do nothing until it is served again (pools/discovery.ts). */
  stopServingPools(kind: DescribedKind): void {
    this.poolInformers.delete(kindName(kind));
  }

  /** The pools of `kind`, or undefined while the kind is not served. */
  poolInformer(kind: DescribedKind): Informer<PoolObject> | undefined {
    return this.poolInformers.get(kindName(kind));
  }

  /** Creates (not starts) an informer for another resource with this store's options. */
  informerFor<T extends KubeObject>(type: ResourceType): Informer<T> {
    const informer = new Informer<T>(
      this.kubeConfig,
      new ResourceClient<T>(this.kubeConfig, type),
      this.informerOptions,
    );
    informer.onListProgress(() => this.listProgress?.());
    return informer;
  }

  /** Calls `handler` after each page of any of the store's caches' first lists, and when each is done. */
  onListProgress(handler: () => void): void {
    this.listProgress = handler;
  }

  /**
   * Whether the caches a pass of a pool in `namespace` reads besides the pools' own (Clusters, Metal3's claims,
   * records and pools, Cluster API's claims and records once the bridge knows whether they are served) each hold all
   * of that namespace (Informer.covers): while the first lists run, a pool whose namespace they went past can be
   * passed without waiting for the rest.
   */
  covers(namespace: string): boolean {
    if (!this.capiKnown) return false;
    const clusters = this.clustersServed ? [this.clusters] : [];
    const capi = this.capi ? [this.capi.claims, this.capi.addresses] : [];
    return [...clusters, ...this.tracked, ...capi].every((informer) => informer.covers(namespace));
  }

  /**
   * A claim in `namespace` waits while the first lists run: no cache's first list goes past that namespace before
   * every one reaches it (src/kube/pacer.ts), so its pool is passed ({@link covers}) as soon as the slowest gets there.
   */
  waitOn(namespace: string): void {
    this.pacer.waitOn(namespace);
  }

  /**
   * Keeps the change log of index `index` of `informer` (Informer.journal), paused while the store's are
   * ({@link pauseJournals}). For the informers that live as long as the store (claims and records of every pool).
   */
  journal<T extends KubeObject>(informer: Informer<T>, index: string): void {
    informer.journal(index);
    if (this.journalsPaused) informer.pauseJournals();
    this.journaled.push(informer as unknown as Informer<KubeObject>);
  }

  /**
   * Pauses or resumes the change logs kept through {@link journal} (src/kube/journal.ts): a replica that keeps its
   * caches warm but runs no passes pauses them (nobody would drain them), and resumes them when it starts passing.
   */
  pauseJournals(paused: boolean): void {
    this.journalsPaused = paused;
    for (const informer of this.journaled) {
      if (paused) informer.pauseJournals();
      else informer.resumeJournals();
    }
  }

  get synced(): boolean {
    return this.tracked.every((i) => i.synced);
  }

  lookupCluster = (namespace: string, name: string): Cluster | undefined => this.clusters.get(namespace, name);

  async create<T extends KubeObject>(informer: Informer<T>, obj: T): Promise<T> {
    const created = await informer.client.create(obj.metadata.namespace ?? "", obj);
    informer.upsert(created);
    return created;
  }

  /**
   * Conditional metadata patch: carries the resourceVersion we decided on, so a concurrent change answers 409 and
   * the decision is retaken from fresh data. Used for finalizers, labels and owner references.
   */
  async patchMetadata<T extends KubeObject>(informer: Informer<T>, obj: T, metadata: Partial<ObjectMeta>): Promise<T> {
    const patched = await informer.client.patch(obj.metadata.namespace ?? "", obj.metadata.name ?? "", {
      metadata: { ...metadata, resourceVersion: obj.metadata.resourceVersion },
    });
    informer.upsert(patched);
    return patched;
  }

  async addFinalizer<T extends KubeObject>(informer: Informer<T>, obj: T, finalizer: string): Promise<T> {
    if ((obj.metadata.finalizers ?? []).includes(finalizer)) return obj;
    return await this.patchMetadata(informer, obj, { finalizers: [...(obj.metadata.finalizers ?? []), finalizer] });
  }

  /**
   * Removes one finalizer with a resourceVersion precondition. Others write the same object (the garbage collector,
   * clusterctl, users), so on Conflict it re-reads and tries again: dropping our own finalizer is right whatever
   * changed. An object already gone counts as done.
   */
  async removeFinalizer<T extends KubeObject>(
    informer: Informer<T>,
    obj: T,
    finalizer: string,
  ): Promise<T | undefined> {
    let current: T | undefined = obj;
    for (let attempt = 0; current && (current.metadata.finalizers ?? []).includes(finalizer); attempt++) {
      try {
        return await this.patchMetadata(informer, current, {
          finalizers: (current.metadata.finalizers ?? []).filter((f) => f !== finalizer),
        });
      } catch (err) {
        if (isNotFound(err)) {
          informer.remove(current);
          return undefined;
        }
        if (!isConflict(err) || attempt >= 4) throw err;
        current = await this.fetch(informer, current.metadata.namespace ?? "", current.metadata.name ?? "");
      }
    }
    return current;
  }

  /** Merge-patches `status` (ours alone to write, so no precondition). */
  async patchStatus<T extends KubeObject>(informer: Informer<T>, obj: T, status: object): Promise<T> {
    const patched = await informer.client.patchStatus(obj.metadata.namespace ?? "", obj.metadata.name ?? "", {
      status,
    });
    informer.upsert(patched);
    return patched;
  }

  /** Deletes exactly this incarnation (uid precondition). Already gone counts as done. */
  async delete<T extends KubeObject>(informer: Informer<T>, obj: T): Promise<void> {
    try {
      await informer.client.delete(obj.metadata.namespace ?? "", obj.metadata.name ?? "", obj.metadata.uid);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    // With finalizers left the object lingers (deleting); the watch will tell when it is gone.
    if ((obj.metadata.finalizers ?? []).length === 0) informer.remove(obj);
  }

  /**
   * Freshness barrier before allocating (spec §3.4): lists the objects of `informer` in `namespace` whose selectable
   * `field` equals `value` (a pool's IPAddresses, of either API), at a resourceVersion no older than `notOlderThan`,
   * and folds them into the cache. The claims and addresses watches are separate streams, so without this a record
   * created (by hand) before a claim could still be missing from the cache when the claim arrives.
   */
  async refreshWhere<T extends KubeObject>(
    informer: Informer<T>,
    namespace: string,
    field: { path: string; read: (obj: T) => string | undefined },
    value: string,
    notOlderThan: string | undefined,
  ): Promise<void> {
    const items = await informer.client.listWhere(
      namespace,
      field.path,
      value,
      field.read,
      notOlderThan ? { notOlderThan } : {},
    );
    for (const item of items) informer.upsert(item);
  }

  /**
   * The barrier of {@link refreshWhere} for a kind the API server does not filter by the pool's field, from printed
   * lists (pools/printed.ts), one per label selector of `selectors` (together they must hold every record of the pool
   * the barrier protects; `undefined` lists every record): only the records of pool `value` that the cache lacks, as
   * the rows show them, are read in full. With no `namespace` (a cluster-scoped pool, whose records live in every
   * namespace) the rows of every namespace are read and matched by name against `poolRecords`, the pool's cached
   * records: a row does not say its namespace, so a record the cache lacks cannot be read alone. False when it cannot
   * serve: the server filters by selectable field `field` (refreshWhere lists just the pool; asked once per process),
   * the kind is printed without those columns, or records are missing (more than {@link MAX_UNSEEN_READS} of a
   * namespace, any of every namespace: one list is then needed); the caller then uses refreshWhere.
   */
  async refreshPrinted<T extends KubeObject>(
    informer: Informer<T>,
    namespace: string,
    columns: PrintedColumns,
    field: string,
    value: string,
    selectors: readonly (string | undefined)[],
    notOlderThan: string | undefined,
    cachedAs: (obj: T) => CachedRecord,
    poolRecords: () => readonly T[],
  ): Promise<boolean> {
    if (await informer.client.filtersField(namespace, field, value)) return false;
    const cached = namespace
      ? (name: string): CachedRecord | undefined => {
          const obj = informer.get(namespace, name);
          return obj && cachedAs(obj);
        }
      : byName(poolRecords(), cachedAs);
    // Rows are matched page by page, so no more than one page of them is held at once; once more records are missing
    // than may be read one by one, the rest of the list is not read (the full list decides then).
    const readable = namespace ? MAX_UNSEEN_READS : 0;
    let unseen: string[] | undefined = [];
    for (const labelSelector of selectors) {
      await informer.client.listPrinted(
        namespace,
        { ...(labelSelector === undefined ? {} : { labelSelector }), ...(notOlderThan ? { notOlderThan } : {}) },
        (page) => {
          const found = unseenRecords(page, columns, value, cached);
          unseen = found && [...(unseen ?? []), ...found];
          return unseen !== undefined && unseen.length <= readable;
        },
      );
      if (!unseen || unseen.length > readable) return false;
    }
    await Promise.all(unseen.map((name) => this.fetch(informer, namespace, name)));
    return true;
  }

  /** Reads one object from the API server, bypassing the cache; undefined when it does not exist. */
  async fetch<T extends KubeObject>(informer: Informer<T>, namespace: string, name: string): Promise<T | undefined> {
    try {
      const obj = await informer.client.get(namespace, name);
      informer.upsert(obj);
      return obj;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/**
 * Looks up `records` by name, as {@link unseenRecords} reads a namespace-less printed list. Two records of one name in
 * different namespaces keep the last: a row of the other then does not match, and the barrier lists in full.
 */
function byName<T extends KubeObject>(
  records: readonly T[],
  cachedAs: (obj: T) => CachedRecord,
): (name: string) => CachedRecord | undefined {
  const named = new Map<string, CachedRecord>();
  for (const record of records) named.set(record.metadata.name ?? "", cachedAs(record));
  return (name) => named.get(name);
}
