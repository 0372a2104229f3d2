import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim } from "../../../api/capi/types.js";
import type { IPAddress, IPClaim } from "../../../api/v1alpha1/types.js";
import type { BucketChange } from "../../kube/journal.js";
import type { KubeObject } from "../../kube/resource.js";
import { IPAddressClaimApi } from "../capi/api.js";
import { IPClaimApi } from "../ippool/api.js";
import type { Metal3Caches } from "../ippool/caches.js";
import { ipPoolKey } from "../ippool/indexes.js";
import { METAL3_POOL_KIND } from "../ippool/kind.js";
import type { Store } from "../store.js";
import type { IndexedCache } from "./claimindex.js";
import { BY_CLAIM, BY_POOL } from "./indexes.js";
import type { ClaimQueries, RecordCache } from "./pass.js";
import { PoolKinds } from "./registry.js";

/**
 * The cache queries both claim APIs answer through ClaimIndex, asked of each API over in-memory caches whose buckets
 * the rows state (so a bucket may disagree with what its object names now, as an index does between an update and
 * its event). Each API reads its own fields: IPClaim `spec.pool`, IPAddress `spec.pool`/`spec.claim`; IPAddressClaim
 * `spec.poolRef`, Cluster API IPAddress `spec.poolRef`/`spec.claimRef`.
 */
const P = ipPoolKey("ns", "p");
const Q = ipPoolKey("ns", "q");

/** An object cached under `<namespace>/<name>`, in bucket `buckets[index]` of each index. */
interface Row<T> {
  object: T;
  buckets: Readonly<Partial<Record<string, string>>>;
}

/** An in-memory cache of `rows`; `changes` is what the BY_POOL journal hands out per pool key. */
function cache<T extends KubeObject>(
  rows: Row<T>[],
  changes: Readonly<Record<string, BucketChange<T>[] | undefined>> = {},
): IndexedCache<T> & Omit<RecordCache, "byIndex"> {
  return {
    get: (namespace, name) =>
      rows.find((r) => r.object.metadata.namespace === namespace && r.object.metadata.name === name)?.object,
    byIndex: (index, key) => rows.filter((r) => r.buckets[index] === key).map((r) => r.object),
    changesIn: (index, key) => (index === BY_POOL ? changes[key] : undefined),
    observedIn: () => "1",
    synced: true,
    waitObserved: () => Promise.resolve(true),
  };
}

/** One claim API with its object shapes: `claim(name, pool)`, `record(name, pool, claim)`. */
interface ApiCase {
  name: string;
  claim(name: string, pool: string, deleting?: boolean): KubeObject;
  record(name: string, pool: string, claim: string | undefined): KubeObject;
  /** The API's index over caches of `claims` and `records`, or over none (not served) when both are undefined. */
  api(claims?: IndexedCache<KubeObject>, records?: IndexedCache<KubeObject>): ClaimQueries;
}

const meta = (name: string, deleting = false) => ({
  name,
  namespace: "ns",
  uid: `uid-${name}`,
  ...(deleting ? { deletionTimestamp: "2026-11-29T00:00:00Z" } : {}),
});

const CASES: ApiCase[] = [
  {
    name: "IPClaim",
    claim: (name, pool, deleting): IPClaim => ({ metadata: meta(name, deleting), spec: { pool: { name: pool } } }),
    record: (name, pool, claim): IPAddress => ({
      metadata: meta(name),
      spec: { address: "10.0.0.1", pool: { name: pool }, claim: { name: claim ?? "" } },
    }),
    api: (claims, records) =>
      new IPClaimApi({} as Store, { claims, addresses: records } as unknown as Metal3Caches).index,
  },
  {
    name: "IPAddressClaim",
    claim: (name, pool, deleting): IPAddressClaim => ({
      metadata: meta(name, deleting),
      spec: { poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: pool } },
    }),
    record: (name, pool, claim): CapiIPAddress => ({
      metadata: meta(name),
      spec: {
        address: "10.0.0.1",
        prefix: 24,
        poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: pool },
        claimRef: { name: claim ?? "" },
      },
    }),
    api: (claims, addresses) =>
      new IPAddressClaimApi(
        { capi: claims && addresses ? { claims, addresses } : undefined } as unknown as Store,
        new PoolKinds([METAL3_POOL_KIND]),
      ).index,
  },
];

const names = (objects: readonly KubeObject[]): string[] => objects.map((o) => o.metadata.name ?? "");

for (const c of CASES) {
  describe(`pools/claimindex: the ${c.name} API's cache queries`, () => {
    // c1 names p and sits in p's bucket; c2 names q now but still sits in p's bucket; c3 is deleting.
    const claims: Row<KubeObject>[] = [
      { object: c.claim("c1", "p"), buckets: { [BY_POOL]: P } },
      { object: c.claim("c2", "q"), buckets: { [BY_POOL]: P } },
      { object: c.claim("c3", "p", true), buckets: { [BY_POOL]: P } },
    ];
    // c1 has a record in p and a stray one in q; the third record names no claim.
    const records: Row<KubeObject>[] = [
      { object: c.record("r1", "p", "c1"), buckets: { [BY_POOL]: P, [BY_CLAIM]: "ns/c1" } },
      { object: c.record("r2", "q", "c1"), buckets: { [BY_POOL]: Q, [BY_CLAIM]: "ns/c1" } },
      { object: c.record("r3", "p", undefined), buckets: { [BY_POOL]: P } },
    ];
    const moved: BucketChange<KubeObject> = { key: "ns/c2", before: claims[1]!.object };
    const api = c.api(cache(claims, { [P]: [moved] }), cache(records, { [Q]: undefined }));

    it("lists a pool's claims and records from its bucket, none of an unknown pool", () => {
      expect(names(api.claimsOf(P))).to.deep.equal(["c1", "c2", "c3"]);
      expect(names(api.recordsOf(P))).to.deep.equal(["r1", "r3"]);
      expect(api.claimsOf(ipPoolKey("ns", "none"))).to.deep.equal([]);
    });

    it("finds a cached claim in a pool only while the claim names that pool", () => {
      expect(api.claimInPool("ns/c1", P)?.metadata.name).to.equal("c1");
      expect(api.claimInPool("ns/c2", P), "names q now").to.equal(undefined);
      expect(api.claimInPool("ns/c2", Q)?.metadata.name).to.equal("c2");
      expect(api.claimInPool("ns/gone", P)).to.equal(undefined);
      expect(api.claimInPool("other/c1", P), "another namespace").to.equal(undefined);
    });

    it("keys a record's claim in the record's namespace, none for a record naming no claim", () => {
      expect(api.claimKeyOf(records[0]!.object as never)).to.equal("ns/c1");
      expect(api.claimKeyOf(records[2]!.object as never)).to.equal(undefined);
    });

    it("gives a claim's records in the pool asked about only", () => {
      expect(names(api.recordsOfClaim("ns/c1", P))).to.deep.equal(["r1"]);
      expect(names(api.recordsOfClaim("ns/c1", Q))).to.deep.equal(["r2"]);
      expect(api.recordsOfClaim("ns/c2", P)).to.deep.equal([]);
    });

    it("allocates for a live claim with no record in any pool only", () => {
      expect(api.needsAllocation(claims[0]!.object), "has records").to.equal(false);
      expect(api.needsAllocation(claims[1]!.object)).to.equal(true);
      expect(api.needsAllocation(claims[2]!.object), "deleting").to.equal(false);
    });

    it("hands out the journal's changes, and its overflow as undefined", () => {
      expect(api.claimChanges(P)).to.deep.equal([moved]);
      expect(api.recordChanges(Q), "overflowed: read the whole bucket").to.equal(undefined);
      expect(api.records()).to.not.equal(undefined);
    });

    // Metal3's informers are always there; Cluster API's only once its CRDs are served.
    if (c.name === "IPAddressClaim")
      it("answers nothing, and no overflow, while its caches are not there", () => {
        const absent = c.api();
        expect(absent.records()).to.equal(undefined);
        expect(absent.claimsOf(P)).to.deep.equal([]);
        expect(absent.recordsOf(P)).to.deep.equal([]);
        expect(absent.claimInPool("ns/c1", P)).to.equal(undefined);
        expect(absent.recordsOfClaim("ns/c1", P)).to.deep.equal([]);
        expect(absent.claimChanges(P), "nothing changed, not 'read everything'").to.deep.equal([]);
        expect(absent.recordChanges(P)).to.deep.equal([]);
        expect(absent.needsAllocation(claims[1]!.object)).to.equal(true);
      });
  });
}
