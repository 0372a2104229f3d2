/**
 * A list+watch cache of one resource, written for a controller that runs for months:
 * - a watch that ends (the server's timeout) is resumed from the last resourceVersion at once;
 * - a watch or list that fails (API server restarting, connection reset, HTTP error) is retried with jittered
 *   exponential backoff, and the retry relists from scratch;
 * - a `410 Gone` (the resourceVersion was compacted away, in the stream or as the answer) relists from scratch;
 * - a watchdog aborts a watch that stays silent (no event, no bookmark) for longer than the server could keep it open,
 *   and one whose response headers do not arrive in time (a hung server accepts connections and answers nothing);
 * - lists carry a request timeout, so a hung server cannot park the loop;
 * - a periodic resync re-delivers every cached object so lost events heal.
 * The loop never gives up until stop(); `synced` says whether the cache currently reflects a successful list.
 *
 * Read-your-writes: a reconciler that created or changed an object calls `upsert(response)` so the very next read
 * sees it, before the watch delivers the same event. Newer never gets replaced by older, by events or by a relist:
 * resourceVersions are compared as integers (every etcd-backed API server issues them that way); when one does not
 * parse, the newer arrival wins. Deleted objects stay dead: a tombstone remembers each deletion for a few minutes, so
 * a write's answer that arrives after the watch reported the deletion (the patch that removed the last finalizer)
 * cannot bring the object back into the cache, where nothing would ever remove it again.
 */
import { namespacePrefixOf, type ListPacer } from "./pacer.js";
import type { Kube } from "./access.js";
import { describeError, isGone, statusCodeOf } from "./errors.js";
import type { KubeObject, ResourceClient } from "./resource.js";
import { IndexJournal, type BucketChange } from "./journal.js";
import { ValuePool } from "./strings.js";
import { streamWatch, type WatchEvent } from "./watch.js";

/**
 * The log calls an informer makes. Declared here, not imported from src/runtime/logger.ts, so src/kube depends on
 * nothing above it (src/runtime's leader election is built on src/kube); runtime's winston Logger satisfies it.
 */
export interface InformerLogger {
  debug(message: string, meta?: Record<string, unknown>): unknown;
  info(message: string, meta?: Record<string, unknown>): unknown;
  warn(message: string, meta?: Record<string, unknown>): unknown;
  error(message: string, meta?: Record<string, unknown>): unknown;
}

export type EventKind = "add" | "update" | "delete" | "resync";
export type Handler<T> = (kind: EventKind, obj: T, old?: T) => void;

export interface InformerOptions {
  namespace?: string;
  /** Re-deliver every cached object this often (0 = never). Default 10 min. */
  resyncMs?: number;
  /**
   * Server-side watch timeout T in seconds: each watch asks the server to end it after a random time between T and
   * 2T. Default 300. Also sets the watchdog (see `watchdogMs`) and the list timeout (min(60 s, watchdog)).
   */
  watchTimeoutSeconds?: number;
  /**
   * A watch with no event and no bookmark for this long is aborted and resumed. Default (2T + min(T, 30)) seconds:
   * longer than the server keeps any of our watches open, plus grace. A watch whose response headers take longer
   * than min(30 s, watchdog) is aborted as failed.
   */
  watchdogMs?: number;
  /** Cap of the retry backoff after failures. Default 10 s. */
  maxBackoffMs?: number;
  /**
   * What the cache keeps of each object it receives: by default all of it but `metadata.managedFields`. A projection
   * (a cache that needs a few fields of many objects) must keep `metadata.name`, `namespace` and `resourceVersion`;
   * handlers and reads see only what it kept.
   */
  keep?: (received: KubeObject) => KubeObject;
  /**
   * Holds this cache's first list past a namespace someone waits on until the other caches' that share the pacer
   * went past it too (src/kube/pacer.ts): for the namespaced kinds listed across every namespace.
   */
  pacer?: ListPacer;
  logger: InformerLogger;
}

/** What an informer went through since it started: for tests, logs and metrics. */
export interface InformerStats {
  /** Successful lists (the first one included). */
  lists: number;
  listFailures: number;
  watches: number;
  /** Watches that failed: network errors, HTTP errors, headers that never came. */
  watchFailures: number;
  /** 410 Gone answers (in the stream or as the response), each followed by a relist. */
  expired: number;
  /** Silent watches the watchdog aborted. */
  watchdogAborts: number;
}

/** One watch request in flight. */
interface ActiveWatch {
  readonly abort: AbortController;
  readonly startedAt: number;
  connected: boolean;
  events: number;
  /** Set when the watchdog aborted it. */
  abortedBecause?: "silent" | "no-headers";
  /** An ERROR event the server sent in the stream (a Status). */
  streamError?: { code?: number; message?: string };
}

type WatchOutcome = "ended" | "gone";

/** Whether `rv` is a resourceVersion as etcd issues them: an integer in digits, no leading zeros. */
export const isEtcdVersion = (rv: string): boolean => /^\d+$/.test(rv);

/**
 * Compares two etcd resourceVersions as integers: the longer is larger, else string order is numeric order. Cheaper
 * than BigInt; callers check {@link isEtcdVersion} first.
 */
export function compareVersions(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether resourceVersion `rv` is at or past `target`; false when either is not an etcd version. */
export function atOrPast(rv: string, target: string): boolean {
  return isEtcdVersion(rv) && isEtcdVersion(target) && compareVersions(rv, target) >= 0;
}

export const keyOf = (obj: KubeObject): string => `${obj.metadata.namespace ?? ""}/${obj.metadata.name ?? ""}`;

/**
 * `s`, its characters made one piece. V8 keeps a string built by concatenation (a cache key, an index key built from
 * a pool key and an address) as a tree of its parts, and hashing it as a Map key leaves the tree as it is: every key
 * the cache keeps would hold its parts' nodes for as long as it lives. Reading a character flattens the string in
 * place, so a kept key holds its characters and one node.
 */
function flattened(s: string): string {
  s.charCodeAt(0);
  return s;
}

function newer(candidate: KubeObject, current: KubeObject | undefined): boolean {
  if (!current) return true;
  const a = Number(candidate.metadata.resourceVersion);
  const b = Number(current.metadata.resourceVersion);
  return Number.isFinite(a) && Number.isFinite(b) ? a >= b : true;
}

/**
 * Whether `candidate` is a later version than `current`. An equal resourceVersion is the same version: the watch's
 * echo of our own write (already recorded by `upsert`) changes nothing and must not wake handlers a second time.
 */
function laterVersion(candidate: KubeObject, current: KubeObject | undefined): boolean {
  return newer(candidate, current) && candidate.metadata.resourceVersion !== current?.metadata.resourceVersion;
}

/** How long a deletion is remembered: longer than any request (and its answer) can be in flight. */
const TOMBSTONE_MS = 180_000;

const rvOf = (obj: KubeObject): number => Number(obj.metadata.resourceVersion);

/** The timers informers' watchdogs share, one per period, each calling every watchdog of that period. */
const watchdogTicks = new Map<number, { timer: NodeJS.Timeout; checks: Set<() => void> }>();

/**
 * Calls `check` every `periodMs` on the timer of that period, shared with every other informer's: a controller runs
 * about ten informers, and a timer each woke an idle controller twice a second for checks of a few microseconds, each
 * wake-up costing more than its check. Returns how to stop.
 */
function everyPeriod(periodMs: number, check: () => void): () => void {
  let tick = watchdogTicks.get(periodMs);
  if (!tick) {
    const checks = new Set<() => void>();
    tick = { timer: setInterval(() => checks.forEach((c) => c()), periodMs), checks };
    watchdogTicks.set(periodMs, tick);
  }
  const shared = tick;
  shared.checks.add(check);
  return () => {
    shared.checks.delete(check);
    if (shared.checks.size > 0 || watchdogTicks.get(periodMs) !== shared) return;
    clearInterval(shared.timer);
    watchdogTicks.delete(periodMs);
  };
}

/** The cache keys of one index bucket: one key alone, or a Set of two or more. */
type Bucket = string | Set<string>;

/** A watch that lasted this long, or delivered anything, was healthy: the failure count starts over. */
const PRODUCTIVE_WATCH_MS = 1_000;

export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  /** Cached objects per namespace ("" for cluster-scoped ones), kept with {@link store}. */
  private readonly counts = new Map<string, number>();
  private readonly indexers = new Map<string, (obj: T) => string[]>();
  /**
   * Each index's buckets: index key → the cache keys of its objects. A bucket of one object holds its cache key
   * itself, not a Set of one: most index keys name one object (a claim's record, an address of a pool), and a Set
   * costs more than the entry that names it, per cached object.
   */
  private readonly indexes = new Map<string, Map<string, Bucket>>();
  /** Change logs of the indexes a reader asked to follow (see {@link journal}). */
  private readonly journals = new Map<string, IndexJournal<T>>();
  private journalsPaused = false;
  private readonly handlers: Handler<T>[] = [];
  /** Recently deleted keys → the resourceVersion at or below which a version of them is stale, and when. */
  private readonly tombstones = new Map<string, { rv: number; at: number }>();
  /** Shares the strings and small objects that repeat across cached objects (namespace, finalizers, owners, ...). */
  private readonly values = new ValuePool();
  private readonly counters: InformerStats = {
    lists: 0,
    listFailures: 0,
    watches: 0,
    watchFailures: 0,
    expired: 0,
    watchdogAborts: 0,
  };
  private resourceVersion = "";
  /** Callers of {@link waitObserved} and the resourceVersion each waits for. */
  private observers: { rv: string; done: (reached: boolean) => void }[] = [];
  private current?: ActiveWatch;
  private stopped = false;
  private inSync = false;
  private lastActivity = Date.now();
  private timers: NodeJS.Timeout[] = [];
  private stopWatchdog: (() => void) | undefined;
  private failures = 0;
  private lastLoggedError = "";
  private readyWaiters: (() => void)[] = [];
  private wake?: () => void;
  /** A list or watch failed since the last successful list. */
  private recovering = false;
  /** Events (bookmarks included) the last finished watch delivered. */
  private lastWatchEvents = 0;
  /**
   * During the first list only: the key of the last object folded, while the pages came in key order (undefined
   * before the first object, and for good once a key came out of order). See {@link covers}.
   */
  private listedThrough?: string;
  private listInOrder = true;
  /** During the first list only: the resourceVersion of its snapshot, as its pages tell it. */
  private listSnapshot = "";
  /** Called after each page of the first list and when it is done (see {@link onListProgress}). */
  private readonly progressHandlers: (() => void)[] = [];

  constructor(
    private readonly kube: Kube,
    readonly client: ResourceClient<T>,
    private readonly options: InformerOptions,
  ) {}

  /** Registers an index; `fn` returns the index keys of an object. Register before start(). */
  addIndex(name: string, fn: (obj: T) => string[]): void {
    this.indexers.set(name, fn);
    this.indexes.set(name, new Map());
  }

  /**
   * Keeps a change log per bucket of index `name` (registered with addIndex), for one reader that calls
   * {@link changesIn}. Enable before start(), so the log holds every change after the first list.
   */
  journal(name: string): void {
    const fn = this.indexers.get(name);
    if (!fn) throw new Error(`journal(${name}): no such index`);
    const journal = new IndexJournal(fn);
    if (this.journalsPaused) journal.pause();
    this.journals.set(name, journal);
  }

  /**
   * Pauses every change log, present and future ({@link IndexJournal.pause}): for a cache nobody reads the logs of
   * yet, which would otherwise hold up to MAX_CHANGES old objects per bucket.
   */
  pauseJournals(): void {
    this.journalsPaused = true;
    for (const journal of this.journals.values()) journal.pause();
  }

  /** Resumes the change logs; each bucket's first read after this answers undefined (read it whole). */
  resumeJournals(): void {
    this.journalsPaused = false;
    for (const journal of this.journals.values()) journal.resume();
  }

  /**
   * What changed in bucket `key` of journaled index `name` since the last call, oldest first (and forgotten now);
   * undefined when the log overflowed or the index is not journaled: the reader must read the whole bucket.
   */
  changesIn(name: string, key: string): BucketChange<T>[] | undefined {
    return this.journals.get(name)?.drain(key);
  }

  on(handler: Handler<T>): void {
    this.handlers.push(handler);
  }

  get(namespace: string, name: string): T | undefined {
    return this.store.get(`${namespace}/${name}`);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /** How many objects of `namespace` the cache holds (of every namespace without one), without reading them. */
  countIn(namespace?: string): number {
    return namespace === undefined ? this.store.size : (this.counts.get(namespace) ?? 0);
  }

  byIndex(index: string, key: string): T[] {
    const bucket = this.indexes.get(index)?.get(key);
    if (bucket === undefined) return [];
    const keys = typeof bucket === "string" ? [bucket] : [...bucket];
    return keys.map((k) => this.store.get(k)).filter((o): o is T => o !== undefined);
  }

  /**
   * Whether the cache reflects a successful list: false until the first list completes, false again after a list
   * fails (API server down, a hung request timing out), true after the next successful one. Watches that end and
   * resume from the last resourceVersion keep it true: they miss nothing.
   */
  get synced(): boolean {
    return this.inSync;
  }

  /**
   * Whether the cache holds every object of `namespace`: always once it has listed; during its first list, once the
   * pages went past the namespace. The API server lists in key order (`<namespace>/<name>`), so a namespace whose keys
   * all sort before the last key folded is complete in the cache, as of the list's snapshot. Never for "" (the
   * objects of a cluster-scoped kind, or of every namespace, are all there only when the list is), and never again
   * in that list once a page broke the order.
   */
  covers(namespace: string): boolean {
    if (this.counters.lists > 0) return true;
    const through = this.listedThrough;
    if (namespace === "" || !this.listInOrder || through === undefined) return false;
    const prefix = `${namespace}/`;
    return through > prefix && !through.startsWith(prefix);
  }

  /** Calls `handler` after each page of the first list and when it is done: {@link covers} may have changed. */
  onListProgress(handler: () => void): void {
    this.progressHandlers.push(handler);
  }

  /**
   * The pacer of this cache's first list: only a namespaced kind listed across namespaces goes through them (a
   * cluster-scoped kind's keys carry none, and a list of one namespace is in it from the start).
   */
  private get pacer(): ListPacer | undefined {
    return this.client.type.namespaced && this.options.namespace === undefined ? this.options.pacer : undefined;
  }

  /**
   * What names this cache in its log lines: the resource and its API group (Metal3's and Cluster API's IPAddresses
   * share the plural `ipaddresses`).
   */
  private get logFields(): { resource: string; group: string } {
    return { resource: this.client.type.plural, group: this.client.type.group };
  }

  /**
   * The resourceVersion up to which this cache has seen every change of its watch (the last list's, or the last
   * event's or bookmark's). Watch events arrive in resourceVersion order, so once this is at or past X, every object
   * written before X is in the cache. Our own writes (`upsert`) do not move it.
   */
  get observedResourceVersion(): string {
    return this.resourceVersion;
  }

  /**
   * The resourceVersion as of which this cache holds every object of `namespace`: {@link observedResourceVersion},
   * or during the first list, for a namespace it covers ({@link covers}), the list's snapshot (its pages hold that
   * namespace as the snapshot had it). What a writer checks before deciding from one namespace's objects while the
   * first list still runs.
   */
  observedIn(namespace: string): string {
    return this.counters.lists === 0 && this.covers(namespace) ? this.listSnapshot : this.resourceVersion;
  }

  /**
   * Resolves true once {@link observedResourceVersion} is at or past `rv` (a watch event or list delivered that far),
   * false after `timeoutMs`. How a writer learns that every object written before its own write is in the cache: its
   * own write's event comes after all of them on the watch.
   */
  waitObserved(rv: string, timeoutMs: number): Promise<boolean> {
    if (atOrPast(this.resourceVersion, rv)) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const observer = {
        rv,
        done: (reached: boolean): void => {
          clearTimeout(timer);
          this.observers = this.observers.filter((o) => o !== observer);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => observer.done(false), timeoutMs);
      this.observers.push(observer);
    });
  }

  /** Moves the observed resourceVersion and wakes the observers it reached. */
  private observe(rv: string): void {
    this.resourceVersion = rv;
    if (this.observers.length === 0) return;
    for (const observer of this.observers.filter((o) => atOrPast(rv, o.rv))) observer.done(true);
  }

  /** Synced, and a watch is connected and has shown a sign of life within the watchdog's limit. */
  get healthy(): boolean {
    return this.inSync && this.current?.connected === true && Date.now() - this.lastActivity <= this.watchdogMs;
  }

  /** A copy of the counters. */
  get stats(): InformerStats {
    return { ...this.counters };
  }

  private get timeoutSeconds(): number {
    return this.options.watchTimeoutSeconds ?? 300;
  }

  private get watchdogMs(): number {
    const t = this.timeoutSeconds;
    return this.options.watchdogMs ?? (2 * t + Math.min(t, 30)) * 1000;
  }

  private get headersTimeoutMs(): number {
    return Math.min(30_000, this.watchdogMs);
  }

  private get listTimeoutMs(): number {
    return Math.min(60_000, this.watchdogMs);
  }

  /** Starts listing and watching; resolves once the first list is in the cache. Retries forever until stop(). */
  async start(): Promise<void> {
    void this.runLoop();
    const resync = this.options.resyncMs ?? 600_000;
    if (resync > 0) this.timers.push(setInterval(() => this.resync(), resync));
    this.stopWatchdog = everyPeriod(Math.max(100, Math.min(5_000, this.watchdogMs / 4)), () => this.watchdog());
    if (this.inSync) return;
    await new Promise<void>((resolve) => this.readyWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.stopWatchdog?.();
    this.current?.abort.abort();
    this.wake?.();
    for (const w of this.readyWaiters.splice(0)) w();
    for (const observer of [...this.observers]) observer.done(false);
  }

  /**
   * Read-your-writes: records the object a write returned, unless the cache already holds something newer or the
   * object was deleted since (its version is not newer than the deletion).
   */
  upsert(obj: T): void {
    const key = keyOf(obj);
    const old = this.store.get(key);
    if (!laterVersion(obj, old) || this.buried(key, obj)) return;
    this.put(key, obj, old);
  }

  /** Read-your-writes for deletes. The watch's own DELETED event is then a no-op. */
  remove(obj: T): void {
    const key = keyOf(obj);
    const old = this.store.get(key);
    if (old) this.drop(key, old, rvOf(obj));
  }

  /** Whether `obj` is a version from before the deletion of its key. */
  private buried(key: string, obj: T): boolean {
    const tomb = this.tombstones.get(key);
    const rv = rvOf(obj);
    return tomb !== undefined && Number.isFinite(rv) && rv <= tomb.rv;
  }

  private put(key: string, received: T, old: T | undefined): void {
    // Equal strings and small objects of the received object are swapped for the pool's copies in place: a caller that
    // still holds it reads the same values (the shared objects are frozen, as every cached object is read-only).
    const kept = this.options.keep ? (this.options.keep(received) as T) : withoutManagedFields(received);
    const obj = this.values.internAll(kept);
    this.tombstones.delete(key);
    flattened(key);
    if (old) this.unindex(key, old);
    else this.count(obj, 1);
    this.store.set(key, obj);
    this.index(key, obj);
    for (const journal of this.journals.values()) journal.record(key, old, obj);
    this.emit(old ? "update" : "add", obj, old);
  }

  /** Remembers that versions of `key` up to resourceVersion `rv` are dead. */
  private bury(key: string, rv: number): void {
    const known = this.tombstones.get(key)?.rv ?? 0;
    if (Number.isFinite(rv)) this.tombstones.set(key, { rv: Math.max(rv, known), at: Date.now() });
  }

  /** Removes `key`, remembering that versions up to `deletedAt` (a resourceVersion) are dead. */
  private drop(key: string, old: T, deletedAt: number): void {
    this.bury(key, Math.max(rvOf(old), deletedAt));
    this.unindex(key, old);
    this.store.delete(key);
    this.count(old, -1);
    for (const journal of this.journals.values()) journal.record(key, old, undefined);
    this.emit("delete", old);
  }

  private count(obj: T, by: 1 | -1): void {
    const namespace = obj.metadata.namespace ?? "";
    const n = (this.counts.get(namespace) ?? 0) + by;
    if (n > 0) this.counts.set(namespace, n);
    else this.counts.delete(namespace);
  }

  private pruneTombstones(): void {
    const limit = Date.now() - TOMBSTONE_MS;
    for (const [key, tomb] of this.tombstones) if (tomb.at < limit) this.tombstones.delete(key);
  }

  private index(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const k of fn(obj)) {
        const bucket = idx.get(k);
        if (bucket === undefined) idx.set(flattened(k), key);
        else if (bucket === key) continue;
        else if (typeof bucket === "string") idx.set(k, new Set([bucket, key]));
        else bucket.add(key);
      }
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const k of fn(obj)) {
        const bucket = idx.get(k);
        if (bucket === key) idx.delete(k);
        else if (typeof bucket !== "string" && bucket?.delete(key) && bucket.size === 1) idx.set(k, [...bucket][0]!);
      }
    }
  }

  private emit(kind: EventKind, obj: T, old?: T): void {
    for (const h of this.handlers) {
      try {
        h(kind, obj, old);
      } catch (err) {
        this.options.logger.error("Event handler failed", { error: describeError(err) });
      }
    }
  }

  private resync(): void {
    for (const obj of this.store.values()) this.emit("resync", obj);
  }

  /** Aborts a watch whose headers never came, or that has been silent for longer than the server keeps one open. */
  private watchdog(): void {
    this.pruneTombstones();
    const watch = this.current;
    if (!watch || watch.abortedBecause || this.stopped) return;
    const now = Date.now();
    if (!watch.connected && now - watch.startedAt > this.headersTimeoutMs) {
      watch.abortedBecause = "no-headers";
      watch.abort.abort();
    } else if (now - this.lastActivity > this.watchdogMs) {
      watch.abortedBecause = "silent";
      this.counters.watchdogAborts++;
      this.options.logger.warn("Watch silent for too long; reconnecting", {
        ...this.logFields,
        silentMs: now - this.lastActivity,
      });
      watch.abort.abort();
    }
  }

  private async runLoop(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      let pauseMs = 0;
      try {
        if (needList) await this.relist();
        needList = false;
        const started = Date.now();
        const outcome = await this.watchOnce();
        needList = outcome === "gone";
        pauseMs = this.pauseAfterWatch(started);
      } catch (err) {
        needList = true;
        this.failures++;
        this.recovering = true;
        this.logFailure(err);
        pauseMs = this.backoffMs();
      }
      if (pauseMs > 0 && !this.stopped) await this.sleep(pauseMs);
    }
  }

  /**
   * After a watch ended without error: a healthy one (it lasted, or delivered events) resets the failure count and
   * the next watch starts at once; one that ended at once with nothing (a 410 right away, a server closing every
   * watch) counts as a failure, so such a loop backs off instead of spinning.
   */
  private pauseAfterWatch(started: number): number {
    if (Date.now() - started >= PRODUCTIVE_WATCH_MS || this.lastWatchEvents > 0) {
      this.failures = 0;
      this.lastLoggedError = "";
      return 0;
    }
    this.failures++;
    return this.backoffMs();
  }

  private backoffMs(): number {
    const max = this.options.maxBackoffMs ?? 10_000;
    return Math.min(max, 200 * 2 ** Math.min(this.failures, 10)) * (0.5 + Math.random() / 2);
  }

  private logFailure(err: unknown): void {
    // The same failure repeating (a CRD not installed yet, a server down) is logged once, not on every retry.
    const description = describeError(err);
    if (this.stopped || description === this.lastLoggedError) return;
    this.lastLoggedError = description;
    this.options.logger.warn("List or watch failed; retrying with backoff", {
      ...this.logFields,
      error: description,
      status: statusCodeOf(err),
      synced: this.inSync,
    });
  }

  /** Sleeps, but wakes at once on stop(). */
  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
  }

  /**
   * Replaces the cache with a fresh list, emitting the differences. Each page is folded in as it arrives, so the list
   * costs one page of memory, not the whole collection (its objects as the server sends them are larger than what
   * the cache keeps of them). A failure marks the cache not synced.
   */
  private async relist(): Promise<void> {
    const seen = new Set<string>();
    const started = performance.now();
    // A first list that failed and starts over covers nothing until its own pages say so.
    this.listedThrough = undefined;
    this.listInOrder = true;
    const pacer = this.counters.lists === 0 ? this.pacer : undefined;
    pacer?.join(this);
    let resourceVersion: string;
    let heldMs = 0;
    const hold = async (paced: ListPacer): Promise<void> => {
      const since = performance.now();
      await paced.turn(this);
      heldMs += performance.now() - since;
    };
    try {
      resourceVersion = await this.client.listPages(
        this.options.namespace,
        { timeoutMs: this.listTimeoutMs, ...(pacer ? { beforeNextPage: () => hold(pacer) } : {}) },
        (items, snapshot) => this.fold(items, seen, snapshot),
      );
    } catch (err) {
      this.counters.listFailures++;
      this.inSync = false;
      throw err;
    } finally {
      pacer?.leave(this);
    }
    this.dropUnlisted(seen, resourceVersion);
    this.observe(resourceVersion);
    this.counters.lists++;
    // After failures operators want to see the recovery; routine relists (410 Gone) stay at debug.
    if (this.recovering)
      this.options.logger.info("Cache resynced after failures", {
        ...this.logFields,
        items: seen.size,
        failures: this.failures,
      });
    else if (this.counters.lists > 1) this.options.logger.debug("Relisted", { ...this.logFields, items: seen.size });
    // The first list is the start-up's: how long each cache took to fill says where a slow start went.
    else
      this.options.logger.info("Cache filled", {
        ...this.logFields,
        items: seen.size,
        ms: Math.round(performance.now() - started),
        heldMs: Math.round(heldMs),
      });
    this.inSync = true;
    this.recovering = false;
    for (const w of this.readyWaiters.splice(0)) w();
    if (this.counters.lists === 1) {
      this.listedThrough = undefined;
      this.progress();
    }
  }

  private progress(): void {
    for (const handler of this.progressHandlers) handler();
  }

  /**
   * Folds one page of a list into the cache, adding each object's key to `seen`. Objects the list shows older than
   * the cache are kept (the cache has our own newer write). Between pages the cache holds, for each object, the
   * version the list showed or the one it held before: never older than before the list began, so a reader between
   * pages sees what it would have seen before the list, with some objects already newer.
   */
  private fold(items: readonly T[], seen: Set<string>, snapshot: string): void {
    const first = this.counters.lists === 0;
    if (first) this.listSnapshot = snapshot;
    for (const obj of items) {
      const key = keyOf(obj);
      seen.add(key);
      const old = this.store.get(key);
      if (laterVersion(obj, old) && !this.buried(key, obj)) this.put(key, obj, old);
      if (!first) continue;
      if (this.listedThrough !== undefined && key <= this.listedThrough) this.listInOrder = false;
      else if (this.listedThrough !== undefined && !key.startsWith(namespacePrefixOf(this.listedThrough)))
        this.options.logger.debug("First list went past a namespace", {
          ...this.logFields,
          namespace: this.listedThrough.slice(0, this.listedThrough.indexOf("/")),
          sinceStartMs: Math.round(performance.now()),
        });
      this.listedThrough = key;
    }
    if (!first || items.length === 0) return;
    if (!this.listInOrder) this.pacer?.leave(this);
    else if (this.listedThrough !== undefined) this.pacer?.reached(this, this.listedThrough);
    if (this.listInOrder) this.progress();
  }

  /**
   * After a list's last page: drops the cached objects it did not show, except those written after its snapshot
   * (`resourceVersion`): our own creates (read-your-writes), whose fate the watch from the list's resourceVersion will
   * tell. Dropping them would let the next decision miss an address this process just created. Only after the last
   * page: an object missing from the pages so far may be on the next.
   */
  private dropUnlisted(seen: ReadonlySet<string>, resourceVersion: string): void {
    const listed = Number(resourceVersion);
    for (const [key, old] of [...this.store]) {
      if (seen.has(key)) continue;
      const rv = rvOf(old);
      if (listed > 0 && Number.isFinite(listed) && Number.isFinite(rv) && rv > listed) continue;
      this.drop(key, old, listed);
    }
  }

  /** One watch from the current resourceVersion; "ended" when it ended or went silent, "gone" on 410. */
  private async watchOnce(): Promise<WatchOutcome> {
    const watch: ActiveWatch = { abort: new AbortController(), startedAt: Date.now(), connected: false, events: 0 };
    this.current = watch;
    this.lastActivity = watch.startedAt;
    this.lastWatchEvents = 0;
    this.counters.watches++;
    try {
      await streamWatch(this.kube, {
        path: this.client.collectionPath(this.options.namespace),
        query: {
          resourceVersion: this.resourceVersion || undefined,
          allowWatchBookmarks: true,
          timeoutSeconds: Math.round(this.timeoutSeconds * (1 + Math.random())),
        },
        signal: watch.abort.signal,
        onConnected: () => {
          watch.connected = true;
          this.lastActivity = Date.now();
        },
        onEvent: (event) => this.onEvent(watch, event),
      });
      return "ended";
    } catch (err) {
      return this.classify(watch, err);
    } finally {
      this.lastWatchEvents = watch.events;
      if (this.current === watch) this.current = undefined;
    }
  }

  /** Turns a watch's failure into an outcome, or rethrows it as a failure (which relists after backoff). */
  private classify(watch: ActiveWatch, err: unknown): WatchOutcome {
    if (this.stopped) return "ended";
    const streamError = watch.streamError;
    const gone = streamError ? streamError.code === 410 : isGone(err);
    if (gone) {
      this.counters.expired++;
      this.options.logger.info("Watch expired (410 Gone); relisting", {
        ...this.logFields,
        error: streamError?.message ?? describeError(err),
      });
      return "gone";
    }
    // A silent watch missed nothing the server knows about: resume from the last resourceVersion.
    if (watch.abortedBecause === "silent") return "ended";
    this.counters.watchFailures++;
    if (streamError) throw Object.assign(new Error(streamError.message ?? "watch error"), { code: streamError.code });
    if (watch.abortedBecause === "no-headers")
      throw new Error(`watch got no response headers within ${this.headersTimeoutMs} ms`);
    throw err instanceof Error ? err : new Error(describeError(err));
  }

  private onEvent(watch: ActiveWatch, event: WatchEvent): void {
    this.lastActivity = Date.now();
    if (event.type === "ERROR") {
      const status = event.object as { code?: unknown; message?: unknown } | null | undefined;
      watch.streamError = {
        ...(typeof status?.code === "number" ? { code: status.code } : {}),
        ...(typeof status?.message === "string" ? { message: status.message } : {}),
      };
      watch.abort.abort();
      return;
    }
    watch.events++;
    const obj = event.object as T | undefined;
    if (!obj?.metadata) return;
    if (obj.metadata.resourceVersion) this.observe(obj.metadata.resourceVersion);
    if (event.type === "BOOKMARK") return;
    const key = keyOf(obj);
    const old = this.store.get(key);
    if (event.type === "DELETED") {
      if (old && newer(obj, old)) this.drop(key, old, rvOf(obj));
      else if (!old) this.bury(key, rvOf(obj));
    } else if (laterVersion(obj, old) && !this.buried(key, obj)) {
      this.put(key, obj, old);
    }
  }
}

/**
 * `obj` without `metadata.managedFields`: the server-side-apply bookkeeping is often the larger part of a small object
 * and nothing here reads it, so the cache does not keep it (controller-runtime strips it by default for the same
 * reason). The object itself is not changed: a caller may still hold it. A rest copy, not `delete`: deleting a key
 * puts a V8 object in dictionary mode, larger per cached object and slower to read.
 */
function withoutManagedFields<T extends KubeObject>(obj: T): T {
  if (!("managedFields" in obj.metadata)) return obj;
  const { managedFields, ...metadata } = obj.metadata as T["metadata"] & { managedFields?: unknown };
  void managedFields;
  return { ...obj, metadata };
}
