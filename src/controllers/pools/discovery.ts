/**
 * Serves the optional pool kinds (those whose CRDs may or may not be installed, such as the in-cluster provider's) as
 * their CRDs appear: discovery finds the served version, an informer is started, and every pool event becomes its
 * pool's key. Kinds not served yet are looked for again every 30 s (by default), so CRDs installed later are picked up
 * without a restart, as the Cluster API bridge does. Readiness does not depend on them.
 *
 * A kind may also be held (pools/gate.ts: another provider serves it): its pools are watched but not served (the
 * store does not know its informer, so the pass skips its pools), and each pool event is reported to `onHeldPool`.
 * Released, its informer is served again and every pool of it is resumed (a full pass: it may have changed meanwhile).
 */
import { resourceType } from "../../../api/registry.js";
import { servedVersion } from "../../kube/discovery.js";
import type { Informer } from "../../kube/informer.js";
import type { Logger } from "../../runtime/logger.js";
import type { Store } from "../store.js";
import { keyOfPool, type PoolKind, type PoolObject } from "./kind.js";

export interface KindDiscoveryOptions {
  logger: Logger;
  enqueuePool: (key: string) => void;
  /** How often discovery is retried while a kind is not served. Default 30 s. */
  retryMs?: number;
  /** Whether a kind found served must be held (not served) for now. Default: none is. */
  held?: (kind: PoolKind) => boolean;
  /** A pool event of a held kind. */
  onHeldPool?: (kind: PoolKind, pool: PoolObject) => void;
  /** A pool of a released kind: its next pass must start from the whole cache. Default `enqueuePool`. */
  resumePool?: (key: string) => void;
}

export class PoolKindDiscovery {
  private readonly missing: Set<PoolKind>;
  /** The informer of each kind found served, held or not. */
  private readonly found = new Map<PoolKind, Informer<PoolObject>>();
  private readonly held = new Set<PoolKind>();
  private retry?: NodeJS.Timeout;
  private stopped = false;
  private busy = false;

  constructor(
    private readonly store: Store,
    kinds: readonly PoolKind[],
    private readonly options: KindDiscoveryOptions,
  ) {
    this.missing = new Set(kinds);
  }

  /** Serves every kind served now and keeps looking for the others. Never rejects for a missing API. */
  async start(): Promise<void> {
    await this.tryMissing();
    for (const kind of this.missing)
      this.options.logger.info("Pool kind is not served; its pools are ignored until it is", {
        kind: `${kind.descriptor.kind}.${kind.descriptor.group}`,
      });
    if (this.missing.size > 0 && !this.stopped)
      this.retry = setInterval(() => void this.tryMissing(), this.options.retryMs ?? 30_000);
  }

  private async tryMissing(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (const kind of [...this.missing]) {
        const version = await servedVersion(this.store.kubeConfig, kind.descriptor).catch(() => undefined);
        if (!version || this.stopped) continue;
        this.missing.delete(kind);
        await this.serve(kind, version);
      }
      if (this.missing.size === 0) clearInterval(this.retry);
    } finally {
      this.busy = false;
    }
  }

  private async serve(kind: PoolKind, version: string): Promise<void> {
    const informer = this.store.informerFor<PoolObject>(resourceType(kind.descriptor, version));
    informer.on((_event, pool) =>
      this.held.has(kind) ? this.options.onHeldPool?.(kind, pool) : this.options.enqueuePool(keyOfPool(kind, pool)),
    );
    this.found.set(kind, informer);
    if (this.options.held?.(kind)) this.held.add(kind);
    else this.store.servePools(kind, informer);
    await informer.start();
    this.options.logger.info(this.held.has(kind) ? "Watching pool kind, held" : "Serving pool kind", {
      kind: `${kind.descriptor.kind}.${kind.descriptor.group}`,
      version,
    });
  }

  /** Stops serving `kind` (a kind not found yet is held when found, through `held`). */
  hold(kind: PoolKind): void {
    if (!this.found.has(kind) || this.held.has(kind)) return;
    this.held.add(kind);
    this.store.stopServingPools(kind);
  }

  /** Serves a held kind again, resuming each of its pools. */
  release(kind: PoolKind): void {
    const informer = this.found.get(kind);
    if (!informer || !this.held.delete(kind)) return;
    this.store.servePools(kind, informer);
    const resume = this.options.resumePool ?? this.options.enqueuePool;
    for (const pool of informer.list()) resume(keyOfPool(kind, pool));
    this.options.logger.info("Serving pool kind", { kind: `${kind.descriptor.kind}.${kind.descriptor.group}` });
  }

  /** The pools of a kind found served (none before). */
  pools(kind: PoolKind): PoolObject[] {
    return this.found.get(kind)?.list() ?? [];
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.retry);
    // The store stops the informers it serves; a held kind's is ours alone.
    for (const kind of this.held) this.found.get(kind)?.stop();
  }
}
