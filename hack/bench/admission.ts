/**
 * Scenario 7: admission validation only, no API server. The pool webhooks' jobs (src/webhooks/jobs.ts) in the
 * calling thread, as the worker runs them, on pools of 10 to 100,000 entries: an IPPool with as many preallocations
 * outside its entries (each refused), updated while as many addresses are in use, among three pools of a fifth as
 * many entries that all overlap it; and an InClusterIPPool with as many excluded addresses and addresses in use. The
 * time per entry shows the growth: flat or logarithmic, where a scan per item grew linearly.
 */
import type { InClusterIPPool } from "../../api/incluster/types.js";
import type { IPPool } from "../../api/v1alpha1/types.js";
import { JOBS } from "../../src/webhooks/jobs.js";
import { median } from "./stats.js";

/** The pool sizes of the report. */
export const ADMISSION_SIZES = [10, 100, 1_000, 10_000, 100_000] as const;

/** One size measured: medians over the repeats, in ms. */
export interface AdmissionResult {
  entries: number;
  repeats: number;
  ipPoolMs: number;
  inClusterMs: number;
  /** Errors of the IPPool (one per preallocation and per address in use dropped): a check that the work was done. */
  ipPoolErrors: number;
}

function ten(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

function ipPools(n: number): { object: IPPool; old: IPPool; inUse: string[]; others: IPPool[] } {
  const preAllocations: Record<string, string> = {};
  for (let i = 0; i < n; i++) preAllocations[`claim-${i}`] = `11.${ten(i).slice(3)}`;
  const entries = Array.from({ length: n }, (_, i) => ({ start: ten(i * 4 + 1), end: ten(i * 4 + 2) }));
  const pool = (name: string, pools: IPPool["spec"]["pools"], pre?: Record<string, string>): IPPool => ({
    metadata: { name, namespace: "bench" },
    spec: { namePrefix: name, pools, ...(pre ? { preAllocations: pre } : {}) },
  });
  const others = [0, 1, 2].map((k) =>
    pool(
      `other-${k}`,
      Array.from({ length: Math.max(1, n / 5) }, () => ({ subnet: "10.0.0.0/8" })),
    ),
  );
  return {
    object: pool("bench", entries.slice(0, Math.max(1, n / 2)), preAllocations),
    old: pool("bench", entries),
    inUse: Array.from({ length: n }, (_, i) => ten(i * 4 + 1)),
    others,
  };
}

function inCluster(n: number): { pool: InClusterIPPool; inUse: string[] } {
  const addresses = Array.from({ length: n }, (_, i) => `${ten(i * 4 + 1)}-${ten(i * 4 + 3)}`);
  const excludedAddresses = Array.from({ length: n }, (_, i) => ten(i * 4 + 2));
  return {
    pool: { metadata: { name: "bench" }, spec: { addresses, excludedAddresses, prefix: 8, gateway: "10.0.0.1" } },
    inUse: Array.from({ length: n }, (_, i) => ten(i * 4 + 3)),
  };
}

function timed(fn: () => void): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

/** Measures one size: `repeats` runs after a warm-up. */
export function measureAdmission(n: number, repeats: number): AdmissionResult {
  const ip = ipPools(n);
  const ic = inCluster(n);
  let ipPoolErrors = 0;
  const ipRun = (): void => {
    ipPoolErrors = JOBS.ipPool(ip).errors.length;
  };
  const icRun = (): void => {
    JOBS.inClusterSpec({ pool: ic.pool, old: undefined });
    JOBS.inClusterDropped(ic);
  };
  ipRun();
  icRun();
  const ipMs: number[] = [];
  const icMs: number[] = [];
  for (let r = 0; r < repeats; r++) {
    ipMs.push(timed(ipRun));
    icMs.push(timed(icRun));
  }
  return { entries: n, repeats, ipPoolMs: median(ipMs), inClusterMs: median(icMs), ipPoolErrors };
}
