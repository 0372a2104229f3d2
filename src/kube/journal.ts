/**
 * A change log per index bucket of an informer, for a reader that wants to know what changed in one bucket (say, the
 * claims of one pool) since it last looked, instead of walking the whole bucket again. Each change records the object
 * as it left the bucket (`before`) and as it is in it now (`after`): an added object has only `after`, a removed one
 * only `before`, an updated one both.
 *
 * Contract: one reader per journaled index; `drain` hands over and forgets the bucket's changes. A bucket holds at most
 * {@link MAX_CHANGES} changes: past that it forgets them and remembers only that it overflowed, and the next `drain`
 * answers `undefined`: the reader must then read the whole bucket (as on its first read, which it does anyway). So
 * a bucket nobody drains costs bounded memory.
 *
 * A journal can be paused while nobody reads it (a replica that is not the leader keeps its caches but runs no passes):
 * paused, it keeps nothing, and from its resume on, each bucket's first drain answers `undefined`, since what changed
 * while it was paused is not known.
 */
import type { KubeObject } from "./resource.js";

/** One change of one object in one bucket. */
export interface BucketChange<T> {
  /** The object's cache key (`<namespace>/<name>`). */
  key: string;
  /** The object as it was in the bucket before the change; absent when it entered the bucket. */
  before?: T;
  /** The object as it is in the bucket after the change; absent when it left the bucket (deleted, or re-keyed). */
  after?: T;
}

/** Changes a bucket keeps before it overflows. */
export const MAX_CHANGES = 4_096;

interface Bucket<T> {
  changes: BucketChange<T>[];
  overflowed: boolean;
}

export class IndexJournal<T extends KubeObject> {
  private readonly buckets = new Map<string, Bucket<T>>();
  private paused = false;
  /** After a resume: the buckets drained since (each one's first drain answers undefined). */
  private drainedSinceResume?: Set<string>;

  constructor(private readonly keysOf: (obj: T) => string[]) {}

  /** Records that the object at `key` changed from `before` to `after` (either may be undefined). */
  record(key: string, before: T | undefined, after: T | undefined): void {
    if (this.paused) return;
    const old = before ? this.keysOf(before) : [];
    const now = after ? this.keysOf(after) : [];
    for (const bucket of new Set([...old, ...now])) {
      this.append(bucket, {
        key,
        ...(before && old.includes(bucket) ? { before } : {}),
        ...(after && now.includes(bucket) ? { after } : {}),
      });
    }
  }

  /** Everything that changed in `bucket` since the last drain, oldest first; undefined after an overflow. */
  drain(bucket: string): BucketChange<T>[] | undefined {
    const b = this.buckets.get(bucket);
    this.buckets.delete(bucket);
    if (this.paused) return undefined;
    if (this.drainedSinceResume && !this.drainedSinceResume.has(bucket)) {
      this.drainedSinceResume.add(bucket);
      return undefined;
    }
    if (!b) return [];
    return b.overflowed ? undefined : b.changes;
  }

  /** Stops recording and forgets what was recorded; drains answer undefined until {@link resume}. */
  pause(): void {
    this.paused = true;
    this.buckets.clear();
  }

  /** Records again; each bucket's first drain from now on answers undefined (see the contract above). */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.drainedSinceResume = new Set();
  }

  private append(bucket: string, change: BucketChange<T>): void {
    let b = this.buckets.get(bucket);
    if (!b) this.buckets.set(bucket, (b = { changes: [], overflowed: false }));
    if (b.overflowed) return;
    if (b.changes.length >= MAX_CHANGES) {
      b.changes = [];
      b.overflowed = true;
      return;
    }
    b.changes.push(change);
  }
}
