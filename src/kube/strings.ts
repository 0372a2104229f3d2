/**
 * Shared values for cached objects. JSON.parse gives every object its own copy of each string and of each small
 * object, so a cache of 10,000 IPAddresses held 10,000 copies of its namespace, apiVersion, finalizer, pool name and
 * pool uid, and of the small objects built from them (the finalizer list, the pool's owner reference, the pool
 * reference in the spec): a large share of the controller's heap. The informer passes every object it keeps through
 * {@link ValuePool.internAll}, so equal strings become one, and so do equal small objects below the top level.
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
/** Entries of the largest object or array that is shared whole: owner references, pool references, finalizer lists. */
const MAX_SHARED_ENTRIES = 8;
/**
 * Depth from which objects are shared whole. An object's own `metadata`, `spec` and `status` (depth 1) are never
 * shared, so code that fills in a field of an object it built or received writes to that object alone; below them,
 * values are read-only once cached.
 */
const MIN_SHARED_DEPTH = 2;

/**
 * A bounded pool of strings and of small objects. Once a pool holds `capacity` entries it starts over, so values seen
 * once (names, uids, addresses) never pile up: memory stays bounded whatever the churn, and a value that repeats is
 * shared again from its next occurrence on. Replacing a string by an equal one changes nothing a reader can see; a
 * shared object is frozen, so a write to it, which would show through every object that shares it, throws instead.
 */
export class ValuePool {
  private readonly strings = new Map<string, string>();
  /** Small objects and arrays, keyed by their JSON text. */
  private readonly objects = new Map<string, object>();
  /** Whether the last {@link intern} found its string already pooled. */
  private lastHit = false;

  constructor(private readonly capacity = 8192) {}

  /** The pooled copy of `s` (`s` itself the first time). */
  intern(s: string): string {
    this.lastHit = false;
    if (s.length > MAX_INTERNED_LENGTH) return s;
    const pooled = this.strings.get(s);
    if (pooled !== undefined) {
      this.lastHit = true;
      return pooled;
    }
    if (this.strings.size >= this.capacity) this.strings.clear();
    this.strings.set(s, s);
    return s;
  }

  /** Entries held now, strings and objects (for tests). */
  get size(): number {
    return this.strings.size + this.objects.size;
  }

  /**
   * Replaces, in place, every string value and array element in `value` (a parsed JSON tree) by its pooled copy, and
   * every small object or array below the top level's own fields whose values are all strings, finite numbers or
   * booleans, and whose strings had all been seen before, by its pooled (frozen) copy; returns `value`. Keys are left
   * alone: V8 already shares property names. A value that is already frozen is taken to be shared and left as it is.
   */
  internAll<T>(value: T): T {
    if (typeof value === "object" && value !== null) this.walk(value, 0);
    return value;
  }

  /** `node` with its values pooled: `node` itself, or the pooled copy of it when it is shared whole. */
  private walk(node: object, depth: number): object {
    if (Object.isFrozen(node)) return node;
    const record = node as Record<string | number, unknown>;
    const array = Array.isArray(node);
    if (!array && entriesExceed(record, MAX_WALKED_ENTRIES)) return node;
    // A candidate for sharing whole: small, only primitive values, every string already pooled (a string seen for the
    // first time is most likely a name or uid of this object alone, which would only fill the pool).
    let candidate = depth >= MIN_SHARED_DEPTH;
    let entries = 0;
    if (array) {
      entries = node.length;
      for (let i = 0; i < entries; i++) if (!this.visit(record, i, depth)) candidate = false;
    } else
      for (const name in record) {
        entries++;
        if (!this.visit(record, name, depth)) candidate = false;
      }
    return candidate && entries <= MAX_SHARED_ENTRIES ? this.shared(node) : node;
  }

  /**
   * Pools `record[name]`, writing the pooled value back; whether that value leaves its object a candidate for sharing
   * whole (a string already pooled, a finite number, a boolean).
   */
  private visit(record: Record<string | number, unknown>, name: string | number, depth: number): boolean {
    // Every value is written back, even when the pooled copy is the value itself: a parsed object whose fields were
    // left unwritten was found to keep more heap in V8 than one whose fields were all stored again.
    const item = record[name];
    if (typeof item === "string") {
      record[name] = this.intern(item);
      return this.lastHit;
    }
    if (typeof item === "object" && item !== null) {
      record[name] = this.walk(item, depth + 1);
      return false;
    }
    return typeof item === "boolean" || (typeof item === "number" && Number.isFinite(item));
  }

  /** The pooled copy of small object `node`, or `node` itself, frozen and pooled, the first time. */
  private shared(node: object): object {
    const text = JSON.stringify(node);
    const pooled = this.objects.get(text);
    if (pooled !== undefined) return pooled;
    if (this.objects.size >= this.capacity) this.objects.clear();
    this.objects.set(text, Object.freeze(node));
    return node;
  }
}

/** Whether `record` has more than `limit` entries (counting stops there: a large map costs `limit` steps). */
function entriesExceed(record: Record<string, unknown>, limit: number): boolean {
  let entries = 0;
  for (const key in record) if (key !== undefined && ++entries > limit) return true;
  return false;
}
