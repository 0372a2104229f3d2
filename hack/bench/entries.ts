/**
 * Scenario 3b: the pure allocator's cost per decision against the number of entries of a pool, no API server. Each
 * case builds a pool of n entries whose first entries are full (their free addresses held, as the records of a full
 * pass hold them), then times decisions (`allocate`, then `reserve`, as the controller makes them) that must find the
 * next free address past them. The cases are the two ways a pool gets many entries: an in-cluster pool with n excluded
 * addresses (each splits the set), and a Metal3 pool of n entries with preallocations. Flat or logarithmic in n is the
 * goal; a scan of the entries is linear.
 */
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import type { IPPoolSpec, Pool } from "../../api/v1alpha1/types.js";
import { formatAddress } from "../../src/ipam/address.js";
import { compileSteps, PoolAllocator, type CompiledSpace } from "../../src/ipam/allocator.js";
import { inClusterSpaceSteps } from "../../src/ipam/incluster.js";
import type { Steps } from "../../src/ipam/steps.js";
import { median } from "./stats.js";

/** Entry counts measured. */
export const ENTRY_COUNTS: readonly number[] = [10, 100, 1_000, 10_000, 100_000];
/** Decisions timed per run. */
const DECISIONS = 1_000;
/** Metal3 preallocations at most (the webhook's checks of each against every entry make larger specs slow to build). */
const MAX_PREALLOCATIONS = 1_000;

export type EntriesCase = "InClusterIPPool, excluded addresses" | "IPPool, entries with preallocations";
export const ENTRIES_CASES: readonly EntriesCase[] = [
  "InClusterIPPool, excluded addresses",
  "IPPool, entries with preallocations",
];

/** One case at one entry count. */
export interface EntriesResult {
  label: EntriesCase;
  /** Entries of the pool (in-cluster: ranges of its allocatable set). */
  entries: number;
  /** Full entries before the first free address when the timed decisions start. */
  fullBefore: number;
  decisions: number;
  repeats: number;
  /** Building the allocator (compile, validate) and holding the full entries' addresses; median, ms. */
  buildMs: number;
  /**
   * The longest step of that build as the controller runs it (the compilation's steps, src/ipam/steps.ts, then the
   * allocator opened on it): the longest its event loop is held; median, ms. Absent in older results.
   */
  longestStepMs?: number;
  microsPerDecision: number;
  workPerDecision: number;
}

const BASE = 0x0a000000n;
const v4 = (value: bigint): string => formatAddress({ family: 4, value });

/**
 * An in-cluster pool of `n` ranges: the first `n` odd addresses of 10.0.0.0/8 excluded leave `n` - 1 single addresses,
 * then the rest of the /8; the single addresses are held.
 */
function inClusterPool(n: number, steps: StepTimer): { allocator: PoolAllocator; held: string[] } {
  const excludedAddresses = Array.from({ length: n }, (_, i) => v4(BASE + BigInt(2 * i + 1)));
  const spec: InClusterIPPoolSpec = { addresses: ["10.0.0.0/8"], excludedAddresses, prefix: 8 };
  const allocator = steps.open(steps.run(compileSteps(steps.run(inClusterSpaceSteps(spec)))));
  const held = Array.from({ length: n - 1 }, (_, i) => v4(BASE + BigInt(2 * i + 2)));
  return { allocator, held };
}

/**
 * A Metal3 pool of `n` entries (`start`/`end`) of four addresses, the last one room for the timed decisions; up to
 * {@link MAX_PREALLOCATIONS} of them, spread over the entries, with their first address preallocated. Every address of
 * the first `n` - 1 entries is held or preallocated.
 */
function metal3Pool(n: number, steps: StepTimer): { allocator: PoolAllocator; held: string[] } {
  const pools: Pool[] = Array.from({ length: n }, (_, i) => ({
    start: v4(BASE + BigInt(4 * i)),
    end: v4(BASE + BigInt(4 * i + (i === n - 1 ? DECISIONS + 3 : 3))),
  }));
  const every = Math.max(1, Math.ceil(n / MAX_PREALLOCATIONS));
  const preAllocations: Record<string, string> = {};
  for (let i = 0; i < n; i += every) preAllocations[`pre-${i}`] = pools[i]!.start!;
  const spec: IPPoolSpec = { namePrefix: "bench", pools, preAllocations };
  const allocator = steps.open(steps.run(compileSteps(spec)));
  const held: string[] = [];
  for (let i = 0; i < n - 1; i++) {
    for (let k = i % every === 0 ? 1 : 0; k < 4; k++) held.push(v4(BASE + BigInt(4 * i + k)));
  }
  return { allocator, held };
}

/** Runs a build's steps one after the other, as the controller does, noting the longest. */
class StepTimer {
  longestNs = 0;

  run<T>(steps: Steps<T>): T {
    for (;;) {
      const t0 = process.hrtime.bigint();
      const next = steps.next();
      this.longestNs = Math.max(this.longestNs, Number(process.hrtime.bigint() - t0));
      if (next.done) return next.value;
    }
  }

  open(compiled: CompiledSpace): PoolAllocator {
    const t0 = process.hrtime.bigint();
    const allocator = new PoolAllocator(compiled);
    this.longestNs = Math.max(this.longestNs, Number(process.hrtime.bigint() - t0));
    return allocator;
  }
}

interface Sample {
  buildNs: number;
  longestStepNs: number;
  decideNs: number;
  work: number;
}

function runOnce(label: EntriesCase, n: number): Sample {
  const t0 = process.hrtime.bigint();
  const steps = new StepTimer();
  const { allocator, held } = label.startsWith("InCluster") ? inClusterPool(n, steps) : metal3Pool(n, steps);
  held.forEach((address, i) => allocator.reserve(address, { kind: "claim", claimName: `held-${i}` }));
  const t1 = process.hrtime.bigint();
  const w0 = allocator.work;
  for (let i = 0; i < DECISIONS; i++) {
    const claimName = `claim-${i}`;
    const result = allocator.allocate({ claimName });
    if (!result.ok) throw new Error(`${label} (${n} entries): decision ${i + 1} failed: ${result.message}`);
    allocator.reserve(result.address, { kind: "claim", claimName });
  }
  const t2 = process.hrtime.bigint();
  return {
    buildNs: Number(t1 - t0),
    longestStepNs: steps.longestNs,
    decideNs: Number(t2 - t1),
    work: allocator.work - w0,
  };
}

/** Measures one case at `n` entries: a warm-up run, then `repeats` measured runs; medians. */
export function measureEntries(label: EntriesCase, n: number, repeats: number): EntriesResult {
  runOnce(label, n);
  const samples = Array.from({ length: repeats }, () => runOnce(label, n));
  const pick = (f: (s: Sample) => number): number => median(samples.map(f));
  return {
    label,
    entries: n,
    fullBefore: n - 1,
    decisions: DECISIONS,
    repeats,
    buildMs: pick((s) => s.buildNs) / 1e6,
    longestStepMs: pick((s) => s.longestStepNs) / 1e6,
    microsPerDecision: pick((s) => s.decideNs) / DECISIONS / 1000,
    workPerDecision: pick((s) => s.work) / DECISIONS,
  };
}
