/**
 * Shared strings for cached objects. JSON.parse gives every object its own copy of each string, so a cache of 10,000
 * IPAddresses held 10,000 copies of its namespace, apiVersion, finalizer, pool name and pool uid, and of each
 * condition's reason and message, a large share of the controller's heap. The informer passes every
 * object it keeps through {@link StringPool.internAll}, so equal strings become one.
 */

/** Strings longer than this are left alone: long values (annotations, messages of one object) rarely repeat. */
const MAX_INTERNED_LENGTH = 128;
/**
 * Entries of one object past which its values are left alone. An object that large is a map keyed by names, whose
 * values are unique per entry (Metal3's `status.indexes`: claim → address): pooling them would only evict strings
 * that do repeat (a pool of 10,000 claims flushed the whole pool on each of its events), and walking it on every event
 * of its object costs in proportion to the map.
 */
const MAX_WALKED_ENTRIES = 256;

/**
 * A bounded pool of strings. Once it holds `capacity` entries it starts over, so strings seen once (names, uids,
 * addresses) never pile up: memory stays bounded whatever the churn, and a string that repeats is shared again from
 * its next occurrence on. Replacing a string by an equal one changes nothing a reader can see.
 */
export class StringPool {
  private readonly pool = new Map<string, string>();

  constructor(private readonly capacity = 8192) {}

  /** The pooled copy of `s` (`s` itself the first time). */
  intern(s: string): string {
    if (s.length > MAX_INTERNED_LENGTH) return s;
    const pooled = this.pool.get(s);
    if (pooled !== undefined) return pooled;
    if (this.pool.size >= this.capacity) this.pool.clear();
    this.pool.set(s, s);
    return s;
  }

  /** Entries held now (for tests). */
  get size(): number {
    return this.pool.size;
  }

  /**
   * Replaces, in place, every string value and array element in `value` (a parsed JSON tree) by its pooled copy, and
   * returns `value`. Keys are left alone: V8 already shares property names.
   */
  internAll<T>(value: T): T {
    this.walk(value);
    return value;
  }

  private walk(node: unknown): void {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === "string") node[i] = this.intern(item);
        else if (typeof item === "object" && item !== null) this.walk(item);
      }
      return;
    }
    if (typeof node !== "object" || node === null) return;
    const record = node as Record<string, unknown>;
    if (entriesExceed(record, MAX_WALKED_ENTRIES)) return;
    for (const key in record) {
      const item = record[key];
      if (typeof item === "string") record[key] = this.intern(item);
      else if (typeof item === "object" && item !== null) this.walk(item);
    }
  }
}

/** Whether `record` has more than `limit` entries (counting stops there: a large map costs `limit` steps). */
function entriesExceed(record: Record<string, unknown>, limit: number): boolean {
  let entries = 0;
  for (const key in record) if (key !== undefined && ++entries > limit) return true;
  return false;
}
