import { expect } from "chai";
import { unseenRecords, type CachedRecord } from "./printed.js";

const COLUMNS = { name: "Name", address: "Address", pool: "Pool Name" };
/** Cluster API's printer columns of an IPAddress, as the API server prints them (Name first). */
const PRINTED = ["Name", "Address", "Pool Name", "Pool Kind", "Age"];

interface Row {
  what: string;
  columns?: string[];
  /** [name, address, pool] of each printed record. */
  rows: [string, string, string][];
  /** What the cache holds, by name. */
  cache: Record<string, CachedRecord>;
  /** The records to read in full; undefined: list the namespace whole. */
  unseen: string[] | undefined;
}

const rows: Row[] = [
  {
    what: "every record of the pool is cached as printed: nothing to read",
    rows: [
      ["a", "10.0.0.1", "p"],
      ["b", "10.0.0.2", "p"],
    ],
    cache: { a: { address: "10.0.0.1", pool: "p" }, b: { address: "10.0.0.2", pool: "p" } },
    unseen: [],
  },
  {
    what: "a record of the pool the cache lacks (made by hand while the watch lags) is read",
    rows: [
      ["a", "10.0.0.1", "p"],
      ["hand", "10.0.0.2", "p"],
    ],
    cache: { a: { address: "10.0.0.1", pool: "p" } },
    unseen: ["hand"],
  },
  {
    what: "records of other pools are not read, cached or not",
    rows: [
      ["x", "10.1.0.1", "q"],
      ["y", "10.1.0.2", "q"],
    ],
    cache: { x: { address: "10.1.0.1", pool: "q" } },
    unseen: [],
  },
  {
    what: "a cached record now in the pool, or now on another address, is read again",
    rows: [
      ["moved", "10.0.0.3", "p"],
      ["readdressed", "10.0.0.4", "p"],
    ],
    cache: { moved: { address: "10.0.0.3", pool: "q" }, readdressed: { address: "10.0.0.9", pool: "p" } },
    unseen: ["moved", "readdressed"],
  },
  {
    what: "a kind printed without a pool column: undefined (the namespace is listed whole)",
    columns: ["Name", "Address", "Age"],
    rows: [["a", "10.0.0.1", "p"]],
    cache: {},
    unseen: undefined,
  },
];

describe("which records of a pool a printed list shows the cache lacks (pools/printed.ts, in memory)", () => {
  for (const row of rows)
    it(row.what, () => {
      const printed = {
        columns: row.columns ?? PRINTED,
        rows: row.rows.map(([name, address, pool]) => [name, address, pool, "IPPool", "1m"]),
      };
      expect(unseenRecords(printed, COLUMNS, "p", (name) => row.cache[name])).to.deep.equal(row.unseen);
    });
});
