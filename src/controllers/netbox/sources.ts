/**
 * A NetBox pool's sources: its prefix or range, then `spec.fallbacks` in order. A claim gets an address of the first
 * source with room; the sources a pool has served keep their places (records there are the pool's). Pure: no
 * Kubernetes or HTTP imports.
 */
import type {
  NetBoxIPPoolSpec,
  NetBoxIPPoolStatus,
  NetBoxPrefixRef,
  NetBoxRangeRef,
} from "../../../api/netbox/types.js";
import { parseAddress } from "../../ipam/address.js";
import { changedParent, type ResolvedParent } from "./parent.js";

/** One source as the spec names it, with what its IPAddresses carry. */
export interface SourceSpec {
  prefix?: NetBoxPrefixRef;
  range?: NetBoxRangeRef;
  gateway?: string;
  addressPrefix?: number;
}

/** The pool's sources in the order they are tried: the spec's prefix or range (with its gateway), then fallbacks. */
export function sourceSpecsOf(spec: NetBoxIPPoolSpec): SourceSpec[] {
  const first: SourceSpec = {
    ...(spec.prefix ? { prefix: spec.prefix } : {}),
    ...(spec.range ? { range: spec.range } : {}),
    ...(spec.gateway ? { gateway: spec.gateway } : {}),
    ...(spec.addressPrefix !== undefined ? { addressPrefix: spec.addressPrefix } : {}),
  };
  return [first, ...(spec.fallbacks ?? [])];
}

/** The source to ask next: the first (in order) not known to be full; undefined when every one is. */
export function nextSource(count: number, full: ReadonlySet<number>): number | undefined {
  for (let i = 0; i < count; i++) if (!full.has(i)) return i;
  return undefined;
}

/**
 * What one request to a source gave: undefined when it has fewer addresses left than asked (NetBox's 409, nothing
 * made), else the items to ask for again (an address no claim may get was offered and is now reserved).
 */
export type AskSource<T> = (source: number, batch: readonly T[]) => Promise<T[] | undefined>;

/**
 * Asks for `items` in batches of `batchSize`, each of the first source not in `full`. A batch a source cannot fill
 * whole is asked for again one item at a time, so the addresses left there go to the first items; the source that
 * runs out is added to `full` and the rest go on to the next source. Returns whether every source ran out with items
 * left. Each request is one call of `ask`, so a pass costs at most one failed call per full source beyond its batches.
 */
export async function fillInOrder<T>(
  items: readonly T[],
  sources: number,
  full: Set<number>,
  ask: AskSource<T>,
  batchSize: number,
): Promise<boolean> {
  const queue = [...items];
  let done = 0;
  while (done < queue.length) {
    const source = nextSource(sources, full);
    if (source === undefined) return true;
    const batch = queue.slice(done, done + batchSize);
    const again = await ask(source, batch);
    if (again) {
      done += batch.length;
      queue.push(...again);
      continue;
    }
    if (batch.length === 1) {
      full.add(source);
      continue;
    }
    for (const one of batch) {
      const left = await ask(source, [one]);
      if (!left) {
        full.add(source);
        break;
      }
      done++;
      queue.push(...left);
    }
  }
  return false;
}

/**
 * Why the pool may not use `resolved`: a source it served (its status says which, in order) is no longer in the
 * same place, or the sources mix families or name one NetBox object twice. The CRD refuses removing or reordering
 * fallbacks; this holds where that was done anyway. Undefined when it may.
 */
export function sourcesProblem(
  status: Pick<NetBoxIPPoolStatus, "netbox" | "sources"> | undefined,
  resolved: readonly ResolvedParent[],
): string | undefined {
  const first = resolved[0];
  if (!first) return "spec names no prefix or range";
  const recorded = status?.sources ?? (status?.netbox ? [status.netbox] : []);
  for (const [i, served] of recorded.entries()) {
    const now = resolved[i];
    if (!now)
      return (
        `the pool served NetBox ${served.display} and its spec no longer names it: its records there would be left ` +
        "behind, so it serves nothing; put the fallback back, or create a new pool"
      );
    const changed = changedParent(served, now);
    if (changed) return changed;
  }
  const seen = new Set<string>();
  for (const source of resolved) {
    if (source.family !== first.family)
      return `${source.display} is IPv${source.family} and the pool's first source is IPv${first.family}`;
    const key = `${source.parent.kind}#${source.parent.id}`;
    if (seen.has(key)) return `${source.display} is named twice among the pool's sources`;
    seen.add(key);
  }
  return undefined;
}

/** The index of the first source whose bounds hold `address` (with or without a mask), or undefined. */
export function sourceHolding(sources: readonly ResolvedParent[], address: string): number | undefined {
  const a = parseAddress(address.split("/")[0] ?? "");
  if (!a) return undefined;
  const i = sources.findIndex((s) => s.family === a.family && s.first <= a.value && a.value <= s.last);
  return i < 0 ? undefined : i;
}

/** NetBox's utilisation of the sources, summed. */
export function usageOf(sources: readonly ResolvedParent[]): { total: number; used: number; free: number } {
  const sum = { total: 0, used: 0, free: 0 };
  for (const s of sources) {
    sum.total += s.size;
    sum.used += s.used;
    sum.free += Math.max(0, s.size - s.used);
  }
  return sum;
}

/** How people name the sources together: `prefix 10.0.0.0/30 (#7), then prefix 10.0.1.0/24 (#8)`. */
export function displayOf(sources: readonly ResolvedParent[]): string {
  return sources.map((s) => s.display).join(", then ");
}
