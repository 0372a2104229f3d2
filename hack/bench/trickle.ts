/**
 * Scenario 5, the trickle: claims created one at a time into a pool that already holds `held` addresses, as
 * machines are provisioned one after another. What one claim costs the controller when a pool pass cannot serve many
 * claims at once: CPU, API requests, body bytes at its API door (watch streams included), create → bound.
 *
 * The controllers of a trickle watch its namespace only, as a controller limited to one namespace does, except for a
 * cluster-scoped pool (GlobalInClusterIPPool), whose claims come from several namespaces: a controller limited to one
 * namespace does not serve it, so those trickles run a controller of all namespaces, which also holds what the earlier
 * scenarios left in the cluster. Its start-up passes over those are over before the window opens (see
 * {@link waitIdle}); what it holds beyond the trickle's pool still weighs on its garbage collector.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { poll, sleep } from "../testkit/wait.js";
import { startBenchController, startFloorClient, type BenchController } from "./controller.js";
import {
  cpuSeconds,
  perClaim as requestsPerClaim,
  readDoorBytes,
  readRequestCounts,
  requestDelta,
  type DoorBytes,
  type RequestsPerClaim,
} from "./efficiency.js";
import type { BenchClaimKind } from "./kinds.js";
import { namespaceOf, type BenchPool } from "./pools.js";
import { boundAddresses, claimNamespaces, runLimited, waitPoolReconciled, type BenchContext } from "./scenarios.js";
import { nowMs, summarize, type Summary } from "./stats.js";
import { ClaimWatch } from "./watch.js";

/** Options of {@link trickle}. */
export interface TrickleOptions {
  /** Addresses the pool holds before the trickle: claims of the same kind, bound by a controller. */
  held: number;
  /** Claims created one at a time. */
  claims: number;
  /** Pause after each create has returned, before the next. */
  gapMs: number;
  /** Creates in flight while the held claims are loaded. */
  concurrency: number;
  /**
   * Claims the measured process serves one at a time, as the trickle does, in a pool of their own, before its window
   * (BENCH_TRICKLE_WARMUP): V8 has compiled the claim's paths by then.
   */
  warmup: number;
}

/** The warm-up before a measured window: its claims, and the measured process's CPU per claim over them. */
export interface WarmupResult {
  claims: number;
  cpuMsPerClaim: number;
}

/** Result of {@link trickle}. */
export interface TrickleResult {
  /** The claim kind ({@link BenchClaimKind.label}). */
  kind: string;
  /** The pool kind ({@link BenchPool.label}); absent in older runs, all on IPPools. */
  pool?: string;
  /** Namespaces the claims (held and trickled) were spread over; absent in older runs (one). */
  namespaces?: number;
  /** Whether the controllers watched all namespaces (a cluster-scoped pool) rather than the trickle's one. */
  allNamespaces?: boolean;
  held: number;
  claims: number;
  gapMs: number;
  /** Loading and binding the held claims (before the measured controller starts), ms. */
  preloadMs: number;
  /** The measured controller's warm-up, right after its start (absent in runs from before it, and with none). */
  warmup?: WarmupResult;
  /** First create sent → the pool's status counts every claim, ms: the measured window. */
  windowMs: number;
  /**
   * The window on the monotonic clock (ms), as V8's profiler reads it too: `npx tsx hack/bench/cpuprofile.ts <profile>
   * --window=<from>,<to>` sums up the measured controller's CPU profile over the window only.
   */
  monotonicWindowMs: [number, number];
  /** Controller CPU (user + system) in the window, ms per claim. */
  cpuMsPerClaim: number;
  /** API requests of the controller in the window, per claim (the API server's count, the driver's own left out). */
  requests: RequestsPerClaim;
  /** Body bytes at the controller's API door in the window, per claim. */
  bytesPerClaim: DoorBytes;
  /** Per claim: create sent → seen bound (watch), ms. */
  bindMs: Summary;
  /** Claims not seen bound before the deadline. */
  timedOut: number;
  /** Trickle claims whose address resolves, and how many distinct addresses they got. */
  verified: number;
  distinct: number;
}

/** Idle time before and after the measured window, so start-up work and trailing events fall outside and inside it. */
const QUIET_MS = 2_000;
const TRAIL_MS = 1_000;
/** The controller counts as idle once it used at most IDLE_CPU_S of CPU over IDLE_SAMPLE_MS. */
const IDLE_SAMPLE_MS = 1_000;
const IDLE_CPU_S = 0.02;

/** Where a trickle's claims go: its pool (name and kind) and the namespaces its claims are spread over. */
interface Place {
  pool: BenchPool;
  poolName: string;
  namespaces: string[];
  /** The namespace its controllers watch; undefined for all (a cluster-scoped pool). */
  scope: string | undefined;
}

const names = (prefix: string, count: number): string[] =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i + 1).padStart(5, "0")}`);

/**
 * The held addresses are real claims of `kind`, bound by a controller of their own (stopped before the measured one
 * starts), not IPAddress records made by hand: Metal3's `status.indexes` lists every claim, so a pool's status, its
 * watch events and its records are as large as they are in use. The measured controller then starts on a pool in
 * that state, as after a restart, and its CPU profile holds its start-up and the trickle, not the loading.
 */
async function preload(ctx: BenchContext, kind: BenchClaimKind, place: Place, options: TrickleOptions): Promise<void> {
  const loader = await startBenchController(ctx.kubeconfigPath, ctx.logDir, {
    ...(place.scope ? { namespace: place.scope } : {}),
    profile: false,
  });
  const [namespace] = place.namespaces as [string];
  try {
    await waitPoolReconciled(ctx, loader, place.pool, namespace, place.poolName);
    if (options.held === 0) return;
    const watch = await ClaimWatch.start(ctx.kc, kind, place.namespaces);
    try {
      const held = names("held", options.held);
      await loader.guard(
        runLimited(held, options.concurrency, (n, i) =>
          kind.create(ctx.kc, namespaceOf(place.namespaces, i), n, place.poolName),
        ),
      );
      if (!(await loader.guard(watch.waitBound(held, ctx.timeoutMs))))
        throw new Error(`${options.held} held ${kind.label}s were not bound within ${ctx.timeoutMs / 1000} s`);
      await waitPoolUsed(ctx, loader, place, options.held);
    } finally {
      watch.stop();
    }
  } finally {
    await loader.stop();
  }
}

/** Waits until the pool's status counts `used` addresses; returns the GETs it sent (the driver's own requests). */
async function waitPoolUsed(
  ctx: BenchContext,
  controller: BenchController,
  place: Place,
  used: number,
): Promise<number> {
  let gets = 0;
  const [namespace] = place.namespaces as [string];
  const ok = await controller.guard(
    poll(
      async () => {
        gets++;
        return ((await place.pool.used(ctx.kc, namespace, place.poolName)) ?? -1) >= used;
      },
      ctx.timeoutMs,
      50,
    ),
  );
  if (!ok)
    throw new Error(
      `${place.pool.label} ${place.poolName} (namespace ${namespace}) did not count ${used} addresses within ${ctx.timeoutMs / 1000} s`,
    );
  return gets;
}

/**
 * Resolves once the controller used at most {@link IDLE_CPU_S} of CPU over {@link IDLE_SAMPLE_MS}: its start-up
 * passes are over (a controller of all namespaces passes over every pool the cluster holds when it starts).
 */
export async function waitIdle(ctx: BenchContext, controller: BenchController): Promise<void> {
  const deadline = nowMs() + ctx.timeoutMs;
  while (nowMs() < deadline) {
    const before = await cpuSeconds(controller.pid);
    await controller.guard(sleep(IDLE_SAMPLE_MS));
    if ((await cpuSeconds(controller.pid)) - before <= IDLE_CPU_S) return;
  }
  throw new Error(`the controller did not go idle within ${ctx.timeoutMs / 1000} s (log ${controller.logFile})`);
}

/** Resolves once the controller's /readyz answers 200 (caches synced). */
export async function waitReady(ctx: BenchContext, controller: BenchController): Promise<void> {
  const ready = async (): Promise<boolean> => {
    try {
      const res = await fetch(`http://127.0.0.1:${controller.healthPort ?? 0}/readyz`);
      return res.status === 200;
    } catch {
      return false;
    }
  };
  if (!(await controller.guard(poll(ready, ctx.timeoutMs, 100))))
    throw new Error(`the controller was not ready within ${ctx.timeoutMs / 1000} s (log ${controller.logFile})`);
}

/** What the window is measured with, read before and after it. */
interface Readings {
  cpu: number;
  requests: Awaited<ReturnType<typeof readRequestCounts>>;
  bytes: DoorBytes;
}

async function readings(kc: KubeConfig, controller: BenchController): Promise<Readings> {
  const [cpu, requests, bytes] = await Promise.all([
    cpuSeconds(controller.pid),
    readRequestCounts(kc),
    readDoorBytes(controller.metricsPort ?? 0),
  ]);
  return { cpu, requests, bytes };
}

/**
 * Creates `claimNames` one at a time into pool `poolName`, round robin over `namespaces`, each once the previous create
 * has returned plus `gapMs`; `onSend` is called just before each create.
 */
async function createOneAtATime(
  ctx: BenchContext,
  measured: { guard<T>(work: Promise<T>): Promise<T> },
  kind: BenchClaimKind,
  target: { namespaces: readonly string[]; poolName: string },
  claimNames: readonly string[],
  gapMs: number,
  onSend: (name: string) => void = () => undefined,
): Promise<void> {
  for (const [i, name] of claimNames.entries()) {
    onSend(name);
    await measured.guard(kind.create(ctx.kc, namespaceOf(target.namespaces, i), name, target.poolName));
    if (gapMs > 0) await sleep(gapMs);
  }
}

/**
 * The warm-up of a measured process ({@link TrickleOptions.warmup}): `count` claims created one at a time into
 * `target`, all bound, then {@link TRAIL_MS}; its CPU per claim over that. `waitServed` resolves once the process's
 * work on them is over (the pool's status written, for a controller).
 */
async function warmUp(
  ctx: BenchContext,
  measured: { pid: number; guard<T>(work: Promise<T>): Promise<T> },
  kind: BenchClaimKind,
  watch: ClaimWatch,
  target: { namespaces: readonly string[]; poolName: string },
  count: number,
  gapMs: number,
  waitServed: () => Promise<unknown> = () => Promise.resolve(),
): Promise<WarmupResult | undefined> {
  if (count === 0) return undefined;
  const warm = names("warmup", count);
  const before = await cpuSeconds(measured.pid);
  await createOneAtATime(ctx, measured, kind, target, warm, gapMs);
  if (!(await measured.guard(watch.waitBound(warm, ctx.timeoutMs))))
    throw new Error(`${count} warm-up ${kind.label}s were not bound within ${ctx.timeoutMs / 1000} s`);
  await waitServed();
  await measured.guard(sleep(TRAIL_MS));
  return { claims: count, cpuMsPerClaim: (((await cpuSeconds(measured.pid)) - before) * 1000) / count };
}

/**
 * Scenario 5: `claims` claims of `kind`, each created once the previous create has returned (plus `gapMs`), not once
 * it is bound, into a fresh pool holding `held` addresses (claims spread round robin over the pool's namespaces, the
 * held ones and the trickled ones alike). The window ends when every claim is bound and the pool's status counts them
 * all (a status written late is in it), plus {@link TRAIL_MS}. Before it, the measured controller serves
 * {@link TrickleOptions.warmup} claims the same way in an empty pool of its own.
 */
export async function trickle(
  ctx: BenchContext,
  kind: BenchClaimKind,
  options: TrickleOptions,
): Promise<TrickleResult> {
  const namespaces = await claimNamespaces(ctx.kc, kind.pool, "bench-trickle");
  const [namespace] = namespaces as [string];
  const place: Place = {
    pool: kind.pool,
    poolName: kind.pool.poolName(namespace, "trickle"),
    namespaces,
    scope: kind.pool.descriptor.namespaced ? namespace : undefined,
  };
  await kind.pool.create(ctx.kc, namespace, place.poolName, options.held + options.claims);
  const warmTarget = { namespaces, poolName: kind.pool.poolName(namespace, "trickle-warmup") };
  if (options.warmup > 0) await kind.pool.create(ctx.kc, namespace, warmTarget.poolName, options.warmup);
  const preloadStart = nowMs();
  await preload(ctx, kind, place, options);
  const preloadMs = nowMs() - preloadStart;

  const controller = await startBenchController(ctx.kubeconfigPath, ctx.logDir, {
    ...(place.scope ? { namespace: place.scope } : {}),
    ports: true,
    profileName: trickleProfileName(kind, options.held),
  });
  try {
    await waitReady(ctx, controller);
    const watch = await ClaimWatch.start(ctx.kc, kind, namespaces);
    try {
      await controller.guard(sleep(QUIET_MS));
      await waitIdle(ctx, controller);
      const warmup = await warmUp(ctx, controller, kind, watch, warmTarget, options.warmup, options.gapMs, () =>
        waitPoolUsed(ctx, controller, { ...place, poolName: warmTarget.poolName }, options.warmup),
      );
      if (warmup) await waitIdle(ctx, controller);
      const trickled = names("claim", options.claims);
      const sentAt = new Map<string, number>();
      const before = await readings(ctx.kc, controller);
      const start = nowMs();
      await createOneAtATime(ctx, controller, kind, place, trickled, options.gapMs, (name) =>
        sentAt.set(name, nowMs()),
      );
      const allBound = await controller.guard(watch.waitBound(trickled, ctx.timeoutMs));
      const gets = allBound ? await waitPoolUsed(ctx, controller, place, options.held + options.claims) : 0;
      await controller.guard(sleep(TRAIL_MS));
      const after = await readings(ctx.kc, controller);
      const end = nowMs();
      const bind = trickled.flatMap((n) => {
        const [bound, sent] = [watch.boundAt.get(n), sentAt.get(n)];
        return bound !== undefined && sent !== undefined ? [bound - sent] : [];
      });
      const addresses = await boundAddresses(ctx.kc, kind, namespaces);
      const verified = trickled.map((n) => addresses.get(n)).filter((a): a is string => a !== undefined);
      const per = (x: number): number => x / options.claims;
      return {
        kind: kind.label,
        pool: kind.pool.label,
        namespaces: namespaces.length,
        allNamespaces: place.scope === undefined,
        held: options.held,
        claims: options.claims,
        gapMs: options.gapMs,
        preloadMs,
        ...(warmup ? { warmup } : {}),
        windowMs: end - start,
        monotonicWindowMs: [start, end],
        cpuMsPerClaim: per((after.cpu - before.cpu) * 1000),
        requests: requestsPerClaim(requestDelta(before.requests, after.requests), options.claims, {
          [kind.createRequest]: options.claims,
          [kind.pool.getRequest]: gets,
        }),
        bytesPerClaim: {
          sent: per(after.bytes.sent - before.bytes.sent),
          received: per(after.bytes.received - before.bytes.received),
          watchReceived: per(after.bytes.watchReceived - before.bytes.watchReceived),
        },
        bindMs: summarize(bind),
        timedOut: options.claims - bind.length,
        verified: verified.length,
        distinct: new Set(verified).size,
      };
    } finally {
      watch.stop();
    }
  } finally {
    await controller.stop();
  }
}

/** The file name of the measured controller's CPU profile (BENCH_CPU_PROF): `trickle-<claim>-<pool>-<held>.cpuprofile`. */
export function trickleProfileName(kind: BenchClaimKind, held: number): string {
  return `trickle-${kind.label}-${kind.pool.label}-${held}.cpuprofile`;
}

/** Result of {@link trickleFloor}. */
export interface FloorResult {
  kind: string;
  pool: string;
  claims: number;
  gapMs: number;
  /** The floor client's warm-up, right after its start (absent in runs from before it, and with none). */
  warmup?: WarmupResult;
  /** The floor client's CPU (user + system) in the window, ms per claim. */
  cpuMsPerClaim: number;
  /** Its API requests in the window, per claim (the API server's count, the driver's creates left out). */
  requests: RequestsPerClaim;
  /** Claims not seen bound before the deadline. */
  timedOut: number;
}

/**
 * The floor under a trickle claim's cost: the same trickle (`claims` claims of `kind`, one at a time,
 * `gapMs` apart, into an empty pool of a namespace of their own) served by no controller but the floor client
 * (floorclient.ts), which receives each claim's events and makes its requests and does nothing else. Its CPU per claim
 * is what a Node client pays for one claim's messages alone; the controller's figure over it is what the controller's
 * own work (caches, passes, allocator, timers, metrics) adds. It warms up as the controller does (its warm-up claims
 * go to the same pool: it has no pool state). Run it while no controller serves the cluster.
 */
export async function trickleFloor(
  ctx: BenchContext,
  kind: BenchClaimKind,
  options: Pick<TrickleOptions, "claims" | "gapMs" | "warmup">,
): Promise<FloorResult> {
  const [namespace] = (await claimNamespaces(ctx.kc, kind.pool, "bench-floor")) as [string];
  const poolName = kind.pool.poolName(namespace, "floor");
  await kind.pool.create(ctx.kc, namespace, poolName, options.warmup + options.claims);
  const client = await startFloorClient(
    ctx.kubeconfigPath,
    ctx.logDir,
    [namespace, kind.label, kind.pool.label, poolName],
    ctx.timeoutMs,
  );
  try {
    const watch = await ClaimWatch.start(ctx.kc, kind, [namespace]);
    try {
      await client.guard(sleep(QUIET_MS));
      const target = { namespaces: [namespace], poolName };
      const warmup = await warmUp(ctx, client, kind, watch, target, options.warmup, options.gapMs);
      const trickled = names("floor", options.claims);
      const [cpuBefore, requestsBefore] = await Promise.all([cpuSeconds(client.pid), readRequestCounts(ctx.kc)]);
      await createOneAtATime(ctx, client, kind, target, trickled, options.gapMs);
      await client.guard(watch.waitBound(trickled, ctx.timeoutMs));
      await client.guard(sleep(TRAIL_MS));
      const [cpuAfter, requestsAfter] = await Promise.all([cpuSeconds(client.pid), readRequestCounts(ctx.kc)]);
      return {
        kind: kind.label,
        pool: kind.pool.label,
        claims: options.claims,
        gapMs: options.gapMs,
        ...(warmup ? { warmup } : {}),
        cpuMsPerClaim: ((cpuAfter - cpuBefore) * 1000) / options.claims,
        requests: requestsPerClaim(requestDelta(requestsBefore, requestsAfter), options.claims, {
          [kind.createRequest]: options.claims,
        }),
        timedOut: trickled.filter((n) => !watch.boundAt.has(n)).length,
      };
    } finally {
      watch.stop();
    }
  } finally {
    await client.stop();
  }
}
