import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim } from "../../../api/capi/types.js";
import type { IPAddress, IPClaim, IPPool, ObjectMeta, Reason } from "../../../api/v1alpha1/types.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import { planCapiClaim, type CapiClaimAction } from "../capi/plan.js";
import { METAL3_POOL_KIND } from "../ippool/kind.js";
import { planClaim, type ClaimAction } from "../ippool/plan.js";

/**
 * Both claim lifecycles deciding in one pass over one Metal3 pool, as the pass interleaves them: IPClaims (ippool/)
 * and Cluster API IPAddressClaims (capi/) share the pass's allocator, so each decision sees the ones before it.
 */
const DELETED = "2026-11-23T00:00:00Z";
const BLOCKED = { reason: "PoolNotReady" as Reason, message: "IPPool p is being deleted" };

const pool = (spec: Partial<IPPool["spec"]> = {}): IPPool => ({
  metadata: { name: "p", namespace: "ns", uid: "uid-p" },
  spec: { namePrefix: "p", pools: [{ start: "10.0.0.1", end: "10.0.0.3" }], prefix: 24, ...spec },
});

/** A claim of either API: `ip:<name>` is an IPClaim, `capi:<name>` an IPAddressClaim. */
interface ClaimRow {
  id: string;
  meta?: Partial<ObjectMeta>;
  /** The address of the record the claim already has (named as Metal3 names it). */
  record?: string;
}

const ipClaim = (name: string, meta: Partial<ObjectMeta> = {}): IPClaim => ({
  metadata: { name, namespace: "ns", uid: `uid-${name}`, ...meta },
  spec: { pool: { name: "p" } },
});
const capiClaim = (name: string, meta: Partial<ObjectMeta> = {}): IPAddressClaim => ({
  metadata: { name, namespace: "ns", uid: `uid-${name}`, ...meta },
  spec: { poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" } },
});
const recordName = (address: string): string => `p-${address.replaceAll(".", "-")}`;

/** Decides `claims` in order in one allocator (records reserved first, as a pass does); each outcome in a few words. */
function pass(p: IPPool, claims: ClaimRow[], blocked?: typeof BLOCKED): string[] {
  const allocator = new PoolAllocator(p.spec);
  for (const c of claims) {
    const [api, name = ""] = c.id.split(":");
    const claimKind = api === "ip" ? "IPClaim" : "IPAddressClaim";
    if (c.record) allocator.reserve(c.record, { kind: "claim", claimName: name, claimKind });
  }
  const common = {
    pool: p,
    pause: { paused: false } as const,
    allocator,
    onCollision: () => undefined,
    ...(blocked ? { allocationBlocked: blocked } : {}),
  };
  return claims.map((c) => {
    const [api, name = ""] = c.id.split(":");
    if (api === "ip") {
      const claim = ipClaim(name, c.meta);
      const records: IPAddress[] = c.record
        ? [
            {
              metadata: { name: recordName(c.record), namespace: "ns" },
              spec: { address: c.record, pool: { name: "p" }, claim: { name } },
            },
          ]
        : [];
      return summary(planClaim({ ...common, claim, claimAddresses: records, addressNamed: () => undefined }));
    }
    const claim = capiClaim(name, c.meta);
    const records: CapiIPAddress[] = c.record
      ? [
          {
            metadata: { name: recordName(c.record), namespace: "ns" },
            spec: { address: c.record, prefix: 24, claimRef: { name }, poolRef: claim.spec.poolRef },
          },
        ]
      : [];
    return summary(
      planCapiClaim({
        ...common,
        claim,
        kind: METAL3_POOL_KIND,
        claimAddresses: records,
        movedAway: false,
        addressNamed: () => undefined,
        addressApiVersion: "ipam.cluster.x-k8s.io/v1beta2",
        now: new Date(DELETED),
      }),
    );
  });
}

function summary(a: ClaimAction | CapiClaimAction): string {
  switch (a.kind) {
    case "create":
      return `create ${a.address.spec.address}`;
    case "bind":
      return `bind ${a.address.spec.address}`;
    case "release":
      return `release ${a.addresses.map((x) => x.spec.address).join(",")}`;
    case "fail":
      return `fail ${a.reason}: ${a.message}`;
    default:
      return a.kind;
  }
}

const deleting = (finalizer: string): Partial<ObjectMeta> => ({ deletionTimestamp: DELETED, finalizers: [finalizer] });

describe("both claim lifecycles in one pass over one pool (plans, pure)", () => {
  const rows: [string, IPPool, ClaimRow[], string[], typeof BLOCKED?][] = [
    ["an empty pass decides nothing", pool(), [], []],
    [
      "one claim of each API: the next free address each",
      pool(),
      [{ id: "ip:a" }, { id: "capi:b" }],
      ["create 10.0.0.1", "create 10.0.0.2"],
    ],
    [
      "records already present are bound, and new claims of either API skip their addresses",
      pool(),
      [{ id: "capi:b", record: "10.0.0.1" }, { id: "ip:a" }, { id: "ip:c", record: "10.0.0.2" }],
      ["bind 10.0.0.1", "create 10.0.0.3", "bind 10.0.0.2"],
    ],
    [
      "two claims of the two APIs racing for one address: the first wins, the second is refused",
      pool(),
      [
        { id: "capi:b", meta: { annotations: { ipAddress: "10.0.0.3" } } },
        { id: "ip:a", meta: { annotations: { ipAddress: "10.0.0.3" } } },
      ],
      ["create 10.0.0.3", "fail AllocationFailed: Requested IP not available"],
    ],
    [
      "a preallocation applies to claims of that name of both APIs: the second of them is refused",
      pool({ preAllocations: { c: "10.0.0.2" } }),
      [{ id: "ip:c" }, { id: "capi:c" }],
      ["create 10.0.0.2", 'fail AllocationFailed: Pre-allocated IP 10.0.0.2 is held by IPClaim "c"'],
    ],
    [
      "an exhausted pool fails the claims past its size, of either API",
      pool(),
      [{ id: "ip:a" }, { id: "capi:b" }, { id: "ip:c" }, { id: "capi:d" }],
      ["create 10.0.0.1", "create 10.0.0.2", "create 10.0.0.3", "fail PoolExhausted: Exhausted IP Pools"],
    ],
    [
      "a claim in deletion is released, but its address is not handed out again in the same pass",
      pool(),
      [{ id: "ip:a", record: "10.0.0.1", meta: deleting("ipclaim.ipam.metal3.io") }, { id: "capi:b" }],
      ["release 10.0.0.1", "create 10.0.0.2"],
    ],
    [
      "a Cluster API claim in deletion likewise",
      pool(),
      [{ id: "capi:b", record: "10.0.0.1", meta: deleting("ipam.metal3.io/ipaddressclaim") }, { id: "ip:a" }],
      ["release 10.0.0.1", "create 10.0.0.2"],
    ],
    [
      "a deleting pool hands out nothing new to either API, but serves a preallocation and binds records",
      pool({ preAllocations: { c: "10.0.0.3" } }),
      [{ id: "ip:a" }, { id: "capi:b", record: "10.0.0.1" }, { id: "capi:c" }],
      ["fail PoolNotReady: IPPool p is being deleted", "bind 10.0.0.1", "create 10.0.0.3"],
      BLOCKED,
    ],
  ];
  for (const [what, p, claims, expected, blocked] of rows)
    it(what, () => expect(pass(p, claims, blocked)).to.deep.equal(expected));
});
