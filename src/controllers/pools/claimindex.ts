/**
 * The cache queries of a claim API ({@link ClaimQueries}, a `ClaimApi`'s `index`), written once for both
 * lifecycles (ippool/api.ts, capi/api.ts) over two caches: the API's claims, indexed BY_POOL, and its records, indexed
 * BY_POOL and BY_CLAIM (with the journals of BY_POOL that `claimChanges`/`recordChanges` drain). A lifecycle says
 * where its caches are and three facts of its objects; while its API is not served (Cluster API's, before discovery)
 * its caches are undefined and every query answers "nothing" (no claims, no records, no changes).
 */
import type { BucketChange } from "../../kube/journal.js";
import { keyOf } from "../../kube/informer.js";
import type { KubeObject } from "../../kube/resource.js";
import { isDeleting } from "../meta.js";
import { BY_CLAIM, BY_POOL, splitCacheKey } from "./indexes.js";
import type { PoolRecord } from "./kind.js";
import type { ClaimQueries, RecordCache } from "./pass.js";

/** What the queries read of a cache (an Informer satisfies it). */
export interface IndexedCache<T> {
  get(namespace: string, name: string): T | undefined;
  byIndex(index: string, key: string): T[];
  /** The changes of bucket `key` of journaled index `index` since the last call; undefined when the log overflowed. */
  changesIn(index: string, key: string): BucketChange<T>[] | undefined;
}

/** Where a claim API's caches are and how its objects name their pool and claim. */
export interface ClaimIndexSource<C extends KubeObject, R extends PoolRecord> {
  /** The claims' cache; undefined while the API is not served. */
  claimCache(): IndexedCache<C> | undefined;
  /** The records' cache; undefined while the API is not served. */
  recordCache(): (IndexedCache<R> & RecordCache) | undefined;
  /** Whether `claim` belongs to pool `key` (the pool its reference names now, not where the index last put it). */
  claimBelongsTo(claim: C, key: string): boolean;
  /** Whether `record` belongs to pool `key`. */
  recordBelongsTo(record: R, key: string): boolean;
  /** The name of the claim `record` was made for (in the record's namespace), if it names one. */
  claimNameOf(record: R): string | undefined;
}

/** The claim and record cache queries of a claim API, over claims `C` and records `R`. */
export class ClaimIndex<C extends KubeObject, R extends PoolRecord> implements ClaimQueries {
  constructor(private readonly source: ClaimIndexSource<C, R>) {}

  records(): RecordCache | undefined {
    return this.source.recordCache();
  }

  claimsOf(key: string): C[] {
    return this.source.claimCache()?.byIndex(BY_POOL, key) ?? [];
  }

  recordsOf(key: string): R[] {
    return this.source.recordCache()?.byIndex(BY_POOL, key) ?? [];
  }

  claimInPool(cacheKey: string, key: string): C | undefined {
    const [namespace, name] = splitCacheKey(cacheKey);
    const claim = this.source.claimCache()?.get(namespace, name);
    return claim && this.source.claimBelongsTo(claim, key) ? claim : undefined;
  }

  claimKeyOf(record: PoolRecord): string | undefined {
    const name = this.source.claimNameOf(record as R);
    return name ? `${record.metadata.namespace ?? ""}/${name}` : undefined;
  }

  recordsOfClaim(cacheKey: string, key: string): R[] {
    return this.claimRecords(cacheKey).filter((r) => this.source.recordBelongsTo(r, key));
  }

  claimChanges(key: string): BucketChange<C>[] | undefined {
    const claims = this.source.claimCache();
    return claims ? claims.changesIn(BY_POOL, key) : [];
  }

  recordChanges(key: string): BucketChange<R>[] | undefined {
    const records = this.source.recordCache();
    return records ? records.changesIn(BY_POOL, key) : [];
  }

  needsAllocation(claim: KubeObject): boolean {
    return !isDeleting(claim.metadata) && this.claimRecords(keyOf(claim)).length === 0;
  }

  /** Every record naming the claim cached under `cacheKey`, whatever its pool (the lifecycle's own query). */
  claimRecords(cacheKey: string): R[] {
    return this.source.recordCache()?.byIndex(BY_CLAIM, cacheKey) ?? [];
  }
}
