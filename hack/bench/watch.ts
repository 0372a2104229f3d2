/**
 * Observes claims of some namespaces through a list+watch each and notes, per claim, the first moment it was seen
 * bound (claims are told apart by name: a scenario names its claims uniquely across its namespaces).
 * Timestamps are taken when the watch event reaches this process (see stats.nowMs), so they include the API
 * server's watch delivery, as any consumer of the claim would experience it.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { Informer } from "../../src/kube/informer.js";
import { ResourceClient, type KubeObject } from "../../src/kube/resource.js";
import { silentLogger } from "../../src/runtime/logger.js";
import type { BenchClaimKind } from "./kinds.js";
import { nowMs } from "./stats.js";

/** First-seen-bound times of the claims of a scenario's namespaces. */
export class ClaimWatch {
  /** Claim name → nowMs() when the watch first showed it bound. */
  readonly boundAt = new Map<string, number>();
  private readonly listeners = new Set<(name: string) => void>();

  private constructor(private readonly informers: readonly Informer<KubeObject>[]) {}

  /** Starts watching `namespaces` for claims of `kind`; resolves once the initial lists are in. */
  static async start(kc: KubeConfig, kind: BenchClaimKind, namespaces: readonly string[]): Promise<ClaimWatch> {
    const client = new ResourceClient<KubeObject>(kc, kind.claimType);
    const informers = namespaces.map(
      (namespace) => new Informer<KubeObject>(kc, client, { namespace, resyncMs: 0, logger: silentLogger() }),
    );
    const watch = new ClaimWatch(informers);
    for (const informer of informers)
      informer.on((event, obj) => {
        if (event === "delete" || !kind.isBound(obj)) return;
        const name = obj.metadata.name ?? "";
        if (watch.boundAt.has(name)) return;
        watch.boundAt.set(name, nowMs());
        for (const listener of watch.listeners) listener(name);
      });
    try {
      await Promise.all(informers.map((informer) => informer.start()));
    } catch (err) {
      watch.stop();
      throw err;
    }
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

  /** Stops the watches. */
  stop(): void {
    for (const informer of this.informers) informer.stop();
  }
}
