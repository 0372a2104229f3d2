import { expect } from "chai";
import type { KubeObject } from "../../kube/resource.js";
import { freshnessBarrier, holdersOf } from "./barrier.js";
import { BY_POOL_ADDRESS, poolAddressKey } from "./indexes.js";
import type { PoolKind, PoolObject, PoolRecord } from "./kind.js";
import type { ApplyContext, ClaimApi, Pass, RecordKind } from "./pass.js";

const KEY = "IPPool.ipam.metal3.io/ns/p";
const QUORUM = "quorum";

/** A claim: `pending` ones need an address, `interrupted` ones also carry the finalizer put on before a create. */
const claim = (rv: string, state: "bound" | "pending" | "interrupted" = "pending"): KubeObject => ({
  metadata: { name: `c-${rv}`, resourceVersion: rv, labels: { state } },
});
const stateOf = (c: KubeObject): string | undefined => c.metadata.labels?.["state"];

/** A record of the pool holding `address`. */
const record = (uid: string, address: string, rv = "1"): PoolRecord => ({
  metadata: { name: uid, uid, resourceVersion: rv },
  spec: { address },
});

/**
 * A claim API over an in-memory records cache whose watch has delivered up to `observed`; `silent` watches never
 * deliver the event a confirmation waits for. Lists are logged into `lists` (as `<recordKind>@<rv>`).
 */
function fakeApi(
  recordKind: RecordKind,
  observed: string,
  lists: string[],
  options: { silent?: boolean; served?: boolean; listing?: boolean } = {},
): ClaimApi & { held: PoolRecord[] } {
  const held: PoolRecord[] = [];
  const cache = {
    byIndex: (index: string, key: string) =>
      index === BY_POOL_ADDRESS ? held.filter((r) => poolAddressKey(KEY, r.spec.address) === key) : [],
    // As fresh as `observed` in the pool's namespace: the barrier must ask about that one.
    observedIn: (namespace: string) => (namespace === "ns" ? observed : "0"),
    synced: options.listing !== true,
    waitObserved: (rv: string) => Promise.resolve(!options.silent && Number(observed) >= Number(rv)),
  };
  return {
    held,
    recordKind,
    index: {
      records: () => (options.served === false ? undefined : cache),
      needsAllocation: (c: KubeObject) => stateOf(c) !== "bound",
    },
    interrupted: (c: KubeObject) => stateOf(c) === "interrupted",
    listRecords: (_pass: unknown, rv: string | undefined) => {
      lists.push(`${recordKind}@${rv ?? QUORUM}`);
      return Promise.resolve();
    },
  } as unknown as ClaimApi & { held: PoolRecord[] };
}

const pool = (rv: string, deleting = false): PoolObject => ({
  metadata: { name: "p", resourceVersion: rv, ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}) },
});
const passOf = (p: PoolObject | undefined): Pass =>
  ({ pool: p, kind: {} as PoolKind, key: KEY, ref: { namespace: "ns", name: "p" } }) as Pass;

interface Row {
  what: string;
  pool: PoolObject | undefined;
  /** Claims of the IPClaim API (A) and the IPAddressClaim API (B). */
  a: KubeObject[];
  b?: KubeObject[];
  /** How far each API's watch has delivered. */
  observed: [string, string];
  /** Which APIs' caches are still in their first list (no watch yet). */
  listing?: [boolean, boolean];
  /** The lists made before deciding, and whether new records must be confirmed. */
  lists: string[];
  confirms: boolean;
}

const rows: Row[] = [
  {
    what: "no pool: nothing to allocate",
    pool: undefined,
    a: [claim("9")],
    observed: ["1", "1"],
    lists: [],
    confirms: false,
  },
  {
    what: "a deleting pool: nothing new is allocated",
    pool: pool("5", true),
    a: [claim("9")],
    observed: ["1", "1"],
    lists: [],
    confirms: false,
  },
  { what: "an empty pool (no claims)", pool: pool("5"), a: [], observed: ["1", "1"], lists: [], confirms: false },
  {
    what: "every claim has its record: stale caches are not listed",
    pool: pool("5"),
    a: [claim("9", "bound")],
    observed: ["1", "1"],
    lists: [],
    confirms: false,
  },
  {
    what: "both caches as fresh as the newest claim: no list, no confirmation",
    pool: pool("5"),
    a: [claim("9")],
    observed: ["9", "12"],
    lists: [],
    confirms: false,
  },
  {
    what: "the allocating API's cache is behind: its new records are confirmed by their events, not a list",
    pool: pool("5"),
    a: [claim("9")],
    observed: ["8", "9"],
    lists: [],
    confirms: true,
  },
  {
    what: "the allocating API's cache is still being listed: no event would confirm a record soon, so it is listed",
    pool: pool("5"),
    a: [claim("9")],
    observed: ["8", "9"],
    listing: [true, false],
    lists: ["IPAddress@9"],
    confirms: false,
  },
  {
    what: "the other API's cache is behind: it is listed at the barrier (its records hold the pool's addresses too)",
    pool: pool("5"),
    a: [claim("9")],
    observed: ["9", "8"],
    lists: ["CapiIPAddress@9"],
    confirms: false,
  },
  {
    what: "the barrier is the newest of the pool and every API's claims, bound ones too",
    pool: pool("20"),
    a: [claim("9")],
    b: [claim("30", "bound")],
    observed: ["1", "1"],
    lists: ["CapiIPAddress@30"],
    confirms: true,
  },
  {
    what: "an interrupted allocation (finalizer, no record): every API is listed at quorum, nothing to confirm",
    pool: pool("5"),
    a: [claim("9")],
    b: [claim("7", "interrupted")],
    observed: ["99", "99"],
    lists: ["IPAddress@quorum", "CapiIPAddress@quorum"],
    confirms: false,
  },
  {
    what: "no etcd version anywhere: every API is listed at quorum",
    pool: pool("x"),
    a: [claim("")],
    observed: ["99", "99"],
    lists: ["IPAddress@quorum", "CapiIPAddress@quorum"],
    confirms: false,
  },
];

describe("the freshness barrier before allocating (pools/barrier.ts, in memory)", () => {
  for (const row of rows)
    it(row.what, async () => {
      const lists: string[] = [];
      const a = fakeApi("IPAddress", row.observed[0], lists, { listing: row.listing?.[0] });
      const b = fakeApi("CapiIPAddress", row.observed[1], lists, { listing: row.listing?.[1] });
      const claims = new Map([
        [a, row.a],
        [b, row.b ?? []],
      ]);
      const confirm = await freshnessBarrier(passOf(row.pool), [a, b], claims);
      expect({ lists: lists.sort(), confirms: confirm !== undefined }).to.deep.equal({
        lists: [...row.lists].sort(),
        confirms: row.confirms,
      });
    });
});

describe("confirming a new record (pools/barrier.ts, in memory)", () => {
  /** A pass whose IPAddress cache is behind claim 9: its new records are confirmed. */
  async function confirmer(options: { silent?: boolean } = {}): Promise<{
    confirm: NonNullable<ApplyContext["confirm"]>;
    a: ClaimApi & { held: PoolRecord[] };
    b: ClaimApi & { held: PoolRecord[] };
    lists: string[];
  }> {
    const lists: string[] = [];
    const a = fakeApi("IPAddress", "8", lists, options);
    const b = fakeApi("CapiIPAddress", "9", lists);
    const claims = new Map([
      [a, [claim("9")]],
      [b, []],
    ]);
    const confirm = await freshnessBarrier(passOf(pool("5")), [a, b], claims);
    if (!confirm) throw new Error("expected a confirmation");
    return { confirm, a, b, lists };
  }

  it("a record alone on its address, whose event came, is confirmed without a list", async () => {
    const { confirm, a, lists } = await confirmer();
    const created = record("new", "10.0.0.1", "8");
    a.held.push(created);
    expect(await confirm("IPAddress", created)).to.equal(true);
    expect(lists).to.deep.equal([]);
  });

  it("two claims raced for one address (a record of the other API holds it): not confirmed", async () => {
    const { confirm, a, b } = await confirmer();
    const created = record("new", "10.0.0.1", "8");
    a.held.push(created);
    b.held.push(record("theirs", "10.0.0.1"));
    expect(await confirm("IPAddress", created)).to.equal(false);
  });

  it("a record whose event does not come is confirmed by one list of its API, however many records wait", async () => {
    const { confirm, a, lists } = await confirmer({ silent: true });
    const first = record("first", "10.0.0.1", "10");
    const second = record("second", "10.0.0.2", "11");
    a.held.push(first, second);
    expect(await Promise.all([confirm("IPAddress", first), confirm("IPAddress", second)])).to.deep.equal([true, true]);
    expect(lists).to.deep.equal(["IPAddress@10"]);
  });
});

describe("who holds an address of a pool (holdersOf, in memory)", () => {
  it("every API's records holding it, and none of an API not served", () => {
    const lists: string[] = [];
    const a = fakeApi("IPAddress", "1", lists);
    const b = fakeApi("CapiIPAddress", "1", lists);
    const off = fakeApi("CapiIPAddress", "1", lists, { served: false });
    a.held.push(record("a1", "10.0.0.1"), record("a2", "10.0.0.2"));
    b.held.push(record("b1", "10.0.0.1"));
    off.held.push(record("off", "10.0.0.1"));
    const uids = (address: string): (string | undefined)[] =>
      holdersOf([a, b, off], KEY, address).map((r) => r.metadata.uid);
    expect([uids("10.0.0.1"), uids("10.0.0.2"), uids("10.0.0.3")]).to.deep.equal([["a1", "b1"], ["a2"], []]);
  });
});
