/**
 * A list+watch cache of one resource, written for a controller that runs for months: the watch is restarted with
 * backoff after any error or end, a `410 Gone` (or any failed restart) relists from scratch, a watchdog replaces a
 * watch that stays silent (no event, no bookmark) for longer than the server's timeout, and a periodic resync
 * re-delivers every object so lost events heal.
 *
 * Read-your-writes: a reconciler that created or changed an object calls `upsert(response)` so the very next read
 * sees it, before the watch delivers the same event. Newer never gets replaced by older: resourceVersions are compared
 * as integers (every etcd-backed API server issues them that way); when one does not parse, the newer arrival wins.
 */
import { Watch, type KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "../runtime/logger.js";
import { describeError, isGone, statusCodeOf } from "./errors.js";
import type { KubeObject, ResourceClient } from "./resource.js";

export type EventKind = "add" | "update" | "delete" | "resync";
export type Handler<T> = (kind: EventKind, obj: T, old?: T) => void;

export interface InformerOptions {
  namespace?: string;
  /** Re-deliver every cached object this often (0 = never). Default 10 min. */
  resyncMs?: number;
  /** Server-side watch timeout; the watchdog fires at twice this plus 30 s. Default 300 s. */
  watchTimeoutSeconds?: number;
  logger: Logger;
}

export const keyOf = (obj: KubeObject): string => `${obj.metadata.namespace ?? ""}/${obj.metadata.name ?? ""}`;

function newer(candidate: KubeObject, current: KubeObject | undefined): boolean {
  if (!current) return true;
  const a = Number(candidate.metadata.resourceVersion);
  const b = Number(current.metadata.resourceVersion);
  return Number.isFinite(a) && Number.isFinite(b) ? a >= b : true;
}

export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  private readonly indexers = new Map<string, (obj: T) => string[]>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly handlers: Handler<T>[] = [];
  private resourceVersion = "";
  private abort?: AbortController;
  private stopped = false;
  private syncedOnce = false;
  private lastActivity = Date.now();
  private timers: NodeJS.Timeout[] = [];
  private failures = 0;
  private lastLoggedError = "";
  private readyWaiters: (() => void)[] = [];

  constructor(
    private readonly kubeConfig: KubeConfig,
    readonly client: ResourceClient<T>,
    private readonly options: InformerOptions,
  ) {}

  /** Registers an index; `fn` returns the index keys of an object. Register before start(). */
  addIndex(name: string, fn: (obj: T) => string[]): void {
    this.indexers.set(name, fn);
    this.indexes.set(name, new Map());
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

  byIndex(index: string, key: string): T[] {
    const keys = this.indexes.get(index)?.get(key);
    if (!keys) return [];
    return [...keys].map((k) => this.store.get(k)).filter((o): o is T => o !== undefined);
  }

  /** True once the first list completed (and after every relist). */
  get synced(): boolean {
    return this.syncedOnce;
  }

  /** Starts listing and watching; resolves once the first list is in the cache. Retries forever until stop(). */
  async start(): Promise<void> {
    void this.runLoop();
    const resync = this.options.resyncMs ?? 600_000;
    if (resync > 0) this.timers.push(setInterval(() => this.resync(), resync));
    this.timers.push(setInterval(() => this.watchdog(), 5_000));
    if (this.syncedOnce) return;
    await new Promise<void>((resolve) => this.readyWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.abort?.abort();
    for (const w of this.readyWaiters) w();
  }

  /** Read-your-writes: records the object a write returned, unless the cache already holds something newer. */
  upsert(obj: T): void {
    const key = keyOf(obj);
    const old = this.store.get(key);
    if (!newer(obj, old)) return;
    this.put(key, obj, old);
  }

  /** Read-your-writes for deletes. The watch's own DELETED event is then a no-op. */
  remove(obj: T): void {
    const key = keyOf(obj);
    const old = this.store.get(key);
    if (old) this.drop(key, old);
  }

  private put(key: string, obj: T, old: T | undefined): void {
    if (old) this.unindex(key, old);
    this.store.set(key, obj);
    this.index(key, obj);
    this.emit(old ? "update" : "add", obj, old);
  }

  private drop(key: string, old: T): void {
    this.unindex(key, old);
    this.store.delete(key);
    this.emit("delete", old);
  }

  private index(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const k of fn(obj)) {
        let set = idx.get(k);
        if (!set) idx.set(k, (set = new Set()));
        set.add(key);
      }
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const k of fn(obj)) {
        const set = idx.get(k);
        set?.delete(key);
        if (set?.size === 0) idx.delete(k);
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

  private watchdog(): void {
    const limitMs = ((this.options.watchTimeoutSeconds ?? 300) * 2 + 30) * 1000;
    if (this.abort && Date.now() - this.lastActivity > limitMs) {
      this.options.logger.warn("Watch silent for too long; reconnecting", { resource: this.client.type.plural });
      this.abort.abort();
    }
  }

  /** Replaces the cache with a fresh list, emitting the differences. */
  private async relist(): Promise<void> {
    const { items, resourceVersion } = await this.client.list(this.options.namespace);
    const seen = new Set<string>();
    for (const obj of items) {
      const key = keyOf(obj);
      seen.add(key);
      const old = this.store.get(key);
      if (!old || old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.put(key, obj, old);
    }
    for (const [key, old] of [...this.store]) if (!seen.has(key)) this.drop(key, old);
    this.resourceVersion = resourceVersion;
    if (!this.syncedOnce) {
      this.syncedOnce = true;
      for (const w of this.readyWaiters.splice(0)) w();
    }
  }

  private async runLoop(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) await this.relist();
        needList = false;
        this.lastLoggedError = "";
        const outcome = await this.watchOnce();
        if (outcome === "gone") needList = true;
        this.failures = 0;
      } catch (err) {
        needList = true;
        this.failures++;
        // The same failure repeating (a CRD not installed yet) is logged once, not on every retry.
        const description = describeError(err);
        if (!this.stopped && description !== this.lastLoggedError) {
          this.lastLoggedError = description;
          this.options.logger.warn("List or watch failed; retrying with backoff", {
            resource: this.client.type.plural,
            error: description,
            status: statusCodeOf(err),
          });
        }
      }
      if (this.stopped) break;
      const delay = this.failures === 0 ? 0 : Math.min(30_000, 200 * 2 ** Math.min(this.failures, 8));
      if (delay > 0) await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random() / 2)));
    }
  }

  /** One watch from the current resourceVersion; resolves when it ends, "gone" when the server answered 410. */
  private watchOnce(): Promise<"ended" | "gone"> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (err: unknown): void => {
        if (settled) return;
        settled = true;
        this.abort = undefined;
        if (err === null || err === undefined || this.stopped) resolve("ended");
        else if (isGone(err) || (err instanceof Error && /\b410\b|too old resource version/i.test(err.message))) resolve("gone");
        else if (err instanceof Error && err.name === "AbortError") resolve("ended");
        else reject(err instanceof Error ? err : new Error(describeError(err)));
      };
      const timeoutSeconds = this.options.watchTimeoutSeconds ?? 300;
      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: Math.round(timeoutSeconds * (1 + Math.random())),
      };
      this.lastActivity = Date.now();
      new Watch(this.kubeConfig)
        .watch(this.client.collectionPath(this.options.namespace), query, (type: string, obj: T) => this.onEvent(type, obj, finish), finish)
        .then((controller) => {
          if (settled) controller.abort();
          else this.abort = controller;
        }, finish);
    });
  }

  private onEvent(type: string, obj: T, finish: (err: unknown) => void): void {
    this.lastActivity = Date.now();
    if (type === "ERROR") {
      const status = obj as unknown as { code?: number; message?: string };
      finish(status.code === 410 ? Object.assign(new Error(status.message ?? "410 Gone"), { code: 410 }) : new Error(status.message ?? "watch error"));
      this.abort?.abort();
      return;
    }
    if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
    if (type === "BOOKMARK") return;
    const key = keyOf(obj);
    const old = this.store.get(key);
    if (type === "DELETED") {
      if (old && newer(obj, old)) this.drop(key, old);
    } else if (newer(obj, old)) {
      this.put(key, obj, old);
    }
  }
}
