import { expect } from "chai";
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import type { IPPoolSpec, Pool } from "../../api/v1alpha1/types.js";
import { formatAddress } from "./address.js";
import { compileSteps, PoolAllocator, type CompiledSpace } from "./allocator.js";
import { inClusterSpace, inClusterSpaceSteps } from "./incluster.js";
import { seededRng, type Rng } from "./random.js";
import { runSteps, type Steps } from "./steps.js";

/** Drives `steps` to their end, counting the pauses they offer. */
function counted<T>(steps: Steps<T>): { value: T; pauses: number } {
  for (let pauses = 0; ; pauses++) {
    const next = steps.next();
    if (next.done) return { value: next.value, pauses };
  }
}

const v4 = (i: number): string => formatAddress({ family: 4, value: 0x0a000000n + BigInt(i) });
const int = (rng: Rng, n: number): number => Math.floor(rng() * n);

/** A random Metal3 spec: overlapping ranges and subnets, some broken, preallocations in and out of the entries. */
function randomSpec(rng: Rng): IPPoolSpec {
  const pools: Pool[] = Array.from({ length: int(rng, 40) }, (): Pool => {
    const start = int(rng, 400);
    const roll = rng();
    if (roll < 0.5) return { start: v4(start), end: v4(start + int(rng, 30) - 3) };
    if (roll < 0.8) return { subnet: `${v4(start)}/${26 + int(rng, 7)}` };
    return { start: v4(start), subnet: `${v4(start)}/${24 + int(rng, 8)}`, gateway: rng() < 0.2 ? "x" : v4(1) };
  });
  const preAllocations = Object.fromEntries(
    Array.from({ length: int(rng, 30) }, (_, i) => [`c${i}`, rng() < 0.1 ? "not an address" : v4(int(rng, 500))]),
  );
  return {
    namePrefix: "p",
    pools,
    preAllocations,
    ...(rng() < 0.3 ? { allocationStrategy: "random" as const } : {}),
  };
}

/** Everything an allocator reads of a compiled space, comparable. */
function parts(c: CompiledSpace): unknown {
  return {
    entries: c.entries,
    specErrors: c.specErrors,
    random: c.random,
    preallocations: [...c.preallocations],
    preallocatedKeys: [...c.preallocatedKeys],
    pieces: c.layout.pieces,
    union: c.union,
    total: c.total,
  };
}

/** The first `n` decisions of an allocator opened on `c`, each reserved before the next. */
function decisions(c: CompiledSpace, names: readonly string[]): unknown[] {
  const a = new PoolAllocator(c, { rng: seededRng(7) });
  return names.map((claimName) => {
    const r = a.allocate({ claimName });
    if (r.ok) a.reserve(r.address, { kind: "claim", claimName });
    return r;
  });
}

describe("compilation in steps (steps.ts): where it pauses never changes what it builds", () => {
  it("Metal3 specs: steps of 3 items build the space and decisions of the one-shot compile", () => {
    const rng = seededRng(42);
    for (let round = 0; round < 100; round++) {
      const spec = randomSpec(rng);
      const whole = PoolAllocator.compile(spec);
      const { value: sliced, pauses } = counted(compileSteps(spec, 3));
      expect(parts(sliced), `round ${round}`).to.deep.equal(parts(whole));
      const names = [
        ...Array.from({ length: 10 }, (_, i) => `c${i}`),
        ...Array.from({ length: 30 }, (_, i) => `n${i}`),
      ];
      expect(decisions(sliced, names), `round ${round}`).to.deep.equal(decisions(whole, names));
      const items = (spec.pools?.length ?? 0) + Object.keys(spec.preAllocations ?? {}).length;
      expect(pauses, `round ${round}`).to.be.at.least(Math.floor(items / 3));
    }
  });

  it("in-cluster specs: steps of 3 ranges build the space of the one-shot build", () => {
    const rng = seededRng(7);
    for (let round = 0; round < 100; round++) {
      const spec: InClusterIPPoolSpec = {
        addresses: Array.from({ length: 1 + int(rng, 30) }, () => {
          const a = int(rng, 300);
          return rng() < 0.5 ? v4(a) : `${v4(a)}-${v4(a + int(rng, 20))}`;
        }),
        excludedAddresses: Array.from({ length: int(rng, 30) }, () => v4(int(rng, 300))),
        prefix: rng() < 0.9 ? 22 : 40,
        ...(rng() < 0.5 ? { gateway: v4(int(rng, 300)) } : {}),
      };
      const whole = inClusterSpace(spec);
      const { value: sliced, pauses } = counted(inClusterSpaceSteps(spec, 3));
      expect(sliced, `round ${round}`).to.deep.equal(whole);
      expect(pauses, `round ${round}`).to.be.at.least(Math.floor(whole.entries.length / 3));
      expect(parts(runSteps(compileSteps(sliced, 3)))).to.deep.equal(parts(PoolAllocator.compile(whole)));
    }
  });
});
