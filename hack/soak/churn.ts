/**
 * The churn of the soak benchmark: per pool, a few loops that create a claim, wait until the controller binds it,
 * and delete it again, while a watch of the namespace notes every claim's first bound moment.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { IPClaim } from "../../api/v1alpha1/types.js";
import { sleep } from "../testkit/wait.js";
import { claim, type Clients } from "../testkit/ipam.js";
import { describeError } from "../../src/kube/errors.js";
import { Informer } from "../../src/kube/informer.js";
import { silentLogger } from "../../src/runtime/logger.js";
import { nowMs } from "../bench/stats.js";

const isBound = (c: IPClaim): boolean =>
  Boolean(c.status?.address?.name) &&
  c.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True") === true;

/** First-bound moments of the claims of one namespace, keyed by uid, through a list+watch. */
export class BindingWatch {
  /** Claims seen bound, by uid. */
  readonly bound = new Set<string>();
  private readonly waiters = new Map<string, () => void>();

  private constructor(private readonly informer: Informer<IPClaim>) {}

  static async start(kc: KubeConfig, c: Clients, namespace: string): Promise<BindingWatch> {
    const informer = new Informer<IPClaim>(kc, c.claims, { namespace, resyncMs: 0, logger: silentLogger() });
    const watch = new BindingWatch(informer);
    informer.on((kind, obj) => {
      const uid = obj.metadata.uid ?? "";
      // Gone claims are forgotten, so the set does not grow with the churn.
      if (kind === "delete") watch.bound.delete(uid);
      if (kind === "delete" || watch.bound.has(uid) || !isBound(obj)) return;
      watch.bound.add(uid);
      watch.waiters.get(uid)?.();
    });
    await informer.start();
    return watch;
  }

  /** Resolves true when the claim `uid` is (or becomes) bound, false after `timeoutMs`. */
  async waitBound(uid: string, timeoutMs: number): Promise<boolean> {
    if (this.bound.has(uid)) return true;
    return await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(uid);
        resolve(false);
      }, timeoutMs);
      this.waiters.set(uid, () => {
        clearTimeout(timer);
        this.waiters.delete(uid);
        resolve(true);
      });
    });
  }

  stop(): void {
    this.informer.stop();
  }
}

/** What the churn did. */
export interface ChurnResult {
  /** Claims created by the churn loops. */
  created: number;
  /** Of those, seen bound within the wait. */
  bound: number;
  /** Created claims not bound within the wait (counted, then deleted anyway). */
  slow: number;
  /** Create→bound latencies, in ms. */
  latenciesMs: number[];
  /** API errors of the loops themselves (creates, deletes), by message. */
  errors: Map<string, number>;
  /** How long the loops ran, in ms. */
  durationMs: number;
}

/** Settings of {@link churn}. */
export interface ChurnOptions {
  namespace: string;
  pools: readonly string[];
  workersPerPool: number;
  durationMs: number;
  /** Longest wait for one claim to be bound before the loop moves on. */
  bindTimeoutMs?: number;
  /** Called every few seconds with the claims bound so far. */
  onProgress?: (bound: number, elapsedMs: number) => void;
}

/** Runs the create→bound→delete loops for `durationMs`; resolves once every loop has finished its last round. */
export async function churn(c: Clients, watch: BindingWatch, options: ChurnOptions): Promise<ChurnResult> {
  const result: ChurnResult = { created: 0, bound: 0, slow: 0, latenciesMs: [], errors: new Map(), durationMs: 0 };
  const started = nowMs();
  const deadline = started + options.durationMs;
  const failed = (err: unknown): void => {
    const message = describeError(err);
    result.errors.set(message, (result.errors.get(message) ?? 0) + 1);
  };
  const progress = options.onProgress
    ? setInterval(() => options.onProgress?.(result.bound, nowMs() - started), 10_000)
    : undefined;
  let sequence = 0;
  const loop = async (poolName: string): Promise<void> => {
    while (nowMs() < deadline) {
      const name = `${poolName}-churn-${++sequence}`;
      let uid: string;
      const t0 = nowMs();
      try {
        uid = (await c.claims.create(options.namespace, claim(options.namespace, name, poolName))).metadata.uid ?? "";
        result.created++;
      } catch (err) {
        failed(err);
        await sleep(500);
        continue;
      }
      if (await watch.waitBound(uid, options.bindTimeoutMs ?? 60_000)) {
        result.bound++;
        result.latenciesMs.push(nowMs() - t0);
      } else {
        result.slow++;
      }
      await c.claims.delete(options.namespace, name).catch(failed);
    }
  };
  try {
    await Promise.all(options.pools.flatMap((p) => Array.from({ length: options.workersPerPool }, () => loop(p))));
  } finally {
    clearInterval(progress);
  }
  result.durationMs = nowMs() - started;
  return result;
}
