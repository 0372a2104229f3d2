import { expect } from "chai";
import { PoolAllocator } from "../../ipam/allocator.js";
import type { BucketChange } from "../../kube/journal.js";
import type { KubeObject } from "../../kube/resource.js";
import type { PoolObject, PoolRecord } from "./kind.js";
import type { ClaimApi } from "./pass.js";
import {
  anyChange,
  applyRecordChanges,
  orphanCandidates,
  pendingClaims,
  plannedClaims,
  poolFingerprint,
  type ApiChanges,
  type PoolState,
} from "./state.js";

const LEAVING = { deletionTimestamp: "2025-01-01T00:00:00Z" };
const POOL = "IPPool.ipam.metal3.io/ns/p";

/** A claim API over fixed caches: claims by cache key and pool, records by the cache key of their claim. */
function apiOver(
  claims: Record<string, { pool: string; deleting?: boolean }>,
  recordsOfClaim: Record<string, string[]>,
): ClaimApi {
  const index = {
    claimInPool: (cacheKey: string, key: string): KubeObject | undefined => {
      const c = claims[cacheKey];
      if (!c || c.pool !== key) return undefined;
      return { metadata: { name: cacheKey.split("/")[1] ?? "", namespace: "ns", ...(c.deleting ? LEAVING : {}) } };
    },
    recordsOfClaim: (cacheKey: string, key: string): PoolRecord[] =>
      key === POOL
        ? (recordsOfClaim[cacheKey] ?? []).map((address) => ({ metadata: { name: address }, spec: { address } }))
        : [],
  };
  return { index } as unknown as ClaimApi;
}

describe("pending claims of a pool (among its unsettled claims)", () => {
  const api = apiOver(
    {
      "ns/waiting": { pool: POOL },
      "ns/created": { pool: POOL },
      "ns/leaving": { pool: POOL, deleting: true },
      "ns/elsewhere": { pool: "IPPool.ipam.metal3.io/ns/other" },
      "ns/settled": { pool: POOL },
    },
    { "ns/created": ["10.0.0.1"], "ns/settled": ["10.0.0.2"] },
  );

  it("counts live claims of the pool with no record: not created ones, deleting ones, other pools' or gone ones", () => {
    const unsettled = new Set(["ns/waiting", "ns/created", "ns/leaving", "ns/elsewhere", "ns/gone"]);
    expect(pendingClaims(api, POOL, unsettled)).to.equal(1);
  });

  it("counts only among the unsettled: a settled claim is bound, whatever the pool holds", () => {
    expect(pendingClaims(api, POOL, new Set())).to.equal(0);
    expect(pendingClaims(api, POOL, new Set(["ns/settled"]))).to.equal(0);
    expect(pendingClaims(api, "IPPool.ipam.metal3.io/ns/other", new Set(["ns/elsewhere"]))).to.equal(1);
  });
});

/** A record of claim `ns/<claim>` (none: a record made by hand) holding `address`. */
const rec = (name: string, address: string, claim?: string): PoolRecord => ({
  metadata: { name, uid: name, ...(claim ? { annotations: { claim: `ns/${claim}` } } : {}) },
  spec: { address },
});
const claimKeyOf = (r: PoolRecord): string | undefined => r.metadata.annotations?.["claim"];
const changed = <T>(key: string, before?: T, after?: T): BucketChange<T> => ({
  key,
  ...(before ? { before } : {}),
  ...(after ? { after } : {}),
});

describe("what an incremental pass plans (plannedClaims, pure)", () => {
  const api = apiOver(
    { "ns/a": { pool: POOL }, "ns/b": { pool: POOL }, "ns/c": { pool: POOL }, "ns/moved": { pool: "other" } },
    {},
  );
  Object.assign(api.index, { claimKeyOf });
  const rows: [string, string[], ApiChanges, string[], string[]][] = [
    ["nothing changed, nothing unsettled: nothing", [], { claims: [], records: [] }, [], []],
    ["unsettled claims are planned again", ["ns/a"], { claims: [], records: [] }, ["a"], ["ns/a"]],
    ["a changed claim", [], { claims: [changed("ns/b")], records: [] }, ["b"], []],
    [
      "the claim of a record that changed, entered or left",
      [],
      {
        claims: [],
        records: [changed("r1", rec("r1", "10.0.0.1", "a")), changed("r2", undefined, rec("r2", "10.0.0.2", "c"))],
      },
      ["a", "c"],
      [],
    ],
    [
      "a record made by hand plans no claim",
      [],
      { claims: [], records: [changed("r", undefined, rec("r", "10.0.0.1"))] },
      [],
      [],
    ],
    [
      "a claim gone (deleted, or moved to another pool) is not planned and leaves the unsettled set",
      ["ns/gone", "ns/moved", "ns/a"],
      { claims: [changed("ns/gone")], records: [] },
      ["a"],
      ["ns/a"],
    ],
    [
      "a claim unsettled, changed and with a changed record is planned once",
      ["ns/a"],
      { claims: [changed("ns/a")], records: [changed("r", undefined, rec("r", "10.0.0.1", "a"))] },
      ["a"],
      ["ns/a"],
    ],
    [
      "an overflowed log (undefined) adds nothing here: the pass is full then",
      ["ns/a"],
      { claims: undefined, records: undefined },
      ["a"],
      ["ns/a"],
    ],
  ];
  for (const [what, unsettled, changes, planned, left] of rows)
    it(what, () => {
      const state = { unsettled: new Map([[api, new Set(unsettled)]]) } as unknown as PoolState;
      const claims = plannedClaims([api], POOL, state, new Map([[api, changes]])).get(api) ?? [];
      expect(claims.map((c) => c.metadata.name).sort()).to.deep.equal(planned);
      expect([...(state.unsettled.get(api) ?? [])].sort()).to.deep.equal(left);
    });
});

describe("which records an incremental pass checks for orphans (orphanCandidates, pure)", () => {
  const kept = rec("kept", "10.0.0.1", "a");
  const ofGone = rec("of-gone", "10.0.0.2", "gone");
  const api = apiOver({}, { "ns/gone": ["10.0.0.2"] });
  const recordsOfClaim = (cacheKey: string, key: string): PoolRecord[] =>
    cacheKey === "ns/gone" && key === POOL ? [ofGone] : [];
  const withRecords = { ...api, index: { ...api.index, recordsOfClaim } };
  const rows: [string, ApiChanges, string[]][] = [
    ["no change: none", { claims: [], records: [] }, []],
    ["a record that entered or changed", { claims: [], records: [changed("kept", undefined, kept)] }, ["kept"]],
    ["a record that left is no candidate (nothing to release)", { claims: [], records: [changed("kept", kept)] }, []],
    [
      "the records of a claim that is gone (deleted, or left the pool)",
      { claims: [changed("ns/gone", {} as KubeObject)], records: [] },
      ["of-gone"],
    ],
    [
      "a claim that changed but stays brings none",
      { claims: [changed("ns/gone", {} as KubeObject, {} as KubeObject)], records: [] },
      [],
    ],
    [
      "a record both changed and of a gone claim is checked once",
      { claims: [changed("ns/gone", {} as KubeObject)], records: [changed("of-gone", undefined, ofGone)] },
      ["of-gone"],
    ],
  ];
  for (const [what, changes, expected] of rows)
    it(what, () => {
      const candidates = orphanCandidates(withRecords, POOL, new Map([[withRecords, changes]]));
      expect(candidates.map((r) => r.metadata.name)).to.deep.equal(expected);
    });
});

describe("bringing a kept allocator up to date (applyRecordChanges, pure)", () => {
  const api = {
    holderOf: (r: PoolRecord) => ({ kind: "claim", claimName: claimKeyOf(r) ?? "", claimKind: "IPClaim" }),
  } as unknown as ClaimApi;
  const holders = (allocator: PoolAllocator): Record<string, string[]> =>
    Object.fromEntries(
      ["10.0.0.1", "10.0.0.2", "10.0.0.3"].map((a) => [
        a,
        allocator.holdersOf(a).map((h) => (h.kind === "claim" ? h.claimName : h.description)),
      ]),
    );
  const rows: [string, BucketChange<PoolRecord>[], Record<string, string[]>][] = [
    [
      "a new record holds its address for its claim",
      [changed("r", undefined, rec("r", "10.0.0.2", "a"))],
      { "10.0.0.1": ["ns/x"], "10.0.0.2": ["ns/a"], "10.0.0.3": [] },
    ],
    [
      "a deleted record gives its address back",
      [changed("x", rec("x", "10.0.0.1", "x"))],
      { "10.0.0.1": [], "10.0.0.2": [], "10.0.0.3": [] },
    ],
    [
      "a record moved to another address frees the old one",
      [changed("x", rec("x", "10.0.0.1", "x"), rec("x", "10.0.0.3", "x"))],
      { "10.0.0.1": [], "10.0.0.2": [], "10.0.0.3": ["ns/x"] },
    ],
    [
      "a record changed in place (its address kept) still holds it",
      [changed("x", rec("x", "10.0.0.1", "x"), rec("x", "10.0.0.1", "x"))],
      { "10.0.0.1": ["ns/x"], "10.0.0.2": [], "10.0.0.3": [] },
    ],
    [
      "a change the pass made itself (reserved when it decided) applied again holds once",
      [changed("x", undefined, rec("x", "10.0.0.1", "x"))],
      { "10.0.0.1": ["ns/x"], "10.0.0.2": [], "10.0.0.3": [] },
    ],
    [
      "oldest first: created then deleted leaves the address free",
      [changed("r", undefined, rec("r", "10.0.0.2", "a")), changed("r", rec("r", "10.0.0.2", "a"))],
      { "10.0.0.1": ["ns/x"], "10.0.0.2": [], "10.0.0.3": [] },
    ],
  ];
  for (const [what, changes, expected] of rows)
    it(what, () => {
      const allocator = new PoolAllocator({ pools: [{ start: "10.0.0.1", end: "10.0.0.3" }], prefix: 24 } as never);
      allocator.reserve("10.0.0.1", { kind: "claim", claimName: "ns/x", claimKind: "IPClaim" });
      applyRecordChanges(allocator, api, {} as never, changes);
      expect(holders(allocator)).to.deep.equal(expected);
    });
});

describe("what of a pool invalidates kept state (poolFingerprint, anyChange; pure)", () => {
  const pool: PoolObject = { metadata: { uid: "u", generation: 1, finalizers: ["f"] }, spec: {}, status: { a: 1 } };
  const rows: [string, PoolObject, boolean][] = [
    ["a status write (ours) does not", { ...pool, status: { a: 2 } }, false],
    ["a resourceVersion alone does not", { ...pool, metadata: { ...pool.metadata, resourceVersion: "9" } }, false],
    ["a spec change (generation) does", { ...pool, metadata: { ...pool.metadata, generation: 2 } }, true],
    ["deletion does", { ...pool, metadata: { ...pool.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } }, true],
    ["finalizers do", { ...pool, metadata: { ...pool.metadata, finalizers: [] } }, true],
    ["labels do (Cluster labels)", { ...pool, metadata: { ...pool.metadata, labels: { l: "v" } } }, true],
    ["a new incarnation (uid) does", { ...pool, metadata: { ...pool.metadata, uid: "v" } }, true],
  ];
  for (const [what, other, differs] of rows)
    it(what, () => expect(poolFingerprint(other) !== poolFingerprint(pool)).to.equal(differs));

  it("any change of any API counts; empty or overflowed logs do not", () => {
    const api = {} as ClaimApi;
    const of = (c: ApiChanges): boolean => anyChange(new Map([[api, c]]));
    expect([
      of({ claims: [], records: [] }),
      of({ claims: undefined, records: undefined }),
      of({ claims: [changed("k")], records: [] }),
      of({ claims: [], records: [changed("r")] }),
    ]).to.deep.equal([false, false, true, true]);
  });
});
