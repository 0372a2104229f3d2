/**
 * Scenario 5, the trickle (issue 27): claims created one at a time into a pool that already holds `held` addresses, as
 * machines are provisioned one after another. What one claim costs the controller when a pool pass cannot serve many
 * claims at once: CPU, API requests, body bytes at its API door (watch streams included), create → bound.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { freshNamespace } from "../testkit/cluster.js";
import { poll, sleep } from "../testkit/wait.js";
import { startBenchController, type BenchController } from "./controller.js";
import {
  cpuSeconds,
  perClaim as requestsPerClaim,
  readDoorBytes,
  readRequestCounts,
  requestDelta,
  type DoorBytes,
  type RequestsPerClaim,
} from "./efficiency.js";
import type { ClaimKind } from "./kinds.js";
import { createPool, readPool, runLimited, waitPoolReconciled, type BenchContext } from "./scenarios.js";
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
}

/** Result of {@link trickle}. */
export interface TrickleResult {
  kind: string;
  held: number;
  claims: number;
  gapMs: number;
  /** Loading and binding the held claims (before the measured controller starts), ms. */
  preloadMs: number;
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

const POOL = "trickle";
/** Idle time before and after the measured window, so start-up work and trailing events fall outside and inside it. */
const QUIET_MS = 2_000;
const TRAIL_MS = 1_000;

const names = (prefix: string, count: number): string[] =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i + 1).padStart(5, "0")}`);

/**
 * The held addresses are real claims of `kind`, bound by a controller of their own (stopped before the measured one
 * starts), not IPAddress records made by hand: Metal3's `status.indexes` lists every claim, so a pool's status, its
 * watch events and its records are as large as they are in use. The measured controller then starts on a pool in
 * that state, as after a restart, and its CPU profile holds its start-up and the trickle, not the loading.
 */
async function preload(ctx: BenchContext, kind: ClaimKind, namespace: string, options: TrickleOptions): Promise<void> {
  const loader = await startBenchController(ctx.kubeconfigPath, ctx.logDir, { namespace, profile: false });
  try {
    await waitPoolReconciled(ctx, loader, namespace, POOL);
    if (options.held === 0) return;
    const watch = await ClaimWatch.start(ctx.kc, kind, namespace);
    try {
      const held = names("held", options.held);
      await loader.guard(runLimited(held, options.concurrency, (n) => kind.create(ctx.kc, namespace, n, POOL)));
      if (!(await loader.guard(watch.waitBound(held, ctx.timeoutMs))))
        throw new Error(`${options.held} held ${kind.label}s were not bound within ${ctx.timeoutMs / 1000} s`);
      await waitPoolUsed(ctx, loader, namespace, options.held);
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
  namespace: string,
  used: number,
): Promise<number> {
  let gets = 0;
  const ok = await controller.guard(
    poll(
      async () => {
        gets++;
        return ((await readPool(ctx.kc, namespace, POOL))?.status?.used ?? -1) >= used;
      },
      ctx.timeoutMs,
      50,
    ),
  );
  if (!ok)
    throw new Error(`IPPool ${namespace}/${POOL} did not count ${used} addresses within ${ctx.timeoutMs / 1000} s`);
  return gets;
}

/** Resolves once the controller's /readyz answers 200 (caches synced). */
async function waitReady(ctx: BenchContext, controller: BenchController): Promise<void> {
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
 * Scenario 5: `claims` claims of `kind`, each created once the previous create has returned (plus `gapMs`), not once
 * it is bound, into a fresh pool holding `held` addresses. The window ends when every claim is bound and the pool's
 * status counts them all (a status written late is in it), plus {@link TRAIL_MS}.
 */
export async function trickle(ctx: BenchContext, kind: ClaimKind, options: TrickleOptions): Promise<TrickleResult> {
  const namespace = await freshNamespace(ctx.kc, "bench-trickle");
  await createPool(ctx.kc, namespace, POOL, options.held + options.claims);
  const preloadStart = nowMs();
  await preload(ctx, kind, namespace, options);
  const preloadMs = nowMs() - preloadStart;

  const controller = await startBenchController(ctx.kubeconfigPath, ctx.logDir, {
    namespace,
    ports: true,
    profileName: `trickle-${kind.label}-${options.held}.cpuprofile`,
  });
  try {
    await waitReady(ctx, controller);
    const watch = await ClaimWatch.start(ctx.kc, kind, namespace);
    try {
      await controller.guard(sleep(QUIET_MS));
      const trickled = names("claim", options.claims);
      const sentAt = new Map<string, number>();
      const before = await readings(ctx.kc, controller);
      const start = nowMs();
      for (const name of trickled) {
        sentAt.set(name, nowMs());
        await controller.guard(kind.create(ctx.kc, namespace, name, POOL));
        if (options.gapMs > 0) await sleep(options.gapMs);
      }
      const allBound = await controller.guard(watch.waitBound(trickled, ctx.timeoutMs));
      const gets = allBound ? await waitPoolUsed(ctx, controller, namespace, options.held + options.claims) : 0;
      await controller.guard(sleep(TRAIL_MS));
      const after = await readings(ctx.kc, controller);
      const end = nowMs();
      const bind = trickled.flatMap((n) => {
        const [bound, sent] = [watch.boundAt.get(n), sentAt.get(n)];
        return bound !== undefined && sent !== undefined ? [bound - sent] : [];
      });
      const addresses = await kind.boundAddresses(ctx.kc, namespace);
      const verified = trickled.map((n) => addresses.get(n)).filter((a): a is string => a !== undefined);
      const per = (x: number): number => x / options.claims;
      return {
        kind: kind.label,
        held: options.held,
        claims: options.claims,
        gapMs: options.gapMs,
        preloadMs,
        windowMs: end - start,
        monotonicWindowMs: [start, end],
        cpuMsPerClaim: per((after.cpu - before.cpu) * 1000),
        requests: requestsPerClaim(requestDelta(before.requests, after.requests), options.claims, {
          [kind.createRequest]: options.claims,
          [`GET ipam.metal3.io/ippools`]: gets,
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
