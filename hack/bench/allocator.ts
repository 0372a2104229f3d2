/**
 * Scenario 3: the pure allocator, no API server. Each run fills a fresh PoolAllocator the way the controller does
 * (`allocate`, then `reserve` the result) and times two windows: the first allocations and the last ones. The `work`
 * counter (free-set tree nodes visited) is read at the same points, so cost growth shows even when timers are noisy.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { AllocationStrategy, IPPoolSpec } from "../../api/v1alpha1/types.js";
import { PoolAllocator } from "../../src/ipam/allocator.js";
import { seededRng } from "../../src/ipam/random.js";
import { median } from "./stats.js";

/** One allocator configuration to measure. */
export interface AllocatorCase {
  label: string;
  subnet: string;
  strategy: AllocationStrategy;
}

/** The cases of the report: a /16 and a /64, each sequential and random. */
export const ALLOCATOR_CASES: readonly AllocatorCase[] = [
  { label: "IPv4 /16 sequential", subnet: "10.0.0.0/16", strategy: "sequential" },
  { label: "IPv4 /16 random", subnet: "10.0.0.0/16", strategy: "random" },
  { label: "IPv6 /64 sequential", subnet: "2001:db8::/64", strategy: "sequential" },
  { label: "IPv6 /64 random", subnet: "2001:db8::/64", strategy: "random" },
];

/** Cost of one window of allocations, per allocation (medians over the repeats). */
export interface WindowCost {
  /** First and last allocation of the window, 1-based. */
  from: number;
  to: number;
  microsPerAllocation: number;
  workPerAllocation: number;
}

/** Everything measured for one case. */
export interface AllocatorResult {
  label: string;
  subnet: string;
  strategy: AllocationStrategy;
  allocations: number;
  repeats: number;
  first: WindowCost;
  last: WindowCost;
  /** Wall time of a whole run (all allocations), median over the repeats, in ms. */
  runMs: number;
  /**
   * Heap retained by a fresh allocator (averaged over 1000 of them), and by one holding `allocations` addresses;
   * medians of 3 measurements, code spaces excluded; undefined when the garbage collector cannot be reached.
   */
  heapEmptyBytes?: number;
  heapFilledBytes?: number;
  /** `capacity()` after a run: total addresses of the pool and addresses counted used (should equal allocations). */
  capacityTotal: string;
  capacityUsed: string;
}

interface RunSample {
  firstNs: number;
  firstWork: number;
  lastNs: number;
  lastWork: number;
  totalNs: number;
  used: bigint;
  total: bigint;
}

function specOf(c: AllocatorCase): IPPoolSpec {
  return { namePrefix: "bench", pools: [{ subnet: c.subnet }], allocationStrategy: c.strategy };
}

/** Fills a fresh allocator with `names.length` claims, timing allocations [1, window] and [n-window+1, n]. */
function runOnce(c: AllocatorCase, names: readonly string[], window: number, seed: number): RunSample {
  const allocator = new PoolAllocator(specOf(c), { rng: seededRng(seed) });
  const n = names.length;
  const lastStart = n - window;
  let firstNs = 0;
  let firstWork = 0;
  let lastNs = 0;
  let lastWork = 0;
  let t0 = 0n;
  let w0 = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    if (i === 0 || i === lastStart) {
      w0 = allocator.work;
      t0 = process.hrtime.bigint();
    }
    const claimName = names[i] ?? "";
    const result = allocator.allocate({ claimName });
    if (!result.ok) throw new Error(`${c.label}: allocation ${i + 1} failed: ${result.message}`);
    allocator.reserve(result.address, { kind: "claim", claimName });
    if (i === window - 1) {
      firstNs = Number(process.hrtime.bigint() - t0);
      firstWork = allocator.work - w0;
    }
    if (i === n - 1) {
      lastNs = Number(process.hrtime.bigint() - t0);
      lastWork = allocator.work - w0;
    }
  }
  const totalNs = Number(process.hrtime.bigint() - start);
  const capacity = allocator.capacity();
  return { firstNs, firstWork, lastNs, lastWork, totalNs, used: capacity.used, total: capacity.total };
}

/** The garbage collector, exposed at run time when node was not started with --expose-gc; undefined if impossible. */
function garbageCollector(): (() => void) | undefined {
  const existing = (globalThis as { gc?: unknown }).gc;
  if (typeof existing === "function") return existing as () => void;
  try {
    setFlagsFromString("--expose-gc");
    const fn: unknown = runInNewContext("gc");
    return typeof fn === "function" ? (fn as () => void) : undefined;
  } catch {
    return undefined;
  }
}

/** Heap in use after full collections, without code spaces (JIT output would add noise unrelated to the data). */
function settledHeap(gc: () => void): number {
  gc();
  gc();
  return getHeapSpaceStatistics()
    .filter((s) => !s.space_name.includes("code"))
    .reduce((sum, s) => sum + s.space_used_size, 0);
}

/** Empty allocators built at once to measure one: a few KiB each would drown in the collector's noise alone. */
const EMPTY_COPIES = 1000;

/**
 * Heap retained by an empty allocator of `c` (the average of EMPTY_COPIES) and by one after `names.length`
 * allocations.
 */
function heapCost(c: AllocatorCase, names: readonly string[]): { empty: number; filled: number } | undefined {
  const gc = garbageCollector();
  if (!gc) return undefined;
  let base = settledHeap(gc);
  const copies = Array.from({ length: EMPTY_COPIES }, (_, i) => new PoolAllocator(specOf(c), { rng: seededRng(i) }));
  const empty = (settledHeap(gc) - base) / copies.length;
  copies.length = 0;
  base = settledHeap(gc);
  const allocator = new PoolAllocator(specOf(c), { rng: seededRng(7) });
  for (const claimName of names) {
    const result = allocator.allocate({ claimName });
    if (result.ok) allocator.reserve(result.address, { kind: "claim", claimName });
  }
  const filled = settledHeap(gc) - base;
  // Keep the allocator reachable until after the measurement.
  if (allocator.capacity().used < 0n) throw new Error("unreachable");
  return { empty, filled };
}

/** Measures one case: a warm-up run, then `repeats` measured runs with different seeds; medians of each figure. */
export function measureAllocator(
  c: AllocatorCase,
  allocations: number,
  window: number,
  repeats: number,
): AllocatorResult {
  const names = Array.from({ length: allocations }, (_, i) => `claim-${i + 1}`);
  runOnce(c, names, window, 1);
  const samples = Array.from({ length: repeats }, (_, r) => runOnce(c, names, window, 100 + r));
  const pick = (f: (s: RunSample) => number): number => median(samples.map(f));
  const heaps = [heapCost(c, names), heapCost(c, names), heapCost(c, names)].filter((h) => h !== undefined);
  const heap =
    heaps.length > 0
      ? { empty: median(heaps.map((h) => h.empty)), filled: median(heaps.map((h) => h.filled)) }
      : undefined;
  const last = samples[samples.length - 1];
  return {
    label: c.label,
    subnet: c.subnet,
    strategy: c.strategy,
    allocations,
    repeats,
    first: {
      from: 1,
      to: window,
      microsPerAllocation: pick((s) => s.firstNs) / window / 1000,
      workPerAllocation: pick((s) => s.firstWork) / window,
    },
    last: {
      from: allocations - window + 1,
      to: allocations,
      microsPerAllocation: pick((s) => s.lastNs) / window / 1000,
      workPerAllocation: pick((s) => s.lastWork) / window,
    },
    runMs: pick((s) => s.totalNs) / 1e6,
    ...(heap ? { heapEmptyBytes: heap.empty, heapFilledBytes: heap.filled } : {}),
    capacityTotal: (last?.total ?? 0n).toString(),
    capacityUsed: (last?.used ?? 0n).toString(),
  };
}
