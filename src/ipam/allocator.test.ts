import { expect } from "chai";
import type { IPPoolSpec, Pool } from "../../api/v1alpha1/types.js";
import { formatAddress, maxValue } from "./address.js";
import type { Family } from "./address.js";
import { AllocationMessages, INT64_MAX, PoolAllocator, toInt64Capped } from "./allocator.js";
import type { AllocationResult, Holder } from "./allocator.js";
import { metal3Scan } from "./metal3oracle.testutil.js";
import { seededRng } from "./random.js";

const claim = (claimName: string): Holder => ({ kind: "claim", claimName });

function spec(pools: Pool[], extra: Partial<IPPoolSpec> = {}): IPPoolSpec {
  return { namePrefix: "test", pools, ...extra };
}

function addressOf(r: AllocationResult): string {
  if (!r.ok) throw new Error(`expected success, got ${r.reason}: ${r.message}`);
  return r.address;
}

/** Allocates for `n` claims named c0, c1, …, reserving each result as the controller would. */
function allocateMany(a: PoolAllocator, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const address = addressOf(a.allocate({ claimName: `c${i}` }));
    a.reserve(address, claim(`c${i}`));
    out.push(address);
  }
  return out;
}

describe("PoolAllocator (spec §3.2)", () => {
  describe("sequential over the rows of spec §2", () => {
    const cases: Array<{ name: string; pools: Pool[]; expected: string[] }> = [
      {
        name: "/30 yields .1 .2 .3",
        pools: [{ subnet: "192.168.0.0/30" }],
        expected: ["192.168.0.1", "192.168.0.2", "192.168.0.3"],
      },
      { name: "/31 yields .1", pools: [{ subnet: "10.0.0.0/31" }], expected: ["10.0.0.1"] },
      { name: "/32 yields nothing", pools: [{ subnet: "10.0.0.7/32" }], expected: [] },
      { name: "/127", pools: [{ subnet: "2001:db8::/127" }], expected: ["2001:db8::1"] },
      { name: "/128 yields nothing", pools: [{ subnet: "2001:db8::1/128" }], expected: [] },
      {
        name: "192.168.0.250/24 yields .251 … .255",
        pools: [{ subnet: "192.168.0.250/24" }],
        expected: ["192.168.0.251", "192.168.0.252", "192.168.0.253", "192.168.0.254", "192.168.0.255"],
      },
      {
        name: "top of IPv4, start only",
        pools: [{ start: "255.255.255.254" }],
        expected: ["255.255.255.254", "255.255.255.255"],
      },
      {
        name: "top of IPv6, start only",
        pools: [{ start: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe" }],
        expected: ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
      },
      {
        name: "2001:db8::ffff:ffff + 1 = 2001:db8::1:0:0",
        pools: [{ start: "2001:db8::ffff:fffe", end: "2001:db8::1:0:0" }],
        expected: ["2001:db8::ffff:fffe", "2001:db8::ffff:ffff", "2001:db8::1:0:0"],
      },
      {
        name: "start below subnet yields nothing",
        pools: [{ start: "10.0.0.254", end: "10.0.1.2", subnet: "10.0.1.0/24" }],
        expected: [],
      },
      {
        name: "start+end past the subnet stops at the subnet",
        pools: [{ start: "10.0.0.254", end: "10.0.1.2", subnet: "10.0.0.0/24" }],
        expected: ["10.0.0.254", "10.0.0.255"],
      },
      {
        name: "entries in declaration order, across families",
        pools: [
          { start: "10.0.0.5", end: "10.0.0.6" },
          { subnet: "2001:db8::/126" },
          { start: "10.0.0.1", end: "10.0.0.1" },
        ],
        expected: ["10.0.0.5", "10.0.0.6", "2001:db8::1", "2001:db8::2", "2001:db8::3", "10.0.0.1"],
      },
      {
        name: "overlapping entries hand out each address once",
        pools: [
          { start: "10.0.0.1", end: "10.0.0.3" },
          { start: "10.0.0.2", end: "10.0.0.4" },
        ],
        expected: ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"],
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const a = new PoolAllocator(spec(c.pools));
        expect(allocateMany(a, c.expected.length)).to.deep.equal(c.expected);
        const last = a.allocate({ claimName: "one-too-many" });
        expect(last).to.deep.equal({ ok: false, reason: "PoolExhausted", message: "Exhausted IP Pools" });
        const cap = a.capacity();
        expect(cap).to.deep.equal({ total: BigInt(c.expected.length), used: BigInt(c.expected.length), free: 0n });
      });
    }
  });

  it("192.168.0.10/24 yields .11 … .255 (245 addresses, broadcast included)", () => {
    const a = new PoolAllocator(spec([{ subnet: "192.168.0.10/24" }]));
    const got = allocateMany(a, 245);
    expect(got[0]).to.equal("192.168.0.11");
    expect(got[244]).to.equal("192.168.0.255");
    expect(a.allocate({ claimName: "x" }).ok).to.equal(false);
  });

  it("allocate decides only: without reserve it returns the same address again", () => {
    const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/29" }]));
    expect(addressOf(a.allocate({ claimName: "a" }))).to.equal("10.0.0.1");
    expect(addressOf(a.allocate({ claimName: "b" }))).to.equal("10.0.0.1");
    a.reserve("10.0.0.1", claim("a"));
    expect(addressOf(a.allocate({ claimName: "b" }))).to.equal("10.0.0.2");
  });

  it("release frees an address, lowest free first", () => {
    const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/29" }]));
    allocateMany(a, 4);
    a.release("10.0.0.2");
    expect(addressOf(a.allocate({ claimName: "n" }))).to.equal("10.0.0.2");
  });

  describe("checks and messages in the order of §3.2.4", () => {
    const pools: Pool[] = [
      { start: "10.0.0.1", end: "10.0.0.10" },
      { start: "2001:db8::1", end: "2001:db8::10" },
    ];
    const preAllocations = {
      pre: "10.0.0.5",
      pre6: "2001:db8::0005",
      outside: "10.0.0.99",
      garbage: "not-an-ip",
      taken: "10.0.0.7",
      person: "10.0.0.8",
      mine: "10.0.0.9",
    };
    const make = (): PoolAllocator => {
      const a = new PoolAllocator(spec(pools, { preAllocations }));
      a.reserve("10.0.0.3", claim("other"));
      a.reserve("10.0.0.7", claim("thief"));
      a.reserve("10.0.0.8", { kind: "other", description: 'IPAddress "keep-me" (no claim)' });
      a.reserve("10.0.0.9", claim("mine"));
      a.reserve("10.0.0.4", claim("self"));
      return a;
    };
    const fail = (
      message: string,
      reason: "AllocationFailed" | "PoolExhausted" = "AllocationFailed",
    ): AllocationResult => ({
      ok: false,
      reason,
      message,
    });
    const cases: Array<{ name: string; claimName: string; requested?: string; expected: AllocationResult | string }> = [
      {
        name: "annotation not an IP",
        claimName: "x",
        requested: "10.0.0.300",
        expected: fail('Invalid ipAddress annotation "10.0.0.300": not a valid IP address'),
      },
      // Metal3 treats `ipAddress: ""` as absent: no request, so the first free address (and no conflict below).
      { name: "empty annotation is no request", claimName: "x", requested: "", expected: "10.0.0.1" },
      {
        name: "empty annotation does not conflict with the preallocation",
        claimName: "pre",
        requested: "",
        expected: "10.0.0.5",
      },
      {
        name: "invalid annotation is checked before the preallocation",
        claimName: "pre",
        requested: "x",
        expected: fail('Invalid ipAddress annotation "x": not a valid IP address'),
      },
      {
        name: "preallocation vs different annotation",
        claimName: "pre",
        requested: "10.0.0.6",
        expected: fail("PreAllocation and requested ip address are conflicting"),
      },
      {
        name: "conflict is checked before out of bounds",
        claimName: "outside",
        requested: "10.0.0.6",
        expected: fail("PreAllocation and requested ip address are conflicting"),
      },
      {
        name: "preallocation equal to annotation (numerically)",
        claimName: "pre6",
        requested: "2001:DB8:0::5",
        expected: "2001:db8::5",
      },
      { name: "preallocation, no annotation", claimName: "pre", expected: "10.0.0.5" },
      { name: "non-canonical IPv6 preallocation", claimName: "pre6", expected: "2001:db8::5" },
      { name: "preallocation out of bounds", claimName: "outside", expected: fail("Pre-allocated IP out of bounds") },
      { name: "preallocation not an IP", claimName: "garbage", expected: fail("Pre-allocated IP out of bounds") },
      {
        name: "preallocation held by another claim",
        claimName: "taken",
        expected: fail('Pre-allocated IP 10.0.0.7 is held by claim "thief"'),
      },
      {
        name: "preallocation held by a person-made IPAddress",
        claimName: "person",
        expected: fail('Pre-allocated IP 10.0.0.8 is held by IPAddress "keep-me" (no claim)'),
      },
      { name: "preallocation held by its own claim", claimName: "mine", expected: "10.0.0.9" },
      { name: "requested free", claimName: "x", requested: "10.0.0.6", expected: "10.0.0.6" },
      { name: "requested in another spelling", claimName: "x", requested: "2001:db8::000a", expected: "2001:db8::a" },
      { name: "requested held", claimName: "x", requested: "10.0.0.3", expected: fail("Requested IP not available") },
      {
        name: "requested preallocated to another claim",
        claimName: "x",
        requested: "10.0.0.5",
        expected: fail("Requested IP not available"),
      },
      { name: "requested held by the claim itself", claimName: "self", requested: "10.0.0.4", expected: "10.0.0.4" },
      {
        name: "requested in no entry",
        claimName: "x",
        requested: "10.0.0.11",
        expected: fail("Requested IP 10.0.0.11 is out of bounds: it lies in no range of the pool"),
      },
      {
        name: "requested other family, no entry",
        claimName: "x",
        requested: "2001:db8::11",
        expected: fail("Requested IP 2001:db8::11 is out of bounds: it lies in no range of the pool"),
      },
      { name: "sequential skips held and preallocated", claimName: "x", expected: "10.0.0.1" },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const a = make();
        const r = a.allocate({
          claimName: c.claimName,
          ...(c.requested !== undefined ? { requestedAddress: c.requested } : {}),
        });
        if (typeof c.expected === "string") expect(addressOf(r)).to.equal(c.expected);
        else expect(r).to.deep.equal(c.expected);
      });
    }

    it("message helpers match the Metal3 texts", () => {
      expect(AllocationMessages.exhausted).to.equal("Exhausted IP Pools");
      expect(AllocationMessages.requestedNotAvailable).to.equal("Requested IP not available");
      expect(AllocationMessages.preallocatedOutOfBounds).to.equal("Pre-allocated IP out of bounds");
    });

    it("sequential never hands out preallocated addresses to others", () => {
      const a = make();
      const got = allocateMany(a, 3);
      // .1 .2 free; .3 .4 held; .5 preallocated; .6 free
      expect(got).to.deep.equal(["10.0.0.1", "10.0.0.2", "10.0.0.6"]);
      expect(addressOf(a.allocate({ claimName: "n" }))).to.equal("10.0.0.10");
    });

    it("a preallocated address stays reserved for its claim after release", () => {
      const a = make();
      a.reserve("10.0.0.5", claim("pre"));
      a.release("10.0.0.5");
      expect(a.holderOf("10.0.0.5")).to.equal(undefined);
      expect(a.preallocatedTo("10.0.0.5")).to.deep.equal(["pre"]);
      expect(a.allocate({ claimName: "x", requestedAddress: "10.0.0.5" })).to.deep.equal(
        fail("Requested IP not available"),
      );
      expect(addressOf(a.allocate({ claimName: "pre" }))).to.equal("10.0.0.5");
    });

    it("recovers once the holder of a preallocated address releases it", () => {
      const a = make();
      expect(a.allocate({ claimName: "taken" }).ok).to.equal(false);
      a.release("10.0.0.7", claim("thief"));
      expect(addressOf(a.allocate({ claimName: "taken" }))).to.equal("10.0.0.7");
    });
  });

  describe("result fields (spec §3.2.5, §1.1)", () => {
    const poolSpec = spec(
      [
        { start: "10.0.0.1", end: "10.0.0.1" },
        { start: "10.0.1.1", end: "10.0.1.1", prefix: 26, gateway: "10.0.1.254", dnsServers: ["1.1.1.1"] },
        {
          start: "2001:db8::1",
          end: "2001:db8::1",
          gateway: "2001:DB8::00FE",
          dnsServers: ["2001:4860:4860:0:0:0:0:8888"],
        },
        { start: "10.0.2.1", end: "10.0.2.1", gateway: "bad" },
        { start: "10.0.3.1", end: "10.0.3.1", dnsServers: ["9.9.9.9", "bad-dns"] },
      ],
      { prefix: 24, gateway: "10.0.0.254", dnsServers: ["8.8.8.8"] },
    );
    const cases: Array<[string, AllocationResult]> = [
      [
        "10.0.0.1",
        { ok: true, address: "10.0.0.1", prefix: 24, gateway: "10.0.0.254", dnsServers: ["8.8.8.8"], entryIndex: 0 },
      ],
      [
        "10.0.1.1",
        { ok: true, address: "10.0.1.1", prefix: 26, gateway: "10.0.1.254", dnsServers: ["1.1.1.1"], entryIndex: 1 },
      ],
      [
        "2001:db8::1",
        {
          ok: true,
          address: "2001:db8::1",
          prefix: 24,
          gateway: "2001:db8::fe",
          dnsServers: ["2001:4860:4860::8888"],
          entryIndex: 2,
        },
      ],
      [
        "10.0.2.1",
        {
          ok: false,
          reason: "AllocationFailed",
          message: 'Invalid gateway "bad" for addresses of spec.pools[3]: not a valid IP address',
        },
      ],
      [
        "10.0.3.1",
        {
          ok: false,
          reason: "AllocationFailed",
          message: 'Invalid DNS server "bad-dns" for addresses of spec.pools[4]: not a valid IP address',
        },
      ],
    ];
    for (const [address, expected] of cases) {
      it(address, () => {
        const a = new PoolAllocator(poolSpec);
        expect(a.allocate({ claimName: "c", requestedAddress: address })).to.deep.equal(expected);
      });
    }
    it("no gateway or DNS anywhere: fields absent", () => {
      const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/30" }]));
      expect(a.allocate({ claimName: "c" })).to.deep.equal({ ok: true, address: "10.0.0.1", prefix: 0, entryIndex: 0 });
    });
  });

  describe("random (spec §3.2.3)", () => {
    it("finds the single free address of a nearly full entry", () => {
      for (let seed = 0; seed < 20; seed++) {
        const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/24" }], { allocationStrategy: "random" }), {
          rng: seededRng(seed),
        });
        for (let i = 1; i <= 255; i++) if (i !== 137) a.reserve(`10.0.0.${i}`, claim(`c${i}`));
        expect(addressOf(a.allocate({ claimName: "last" }))).to.equal("10.0.0.137");
        a.reserve("10.0.0.137", claim("last"));
        expect(a.allocate({ claimName: "none" })).to.deep.include({ reason: "PoolExhausted" });
      }
    });

    it("walks forward with wrap-around from the random index", () => {
      // index space of 10.0.0.0/29 (subnet only) is 7: candidates .1 … .7
      const pool = spec([{ subnet: "10.0.0.0/29" }], { allocationStrategy: "random" });
      const cases: Array<[number, string[], string]> = [
        [0, [], "10.0.0.1"],
        [3 / 7, [], "10.0.0.4"],
        [3 / 7, ["10.0.0.4", "10.0.0.5"], "10.0.0.6"],
        [6 / 7, ["10.0.0.7"], "10.0.0.1"],
        [6 / 7, ["10.0.0.7", "10.0.0.1", "10.0.0.2"], "10.0.0.3"],
      ];
      for (const [r, used, expected] of cases) {
        const a = new PoolAllocator(pool, { rng: () => r });
        for (const u of used) a.reserve(u, claim(u));
        expect(addressOf(a.allocate({ claimName: "c" })), `${r} ${used.join(",")}`).to.equal(expected);
      }
    });

    it("indices past the entry (subnet written above its network) wrap to the first candidate", () => {
      // 10.0.0.4/29: space = 7 (.0 … .7 minus network), candidates .5 .6 .7 (3); index 5 is out of bounds
      const a = new PoolAllocator(spec([{ subnet: "10.0.0.4/29" }], { allocationStrategy: "random" }), {
        rng: () => 5 / 7,
      });
      expect(addressOf(a.allocate({ claimName: "c" }))).to.equal("10.0.0.5");
    });

    it("spreads over a /64 and stays inside it", () => {
      const a = new PoolAllocator(spec([{ subnet: "2001:db8::/64" }], { allocationStrategy: "random" }), {
        rng: seededRng(9),
      });
      const got = allocateMany(a, 200);
      expect(new Set(got).size).to.equal(200);
      for (const g of got) expect(a.contains(g)).to.equal(true);
      expect(a.capacity().used).to.equal(200n);
    });

    it("start-only entries use their exact size (the webhook rejects this spec; the allocator copes)", () => {
      const a = new PoolAllocator(spec([{ start: "255.255.255.250" }], { allocationStrategy: "random" }), {
        rng: seededRng(1),
      });
      expect(a.specErrors.some((e) => e.startsWith("spec.allocationStrategy"))).to.equal(true);
      expect(allocateMany(a, 6).sort()).to.deep.equal([
        "255.255.255.250",
        "255.255.255.251",
        "255.255.255.252",
        "255.255.255.253",
        "255.255.255.254",
        "255.255.255.255",
      ]);
      expect(a.allocate({ claimName: "x" }).ok).to.equal(false);
    });
  });

  describe("reserve, release and holders", () => {
    it("tracks several holders of one address", () => {
      const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/30" }]));
      expect(a.reserve("10.0.0.1", claim("c"))).to.equal(true);
      a.reserve("10.0.0.1", { kind: "other", description: "CAPI IPAddress c" });
      a.reserve("10.0.0.1", claim("c"));
      expect(a.holdersOf("10.0.0.1")).to.have.length(2);
      a.release("10.0.0.1", claim("c"));
      expect(a.holderOf("10.0.0.1")).to.deep.equal({ kind: "other", description: "CAPI IPAddress c" });
      expect(addressOf(a.allocate({ claimName: "n" }))).to.equal("10.0.0.2");
      a.release("10.0.0.1");
      expect(a.holderOf("10.0.0.1")).to.equal(undefined);
      expect(addressOf(a.allocate({ claimName: "n" }))).to.equal("10.0.0.1");
    });

    it("compares spellings as numbers", () => {
      const a = new PoolAllocator(spec([{ subnet: "2001:db8::/120" }]));
      a.reserve("2001:DB8::0001", claim("c"));
      expect(a.holderOf("2001:db8::1")).to.deep.equal(claim("c"));
      a.release("2001:db8:0:0::1");
      expect(a.holderOf("2001:db8::1")).to.equal(undefined);
    });

    it("tracks addresses outside every entry without counting them", () => {
      const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/30" }]));
      a.reserve("192.168.99.1", { kind: "other", description: "manual" });
      expect(a.holderOf("192.168.99.1")).to.deep.equal({ kind: "other", description: "manual" });
      expect(a.contains("192.168.99.1")).to.equal(false);
      expect(a.capacity()).to.deep.equal({ total: 3n, used: 0n, free: 3n });
    });

    it("ignores text that is not an address", () => {
      const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/30" }]));
      expect(a.reserve("nope", claim("c"))).to.equal(false);
      a.release("nope");
      expect(a.holderOf("nope")).to.equal(undefined);
    });
  });

  describe("claims are identified by kind and name (spec §5.3)", () => {
    const ipClaim = (claimName: string): Holder => ({ kind: "claim", claimName, claimKind: "IPClaim" });
    const capiClaim = (claimName: string): Holder => ({ kind: "claim", claimName, claimKind: "IPAddressClaim" });

    it("an IPClaim and an IPAddressClaim of one name get two addresses", () => {
      const a = new PoolAllocator(spec([{ start: "10.0.0.1", end: "10.0.0.9" }]));
      const first = addressOf(a.allocate({ claimName: "n", claimKind: "IPClaim" }));
      a.reserve(first, ipClaim("n"));
      const second = addressOf(a.allocate({ claimName: "n", claimKind: "IPAddressClaim" }));
      expect([first, second]).to.deep.equal(["10.0.0.1", "10.0.0.2"]);
    });

    it("a requested address held by the other kind of the same name is not available", () => {
      const a = new PoolAllocator(spec([{ start: "10.0.0.1", end: "10.0.0.9" }]));
      a.reserve("10.0.0.5", ipClaim("n"));
      expect(a.allocate({ claimName: "n", claimKind: "IPAddressClaim", requestedAddress: "10.0.0.5" })).to.deep.include(
        { ok: false, message: AllocationMessages.requestedNotAvailable },
      );
      expect(addressOf(a.allocate({ claimName: "n", claimKind: "IPClaim", requestedAddress: "10.0.0.5" }))).to.equal(
        "10.0.0.5",
      );
    });

    it("a preallocation goes to the first claim of that name; the other kind is told who holds it", () => {
      const a = new PoolAllocator(
        spec([{ start: "10.0.0.1", end: "10.0.0.9" }], { preAllocations: { n: "10.0.0.7" } }),
      );
      expect(addressOf(a.allocate({ claimName: "n", claimKind: "IPAddressClaim" }))).to.equal("10.0.0.7");
      a.reserve("10.0.0.7", capiClaim("n"));
      expect(a.allocate({ claimName: "n", claimKind: "IPClaim" })).to.deep.include({
        ok: false,
        message: 'Pre-allocated IP 10.0.0.7 is held by IPAddressClaim "n"',
      });
    });

    it("releasing one kind's hold leaves the other kind's", () => {
      const a = new PoolAllocator(spec([{ start: "10.0.0.1", end: "10.0.0.1" }]));
      a.reserve("10.0.0.1", ipClaim("n"));
      a.reserve("10.0.0.1", capiClaim("n"));
      a.release("10.0.0.1", capiClaim("n"));
      expect(a.holdersOf("10.0.0.1")).to.deep.equal([ipClaim("n")]);
      expect(a.capacity().used).to.equal(1n);
    });
  });

  describe("capacity and specErrors", () => {
    it("counts distinct addresses of overlapping entries once", () => {
      const a = new PoolAllocator(
        spec([
          { start: "10.0.0.1", end: "10.0.0.10" },
          { start: "10.0.0.5", end: "10.0.0.20" },
          { subnet: "2001:db8::/126" },
        ]),
      );
      a.reserve("10.0.0.7", claim("a"));
      a.reserve("2001:db8::3", claim("b"));
      expect(a.capacity()).to.deep.equal({ total: 23n, used: 2n, free: 21n });
    });

    it("preallocations nobody holds are not counted as used", () => {
      const a = new PoolAllocator(spec([{ subnet: "10.0.0.0/30" }], { preAllocations: { p: "10.0.0.1" } }));
      expect(a.capacity().used).to.equal(0n);
    });

    it("IPv6 capacity is exact and caps for int64 status fields", () => {
      const a = new PoolAllocator(spec([{ subnet: "2001:db8::/32" }]));
      const cap = a.capacity();
      expect(cap.total).to.equal((1n << 96n) - 1n);
      expect(toInt64Capped(cap.total)).to.equal(9223372036854774784);
      expect(BigInt(toInt64Capped(cap.total)) <= INT64_MAX).to.equal(true);
    });

    it("reports bad entries and skips them", () => {
      const a = new PoolAllocator(spec([{ start: "10.0.0.300" }, {}, { start: "10.0.0.1", end: "10.0.0.1" }]));
      expect(a.specErrors).to.deep.equal([
        'spec.pools[0].start: Invalid value: "10.0.0.300": not a valid IP address',
        "spec.pools[1]: Required value: one of start, end or subnet is required",
      ]);
      expect(a.entries.map((e) => e.index)).to.deep.equal([2]);
      expect(a.allocate({ claimName: "c" })).to.deep.include({ ok: true, address: "10.0.0.1", entryIndex: 2 });
    });

    it("never throws on an empty or odd spec", () => {
      const a = new PoolAllocator({ namePrefix: "" });
      expect(a.allocate({ claimName: "c" })).to.deep.equal({
        ok: false,
        reason: "PoolExhausted",
        message: "Exhausted IP Pools",
      });
      expect(a.capacity()).to.deep.equal({ total: 0n, used: 0n, free: 0n });
      expect(a.specErrors).to.deep.equal(["spec.namePrefix: Required value: a non-empty prefix for IPAddress names"]);
    });
  });

  describe("toInt64Capped", () => {
    const cases: Array<[bigint, number]> = [
      [0n, 0],
      [12345n, 12345],
      [2n ** 53n, 2 ** 53],
      [INT64_MAX, 9223372036854774784],
      [2n ** 128n, 9223372036854774784],
      [-5n, -5],
    ];
    for (const [n, expected] of cases) {
      it(`${n} → ${expected}`, () => {
        expect(toInt64Capped(n)).to.equal(expected);
      });
    }
    it("serialises to JSON text that an int64 decoder accepts", () => {
      expect(BigInt(JSON.stringify(toInt64Capped(2n ** 100n))) <= INT64_MAX).to.equal(true);
    });
  });

  describe("cost does not grow with allocations (counted work, no timing)", () => {
    it("the 10,000th sequential allocation in a /16 costs about what the first did", () => {
      const a = new PoolAllocator(spec([{ subnet: "10.1.0.0/16" }]));
      const costs: number[] = [];
      for (let i = 0; i < 10_000; i++) {
        const before = a.work;
        const address = addressOf(a.allocate({ claimName: `c${i}` }));
        costs.push(a.work - before);
        a.reserve(address, claim(`c${i}`));
      }
      expect(costs[9_999]).to.be.at.most(costs[0]! + 2);
    });

    it("random allocations in a /16 with 10,000 fragmented holders stay logarithmic", () => {
      const a = new PoolAllocator(spec([{ subnet: "10.1.0.0/16" }], { allocationStrategy: "random" }), {
        rng: seededRng(4),
      });
      let worst = 0;
      for (let i = 0; i < 10_000; i++) {
        const before = a.work;
        const address = addressOf(a.allocate({ claimName: `c${i}` }));
        worst = Math.max(worst, a.work - before);
        a.reserve(address, claim(`c${i}`));
      }
      // a nextFreeWrapping is at most two descents of an AVL tree of ≤ 10,000 runs (height ≤ 20)
      expect(worst).to.be.at.most(40);
    });
  });

  describe("property: random pools allocate until exhausted", () => {
    function randomPool(rng: () => number, family: Family): Pool {
      const pick = (n: number): number => Math.floor(rng() * n);
      const max = maxValue(family);
      const base = [0n, max / 2n, max - 200n][pick(3)]! + BigInt(pick(100));
      const fmt = (v: bigint): string => formatAddress({ family, value: v < 0n ? 0n : v > max ? max : v });
      const len = (family === 4 ? 32 : 128) - pick(7);
      const kinds: Pool[] = [
        { start: fmt(base), end: fmt(base + BigInt(pick(40))) },
        { subnet: `${fmt(base + BigInt(pick(20)))}/${len}` },
        { start: fmt(base + BigInt(pick(10))), subnet: `${fmt(base)}/${len}` },
        { start: fmt(max - BigInt(pick(30))) },
      ];
      return kinds[pick(kinds.length)]!;
    }

    it("every address is inside an entry and unique; the count equals capacity", () => {
      const rng = seededRng(2024);
      for (let round = 0; round < 150; round++) {
        const pools: Pool[] = [];
        const n = 1 + Math.floor(rng() * 4);
        for (let i = 0; i < n; i++) pools.push(randomPool(rng, rng() < 0.5 ? 4 : 6));
        const bounded = pools.every((p) => p.end !== undefined || p.subnet !== undefined);
        const random = bounded && rng() < 0.5;
        const a = new PoolAllocator(spec(pools, random ? { allocationStrategy: "random" } : {}), {
          rng: seededRng(round),
        });
        const oracle = new Set(
          pools.flatMap((p) =>
            metal3Scan(p).map((v) => (`${p.start ?? p.subnet}`.includes(":") ? `6/${v}` : `4/${v}`)),
          ),
        );
        const seen = new Set<string>();
        for (;;) {
          const r = a.allocate({ claimName: `c${seen.size}` });
          if (!r.ok) {
            expect(r.reason, JSON.stringify(pools)).to.equal("PoolExhausted");
            break;
          }
          expect(seen.has(r.address), r.address).to.equal(false);
          seen.add(r.address);
          expect(a.contains(r.address)).to.equal(true);
          a.reserve(r.address, claim(`c${seen.size}`));
        }
        expect(BigInt(seen.size), JSON.stringify(pools)).to.equal(a.capacity().total);
        expect(seen.size, JSON.stringify(pools)).to.equal(oracle.size);
        expect(a.capacity().free).to.equal(0n);
      }
    });
  });
});
