/**
 * Observes claims of one namespace through a list+watch and notes, per claim, the first moment it was seen bound.
 * Timestamps are taken when the watch event reaches this process (see stats.nowMs), so they include the API
 * server's watch delivery, as any consumer of the claim would experience it.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { Informer } from "../../src/kube/informer.js";
import { ResourceClient, type KubeObject } from "../../src/kube/resource.js";
import { silentLogger } from "../../src/runtime/logger.js";
import type { ClaimKind } from "./kinds.js";
import { nowMs } from "./stats.js";

/** First-seen-bound times of the claims of one namespace. */
export class ClaimWatch {
  /** Claim name → nowMs() when the watch first showed it bound. */
  readonly boundAt = new Map<string, number>();
  private readonly listeners = new Set<(name: string) => void>();

  private constructor(private readonly informer: Informer<KubeObject>) {}

  /** Starts watching `namespace` for claims of `kind`; resolves once the initial list is in. */
  static async start(kc: KubeConfig, kind: ClaimKind, namespace: string): Promise<ClaimWatch> {
    const informer = new Informer<KubeObject>(kc, new ResourceClient<KubeObject>(kc, kind.claimType), {
      namespace,
      resyncMs: 0,
      logger: silentLogger(),
    });
    const watch = new ClaimWatch(informer);
    informer.on((event, obj) => {
      if (event === "delete" || !kind.isBound(obj)) return;
      const name = obj.metadata.name ?? "";
      if (watch.boundAt.has(name)) return;
      watch.boundAt.set(name, nowMs());
      for (const listener of watch.listeners) listener(name);
    });
    await informer.start();
    return watch;
  }

  /**
   * Resolves true once every claim of `names` has been seen bound, false when `timeoutMs` passes first (the caller
   * reports how many made it).
   */
  async waitBound(names: readonly string[], timeoutMs: number): Promise<boolean> {
    const pending = new Set(names.filter((n) => !this.boundAt.has(n)));
    if (pending.size === 0) return true;
    return await new Promise<boolean>((resolve) => {
      const finish = (ok: boolean): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(ok);
      };
      const listener = (name: string): void => {
        pending.delete(name);
        if (pending.size === 0) finish(true);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      this.listeners.add(listener);
    });
  }

  /** Stops the watch. */
  stop(): void {
    this.informer.stop();
  }
}
