/**
 * The scenarios that need an API server: a burst of claims on one pool, one claim at a time on a quiet pool, and the
 * controller's memory with many IPAddress objects. Each scenario makes its own namespaces and pool, so they can run in
 * any order and more than once (e.g. once per {@link BenchClaimKind}): one namespace, or for a cluster-scoped pool
 * {@link BenchPool.claimNamespaces} of them with the claims spread round robin.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { IPAddress } from "../../api/v1alpha1/types.js";
import { freshNamespace } from "../testkit/cluster.js";
import { clients } from "../testkit/ipam.js";
import { poll, sleep } from "../testkit/wait.js";
import { ipAddressName } from "../../src/ipam/naming.js";
import { describeError } from "../../src/kube/errors.js";
import { idleNodeMemory, startBenchController, type BenchController, type ProcMemory } from "./controller.js";
import type { BenchClaimKind } from "./kinds.js";
import { createPool, namespaceOf, readPool, type BenchPool } from "./pools.js";
import { nowMs, summarize, type Summary } from "./stats.js";
import { ClaimWatch } from "./watch.js";
import {
  cpuSeconds,
  perClaim as requestsPerClaim,
  readRequestCounts,
  requestDelta,
  type RequestsPerClaim,
} from "./efficiency.js";

/** What every scenario needs: the cluster and where controller logs go. */
export interface BenchContext {
  kc: KubeConfig;
  kubeconfigPath: string;
  logDir: string;
  /** Deadline of each wait for the controller. */
  timeoutMs: number;
}

/** Runs `fn` over `items` with at most `limit` calls in flight; rejects with the first error once all settled. */
export async function runLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let firstError: unknown;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        await fn(items[index] as T, index);
      } catch (err) {
        firstError ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (firstError !== undefined) throw firstError instanceof Error ? firstError : new Error(describeError(firstError));
}

/** The namespaces of a scenario's claims on a pool of `pool`'s kind: {@link BenchPool.claimNamespaces} fresh ones. */
export async function claimNamespaces(kc: KubeConfig, pool: BenchPool, prefix: string): Promise<string[]> {
  return await Promise.all(Array.from({ length: pool.claimNamespaces }, () => freshNamespace(kc, prefix)));
}

/** Claim name → address of every bound claim of `kind` in `namespaces` (names are unique across them). */
export async function boundAddresses(
  kc: KubeConfig,
  kind: BenchClaimKind,
  namespaces: readonly string[],
): Promise<Map<string, string>> {
  const maps = await Promise.all(namespaces.map((namespace) => kind.boundAddresses(kc, namespace)));
  return new Map(maps.flatMap((m) => [...m]));
}

/** Waits until the controller wrote the status of `pool`'s pool `name`: it is synced and reconciling. */
export async function waitPoolReconciled(
  ctx: BenchContext,
  controller: BenchController,
  pool: BenchPool,
  namespace: string,
  name: string,
): Promise<void> {
  const ok = await controller.guard(
    poll(async () => (await pool.used(ctx.kc, namespace, name)) !== undefined, ctx.timeoutMs, 50),
  );
  if (!ok)
    throw new Error(
      `the controller did not reconcile ${pool.label} ${name} (namespace ${namespace}) within ${ctx.timeoutMs / 1000} s (log ${controller.logFile})`,
    );
}

/** Options of {@link bindBurst}. */
export interface BurstOptions {
  count: number;
  /** Creates in flight. */
  concurrency: number;
  /** The controller serving the cluster; a crash aborts the scenario with its output. */
  controller: BenchController;
  /** How long the controller is left idle after the burst before {@link BurstResult.memorySettled} is read. */
  settleMs: number;
  /**
   * Readings of the caller's own at the measured window's ends: `opened` right before the first create (with the CPU
   * and request counters), `closed` once the last claim was seen bound.
   */
  window?: { opened(): Promise<void>; closed(): Promise<void> };
}

/** Result of {@link bindBurst}. */
export interface BurstResult {
  /** The claim kind ({@link BenchClaimKind.label}). */
  kind: string;
  /** The pool kind ({@link BenchPool.label}); absent in older runs, all on IPPools. */
  pool?: string;
  /** Namespaces the claims were spread over; absent in older runs (one). */
  namespaces?: number;
  count: number;
  concurrency: number;
  /** First create sent → last create answered. */
  createAllMs: number;
  /** First create sent → last claim seen bound (or the deadline, when `timedOut`). */
  bindAllMs: number;
  /** Claims bound per second over bindAllMs. */
  claimsPerSecond: number;
  /** Per claim: its create sent → it was seen bound, in ms. */
  perClaimMs: Summary;
  timedOut: boolean;
  /** Claims seen bound through the watch. */
  boundSeen: number;
  /** Claims whose address reference resolves to an IPAddress naming them (read back after the burst). */
  boundVerified: number;
  /** Distinct addresses among the verified ones; equal to boundVerified when no address was handed out twice. */
  distinctAddresses: number;
  /** Controller CPU time (user + system) from the first create to the last bind, seconds. */
  cpuSeconds: number;
  /** Controller memory read right after the last bind. */
  memoryAfter: ProcMemory;
  /** Controller memory read once it was left idle for `settleMs` after the burst (V8 may have given garbage back). */
  memorySettled: ProcMemory;
  settleMs: number;
  /** API requests the controller made in the same window, per claim (the API server's own count). */
  requests: RequestsPerClaim;
}

/**
 * Scenario 1: `count` claims created at once (`concurrency` in flight) on one fresh pool of the kind's pool kind (its
 * claims spread over its namespaces); time until all are bound.
 */
export async function bindBurst(ctx: BenchContext, kind: BenchClaimKind, options: BurstOptions): Promise<BurstResult> {
  const { count, concurrency, controller } = options;
  const namespaces = await claimNamespaces(ctx.kc, kind.pool, "bench-burst");
  const [namespace] = namespaces as [string];
  const poolName = kind.pool.poolName(namespace, "burst");
  await kind.pool.create(ctx.kc, namespace, poolName, count);
  await waitPoolReconciled(ctx, controller, kind.pool, namespace, poolName);
  const watch = await ClaimWatch.start(ctx.kc, kind, namespaces);
  try {
    const names = Array.from({ length: count }, (_, i) => `burst-${String(i + 1).padStart(5, "0")}`);
    const sentAt = new Map<string, number>();
    const [cpuBefore, requestsBefore] = await Promise.all([
      cpuSeconds(controller.pid),
      readRequestCounts(ctx.kc),
      options.window?.opened(),
    ]);
    const start = nowMs();
    await controller.guard(
      runLimited(names, concurrency, async (name, i) => {
        sentAt.set(name, nowMs());
        await kind.create(ctx.kc, namespaceOf(namespaces, i), name, poolName);
      }),
    );
    const createAllMs = nowMs() - start;
    const allBound = await controller.guard(watch.waitBound(names, ctx.timeoutMs));
    const [cpuAfter, requestsAfter, memoryAfter] = await Promise.all([
      cpuSeconds(controller.pid),
      readRequestCounts(ctx.kc),
      controller.memory(),
      options.window?.closed(),
    ]);
    const boundTimes = names.map((n) => watch.boundAt.get(n)).filter((t): t is number => t !== undefined);
    const bindAllMs = allBound ? Math.max(...boundTimes) - start : nowMs() - start;
    const perClaim = names.flatMap((n) => {
      const bound = watch.boundAt.get(n);
      const sent = sentAt.get(n);
      return bound !== undefined && sent !== undefined ? [bound - sent] : [];
    });
    const addresses = await boundAddresses(ctx.kc, kind, namespaces);
    const verified = names.map((n) => addresses.get(n)).filter((a): a is string => a !== undefined);
    await controller.guard(sleep(Math.max(0, options.settleMs - (nowMs() - start - bindAllMs))));
    const memorySettled = await controller.memory();
    return {
      kind: kind.label,
      pool: kind.pool.label,
      namespaces: namespaces.length,
      count,
      concurrency,
      createAllMs,
      bindAllMs,
      claimsPerSecond: boundTimes.length / (bindAllMs / 1000),
      perClaimMs: summarize(perClaim),
      timedOut: !allBound,
      boundSeen: boundTimes.length,
      boundVerified: verified.length,
      distinctAddresses: new Set(verified).size,
      cpuSeconds: cpuAfter - cpuBefore,
      memoryAfter,
      memorySettled,
      settleMs: options.settleMs,
      requests: requestsPerClaim(requestDelta(requestsBefore, requestsAfter), count, { [kind.createRequest]: count }),
    };
  } finally {
    watch.stop();
  }
}

/** Result of {@link bareClientCeiling}. */
export interface CeilingResult {
  kind: string;
  /** As in {@link BurstResult}. */
  pool?: string;
  namespaces?: number;
  count: number;
  concurrency: number;
  /** First write sent → last write answered. */
  ms: number;
}

/**
 * The ceiling of a burst: a bare client does, with no controller, the writes a controller cannot avoid for `count`
 * claims (see {@link BenchClaimKind.bareWrites}), `concurrency` claims at a time, spread over as many namespaces as the
 * burst's. Run it while no controller serves the cluster, in the same run as the bursts, so both meet the same
 * machine.
 */
export async function bareClientCeiling(
  ctx: BenchContext,
  kind: BenchClaimKind,
  count: number,
  concurrency: number,
): Promise<CeilingResult> {
  const namespaces = await claimNamespaces(ctx.kc, kind.pool, "bench-ceiling");
  const poolName = kind.pool.poolName(namespaces[0] ?? "", "bare");
  const names = Array.from({ length: count }, (_, i) => `bare-${String(i + 1).padStart(5, "0")}`);
  const start = nowMs();
  await runLimited(names, concurrency, async (name, i) => {
    await kind.bareWrites(ctx.kc, namespaceOf(namespaces, i), name, poolName, nthAddress(i + 1));
  });
  const ms = nowMs() - start;
  // Gone before a controller starts: otherwise its first passes over them would be counted in the first burst.
  await runLimited(names, concurrency, async (name, i) => {
    await kind.removeBare(ctx.kc, namespaceOf(namespaces, i), name, poolName, nthAddress(i + 1));
  });
  return { kind: kind.label, pool: kind.pool.label, namespaces: namespaces.length, count, concurrency, ms };
}

/** Options of {@link singleClaimLatency}. */
export interface LatencyOptions {
  count: number;
  controller: BenchController;
  /** Quiet time after each bind before the next create, so each claim meets an idle controller. Default 100 ms. */
  pauseMs?: number;
}

/** Result of {@link singleClaimLatency}. */
export interface LatencyResult {
  kind: string;
  count: number;
  /** Create sent → claim seen bound (watch), ms. */
  bindMs: Summary;
  /** Create sent → create answered, ms: the API server's share of the figure above. */
  createMs: Summary;
  /** Claims not bound within the deadline. */
  timedOut: number;
}

/** Scenario 2: `count` claims, one at a time, on a quiet pool (all in one namespace); per-claim time from create to bound. */
export async function singleClaimLatency(
  ctx: BenchContext,
  kind: BenchClaimKind,
  options: LatencyOptions,
): Promise<LatencyResult> {
  const { count, controller } = options;
  const namespace = await freshNamespace(ctx.kc, "bench-latency");
  const poolName = kind.pool.poolName(namespace, "quiet");
  await kind.pool.create(ctx.kc, namespace, poolName, count);
  await waitPoolReconciled(ctx, controller, kind.pool, namespace, poolName);
  const watch = await ClaimWatch.start(ctx.kc, kind, [namespace]);
  const bind: number[] = [];
  const create: number[] = [];
  let timedOut = 0;
  try {
    for (let i = 1; i <= count; i++) {
      const name = `single-${String(i).padStart(4, "0")}`;
      await sleep(options.pauseMs ?? 100);
      const sent = nowMs();
      await controller.guard(kind.create(ctx.kc, namespace, name, poolName));
      create.push(nowMs() - sent);
      if (!(await controller.guard(watch.waitBound([name], ctx.timeoutMs)))) {
        timedOut++;
        continue;
      }
      bind.push((watch.boundAt.get(name) ?? Number.NaN) - sent);
    }
  } finally {
    watch.stop();
  }
  return { kind: kind.label, count, bindMs: summarize(bind), createMs: summarize(create), timedOut };
}

/** One reading of a controller's memory, with when it was taken. */
export interface MemoryReading extends ProcMemory {
  /** What the controller held: e.g. "idle, empty namespace". */
  state: string;
}

/** Result of {@link controllerMemory}. */
export interface MemoryResult {
  addresses: number;
  /** Creating the IPAddress objects (before the controller starts), ms. */
  loadMs: number;
  /** Controller start → pool status shows every address used, ms (informer sync + first reconcile). */
  syncMs: number;
  /** The controller holding the addresses, read after sync and a settle time. */
  loaded: ProcMemory;
  /** `used` in the pool status when sync was declared. */
  poolUsed: number;
}

/** Options of {@link controllerMemory}. */
export interface MemoryOptions {
  addresses: number;
  concurrency: number;
  /** Time between sync and the reading, so start-up garbage can be collected. Default 5 s. */
  settleMs?: number;
}

/** Starts a controller watching `namespace`, waits until `ready` holds, settles, reads its memory, stops it. */
async function controllerReading(
  ctx: BenchContext,
  namespace: string,
  ready: () => Promise<boolean>,
  settleMs: number,
): Promise<{ memory: ProcMemory; readyMs: number }> {
  const controller = await startBenchController(ctx.kubeconfigPath, ctx.logDir, { namespace });
  try {
    const start = nowMs();
    const ok = await controller.guard(poll(ready, ctx.timeoutMs, 100));
    if (!ok)
      throw new Error(
        `the controller did not sync namespace ${namespace} within ${ctx.timeoutMs / 1000} s (log ${controller.logFile})`,
      );
    const readyMs = nowMs() - start;
    await controller.guard(sleep(settleMs));
    return { memory: await controller.memory(), readyMs };
  } finally {
    await controller.stop();
  }
}

/**
 * An idle controller's memory: a controller scoped to an empty namespace holding one pool (so readiness is visible),
 * plus node's own floor with and without the tsx loader. Run it first, on an empty cluster.
 */
export async function idleMemory(ctx: BenchContext, settleMs = 5_000): Promise<MemoryReading[]> {
  const bare = await idleNodeMemory(false, ctx.logDir);
  const tsx = await idleNodeMemory(true, ctx.logDir);
  const namespace = await freshNamespace(ctx.kc, "bench-idle");
  await createPool(ctx.kc, namespace, "idle", 1);
  const idle = await controllerReading(
    ctx,
    namespace,
    async () => Boolean((await readPool(ctx.kc, namespace, "idle"))?.status?.conditions?.length),
    settleMs,
  );
  return [
    { state: "node, nothing loaded", ...bare },
    { state: "node + tsx loader, nothing loaded", ...tsx },
    { state: "controller, idle, watching 1 namespace: 1 empty pool", ...idle.memory },
  ];
}

function personMadeAddress(namespace: string, poolName: string, address: string, index: number): IPAddress {
  return {
    metadata: { name: ipAddressName(poolName, address), namespace },
    spec: { address, prefix: 16, gateway: "10.0.0.1", pool: { name: poolName }, claim: { name: `host-${index}` } },
  };
}

/** The i-th host address (1-based) of 10.0.0.0/8 as dotted quad. */
export function nthAddress(i: number): string {
  return [10, (i >>> 16) & 255, (i >>> 8) & 255, i & 255].join(".");
}

/**
 * Scenario 4: `addresses` IPAddress objects in one pool, made directly (no owner references, so the controller keeps
 * them as reservations and never deletes them), then a controller started on them; memory once its pool status
 * counts them all.
 */
export async function controllerMemory(ctx: BenchContext, options: MemoryOptions): Promise<MemoryResult> {
  const { addresses, concurrency } = options;
  const c = clients(ctx.kc);
  const namespace = await freshNamespace(ctx.kc, "bench-memory");
  await createPool(ctx.kc, namespace, "mem", addresses);
  const indexes = Array.from({ length: addresses }, (_, i) => i + 1);
  const loadStart = nowMs();
  await runLimited(indexes, concurrency, async (i) => {
    await c.addresses.create(namespace, personMadeAddress(namespace, "mem", nthAddress(i), i));
  });
  const loadMs = nowMs() - loadStart;
  let poolUsed = 0;
  const synced = async (): Promise<boolean> => {
    poolUsed = (await readPool(ctx.kc, namespace, "mem"))?.status?.used ?? 0;
    return poolUsed >= addresses;
  };
  const loaded = await controllerReading(ctx, namespace, synced, options.settleMs ?? 5_000);
  return {
    addresses,
    loadMs,
    syncMs: loaded.readyMs,
    loaded: loaded.memory,
    poolUsed,
  };
}
