import { expect } from "chai";
import type { KubeObject } from "../../kube/resource.js";
import type { PoolRecord } from "./kind.js";
import type { ClaimApi } from "./pass.js";
import { pendingClaims } from "./state.js";

const LEAVING = { deletionTimestamp: "2025-01-01T00:00:00Z" };
const POOL = "IPPool.ipam.metal3.io/ns/p";

/** A claim API over fixed caches: claims by cache key and pool, records by the cache key of their claim. */
function apiOver(
  claims: Record<string, { pool: string; deleting?: boolean }>,
  recordsOfClaim: Record<string, string[]>,
): ClaimApi {
  return {
    claimInPool: (cacheKey: string, key: string): KubeObject | undefined => {
      const c = claims[cacheKey];
      if (!c || c.pool !== key) return undefined;
      return { metadata: { name: cacheKey.split("/")[1] ?? "", namespace: "ns", ...(c.deleting ? LEAVING : {}) } };
    },
    recordsOfClaim: (cacheKey: string, key: string): PoolRecord[] =>
      key === POOL
        ? (recordsOfClaim[cacheKey] ?? []).map((address) => ({ metadata: { name: address }, spec: { address } }))
        : [],
  } as unknown as ClaimApi;
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
