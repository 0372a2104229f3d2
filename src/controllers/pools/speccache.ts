/**
 * What a kind compiles from a pool's spec (entries, scan order, validation), kept while the spec is unchanged, so a
 * full pass that the spec did not cause (a resync, an edit of labels or annotations, a lost race) neither parses nor
 * validates it again.
 *
 * Unchanged means the same uid and the same `metadata.generation`: the API server bumps the generation on every change
 * of anything but metadata and status, and every pool kind has a status subresource. A pool without either (never
 * read from an API server) is compiled every time. At most `capacity` pools are kept, the least recently used
 * dropped first, so deleted pools cost nothing for long.
 */
import type { PoolObject } from "./kind.js";

/** Pools whose compiled spec a kind keeps. */
export const SPEC_CACHE_CAPACITY = 256;

export class SpecCache<P extends PoolObject, T> {
  private readonly kept = new Map<string, { generation: number; value: T }>();
  /** How many times `compile` ran; for tests. */
  compiled = 0;

  constructor(
    private readonly compile: (pool: P) => T,
    private readonly capacity = SPEC_CACHE_CAPACITY,
  ) {}

  /** `compile(pool)`, or what it gave for this pool's uid and generation before. */
  get(pool: P): T {
    const { uid, generation } = pool.metadata;
    if (!uid || generation === undefined) return this.run(pool);
    const hit = this.kept.get(uid);
    this.kept.delete(uid);
    const value = hit && hit.generation === generation ? hit.value : this.run(pool);
    this.kept.set(uid, { generation, value });
    if (this.kept.size > this.capacity) this.kept.delete(this.kept.keys().next().value as string);
    return value;
  }

  private run(pool: P): T {
    this.compiled++;
    return this.compile(pool);
  }
}
