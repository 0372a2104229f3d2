/**
 * What a kind compiles from a pool's spec (entries, scan order, validation), kept while the spec is unchanged, so a
 * full pass that the spec did not cause (a resync, an edit of labels or annotations, a lost race) neither parses nor
 * validates it again.
 *
 * Unchanged means the same uid and the same `metadata.generation`: the API server bumps the generation on every change
 * of anything but metadata and status, and every pool kind has a status subresource. A pool without either (never
 * read from an API server) is compiled every time. At most `capacity` pools are kept, the least recently used
 * dropped first, so deleted pools cost nothing for long. The capacity follows the pools being served: when a pool
 * dropped while still in use is compiled again (more pools are served than the cache holds, so every round over them
 * would compile each anew), it doubles, up to {@link MAX_SPEC_CACHE_CAPACITY}. Pools created and deleted never make it
 * grow: only a pool that comes back does.
 *
 * The compilation comes in steps (src/ipam/steps.ts). {@link SpecCache.load}, what a pass uses, lets the event loop
 * run between two steps (the Lease renewal, the webhooks, other pools' passes), so the largest spec the API server
 * stores never holds the loop for the whole of its compilation; {@link SpecCache.get} runs them at once, for the
 * status of a pool its pass has just loaded.
 */
import { runSteps, type Steps } from "../../ipam/steps.js";
import type { PoolObject } from "./kind.js";

/** Pools whose compiled spec a kind keeps at first. */
export const SPEC_CACHE_CAPACITY = 256;
/**
 * The most pools a cache grows to keep. Kept specs are mostly shared with the allocators the passes keep per pool
 * (pools/state.ts), so the bound is against a cache outliving its pools, not against the pools served.
 */
export const MAX_SPEC_CACHE_CAPACITY = 65_536;

/** Resolves once the event loop has run what was waiting (timers, I/O callbacks). */
const breathe = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class SpecCache<P extends PoolObject, T> {
  private readonly kept = new Map<string, { generation: number; value: T }>();
  /** Uids dropped to make room, oldest first (at most `capacity`): one asked for again means the cache is too small. */
  private readonly dropped = new Set<string>();
  /** How many times `compile` ran; for tests. */
  compiled = 0;

  constructor(
    private readonly compile: (pool: P) => Steps<T>,
    private capacity = SPEC_CACHE_CAPACITY,
  ) {}

  /** `compile(pool)`, or what it gave for this pool's uid and generation before; compiled at once when it is not kept. */
  get(pool: P): T {
    return this.cached(pool) ?? this.keep(pool, runSteps(this.run(pool)));
  }

  /** Like {@link get}, but a compilation lets the event loop run between its steps. */
  async load(pool: P): Promise<T> {
    const hit = this.cached(pool);
    if (hit !== undefined) return hit;
    const steps = this.run(pool);
    for (let step = steps.next(); ; step = steps.next()) {
      if (step.done) return this.keep(pool, step.value);
      await breathe();
    }
  }

  /** What is kept for this pool's uid and generation, marked as the most recently used. */
  private cached(pool: P): T | undefined {
    const { uid, generation } = pool.metadata;
    if (!uid || generation === undefined) return undefined;
    const hit = this.kept.get(uid);
    if (!hit || hit.generation !== generation) return undefined;
    this.kept.delete(uid);
    this.kept.set(uid, hit);
    return hit.value;
  }

  private keep(pool: P, value: T): T {
    const { uid, generation } = pool.metadata;
    if (!uid || generation === undefined) return value;
    if (this.dropped.delete(uid)) this.capacity = Math.min(MAX_SPEC_CACHE_CAPACITY, this.capacity * 2);
    this.kept.delete(uid);
    this.kept.set(uid, { generation, value });
    if (this.kept.size > this.capacity) {
      const oldest = this.kept.keys().next().value as string;
      this.kept.delete(oldest);
      this.dropped.add(oldest);
      if (this.dropped.size > this.capacity) this.dropped.delete(this.dropped.values().next().value as string);
    }
    return value;
  }

  private run(pool: P): Steps<T> {
    this.compiled++;
    return this.compile(pool);
  }
}
