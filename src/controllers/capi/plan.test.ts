import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim } from "../../../api/capi/types.js";
import type { InClusterIPPool } from "../../../api/incluster/types.js";
import type { IPPool, ObjectMeta } from "../../../api/v1alpha1/types.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import type { PauseState } from "../clusters.js";
import { GLOBAL_INCLUSTER_POOL_KIND, INCLUSTER_POOL_KIND } from "../incluster/kind.js";
import { PoolKinds } from "../pools/registry.js";
import { METAL3_POOL_KIND } from "../ippool/kind.js";
import { planCapiClaim, type CapiClaimAction, type CapiClaimPlanInput } from "./plan.js";
import { capiClaimTarget } from "./translate.js";

const OURS = "ipam.metal3.io/ipaddressclaim";
const DELETED = "2026-11-23T00:00:00Z";

const pool: IPPool = {
  metadata: { name: "p", namespace: "ns", uid: "uid-p" },
  spec: { namePrefix: "p", pools: [{ start: "10.0.0.1", end: "10.0.0.3" }], prefix: 24, gateway: "10.0.0.254" },
};

function claim(meta: Partial<ObjectMeta> = {}, addressRef?: string): IPAddressClaim {
  return {
    apiVersion: "ipam.cluster.x-k8s.io/v1beta2",
    metadata: { name: "c", namespace: "ns", uid: "uid-c", ...meta },
    spec: { poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" } },
    ...(addressRef ? { status: { addressRef: { name: addressRef } } } : {}),
  };
}

function record(name: string, address: string, ownerUid?: string, poolName = "p"): CapiIPAddress {
  return {
    metadata: {
      name,
      namespace: "ns",
      ...(ownerUid
        ? { ownerReferences: [{ apiVersion: "v", kind: "IPAddressClaim", name: "c", uid: ownerUid, controller: true }] }
        : {}),
    },
    spec: {
      claimRef: { name: "c" },
      poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: poolName },
      address,
      prefix: 24,
    },
  };
}

function plan(
  over: Partial<CapiClaimPlanInput> = {},
  holders: Record<string, CapiIPAddress> = {},
): { action: CapiClaimAction; collisions: string[] } {
  const collisions: string[] = [];
  const action = planCapiClaim({
    claim: claim(),
    kind: METAL3_POOL_KIND,
    pool,
    claimAddresses: [],
    pause: { paused: false },
    allocator: new PoolAllocator(pool.spec),
    movedAway: false,
    addressNamed: (name) => holders[name],
    onCollision: (m) => collisions.push(m),
    addressApiVersion: "ipam.cluster.x-k8s.io/v1beta2",
    now: new Date(DELETED),
    ...over,
  });
  return { action, collisions };
}

/** The action in a few comparable words. */
function summary(a: CapiClaimAction): string {
  switch (a.kind) {
    case "skip":
      return `skip: ${a.why}`;
    case "release":
      return `release ${a.addresses.map((x) => x.metadata.name).join(",") || "-"}`;
    case "hold":
      return `hold ${a.releaseInMs} ms`;
    case "bind":
      return `bind ${a.address.metadata.name ?? ""}${a.duplicates.length ? ` drop ${a.duplicates.map((x) => x.metadata.name).join(",")}` : ""}`;
    case "redo":
      return `redo ${a.addresses.map((x) => x.metadata.name).join(",")}`;
    case "create":
      return `create ${a.address.metadata.name ?? ""} ${a.address.spec.address}`;
    case "fail":
      return `fail ${a.reason}: ${a.message}`;
  }
}

const preallocated: IPPool = { ...pool, spec: { ...pool.spec, preAllocations: { c: "10.0.0.2" } } };

describe("planCapiClaim (spec §5, pure)", () => {
  const paused: PauseState = { paused: true, why: "Cluster wl is paused" };
  const mine = record("p-10-0-0-2", "10.0.0.2", "uid-c");
  const rows: [string, Partial<CapiClaimPlanInput>, string][] = [
    [
      "a paused claim is not touched, even when deleting",
      { pause: paused, claim: claim({ deletionTimestamp: DELETED, finalizers: [OURS] }) },
      "skip: Cluster wl is paused",
    ],
    [
      "deleted by clusterctl move: nothing released",
      {
        claim: claim({
          deletionTimestamp: DELETED,
          finalizers: [OURS],
          annotations: { "clusterctl.cluster.x-k8s.io/delete-for-move": "" },
        }),
        claimAddresses: [mine],
      },
      "skip: moved by clusterctl",
    ],
    ["a claim that left with clusterctl move is not re-allocated", { movedAway: true }, "skip: moved by clusterctl"],
    [
      "deleting with another controller's finalizer: the address stays",
      {
        claim: claim({ deletionTimestamp: DELETED, finalizers: ["consumer.example/in-use", OURS] }),
        claimAddresses: [mine],
      },
      "skip: waiting for foreign finalizers",
    ],
    [
      "deleting with only ours: release its record",
      { claim: claim({ deletionTimestamp: DELETED, finalizers: [OURS] }), claimAddresses: [mine] },
      "release p-10-0-0-2",
    ],
    [
      "deleting: a previous incarnation's record is not this claim's",
      {
        claim: claim({ deletionTimestamp: DELETED, finalizers: [OURS] }),
        claimAddresses: [record("p-10-0-0-3", "10.0.0.3", "uid-old")],
      },
      "release -",
    ],
    ["an existing record is bound, never re-allocated", { claimAddresses: [mine] }, "bind p-10-0-0-2"],
    [
      "our record the status does not name yet, whose address another record holds, is redone (never confirmed)",
      { claimAddresses: [mine], heldByAnother: (r) => r === mine },
      "redo p-10-0-0-2",
    ],
    [
      "a record without owners (Metal3's, a restore) is adopted",
      { claimAddresses: [record("legacy", "10.0.0.3")] },
      "bind legacy",
    ],
    [
      "another pool's record of the same claim name is not this claim's",
      { claimAddresses: [record("q-10-0-0-3", "10.0.0.3", "uid-c", "q")] },
      "create p-10-0-0-1 10.0.0.1",
    ],
    [
      "the record the status names is kept; a second one we made is dropped, an adopted one is not",
      {
        claim: claim({}, "p-10-0-0-3"),
        claimAddresses: [mine, record("p-10-0-0-3", "10.0.0.3", "uid-c"), record("adopted", "10.0.0.1")],
      },
      "bind p-10-0-0-3 drop p-10-0-0-2",
    ],
    ["no pool", { pool: undefined, allocator: undefined }, "fail PoolNotReady: IPPool p not found"],
    [
      "a Cluster that does not exist blocks allocation",
      { pause: { paused: false, clusterMissing: "wl" } },
      "fail PoolNotReady: Cluster wl not found",
    ],
    [
      "a deleting pool allocates nothing new",
      { allocationBlocked: { reason: "PoolNotReady", message: "IPPool p is being deleted" } },
      "fail PoolNotReady: IPPool p is being deleted",
    ],
    [
      "a deleting pool still honours a preallocation",
      {
        pool: preallocated,
        allocator: new PoolAllocator(preallocated.spec),
        allocationBlocked: { reason: "PoolNotReady", message: "IPPool p is being deleted" },
      },
      "create p-10-0-0-2 10.0.0.2",
    ],
    ["allocates the first free address, named as Metal3 names it", {}, "create p-10-0-0-1 10.0.0.1"],
    [
      "the ipAddress annotation asks for an address",
      { claim: claim({ annotations: { ipAddress: "10.0.0.3" } }) },
      "create p-10-0-0-3 10.0.0.3",
    ],
    [
      "an empty ipAddress annotation is no request (Metal3 reads it so)",
      { claim: claim({ annotations: { ipAddress: "" } }) },
      "create p-10-0-0-1 10.0.0.1",
    ],
    [
      "a malformed annotation fails with Metal3's message",
      { claim: claim({ annotations: { ipAddress: "ten" } }) },
      'fail AllocationFailed: Invalid ipAddress annotation "ten": not a valid IP address',
    ],
  ];
  for (const [what, over, expected] of rows) it(what, () => expect(summary(plan(over).action)).to.equal(expected));

  it("an address held by an IPClaim of the same name is not the IPAddressClaim's", () => {
    const allocator = new PoolAllocator(pool.spec);
    allocator.reserve("10.0.0.1", { kind: "claim", claimName: "c", claimKind: "IPClaim" });
    expect(summary(plan({ allocator }).action)).to.equal("create p-10-0-0-2 10.0.0.2");
  });

  it("reports PoolExhausted when every address is held", () => {
    const allocator = new PoolAllocator(pool.spec);
    for (const a of ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) allocator.reserve(a, { kind: "other", description: "x" });
    expect(summary(plan({ allocator }).action)).to.equal("fail PoolExhausted: Exhausted IP Pools");
  });

  it("skips an address whose record name another pool's object bears, and reports the collision", () => {
    const { action, collisions } = plan({}, { "p-10-0-0-1": record("p-10-0-0-1", "10.0.0.1", "uid-x", "other") });
    expect(summary(action)).to.equal("create p-10-0-0-2 10.0.0.2");
    expect(collisions).to.have.length(1);
    expect(collisions[0]).to.contain("belongs to IPPool other");
  });

  it("the created record carries the allocation and reserves it for the claim (kind and name)", () => {
    const allocator = new PoolAllocator(pool.spec);
    const { action } = plan({ allocator });
    if (action.kind !== "create") throw new Error(summary(action));
    expect(action.address.spec).to.deep.equal({
      claimRef: { name: "c" },
      poolRef: claim().spec.poolRef,
      address: "10.0.0.1",
      prefix: 24,
      gateway: "10.0.0.254",
    });
    expect(allocator.holdersOf("10.0.0.1")).to.deep.equal([
      { kind: "claim", claimName: "c", claimKind: "IPAddressClaim" },
    ]);
  });
});

describe("planCapiClaim: the in-cluster pools' address reuse grace period (spec §5, pure)", () => {
  const RELEASE = "ipam.cluster.x-k8s.io/ReleaseAddress";
  const graced = (seconds: number | undefined, deleting = false): InClusterIPPool => ({
    metadata: { name: "g", namespace: "ns", uid: "uid-g", ...(deleting ? { deletionTimestamp: DELETED } : {}) },
    spec: {
      addresses: ["10.0.0.1-10.0.0.3"],
      prefix: 24,
      ...(seconds === undefined ? {} : { addressReuseGracePeriodSeconds: seconds }),
    },
  });
  const deleted = (finalizers = [RELEASE]): IPAddressClaim => ({
    ...claim({ deletionTimestamp: DELETED, finalizers }),
    spec: { poolRef: { apiGroup: "ipam.cluster.x-k8s.io", kind: "InClusterIPPool", name: "g" } },
  });
  const held: CapiIPAddress = {
    metadata: { name: "c", namespace: "ns" },
    spec: { claimRef: { name: "c" }, poolRef: deleted().spec.poolRef, address: "10.0.0.1", prefix: 24 },
  };
  const at = (ms: number): Date => new Date(Date.parse(DELETED) + ms);
  const rows: [string, Partial<CapiClaimPlanInput>, string][] = [
    ["no period: released at once", { pool: graced(undefined) }, "release c"],
    ["a period of 0: released at once", { pool: graced(0) }, "release c"],
    ["within the period: held for what is left of it", { pool: graced(4), now: at(1_250) }, "hold 2750 ms"],
    [
      "counted from deletionTimestamp, not from when a controller saw it",
      { pool: graced(4), now: at(3_999) },
      "hold 1 ms",
    ],
    ["at its end: released", { pool: graced(4), now: at(4_000) }, "release c"],
    ["after it: released", { pool: graced(4), now: at(60_000) }, "release c"],
    ["the pool being deleted skips the period", { pool: graced(300, true), now: at(1) }, "release c"],
    ["the pool gone skips the period", { pool: undefined, allocator: undefined, now: at(1) }, "release c"],
    [
      "another finalizer still comes first",
      { pool: graced(4), claim: deleted(["consumer.example/in-use", RELEASE]), now: at(60_000) },
      "skip: waiting for foreign finalizers",
    ],
  ];
  for (const [what, over, expected] of rows)
    it(what, () =>
      expect(
        summary(plan({ kind: INCLUSTER_POOL_KIND, claim: deleted(), claimAddresses: [held], ...over }).action),
      ).to.equal(expected),
    );

  it("Metal3 pools have no period: their claims are released at once", () => {
    const metal3 = plan({ claim: claim({ deletionTimestamp: DELETED, finalizers: [OURS] }), claimAddresses: [] });
    expect(summary(metal3.action)).to.equal("release -");
    expect("releaseGraceSeconds" in METAL3_POOL_KIND, "Metal3 IPPool has no period").to.equal(false);
  });
});

describe("poolRefs the Cluster API v1beta1 schema admits with the webhooks off (pure)", () => {
  const kinds = new PoolKinds([METAL3_POOL_KIND, INCLUSTER_POOL_KIND, GLOBAL_INCLUSTER_POOL_KIND]);
  const withRef = (poolRef: object): IPAddressClaim => ({ ...claim(), spec: { poolRef } }) as unknown as IPAddressClaim;
  /** [what, poolRef, key served under (none: another provider's), decision there]. */
  const rows: [string, object, string | undefined, string][] = [
    [
      "an empty name",
      { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "" },
      "IPPool.ipam.metal3.io/ns/",
      "fail AllocationFailed: spec.poolRef.name is empty: the claim names no IPPool",
    ],
    [
      "no apiGroup, one of our kinds",
      { kind: "IPPool", name: "p" },
      "IPPool.ipam.metal3.io/ns/",
      "fail AllocationFailed: spec.poolRef.apiGroup is empty: IPPool pools are in group ipam.metal3.io",
    ],
    [
      "an empty kind in our group",
      { apiGroup: "ipam.metal3.io", kind: "", name: "p" },
      "IPPool.ipam.metal3.io/ns/",
      "fail AllocationFailed: spec.poolRef.kind is empty: set the kind of pool in group ipam.metal3.io to allocate from",
    ],
    [
      "a cluster-scoped kind with an empty name: keyed without namespace",
      { apiGroup: "ipam.cluster.x-k8s.io", kind: "GlobalInClusterIPPool", name: "" },
      "GlobalInClusterIPPool.ipam.cluster.x-k8s.io//",
      "fail AllocationFailed: spec.poolRef.name is empty: the claim names no GlobalInClusterIPPool",
    ],
    [
      "a pool that does not exist (yet): its own key; the claim waits and says why",
      { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "later" },
      "IPPool.ipam.metal3.io/ns/later",
      "fail PoolNotReady: IPPool later not found",
    ],
    ["another provider's kind: not ours", { apiGroup: "ipam.example.com", kind: "IPPool", name: "" }, undefined, ""],
    ["neither group nor kind: nobody's", { apiGroup: "", kind: "", name: "p" }, undefined, ""],
  ];
  for (const [what, poolRef, key, expected] of rows) {
    it(what, () => {
      const c = withRef(poolRef);
      const target = capiClaimTarget(kinds, c);
      expect(target?.key).to.equal(key);
      if (!target) return;
      const refProblem = target.problem;
      const decided = plan({ claim: c, pool: undefined, allocator: undefined, ...(refProblem ? { refProblem } : {}) });
      expect(summary(decided.action)).to.equal(expected);
    });
  }

  it("a deleting claim with a broken poolRef is released, not failed", () => {
    const c = {
      ...withRef({ kind: "IPPool", name: "p" }),
      metadata: { ...claim().metadata, deletionTimestamp: DELETED, finalizers: [OURS] },
    };
    const refProblem = capiClaimTarget(kinds, c)?.problem;
    expect(refProblem).to.be.a("string");
    expect(
      summary(plan({ claim: c, pool: undefined, allocator: undefined, ...(refProblem ? { refProblem } : {}) }).action),
    ).to.equal("release -");
  });
});
