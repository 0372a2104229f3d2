/**
 * The validation work of the pool webhooks as pure jobs: plain data in, plain data out, no I/O. The handlers read
 * the cluster and then run a job, in the request's thread when it is small and in the validation worker otherwise
 * (offload.ts); validator-worker.ts runs the same functions, so both answer alike.
 */
import type { InClusterIPPool } from "../../api/incluster/types.js";
import type { IPPool, Pool } from "../../api/v1alpha1/types.js";
import type { FieldError } from "../ipam/fielderror.js";
import { droppedInUse, validateInClusterPool } from "../ipam/incluster-validation.js";
import { capWarnings, ipPoolUpdateWarnings, ipPoolWarnings, validateIPPool } from "../ipam/validation.js";

/** The API server truncates long warning lists; beyond this many we summarise. */
export const MAX_WARNINGS = 20;

/** An IPPool to validate with what was read for it. */
export interface IPPoolInput {
  object: IPPool;
  old: IPPool | undefined;
  /** Addresses in use in the pool (read only when `spec.pools` changed). */
  inUse: string[];
  /** The pools of its namespace, for warnings; none when they could not be read. */
  others: IPPool[];
}

/** The errors and (capped) warnings of an IPPool. */
export interface IPPoolVerdict {
  errors: FieldError[];
  warnings: string[];
}

/** Every job: its input and output. */
export interface Jobs {
  ipPool: { input: IPPoolInput; output: IPPoolVerdict };
  inClusterSpec: { input: { pool: InClusterIPPool; old: InClusterIPPool | undefined }; output: FieldError[] };
  inClusterDropped: { input: { pool: InClusterIPPool; inUse: string[] }; output: string | undefined };
}

export type JobName = keyof Jobs;

/** The function of every job. */
export const JOBS: { [K in JobName]: (input: Jobs[K]["input"]) => Jobs[K]["output"] } = {
  ipPool: ({ object, old, inUse, others }) => ({
    errors: validateIPPool(object, old, inUse),
    warnings: capWarnings(
      [...ipPoolWarnings(object, others, MAX_WARNINGS), ...ipPoolUpdateWarnings(object, old, inUse)],
      MAX_WARNINGS,
    ),
  }),
  inClusterSpec: ({ pool, old }) => validateInClusterPool(pool, old),
  inClusterDropped: ({ pool, inUse }) => droppedInUse(pool, inUse),
};

function length(list: unknown): number {
  return Array.isArray(list) ? list.length : 0;
}

function keys(record: unknown): number {
  return record !== null && typeof record === "object" ? Object.keys(record).length : 0;
}

/** The entries, preallocations and DNS servers of an IPPool: what its validation's cost grows with. */
function ipPoolItems(pool: IPPool | undefined): number {
  const pools: unknown = pool?.spec?.pools;
  const entries = Array.isArray(pools) ? (pools as (Pool | null)[]) : [];
  let n = entries.length + keys(pool?.spec?.preAllocations) + length(pool?.spec?.dnsServers);
  for (const e of entries) n += length(e?.dnsServers);
  return n;
}

function inClusterItems(pool: InClusterIPPool | undefined): number {
  return length(pool?.spec?.addresses) + length(pool?.spec?.excludedAddresses);
}

const SIZES: { [K in JobName]: (input: Jobs[K]["input"]) => number } = {
  ipPool: ({ object, old, inUse, others }) =>
    ipPoolItems(object) + ipPoolItems(old) + length(inUse) + others.reduce((n, p) => n + ipPoolItems(p), 0),
  inClusterSpec: ({ pool, old }) => inClusterItems(pool) + inClusterItems(old),
  inClusterDropped: ({ pool, inUse }) => inClusterItems(pool) + length(inUse),
};

/** How many items a job goes through: its cost grows as this times its logarithm. */
export function jobSize<K extends JobName>(name: K, input: Jobs[K]["input"]): number {
  return SIZES[name](input);
}
