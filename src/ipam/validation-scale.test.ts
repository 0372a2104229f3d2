/**
 * Validation of the largest pools admission takes (100,000 entries, preallocations, addresses in use): every result
 * is asserted, and each input is one that a scan of every entry per preallocation, per address in use or per entry
 * of another pool (n x m) cannot answer within the test's timeout. No timing goal: hack/bench measures the times.
 */
import { expect } from "chai";
import type { IPPool, Pool } from "../../api/v1alpha1/types.js";
import { formatFieldError } from "./fielderror.js";
import { ipPoolUpdateWarnings, ipPoolWarnings, validateIPPool } from "./validation.js";

const N = 100_000;

/** The i-th address of 10.0.0.0/8 (i < 2^24). */
function ten(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

/** N two-address ranges, 10.0.0.1-10.0.0.2, 10.0.0.5-10.0.0.6, … */
function ranges(): Pool[] {
  return Array.from({ length: N }, (_, i) => ({ start: ten(i * 4 + 1), end: ten(i * 4 + 2) }));
}

function pool(name: string, pools: Pool[], preAllocations?: Record<string, string>): IPPool {
  return {
    metadata: { name, namespace: "ns" },
    spec: { namePrefix: name, pools, ...(preAllocations && { preAllocations }) },
  };
}

describe("validation of the largest pools", () => {
  it("100,000 preallocations outside 100,000 entries: each refused, in claim order", () => {
    const preAllocations: Record<string, string> = {};
    for (let i = 0; i < N; i++) preAllocations[`c${String(i).padStart(6, "0")}`] = `11.${ten(i).slice(3)}`;
    const errors = validateIPPool(pool("p", ranges(), preAllocations)).map(formatFieldError);
    expect(errors).to.have.length(N);
    expect(errors[0]).to.equal(
      'spec.preAllocations[c000000]: Invalid value: "11.0.0.0": out of bounds: the address lies in no entry of spec.pools',
    );
    expect(errors[N - 1]).to.equal(
      'spec.preAllocations[c099999]: Invalid value: "11.1.134.159": out of bounds: the address lies in no entry of spec.pools',
    );
  });

  it("an update dropping 100,000 ranges with 100,000 addresses in use: half refused, half warned about", () => {
    const old = pool("p", ranges());
    // Even ranges become an entry that yields nothing (start below its /32 subnet) but whose box (Metal3's bounds
    // check) still holds the address in use; odd ranges go.
    const next = pool(
      "p",
      Array.from({ length: N / 2 }, (_, i) => ({ start: ten(i * 8), subnet: `${ten(i * 8 + 1)}/32` })),
    );
    const inUse = Array.from({ length: N }, (_, i) => ten(i * 4 + 1));
    const errors = validateIPPool(next, old, inUse).map(formatFieldError);
    const warnings = ipPoolUpdateWarnings(next, old, inUse);
    expect(errors).to.have.length(N / 2);
    expect(warnings).to.have.length(N / 2);
    expect(errors[0]).to.equal(
      'spec.pools: Invalid value: "10.0.0.5": the address is in use and would be out of bounds of the pools',
    );
    expect(warnings[N / 2 - 1]).to.equal(
      `spec.pools: ${ten((N - 2) * 4 + 1)} is in use and no entry yields it any more (it stays held by its IPAddress)`,
    );
  });

  it("100,000 entries against three pools of 20,000 that all overlap: 20 warnings, the rest counted", () => {
    const everything: Pool[] = Array.from({ length: N }, () => ({ subnet: "10.0.0.0/16" }));
    const others = [0, 1, 2].map((k) =>
      pool(
        `o${k}`,
        Array.from({ length: 20_000 }, () => ({ subnet: "10.0.0.0/8" })),
      ),
    );
    const warnings = ipPoolWarnings(pool("p", everything), others, 20);
    expect(warnings).to.have.length(20);
    expect(warnings[0]).to.equal('spec.pools[0] overlaps spec.pools[0] of IPPool "o0"');
    expect(warnings[18]).to.equal('spec.pools[0] overlaps spec.pools[18] of IPPool "o0"');
    expect(warnings[19]).to.equal(`and ${3 * 20_000 * N - 19} more warnings`);
  });
});
