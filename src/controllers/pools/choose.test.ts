import { expect } from "chai";
import type { InClusterIPPool } from "../../../api/incluster/types.js";
import type { IPPool } from "../../../api/v1alpha1/types.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import { INCLUSTER_POOL_KIND } from "../incluster/kind.js";
import { METAL3_POOL_KIND } from "../ippool/kind.js";
import { allocationRefusal, chooseAddress, type AddressChoiceInput } from "./choose.js";
import type { ExternalAnswer, KindContext, PoolKind, PoolObject } from "./kind.js";

function metal3(spec: Partial<IPPool["spec"]> = {}): IPPool {
  return {
    metadata: { name: "p", namespace: "ns", uid: "uid-p" },
    spec: { namePrefix: "p", pools: [{ start: "10.0.0.1", end: "10.0.0.3" }], prefix: 24, ...spec },
  };
}

const inCluster: InClusterIPPool = {
  metadata: { name: "q", namespace: "ns", uid: "uid-q" },
  spec: { addresses: ["10.0.1.1-10.0.1.3"], prefix: 24 },
};

interface Row {
  what: string;
  pool?: IPPool;
  /** Addresses held before the decision, by holder name ("" for an object that is no claim). */
  held?: Record<string, string>;
  claimName?: string;
  requested?: string;
  /** Record names another pool's object bears. */
  foreign?: string[];
  external?: Record<string, ExternalAnswer>;
  /** The outcome, or a pattern of it. */
  expected: string | RegExp;
}

/** Decides for claim `c` (unless the row says otherwise) in a fresh allocator; the outcome in a few words. */
function decide(
  row: Row,
  kind: PoolKind = METAL3_POOL_KIND,
  pool: PoolObject = row.pool ?? metal3(),
  allocator = new PoolAllocator((row.pool ?? metal3()).spec),
): { outcome: string; collisions: string[] } {
  for (const [holder, address] of Object.entries(row.held ?? {}))
    allocator.reserve(address, holder ? { kind: "claim", claimName: holder, claimKind: "IPClaim" } : otherHolder);
  const collisions: string[] = [];
  const input: AddressChoiceInput = {
    claimName: row.claimName ?? "c",
    claimKind: "IPClaim",
    requestedAddress: row.requested,
    kind,
    pool,
    allocator,
    nameHeldByOtherPool: (name) => (row.foreign?.includes(name) ? "other" : undefined),
    onCollision: (m) => collisions.push(m),
    ...(row.external ? { external: new Map(Object.entries(row.external)) } : {}),
  };
  return { outcome: summary(chooseAddress(input)), collisions };
}

const otherHolder = { kind: "other", description: "IPAddress by hand" } as const;

function summary(choice: ReturnType<typeof chooseAddress>): string {
  if (!choice.ok) return `${choice.reason}: ${choice.message}`;
  const annotations = choice.annotations ? ` ${JSON.stringify(choice.annotations)}` : "";
  return `${choice.name} ${choice.result.address}${annotations}`;
}

describe("choosing a claim's address (pools/choose.ts, pure)", () => {
  const rows: Row[] = [
    { what: "the first free address, named as the kind names it", expected: "p-10-0-0-1 10.0.0.1" },
    {
      what: "an empty pool (no entries, no errors) is exhausted",
      pool: metal3({ pools: [] }),
      expected: "PoolExhausted: Exhausted IP Pools",
    },
    {
      what: "a pool whose only range is reversed is not ready, and the claim is told why",
      pool: metal3({ pools: [{ start: "10.0.0.3", end: "10.0.0.1" }] }),
      expected: /^PoolNotReady: IPPool p has no usable address range: /,
    },
    {
      what: "a pool with a reversed range besides a usable one, all of it held, is exhausted, not unready",
      pool: metal3({
        pools: [
          { start: "10.0.0.3", end: "10.0.0.1" },
          { start: "10.0.0.5", end: "10.0.0.6" },
        ],
      }),
      held: { a: "10.0.0.5", b: "10.0.0.6" },
      expected: "PoolExhausted: Exhausted IP Pools",
    },
    {
      what: "an exhausted pool",
      held: { a: "10.0.0.1", b: "10.0.0.2", "": "10.0.0.3" },
      expected: /^PoolExhausted: /,
    },
    { what: "an address held skips to the next", held: { a: "10.0.0.1" }, expected: "p-10-0-0-2 10.0.0.2" },
    {
      what: "an address the claim holds already is not looked up (its lifecycle binds its record before choosing)",
      held: { c: "10.0.0.1" },
      expected: "p-10-0-0-2 10.0.0.2",
    },
    {
      what: "an address the claim holds, asked again (a create whose answer was lost), is granted",
      held: { c: "10.0.0.2" },
      requested: "10.0.0.2",
      expected: "p-10-0-0-2 10.0.0.2",
    },
    { what: "a request", requested: "10.0.0.3", expected: "p-10-0-0-3 10.0.0.3" },
    {
      what: "a request another claim holds is refused",
      held: { a: "10.0.0.3" },
      requested: "10.0.0.3",
      expected: "AllocationFailed: Requested IP not available",
    },
    {
      what: "a preallocation wins over the first free address",
      pool: metal3({ preAllocations: { c: "10.0.0.3" } }),
      expected: "p-10-0-0-3 10.0.0.3",
    },
    {
      what: "a preallocation another claim holds is refused, not replaced",
      pool: metal3({ preAllocations: { c: "10.0.0.3" } }),
      held: { a: "10.0.0.3" },
      expected: 'AllocationFailed: Pre-allocated IP 10.0.0.3 is held by IPClaim "a"',
    },
    {
      what: "a record name another pool bears: the address is skipped (Metal3 names records by address)",
      foreign: ["p-10-0-0-1"],
      expected: "p-10-0-0-2 10.0.0.2",
    },
    {
      what: "a requested address whose record name another pool bears fails the claim",
      foreign: ["p-10-0-0-1"],
      requested: "10.0.0.1",
      expected:
        'AllocationFailed: IPAddress p-10-0-0-1 for 10.0.0.1 already exists and belongs to IPPool other (same namePrefix "p"); address skipped',
    },
    {
      what: "a preallocated address whose record name another pool bears fails the claim",
      pool: metal3({ preAllocations: { c: "10.0.0.1" } }),
      foreign: ["p-10-0-0-1"],
      expected:
        'AllocationFailed: IPAddress p-10-0-0-1 for 10.0.0.1 already exists and belongs to IPPool other (same namePrefix "p"); address skipped',
    },
    {
      what: "every record name borne elsewhere exhausts the pool",
      foreign: ["p-10-0-0-1", "p-10-0-0-2", "p-10-0-0-3"],
      expected: /^PoolExhausted: /,
    },
    {
      what: "the engine's address is the claim's request",
      external: { c: { ok: true, address: "10.0.0.3", annotations: { engine: "r-3" } } },
      expected: 'p-10-0-0-3 10.0.0.3 {"engine":"r-3"}',
    },
    {
      what: "the engine's address another claim holds is refused: the engine cannot bind two claims to one address",
      held: { a: "10.0.0.3" },
      external: { c: { ok: true, address: "10.0.0.3" } },
      expected: "AllocationFailed: Requested IP not available",
    },
    {
      what: "the engine's failure is the claim's",
      external: { c: { ok: false, reason: "PoolExhausted", message: "engine full" } },
      expected: "PoolExhausted: engine full",
    },
    {
      what: "no answer for the claim (it came after the engine was asked): it waits, nothing is chosen",
      external: { other: { ok: true, address: "10.0.0.1" } },
      expected: "AllocationFailed: Waiting for the address engine to be asked for this claim",
    },
  ];
  for (const row of rows)
    it(row.what, () => {
      const { outcome } = decide(row);
      if (typeof row.expected === "string") expect(outcome).to.equal(row.expected);
      else expect(outcome).to.match(row.expected);
    });

  it("reports each skipped collision", () => {
    expect(decide({ what: "", foreign: ["p-10-0-0-1", "p-10-0-0-2"], expected: "" }).collisions).to.have.length(2);
  });

  it("a kind naming records after the claim fails the claim when another pool's object bears that name", async () => {
    const allocator = await INCLUSTER_POOL_KIND.openAllocator(inCluster, {} as KindContext);
    const row: Row = { what: "", foreign: ["c"], expected: "" };
    expect(decide(row, INCLUSTER_POOL_KIND, inCluster, allocator).outcome).to.match(
      /^AllocationFailed: IPAddress c already exists and belongs to pool other/,
    );
  });

  it("two claims racing for one address: the first gets it, the second is refused, nothing is held twice", () => {
    const pool = metal3();
    const allocator = new PoolAllocator(pool.spec);
    const race = (claimName: string): string =>
      summary(
        chooseAddress({
          claimName,
          claimKind: "IPClaim",
          requestedAddress: "10.0.0.2",
          kind: METAL3_POOL_KIND,
          pool,
          allocator,
          nameHeldByOtherPool: () => undefined,
          onCollision: () => undefined,
        }),
      );
    expect(race("a")).to.equal("p-10-0-0-2 10.0.0.2");
    expect(race("b")).to.equal("AllocationFailed: Requested IP not available");
    expect(allocator.holdersOf("10.0.0.2")).to.deep.equal([{ kind: "claim", claimName: "a", claimKind: "IPClaim" }]);
  });
});

describe("whether a blocked pool refuses a claim (allocationRefusal, pure)", () => {
  const blocked = { reason: "PoolNotReady", message: "IPPool p is being deleted" } as const;
  const rows: [string, typeof blocked | undefined, IPPool, string | undefined][] = [
    ["not blocked: no refusal", undefined, metal3(), undefined],
    ["blocked: refused", blocked, metal3(), "PoolNotReady"],
    [
      "blocked, but the claim is preallocated: served",
      blocked,
      metal3({ preAllocations: { c: "10.0.0.2" } }),
      undefined,
    ],
    [
      "blocked, another claim preallocated: refused",
      blocked,
      metal3({ preAllocations: { d: "10.0.0.2" } }),
      "PoolNotReady",
    ],
  ];
  for (const [what, block, pool, expected] of rows)
    it(what, () => expect(allocationRefusal(block, METAL3_POOL_KIND, pool, "c")?.reason).to.equal(expected));
});
