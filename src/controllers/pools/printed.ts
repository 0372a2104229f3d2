/**
 * Which records of a pool a cache lacks, read from a printed list (ResourceClient.listPrinted), for the freshness
 * barrier (pools/barrier.ts) of a record kind the API server cannot filter by pool (Cluster API's IPAddress declares
 * no selectable fields). Listing the namespace's records whole, for each claim, made a claim cost in proportion to
 * the namespace; the printed rows (name, address, pool name) are a few cells each, and only the records the cache
 * does not hold as the rows show them are read in full.
 *
 * Contract: after the records this names are read into the cache, every record of the namespace whose row names the
 * pool is in the cache with the address its row shows. The address is what the barrier protects: a record the cache
 * holds with that address reserves it, whatever else of it changed since (its watch event brings the rest).
 */

/** The printer columns the decision reads: the name (server-side printing puts it first), the address, the pool. */
export interface PrintedColumns {
  name: string;
  address: string;
  pool: string;
}

/** What the cache holds of a record of the namespace, by name. */
export interface CachedRecord {
  address: string | undefined;
  pool: string | undefined;
}

/**
 * The names of the records of pool `pool` that the rows show and `cached` does not hold with the same pool and
 * address; undefined when a column is missing (the kind is printed otherwise: list the records in full instead).
 */
export function unseenRecords(
  printed: { columns: readonly string[]; rows: readonly (readonly unknown[])[] },
  names: PrintedColumns,
  pool: string,
  cached: (name: string) => CachedRecord | undefined,
): string[] | undefined {
  const at = (column: string): number => printed.columns.indexOf(column);
  const [name, address, poolName] = [at(names.name), at(names.address), at(names.pool)];
  if (name < 0 || address < 0 || poolName < 0) return undefined;
  const unseen: string[] = [];
  for (const row of printed.rows) {
    const recordName = row[name];
    if (typeof recordName !== "string" || row[poolName] !== pool) continue;
    const held = cached(recordName);
    if (!held || held.pool !== pool || held.address !== row[address]) unseen.push(recordName);
  }
  return unseen;
}
