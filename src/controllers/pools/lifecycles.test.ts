import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim } from "../../../api/capi/types.js";
import type { IPAddress, IPClaim, IPPool, ObjectMeta, Reason } from "../../../api/v1alpha1/types.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import { ApiError } from "../../kube/errors.js";
import { silentLogger } from "../../runtime/logger.js";
import { noMetrics } from "../../runtime/metrics.js";
import { applyCapiClaimAction, capiRecordHolder } from "../capi/claims.js";
import { planCapiClaim, type CapiClaimAction } from "../capi/plan.js";
import { applyClaimAction } from "../ippool/claims.js";
import { METAL3_POOL_KIND } from "../ippool/kind.js";
import { planClaim, type ClaimAction } from "../ippool/plan.js";
import type { CapiInformers } from "../store.js";
import { NONE, REQUEUE, type PassOutcome } from "./outcome.js";
import type { ApplyContext, Pass } from "./pass.js";

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

/**
 * What a claim's write asks of the pool's next pass, for the actions whose write needs no API server: those that
 * write nothing, and a create or a bind whose claim write loses a race, answered by a store that refuses that write
 * and lets the others through unchanged. Everything else a write does is covered against a real API server
 * (e2e/ippool, e2e/capi).
 */
describe("what each lifecycle's write asks of the next pass (outcomes, no server)", () => {
  const address = (a: string): CapiIPAddress => ({
    metadata: { name: recordName(a), namespace: "ns" },
    spec: { address: a, prefix: 24, claimRef: { name: "b" }, poolRef: capiClaim("b").spec.poolRef },
  });
  /**
   * A pass whose store refuses `write` (the claim's finalizer or status, the record's metadata) with `code`, over an allocator
   * holding 10.0.0.1 for "b"; `released` collects the records it was asked to delete.
   */
  function refusingPass(
    code: number,
    write: "finalizer" | "status" | "record" = "finalizer",
  ): { pass: Pass; allocator: PoolAllocator; released: string[] } {
    const allocator = new PoolAllocator(pool().spec);
    allocator.reserve("10.0.0.1", capiRecordHolder(METAL3_POOL_KIND, address("10.0.0.1")));
    const refuse = (): Promise<never> => Promise.reject(new ApiError("refused", code, undefined));
    const through = <T>(_cache: unknown, obj: T): Promise<T> => Promise.resolve(obj);
    const released: string[] = [];
    const store = {
      addFinalizer: write === "finalizer" ? refuse : through,
      patchStatus: write === "status" ? refuse : through,
      patchMetadata: write === "record" ? refuse : through,
      create: through,
      removeFinalizer: through,
      delete: (_cache: unknown, obj: CapiIPAddress) => Promise.resolve(void released.push(obj.spec.address)),
    };
    const ctx = { store, log: silentLogger(), allocator, now: new Date(DELETED), metrics: noMetrics };
    return { pass: { ctx: ctx as unknown as ApplyContext, kind: METAL3_POOL_KIND } as Pass, allocator, released };
  }
  const capi = { version: "v1beta1" } as CapiInformers;
  const ipPass = refusingPass(500).pass;
  const rows: [string, () => Promise<PassOutcome>, PassOutcome][] = [
    ["IPClaim, nothing to do: nothing", () => applyClaimAction(ipPass.ctx, { kind: "skip", why: "bound" }), NONE],
    [
      "IPClaim, no record to redo: nothing",
      () => applyClaimAction(ipPass.ctx, { kind: "redo", claim: ipClaim("a"), addresses: [] }),
      NONE,
    ],
    [
      "IPAddressClaim, nothing to do: nothing",
      () => applyCapiClaimAction(ipPass, capi, { kind: "skip", why: "bound" }),
      NONE,
    ],
    [
      "IPAddressClaim in its reuse grace period: a wake when it ends, in whole milliseconds",
      () => applyCapiClaimAction(ipPass, capi, { kind: "hold", claim: capiClaim("b"), releaseInMs: 1_234.2 }),
      { wakeInMs: 1_235 },
    ],
    [
      "IPAddressClaim, no record to redo: nothing",
      () => applyCapiClaimAction(ipPass, capi, { kind: "redo", claim: capiClaim("b"), addresses: [] }),
      NONE,
    ],
  ];
  for (const [what, write, expected] of rows) it(what, async () => expect(await write()).to.deep.equal(expected));

  for (const [code, why] of [
    [409, "the claim changed"],
    [404, "the claim is gone"],
  ] as const)
    it(`IPAddressClaim whose finalizer write loses a race (${why}): a requeue, the address freed`, async () => {
      const { pass, allocator } = refusingPass(code);
      expect(allocator.heldCount).to.equal(1);
      const create = { kind: "create", claim: capiClaim("b"), address: address("10.0.0.1") } as const;
      expect(await applyCapiClaimAction(pass, capi, create)).to.equal(REQUEUE);
      expect(allocator.heldCount).to.equal(0);
    });

  const adopt: CapiClaimAction = {
    kind: "bind",
    claim: capiClaim("b"),
    address: address("10.0.0.1"),
    duplicates: [address("10.0.0.2")],
  };
  for (const [code, write, why] of [
    [409, "finalizer", "the claim changed"],
    [404, "finalizer", "the claim is gone"],
    [409, "status", "the claim changed"],
    [409, "record", "the record changed"],
    [404, "record", "the record is gone"],
  ] as const)
    it(`IPAddressClaim adopting its record whose ${write} write loses a race (${why}): a requeue, the record kept`, async () => {
      const { pass, allocator, released } = refusingPass(code, write);
      expect(await applyCapiClaimAction(pass, capi, adopt)).to.equal(REQUEUE);
      expect(allocator.heldCount).to.equal(1);
      expect(released).to.deep.equal([]);
    });

  it("IPAddressClaim whose record is made and whose status write loses a race: a requeue, the record held", async () => {
    const { pass, allocator, released } = refusingPass(409, "status");
    const create = { kind: "create", claim: capiClaim("b"), address: address("10.0.0.1") } as const;
    expect(await applyCapiClaimAction(pass, capi, create)).to.equal(REQUEUE);
    expect(allocator.heldCount).to.equal(1);
    expect(released).to.deep.equal([]);
  });

  it("IPAddressClaim adopting its record whose finalizer write fails otherwise: the error, no outcome", async () => {
    const { pass } = refusingPass(500);
    let error: unknown;
    await applyCapiClaimAction(pass, capi, adopt).catch((err: unknown) => (error = err));
    expect((error as ApiError).code).to.equal(500);
  });

  it("IPAddressClaim whose finalizer write fails otherwise: the error, no outcome", async () => {
    const { pass } = refusingPass(500);
    const create = { kind: "create", claim: capiClaim("b"), address: address("10.0.0.1") } as const;
    let error: unknown;
    await applyCapiClaimAction(pass, capi, create).catch((err: unknown) => (error = err));
    expect((error as ApiError).code).to.equal(500);
  });
});
