/**
 * Serves the optional pool kinds (those whose CRDs may or may not be installed, such as the in-cluster provider's) as
 * their CRDs appear: discovery finds the served version, an informer is started, and every pool event becomes its
 * pool's key. Kinds not served yet are looked for again every 30 s (by default), so CRDs installed later are picked up
 * without a restart, as the Cluster API bridge does. Readiness does not depend on them.
 */
import { resourceType } from "../../../api/registry.js";
import { servedVersion } from "../../kube/discovery.js";
import type { Logger } from "../../runtime/logger.js";
import type { Store } from "../store.js";
import { keyOfPool, type PoolKind, type PoolObject } from "./kind.js";

export interface KindDiscoveryOptions {
  logger: Logger;
  enqueuePool: (key: string) => void;
  /** How often discovery is retried while a kind is not served. Default 30 s. */
  retryMs?: number;
}

export class PoolKindDiscovery {
  private readonly missing: Set<PoolKind>;
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
    informer.on((_event, pool) => this.options.enqueuePool(keyOfPool(kind, pool)));
    this.store.servePools(kind, informer);
    await informer.start();
    this.options.logger.info("Serving pool kind", {
      kind: `${kind.descriptor.kind}.${kind.descriptor.group}`,
      version,
    });
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.retry);
  }
}
