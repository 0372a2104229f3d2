import { expect } from "chai";
import { Reasons, type Condition, type IPAddress, type IPClaim } from "../../../api/v1alpha1/types.js";
import { boundByMetal3, claimStatusPatch } from "./claimstatus.js";

/** The IPClaim status decisions of claims.ts's bind and failClaim, without a server. */
const NOW = new Date("2026-11-29T12:00:00.000Z");
const THEN = "2026-11-28T00:00:00Z";
const address = (name: string): IPAddress => ({
  metadata: { name, namespace: "ns" },
  spec: { address: "10.0.0.1", pool: { name: "p" }, claim: { name: "c" } },
});
const claim = (status?: IPClaim["status"]): IPClaim => ({
  metadata: { name: "c", namespace: "ns" },
  spec: { pool: { name: "p" } },
  ...(status ? { status } : {}),
});
const ready = (over: Partial<Condition> = {}): Condition => ({
  type: "Ready",
  status: "True",
  reason: Reasons.Allocated,
  message: "Allocated 10.0.0.1",
  lastTransitionTime: THEN,
  ...over,
});
const ref = { name: "p-10-0-0-1", namespace: "ns" };
const allocated = { reason: Reasons.Allocated, message: "Allocated 10.0.0.1" };
const failed = { reason: Reasons.AllocationFailed, message: "pool is full" };

describe("ippool/claimstatus: an IPClaim's status", () => {
  describe("boundByMetal3", () => {
    const rows: [string, IPClaim["status"], boolean][] = [
      ["the address named, no conditions, no error: adopted", { address: ref }, true],
      ["with our conditions", { address: ref, conditions: [ready()] }, false],
      ["with an error", { address: ref, errorMessage: "x" }, false],
      ["naming another address", { address: { name: "p-10-0-0-2", namespace: "ns" } }, false],
      ["no status", undefined, false],
    ];
    for (const [what, status, expected] of rows)
      it(what, () => expect(boundByMetal3(claim(status), address("p-10-0-0-1"))).to.equal(expected));
  });

  describe("claimStatusPatch", () => {
    it("writes nothing when the claim already says it", () => {
      expect(claimStatusPatch(claim({ address: ref, conditions: [ready()] }), ref, undefined, allocated, NOW)).to.equal(
        undefined,
      );
    });

    it("binds a claim with no status: the address, no error, Ready True from now", () => {
      expect(claimStatusPatch(claim(), ref, undefined, allocated, NOW)).to.deep.equal({
        address: ref,
        errorMessage: null,
        conditions: [ready({ lastTransitionTime: "2026-11-29T12:00:00Z" })],
      });
    });

    it("clears a leftover error, keeping Ready's transition time", () => {
      const patch = claimStatusPatch(
        claim({ address: ref, errorMessage: "old", conditions: [ready()] }),
        ref,
        undefined,
        allocated,
        NOW,
      );
      expect(patch).to.deep.equal({ address: ref, errorMessage: null, conditions: [ready()] });
    });

    it("a failure keeps the address, sets the error and flips Ready to False now", () => {
      const patch = claimStatusPatch(claim({ address: ref, conditions: [ready()] }), ref, failed.message, failed, NOW);
      expect(patch).to.deep.equal({
        address: ref,
        errorMessage: "pool is full",
        conditions: [
          ready({
            status: "False",
            reason: Reasons.AllocationFailed,
            message: "pool is full",
            lastTransitionTime: "2026-11-29T12:00:00Z",
          }),
        ],
      });
    });

    it("rewrites a Ready condition that holds more than setCondition makes", () => {
      const patch = claimStatusPatch(
        claim({ address: ref, conditions: [ready({ observedGeneration: 3 })] }),
        ref,
        undefined,
        allocated,
        NOW,
      );
      expect(patch?.conditions).to.deep.equal([ready()]);
    });

    it("rewrites an address reference that holds more than name and namespace", () => {
      const patch = claimStatusPatch(
        claim({ address: { ...ref, kind: "IPAddress" }, conditions: [ready()] }),
        ref,
        undefined,
        allocated,
        NOW,
      );
      expect(patch?.address).to.deep.equal(ref);
    });

    it("keeps other conditions as they are", () => {
      const other: Condition = { ...ready(), type: "Other", status: "False" };
      const patch = claimStatusPatch(claim({ conditions: [other] }), ref, undefined, allocated, NOW);
      expect(patch?.conditions).to.deep.equal([other, ready({ lastTransitionTime: "2026-11-29T12:00:00Z" })]);
    });
  });
});
