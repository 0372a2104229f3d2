import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim, V1Beta1Condition } from "../../../api/capi/types.js";
import type { Condition, IPPool } from "../../../api/v1alpha1/types.js";
import {
  belongsToCapiClaim,
  capiAddressToPool,
  capiBoundByMetal3,
  capiClaimClusterName,
  capiReason,
  claimStatus,
  claimStatusWrite,
  desiredCapiAddress,
  ONE_LIST_UP_TO,
  recordPoolSelectors,
  madeForCapiClaim,
  type AllocatedAddress,
  type ReadyInput,
} from "./translate.js";
import { METAL3_POOL_KIND } from "../ippool/kind.js";
import { PoolKinds } from "../pools/registry.js";

/** Only Metal3's kind registered: claims of other providers' kinds are not ours. */
const METAL3_ONLY = new PoolKinds([METAL3_POOL_KIND]);

const NOW = new Date("2026-11-22T10:00:00Z");
const claim = (
  over: Partial<IPAddressClaim["spec"]> = {},
  meta: Partial<IPAddressClaim["metadata"]> = {},
): IPAddressClaim => ({
  apiVersion: "ipam.cluster.x-k8s.io/v1beta2",
  kind: "IPAddressClaim",
  metadata: { name: "c1", namespace: "ns", uid: "uid-c1", ...meta },
  spec: { poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" }, ...over },
});
const pool = (clusterName?: string): IPPool => ({
  metadata: { name: "p", namespace: "ns", uid: "uid-p" },
  spec: { namePrefix: "p", ...(clusterName ? { clusterName } : {}) },
});

describe("Cluster API translation", () => {
  describe("capiClaimClusterName: spec.clusterName, else label, else pool", () => {
    const rows: [string, IPAddressClaim, IPPool | undefined, string | undefined][] = [
      ["field wins", claim({ clusterName: "a" }, { labels: { "cluster.x-k8s.io/cluster-name": "b" } }), pool("c"), "a"],
      ["label next", claim({}, { labels: { "cluster.x-k8s.io/cluster-name": "b" } }), pool("c"), "b"],
      ["pool last", claim(), pool("c"), "c"],
      ["none", claim(), pool(), undefined],
      ["no pool", claim(), undefined, undefined],
    ];
    for (const [what, c, p, expected] of rows)
      it(what, () => expect(capiClaimClusterName(c, METAL3_POOL_KIND, p)).to.equal(expected));
  });

  describe("desiredCapiAddress: named as Metal3 names it, values from the allocation", () => {
    const rows: [string, AllocatedAddress, object][] = [
      [
        "with gateway",
        { address: "10.0.0.1", prefix: 24, gateway: "10.0.0.254" },
        { address: "10.0.0.1", prefix: 24, gateway: "10.0.0.254" },
      ],
      [
        "without gateway (no DNS field exists)",
        { address: "10.0.0.1", prefix: 26 },
        { address: "10.0.0.1", prefix: 26 },
      ],
      ["prefix 0 is a value of the contract", { address: "10.0.0.1", prefix: 0 }, { address: "10.0.0.1", prefix: 0 }],
    ];
    for (const [what, allocation, expected] of rows) {
      it(what, () => {
        const out = desiredCapiAddress(
          claim({}, { labels: { "cluster.x-k8s.io/cluster-name": "wl" } }),
          METAL3_POOL_KIND,
          pool(),
          "p-10-0-0-1",
          allocation,
          "ipam.cluster.x-k8s.io/v1beta2",
        );
        expect(out.spec).to.deep.equal({
          claimRef: { name: "c1" },
          poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" },
          ...expected,
        });
        expect(out.metadata.name).to.equal("p-10-0-0-1");
        expect(out.metadata.finalizers).to.deep.equal(["ipam.metal3.io/ipaddress"]);
        expect(out.metadata.labels).to.deep.equal({
          "cluster.x-k8s.io/cluster-name": "wl",
          "ipam.metal3.io/pool-name": "p",
        });
        expect(
          out.metadata.ownerReferences?.map((o) => [o.kind, o.uid, o.controller === true, o.blockOwnerDeletion]),
        ).to.deep.equal([
          ["IPAddressClaim", "uid-c1", true, true],
          ["IPPool", "uid-p", false, true],
        ]);
      });
    }
  });

  describe("recordPoolSelectors: one list where few records are; else the pool's label and no label, or no label alone for a name no label holds", () => {
    it("one list of every record where the cache holds few", () => {
      expect(recordPoolSelectors("p-1", 0)).to.deep.equal([undefined]);
      expect(recordPoolSelectors("p-1", ONE_LIST_UP_TO)).to.deep.equal([undefined]);
      expect(recordPoolSelectors("p-1", ONE_LIST_UP_TO + 1)).to.have.length(2);
    });
    const long = `p${"a".repeat(63)}`;
    const rows: [string, string, string[]][] = [
      ["a short name", "p-1.a", ["ipam.metal3.io/pool-name=p-1.a", "!ipam.metal3.io/pool-name"]],
      [
        "63 characters",
        long.slice(0, 63),
        [`ipam.metal3.io/pool-name=${long.slice(0, 63)}`, "!ipam.metal3.io/pool-name"],
      ],
      ["64 characters", long, ["!ipam.metal3.io/pool-name"]],
      ["a name ending in a dot", "p.", ["!ipam.metal3.io/pool-name"]],
    ];
    for (const [what, name, expected] of rows) {
      it(what, () => {
        expect(recordPoolSelectors(name, ONE_LIST_UP_TO + 1)).to.deep.equal(expected);
        const labels = desiredCapiAddress(
          claim(),
          METAL3_POOL_KIND,
          { ...pool(), metadata: { name } },
          "r",
          { address: "10.0.0.1", prefix: 24 },
          "v",
        ).metadata.labels;
        expect(labels?.["ipam.metal3.io/pool-name"]).to.equal(expected.length === 2 ? name : undefined);
      });
    }
  });

  describe("belongsToCapiClaim / madeForCapiClaim: same pool, same incarnation", () => {
    const record = (poolName: string, ownerUid?: string): CapiIPAddress => ({
      metadata: {
        name: "r",
        namespace: "ns",
        ...(ownerUid
          ? { ownerReferences: [{ apiVersion: "v", kind: "IPAddressClaim", name: "c1", uid: ownerUid }] }
          : {}),
      },
      spec: {
        claimRef: { name: "c1" },
        poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: poolName },
        address: "10.0.0.1",
        prefix: 24,
      },
    });
    const rows: [string, CapiIPAddress, boolean, boolean][] = [
      ["ours, this incarnation", record("p", "uid-c1"), true, true],
      ["no owner (a restore, a hand-made record): adopted", record("p"), true, false],
      ["a previous incarnation's", record("p", "uid-old"), false, false],
      ["another pool's", record("q", "uid-c1"), false, true],
    ];
    for (const [what, r, belongs, made] of rows) {
      it(what, () =>
        expect([belongsToCapiClaim(r, claim()), madeForCapiClaim(r, claim())]).to.deep.equal([belongs, made]),
      );
    }
  });

  describe("capiReason maps our reasons onto the contract's", () => {
    const rows: [string, string][] = [
      ["PoolExhausted", "PoolExhausted"],
      ["PoolNotFound", "PoolNotReady"],
      ["ClusterNotFound", "PoolNotReady"],
      ["PoolNotReady", "PoolNotReady"],
      ["InvalidSpec", "PoolNotReady"],
      ["AllocationFailed", "AllocationFailed"],
      ["SomethingNew", "AllocationFailed"],
    ];
    for (const [ours, theirs] of rows) it(`${ours} → ${theirs}`, () => expect(capiReason(ours)).to.equal(theirs));
  });

  describe("claimStatus per served version", () => {
    it("v1beta2: metav1 conditions in status.conditions", () => {
      const s = claimStatus(claim(), "v1beta2", "c1", { status: "True", reason: "Allocated", message: "ok" }, NOW);
      expect(s.addressRef).to.deep.equal({ name: "c1" });
      expect(s.conditions).to.deep.equal([
        {
          type: "Ready",
          status: "True",
          reason: "Allocated",
          message: "ok",
          lastTransitionTime: "2026-11-22T10:00:00Z",
        },
      ]);
      expect(s.v1beta2).to.equal(undefined);
    });
    it("v1beta1: Cluster API v1beta1 conditions, with metav1 ones under v1beta2", () => {
      const s = claimStatus(
        claim(),
        "v1beta1",
        undefined,
        { status: "False", reason: "PoolExhausted", message: "Exhausted IP Pools" },
        NOW,
      );
      expect(s.addressRef).to.equal(undefined);
      expect(s.conditions).to.deep.equal([
        {
          type: "Ready",
          status: "False",
          severity: "Warning",
          reason: "PoolExhausted",
          message: "Exhausted IP Pools",
          lastTransitionTime: "2026-11-22T10:00:00Z",
        },
      ]);
      expect(s.v1beta2?.conditions?.[0]).to.include({ type: "Ready", status: "False", reason: "PoolExhausted" });
    });
    it("keeps lastTransitionTime while the status does not flip", () => {
      const earlier = claim();
      earlier.status = {
        conditions: [
          {
            type: "Ready",
            status: "False",
            reason: "PoolExhausted",
            message: "m",
            lastTransitionTime: "2026-01-01T00:00:00Z",
          },
        ],
      };
      const s = claimStatus(
        earlier,
        "v1beta2",
        undefined,
        { status: "False", reason: "AllocationFailed", message: "n" },
        NOW,
      );
      expect((s.conditions as Condition[])[0]?.lastTransitionTime).to.equal("2026-01-01T00:00:00Z");
      const v1 = claimStatus(
        {
          ...earlier,
          status: {
            conditions: [
              { type: "Ready", status: "False", lastTransitionTime: "2026-01-01T00:00:00Z" } satisfies V1Beta1Condition,
            ],
          },
        },
        "v1beta1",
        "c1",
        { status: "True", reason: "Allocated", message: "ok" },
        NOW,
      );
      expect((v1.conditions as V1Beta1Condition[])[0]?.lastTransitionTime).to.equal("2026-11-22T10:00:00Z");
    });
  });

  describe("claimStatusWrite: what claims.ts writes, and when a failure is new", () => {
    const BOUND = { status: "True", reason: "Allocated", message: "Allocated 10.0.0.1" } as const;
    const FULL = { status: "False", reason: "PoolExhausted", message: "Exhausted IP Pools" } as const;
    const OTHER = { status: "False", reason: "AllocationFailed", message: "rejected" } as const;
    const FULLER = { status: "False", reason: "PoolExhausted", message: "Exhausted IP Pools: p" } as const;
    /** A claim whose status claimStatus made for `ready` at `version`. */
    const saying = (version: "v1beta1" | "v1beta2", ready: ReadyInput, address?: string) => {
      const c = claim();
      c.status = claimStatus(c, version, address, ready, NOW);
      return c;
    };
    const rows: [string, IPAddressClaim, "v1beta1" | "v1beta2", string | undefined, ReadyInput, string][] = [
      ["a first bind", claim(), "v1beta2", "c1", BOUND, "write"],
      ["bound already", saying("v1beta2", BOUND, "c1"), "v1beta2", "c1", BOUND, "none"],
      ["a first failure", claim(), "v1beta2", undefined, FULL, "write, new failure"],
      ["the same failure again", saying("v1beta2", FULL), "v1beta2", undefined, FULL, "none"],
      ["another failure", saying("v1beta2", FULL), "v1beta2", undefined, OTHER, "write, new failure"],
      ["the same reason, another message", saying("v1beta2", FULL), "v1beta2", undefined, FULLER, "write, new failure"],
      ["a bound claim failing", saying("v1beta2", BOUND, "c1"), "v1beta2", undefined, FULL, "write, new failure"],
      ["a failed claim bound", saying("v1beta2", FULL), "v1beta2", "c1", BOUND, "write"],
      ["v1beta1: the same failure again", saying("v1beta1", FULL), "v1beta1", undefined, FULL, "none"],
      ["v1beta1: another failure", saying("v1beta1", FULL), "v1beta1", undefined, OTHER, "write, new failure"],
    ];
    for (const [what, c, version, address, ready, expected] of rows)
      it(`${what}: ${expected}`, () => {
        const write = claimStatusWrite(c, version, address, ready, NOW);
        const outcome = write ? `write${write.newFailure ? ", new failure" : ""}` : "none";
        expect(outcome).to.equal(expected);
        if (write) expect(write.status).to.deep.equal(claimStatus(c, version, address, ready, NOW));
      });

    it("a failure rewritten for a stray field is not a new one", () => {
      const c = saying("v1beta2", FULL);
      (c.status?.conditions as Condition[])[0]!.observedGeneration = 2;
      const write = claimStatusWrite(c, "v1beta2", undefined, FULL, NOW);
      expect(write?.newFailure).to.equal(false);
    });
  });

  describe("capiBoundByMetal3: adopted as Metal3 left it", () => {
    const address = { metadata: { name: "p-10-0-0-1", namespace: "ns" } } as CapiIPAddress;
    const ready: Condition = {
      type: "Ready",
      status: "True",
      reason: "Allocated",
      message: "",
      lastTransitionTime: "",
    };
    const rows: [string, IPAddressClaim["status"], boolean][] = [
      ["addressRef naming it, no conditions", { addressRef: { name: "p-10-0-0-1" } }, true],
      ["other conditions only", { addressRef: { name: "p-10-0-0-1" }, conditions: [{ ...ready, type: "X" }] }, true],
      ["with a Ready condition", { addressRef: { name: "p-10-0-0-1" }, conditions: [ready] }, false],
      ["with Ready under v1beta2", { addressRef: { name: "p-10-0-0-1" }, v1beta2: { conditions: [ready] } }, false],
      ["naming another address", { addressRef: { name: "p-10-0-0-2" } }, false],
      ["no status", undefined, false],
    ];
    for (const [what, status, expected] of rows)
      it(what, () =>
        expect(capiBoundByMetal3({ ...claim(), ...(status ? { status } : {}) }, address)).to.equal(expected),
      );
  });

  it("capiAddressToPool maps only addresses of our pools", () => {
    const a = (apiGroup: string, kind: string) => ({
      metadata: { namespace: "ns", name: "x" },
      spec: { claimRef: { name: "x" }, poolRef: { apiGroup, kind, name: "p" }, address: "10.0.0.1", prefix: 24 },
    });
    expect(capiAddressToPool(METAL3_ONLY, a("ipam.metal3.io", "IPPool"))).to.deep.equal(["IPPool.ipam.metal3.io/ns/p"]);
    expect(capiAddressToPool(METAL3_ONLY, a("ipam.cluster.x-k8s.io", "InClusterIPPool"))).to.deep.equal([]);
  });
});
