import { expect } from "chai";
import type { IPAddress, IPClaim, IPPool, ObjectMeta } from "../../../api/v1alpha1/types.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import { claimToPool } from "./indexes.js";
import { METAL3_POOL_KIND } from "./kind.js";
import { planClaim, type ClaimAction, type ClaimPlanInput } from "./plan.js";

const OURS = "ipclaim.ipam.metal3.io";
const DELETED = "2026-11-23T00:00:00Z";

function pool(spec: Partial<IPPool["spec"]> = {}): IPPool {
  return {
    metadata: { name: "p", namespace: "ns", uid: "uid-p" },
    spec: { namePrefix: "p", pools: [{ start: "10.0.0.1", end: "10.0.0.3" }], prefix: 24, ...spec },
  };
}

function claim(meta: Partial<ObjectMeta> = {}, statusAddress?: string, poolNamespace?: string): IPClaim {
  return {
    metadata: { name: "c", namespace: "ns", uid: "uid-c", ...meta },
    spec: { pool: { name: "p", ...(poolNamespace ? { namespace: poolNamespace } : {}) } },
    ...(statusAddress ? { status: { address: { name: statusAddress, namespace: "ns" } } } : {}),
  };
}

function record(name: string, address: string, ownerUid?: string): IPAddress {
  return {
    metadata: {
      name,
      namespace: "ns",
      ...(ownerUid ? { ownerReferences: [{ apiVersion: "v", kind: "IPClaim", name: "c", uid: ownerUid }] } : {}),
    },
    spec: { address, pool: { name: "p", namespace: "ns" }, claim: { name: "c", namespace: "ns" } },
  };
}

function plan(over: Partial<ClaimPlanInput> = {}): ClaimAction {
  const p = over.pool === undefined && "pool" in over ? undefined : (over.pool ?? pool());
  return planClaim({
    claim: claim(),
    pool: p,
    claimAddresses: [],
    pause: { paused: false },
    allocator: "allocator" in over ? over.allocator : p ? new PoolAllocator(p.spec) : undefined,
    addressNamed: () => undefined,
    onCollision: () => undefined,
    ...over,
  });
}

function summary(a: ClaimAction): string {
  switch (a.kind) {
    case "skip":
      return `skip: ${a.why}`;
    case "release":
      return `release ${a.addresses.map((x) => x.metadata.name).join(",") || "-"}`;
    case "bind":
      return `bind ${a.address.metadata.name ?? ""}${a.duplicates?.length ? ` drop ${a.duplicates.map((x) => x.metadata.name).join(",")}` : ""}`;
    case "redo":
      return `redo ${a.addresses.map((x) => x.metadata.name).join(",")}`;
    case "create":
      return `create ${a.address.metadata.name ?? ""} ${a.address.spec.address}`;
    case "fail":
      return `fail ${a.reason}: ${a.message}`;
  }
}

describe("planClaim (spec §3, pure)", () => {
  const mine = record("p-10-0-0-2", "10.0.0.2", "uid-c");
  const rows: [string, Partial<ClaimPlanInput>, string][] = [
    [
      "a paused claim is not touched",
      { pause: { paused: true, why: "Cluster wl is paused" } },
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
      "skip: deleted by clusterctl move",
    ],
    [
      "deleting with CAPM3's finalizer: the address stays",
      {
        claim: claim({ deletionTimestamp: DELETED, finalizers: [OURS, "metal3data.infrastructure.cluster.x-k8s.io"] }),
        claimAddresses: [mine],
      },
      "skip: waiting for foreign finalizers",
    ],
    [
      "deleting with only ours: release",
      { claim: claim({ deletionTimestamp: DELETED, finalizers: [OURS] }), claimAddresses: [mine] },
      "release p-10-0-0-2",
    ],
    [
      "a pool of another namespace is refused with a message",
      { claim: claim({}, undefined, "elsewhere") },
      "fail AllocationFailed: IPPool elsewhere/p is in another namespace; an IPClaim can only use a pool of its own namespace",
    ],
    ["an existing record is bound", { claimAddresses: [mine] }, "bind p-10-0-0-2"],
    [
      "our record the status does not name yet, whose address another record holds, is redone (never confirmed)",
      { claimAddresses: [mine], heldByAnother: (r) => r === mine },
      "redo p-10-0-0-2",
    ],
    [
      "once the status names it, the record stays whoever else holds its address",
      { claim: claim({}, "p-10-0-0-2"), claimAddresses: [mine], heldByAnother: () => true },
      "bind p-10-0-0-2",
    ],
    [
      "a record we did not make is adopted even when its address is held twice",
      { claimAddresses: [record("adopted", "10.0.0.1")], heldByAnother: () => true },
      "bind adopted",
    ],
    [
      "a previous incarnation's record is not bound",
      { claimAddresses: [record("p-10-0-0-3", "10.0.0.3", "uid-old")] },
      "create p-10-0-0-1 10.0.0.1",
    ],
    [
      "the record the status names is kept, a second one of ours dropped",
      { claim: claim({}, "p-10-0-0-3"), claimAddresses: [mine, record("p-10-0-0-3", "10.0.0.3", "uid-c")] },
      "bind p-10-0-0-3 drop p-10-0-0-2",
    ],
    ["no pool", { pool: undefined }, "fail PoolNotFound: IPPool p not found"],
    [
      "a missing Cluster blocks allocation",
      { pause: { paused: false, clusterMissing: "wl" } },
      "fail ClusterNotFound: Cluster wl not found",
    ],
    [
      "a deleting pool allocates nothing",
      { allocationBlocked: { reason: "PoolNotReady", message: "IPPool p is being deleted" } },
      "fail PoolNotReady: IPPool p is being deleted",
    ],
    [
      "a deleting pool still honours a preallocation",
      {
        pool: pool({ preAllocations: { c: "10.0.0.3" } }),
        allocationBlocked: { reason: "PoolNotReady", message: "IPPool p is being deleted" },
      },
      "create p-10-0-0-3 10.0.0.3",
    ],
    ["allocates the first free address", {}, "create p-10-0-0-1 10.0.0.1"],
    [
      "an empty ipAddress annotation is no request",
      { claim: claim({ annotations: { ipAddress: "" } }) },
      "create p-10-0-0-1 10.0.0.1",
    ],
    [
      "the ipAddress annotation asks for one",
      { claim: claim({ annotations: { ipAddress: "10.0.0.3" } }) },
      "create p-10-0-0-3 10.0.0.3",
    ],
    ["a preallocation wins", { pool: pool({ preAllocations: { c: "10.0.0.2" } }) }, "create p-10-0-0-2 10.0.0.2"],
  ];
  for (const [what, over, expected] of rows) it(what, () => expect(summary(plan(over))).to.equal(expected));

  it("writes the IPAddress of spec §3.3: owners, finalizer, labels, values", () => {
    const action = plan({
      claim: claim({ labels: { a: "b" } }),
      pool: pool({ gateway: "10.0.0.254", dnsServers: ["10.0.0.53"] }),
    });
    if (action.kind !== "create") throw new Error(summary(action));
    expect(action.address.metadata).to.deep.include({ labels: { a: "b" }, finalizers: ["ipaddress.ipam.metal3.io"] });
    expect(action.address.metadata.ownerReferences?.map((o) => `${o.kind}/${o.uid}`)).to.deep.equal([
      "IPPool/uid-p",
      "IPClaim/uid-c",
    ]);
    expect(action.address.spec).to.deep.equal({
      address: "10.0.0.1",
      prefix: 24,
      gateway: "10.0.0.254",
      dnsServers: ["10.0.0.53"],
      pool: { name: "p", namespace: "ns" },
      claim: { name: "c", namespace: "ns" },
    });
  });

  it("omits a zero prefix, as Go clients do, so their full updates are no change (spec §1.3)", () => {
    const action = plan({ pool: pool({ prefix: undefined }) });
    if (action.kind !== "create") throw new Error(summary(action));
    expect(action.address.spec).to.not.have.property("prefix");
  });
});

describe("what the CRD schema admits with the webhooks off (pure)", () => {
  /** A claim as stored: any spec at all, or none. */
  const stored = (spec: unknown, meta: Partial<ObjectMeta> = {}): IPClaim =>
    ({
      metadata: { name: "c", namespace: "ns", uid: "uid-c", ...meta },
      ...(spec === undefined ? {} : { spec }),
    }) as IPClaim;
  const NAMELESS = "IPPool.ipam.metal3.io/ns/";

  describe("claims: the key they are served under, and the decision there", () => {
    const rows: [string, IPClaim, string, string][] = [
      [
        "no spec",
        stored(undefined),
        NAMELESS,
        "fail AllocationFailed: spec is missing: the claim names no IPPool (spec.pool.name)",
      ],
      [
        "spec.pool without a name (Metal3's CRD)",
        stored({ pool: {} }),
        NAMELESS,
        "fail AllocationFailed: spec.pool.name is empty: the claim names no IPPool",
      ],
      [
        "spec.pool.name empty",
        stored({ pool: { name: "" } }),
        NAMELESS,
        "fail AllocationFailed: spec.pool.name is empty: the claim names no IPPool",
      ],
      [
        "an empty name and another namespace: the empty name is what is wrong",
        stored({ pool: { name: "", namespace: "elsewhere" } }),
        NAMELESS,
        "fail AllocationFailed: spec.pool.name is empty: the claim names no IPPool",
      ],
      [
        "no spec, deleting with our finalizer: released, not failed",
        stored(undefined, { deletionTimestamp: DELETED, finalizers: [OURS] }),
        NAMELESS,
        "release -",
      ],
      [
        "a pool that does not exist: Metal3 waits for it, and the claim says so",
        stored({ pool: { name: "later" } }),
        "IPPool.ipam.metal3.io/ns/later",
        "fail PoolNotFound: IPPool later not found",
      ],
    ];
    for (const [what, c, key, expected] of rows) {
      it(what, () => {
        expect(claimToPool(c)).to.equal(key);
        const absent = key === NAMELESS || key.endsWith("/later");
        expect(summary(plan({ claim: c, ...(absent ? { pool: undefined } : {}) }))).to.equal(expected);
      });
    }
  });

  describe("pools and requests: the claim is told why nothing is handed out", () => {
    const rows: [string, IPPool, Partial<ObjectMeta>, string][] = [
      [
        "a pool without spec",
        { metadata: { name: "p", namespace: "ns", uid: "uid-p" } } as IPPool,
        {},
        "fail PoolNotReady: IPPool p has no usable address range: spec is missing: the pool has no namePrefix and no address ranges",
      ],
      [
        "a pool whose only range is reversed",
        pool({ pools: [{ start: "10.0.0.9", end: "10.0.0.1" }] }),
        {},
        'fail PoolNotReady: IPPool p has no usable address range: spec.pools[0].end: Invalid value: "10.0.0.1": end is before start',
      ],
      [
        "a pool without ranges and without errors is exhausted",
        pool({ pools: [] }),
        {},
        "fail PoolExhausted: Exhausted IP Pools",
      ],
      [
        "an IPv6 request in an IPv4 pool",
        pool(),
        { annotations: { ipAddress: "2001:db8::1" } },
        "fail AllocationFailed: Requested IP 2001:db8::1 is out of bounds: it lies in no range of the pool",
      ],
      [
        "a request that is no address",
        pool(),
        { annotations: { ipAddress: "ten" } },
        'fail AllocationFailed: Invalid ipAddress annotation "ten": not a valid IP address',
      ],
    ];
    for (const [what, p, meta, expected] of rows) {
      it(what, async () => {
        const allocator = await METAL3_POOL_KIND.openAllocator(p, {} as never);
        expect(summary(plan({ claim: claim(meta), pool: p, allocator }))).to.equal(expected);
      });
    }
  });
});
