import { expect } from "chai";
import type { IPAddress, IPClaim, IPPool, IPPoolSpec } from "../../api/v1alpha1/types.js";
import { formatFieldError } from "./fielderror.js";
import {
  defaultIPPool,
  ipClaimWarnings,
  ipPoolUpdateWarnings,
  ipPoolWarnings,
  validateIPAddress,
  validateIPClaim,
  validateIPPool,
} from "./validation.js";

function pool(spec: Partial<IPPoolSpec>, name = "pool"): IPPool {
  return { metadata: { name, namespace: "ns" }, spec: { namePrefix: "pfx", ...spec } };
}

function messages(errors: ReturnType<typeof validateIPPool>): string[] {
  return errors.map(formatFieldError);
}

describe("validation (spec §6)", () => {
  describe("formatFieldError", () => {
    const cases: Array<[Parameters<typeof formatFieldError>[0], string]> = [
      [
        { field: "spec.pools[1].end", type: "Invalid", value: "10.0.0.1", detail: "end is before start" },
        'spec.pools[1].end: Invalid value: "10.0.0.1": end is before start',
      ],
      [{ field: "spec.namePrefix", type: "Required", detail: "x" }, "spec.namePrefix: Required value: x"],
      [{ field: "spec", type: "Forbidden", detail: "field is immutable" }, "spec: Forbidden: field is immutable"],
      [{ field: "a[b]", type: "Duplicate", value: "v", detail: "" }, 'a[b]: Duplicate value: "v"'],
      [{ field: "x", type: "Invalid", detail: "no value" }, "x: Invalid value: no value"],
    ];
    for (const [e, text] of cases) {
      it(text, () => expect(formatFieldError(e)).to.equal(text));
    }
  });

  describe("validateIPPool on create", () => {
    const cases: Array<{ name: string; spec: Partial<IPPoolSpec>; errors: string[] }> = [
      {
        name: "valid",
        spec: { pools: [{ subnet: "10.0.0.0/24" }], gateway: "10.0.0.254", dnsServers: ["8.8.8.8"] },
        errors: [],
      },
      { name: "empty pools are allowed", spec: {}, errors: [] },
      {
        name: "namePrefix required",
        spec: { namePrefix: "" },
        errors: ["spec.namePrefix: Required value: a non-empty prefix for IPAddress names"],
      },
      {
        name: "unparsable fields, per entry and pool-wide, all at once",
        spec: {
          pools: [
            { start: "10.0.0.256", end: "10.0.1.x", gateway: "gw" },
            { subnet: "10.0.0.0/40", dnsServers: ["d"] },
          ],
          gateway: "g",
          dnsServers: ["1.1.1.1", "010.1.1.1"],
        },
        errors: [
          'spec.pools[0].start: Invalid value: "10.0.0.256": not a valid IP address',
          'spec.pools[0].end: Invalid value: "10.0.1.x": not a valid IP address',
          'spec.pools[0].gateway: Invalid value: "gw": not a valid IP address',
          'spec.pools[1].subnet: Invalid value: "10.0.0.0/40": not a valid subnet (address/prefix length)',
          'spec.pools[1].dnsServers[0]: Invalid value: "d": not a valid IP address',
          'spec.gateway: Invalid value: "g": not a valid IP address',
          'spec.dnsServers[1]: Invalid value: "010.1.1.1": not a valid IP address',
        ],
      },
      {
        name: "end before start",
        spec: { pools: [{}, { start: "10.0.0.2", end: "10.0.0.1" }] },
        errors: [
          "spec.pools[0]: Required value: one of start, end or subnet is required",
          'spec.pools[1].end: Invalid value: "10.0.0.1": end is before start',
        ],
      },
      {
        name: "end before start compared as numbers",
        spec: { pools: [{ start: "2001:db8::a", end: "2001:db8::0009" }] },
        errors: ['spec.pools[0].end: Invalid value: "2001:db8::0009": end is before start'],
      },
      {
        name: "end-only entries are accepted (Metal3 accepts them)",
        spec: { pools: [{ end: "10.0.0.1" }] },
        errors: [],
      },
      {
        name: "preallocations: not an IP, out of bounds, repeated as numbers",
        spec: {
          pools: [{ start: "2001:db8::1", end: "2001:db8::ff" }],
          preAllocations: { a: "2001:db8::5", b: "2001:db8::0005", c: "2001:db8::1:0", d: "nope", e: "2001:db8::6" },
        },
        errors: [
          'spec.preAllocations[b]: Duplicate value: "2001:db8::0005": same address as spec.preAllocations[a]',
          'spec.preAllocations[c]: Invalid value: "2001:db8::1:0": out of bounds: the address lies in no entry of spec.pools',
          'spec.preAllocations[d]: Invalid value: "nope": not a valid IP address',
        ],
      },
      // Metal3 checks preallocations against each entry's box (start <= a <= end, a in subnet), not its arithmetic:
      // what the box takes it accepts, so we accept it too and only warn (see ipPoolWarnings below).
      {
        name: "preallocation inside the subnet but below a subnet-only entry's first candidate is accepted",
        spec: { pools: [{ subnet: "10.0.0.10/24" }], preAllocations: { a: "10.0.0.10", b: "10.0.0.11" } },
        errors: [],
      },
      {
        name: "preallocation under the end of an end-only entry is accepted",
        spec: { pools: [{ end: "10.0.0.50" }], preAllocations: { a: "10.0.0.7" } },
        errors: [],
      },
      {
        name: "preallocation outside every entry's box is refused",
        spec: {
          pools: [{ subnet: "10.0.0.0/24" }, { start: "10.0.2.1", end: "10.0.2.9" }],
          preAllocations: { a: "10.0.1.1", b: "10.0.2.10" },
        },
        errors: [
          'spec.preAllocations[a]: Invalid value: "10.0.1.1": out of bounds: the address lies in no entry of spec.pools',
          'spec.preAllocations[b]: Invalid value: "10.0.2.10": out of bounds: the address lies in no entry of spec.pools',
        ],
      },
      {
        name: "mixed-family entries are accepted (Metal3 accepts them)",
        spec: {
          pools: [
            { start: "10.0.0.1", end: "2001:db8::1" },
            { start: "2001:db8::1", subnet: "10.0.0.0/24" },
            { subnet: "10.0.1.0/24", end: "2001:db8::9" },
          ],
        },
        errors: [],
      },
      {
        name: "random with a start-only entry",
        spec: {
          allocationStrategy: "random",
          pools: [{ subnet: "10.0.0.0/24" }, { start: "10.0.1.1" }, { end: "10.0.2.1" }],
        },
        errors: [
          'spec.allocationStrategy: Invalid value: "random": spec.pools[1] has no known size: random needs start with end or subnet, or a subnet',
          'spec.allocationStrategy: Invalid value: "random": spec.pools[2] has no known size: random needs start with end or subnet, or a subnet',
        ],
      },
      {
        name: "sequential with a start-only entry",
        spec: { allocationStrategy: "sequential", pools: [{ start: "10.0.1.1" }] },
        errors: [],
      },
      {
        name: "unknown strategy",
        spec: { allocationStrategy: "fancy" as "random" },
        errors: ['spec.allocationStrategy: Invalid value: "fancy": supported values: "sequential", "random"'],
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        expect(messages(validateIPPool(pool(c.spec)))).to.deep.equal(c.errors);
      });
    }
  });

  describe("validateIPPool on update", () => {
    const base: Partial<IPPoolSpec> = {
      pools: [{ start: "10.0.0.1", end: "10.0.0.20" }],
      allocationStrategy: "sequential",
    };
    const cases: Array<{
      name: string;
      old: Partial<IPPoolSpec>;
      next: Partial<IPPoolSpec>;
      inUse?: string[];
      errors: string[];
    }> = [
      {
        name: "unchanged spec passes even when invalid",
        old: { namePrefix: "" },
        next: { namePrefix: "" },
        errors: [],
      },
      {
        name: "namePrefix change",
        old: base,
        next: { ...base, namePrefix: "other" },
        errors: ['spec.namePrefix: Invalid value: "other": field is immutable'],
      },
      {
        name: "strategy change",
        old: base,
        next: { ...base, allocationStrategy: "random" },
        errors: ['spec.allocationStrategy: Invalid value: "random": field is immutable'],
      },
      {
        name: "absent → random",
        old: { pools: base.pools! },
        next: { ...base, allocationStrategy: "random" },
        errors: ['spec.allocationStrategy: Invalid value: "random": field is immutable'],
      },
      { name: '"" → sequential allowed', old: { ...base, allocationStrategy: "" }, next: base, errors: [] },
      { name: 'sequential → "" allowed', old: base, next: { ...base, allocationStrategy: "" }, errors: [] },
      { name: "absent → sequential allowed", old: { pools: base.pools! }, next: base, errors: [] },
      {
        name: "shrinking below an address in use",
        old: base,
        next: { ...base, pools: [{ start: "10.0.0.1", end: "10.0.0.9" }] },
        inUse: ["10.0.0.5", "10.0.0.15", "10.0.0.015", "10.0.0.99", "junk"],
        errors: [
          'spec.pools: Invalid value: "10.0.0.15": the address is in use and would be out of bounds of the pools',
        ],
      },
      {
        name: "in-use address compared as numbers",
        old: { pools: [{ subnet: "2001:db8::/120" }] },
        next: { pools: [{ subnet: "2001:db8::/124" }] },
        inUse: ["2001:db8::000f", "2001:DB8::10"],
        errors: [
          'spec.pools: Invalid value: "2001:db8::10": the address is in use and would be out of bounds of the pools',
        ],
      },
      {
        name: "growing is fine",
        old: base,
        next: { ...base, pools: [{ subnet: "10.0.0.0/16" }] },
        inUse: ["10.0.0.5"],
        errors: [],
      },
      {
        // 10.0.0.0 is in use; the new subnet-only entry starts at .1 but its box (the subnet) still holds .0.
        name: "dropping an in-use address still inside Metal3's bounds is accepted",
        old: { pools: [{ start: "10.0.0.0", end: "10.0.0.20" }] },
        next: { pools: [{ subnet: "10.0.0.0/27" }] },
        inUse: ["10.0.0.0", "10.0.0.5"],
        errors: [],
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        expect(messages(validateIPPool(pool(c.next), pool(c.old), c.inUse))).to.deep.equal(c.errors);
      });
    }
  });

  describe("defaultIPPool", () => {
    const cases: Array<[IPPoolSpec["allocationStrategy"], string]> = [
      [undefined, "sequential"],
      ["", "sequential"],
      ["sequential", "sequential"],
      ["random", "random"],
    ];
    for (const [input, expected] of cases) {
      it(`${JSON.stringify(input)} → ${expected}`, () => {
        const p = pool(input === undefined ? {} : { allocationStrategy: input });
        const d = defaultIPPool(p);
        expect(d.spec.allocationStrategy).to.equal(expected);
        expect(d).to.not.equal(p);
        expect(p.spec.allocationStrategy).to.equal(input);
      });
    }
  });

  describe("ipPoolWarnings", () => {
    it("overlapping ranges and a shared namePrefix with another pool of the namespace", () => {
      const mine = pool({ pools: [{ start: "10.0.0.1", end: "10.0.0.10" }, { subnet: "2001:db8::/64" }] }, "a");
      const others = [
        pool({ pools: [{ subnet: "10.0.0.8/29" }] }, "b"),
        { ...pool({ namePrefix: "other", pools: [{ start: "2001:db8::5" }] }, "c") },
        pool({ pools: [{ start: "10.0.0.1" }] }, "a"),
        {
          metadata: { name: "d", namespace: "elsewhere" },
          spec: { namePrefix: "pfx", pools: [{ start: "10.0.0.1" }] },
        },
        pool({ namePrefix: "x", pools: [{ start: "10.0.0.11", end: "10.0.0.20" }] }, "e"),
      ];
      expect(ipPoolWarnings(mine, others)).to.deep.equal([
        "spec.pools mixes IPv4 and IPv6 entries: claims that request no address get IPv4 addresses (spec.pools[0]) " +
          "until those run out, then IPv6 ones (spec.pools[1]); and one spec.prefix cannot suit both families: set a " +
          "prefix on each entry (spec.pools[0], spec.pools[1] have none)",
        'namePrefix "pfx" is also used by IPPool "b": names of IPAddresses of overlapping ranges collide',
        'spec.pools[0] overlaps spec.pools[0] of IPPool "b"',
        'spec.pools[1] overlaps spec.pools[0] of IPPool "c"',
      ]);
    });

    it("mixed-family entries and preallocations no entry yields, all accepted", () => {
      const p = pool({
        pools: [{ start: "10.0.0.1", end: "2001:db8::1" }, { subnet: "10.0.1.0/24" }],
        preAllocations: { a: "10.0.1.0", b: "10.0.1.7", c: "10.0.0.3" },
      });
      expect(messages(validateIPPool(p))).to.deep.equal([]);
      expect(ipPoolWarnings(p, [])).to.deep.equal([
        'spec.pools[0].end "2001:db8::1": start, end and subnet are of different address families: the entry yields no address',
        'spec.preAllocations[a]: no entry of spec.pools yields 10.0.1.0: claim "a" will fail with "Pre-allocated IP out of bounds"',
        'spec.preAllocations[c]: no entry of spec.pools yields 10.0.0.3: claim "c" will fail with "Pre-allocated IP out of bounds"',
      ]);
    });

    it("entries of both families: the order claims get them in, and the prefix only when an entry lacks its own", () => {
      const interleaved = pool({
        pools: [
          { start: "10.0.0.1", end: "10.0.0.9", prefix: 24 },
          { subnet: "10.0.1.0/24", prefix: 24 },
          { subnet: "2001:db8::/120", prefix: 64 },
          { start: "10.0.2.1", end: "10.0.2.9" },
        ],
        prefix: 24,
      });
      expect(ipPoolWarnings(interleaved, [])).to.deep.equal([
        "spec.pools mixes IPv4 and IPv6 entries: claims that request no address get IPv4 addresses (spec.pools[0], " +
          "spec.pools[1]) until those run out, then IPv6 ones (spec.pools[2]) until those run out, then IPv4 ones " +
          "(spec.pools[3]); and one spec.prefix cannot suit both families: set a prefix on each entry " +
          "(spec.pools[3] has none)",
      ]);
      const ownPrefixes = pool({
        pools: [
          { subnet: "2001:db8::/120", prefix: 64 },
          { subnet: "10.0.1.0/24", prefix: 24 },
        ],
      });
      expect(ipPoolWarnings(ownPrefixes, [])).to.deep.equal([
        "spec.pools mixes IPv4 and IPv6 entries: claims that request no address get IPv6 addresses (spec.pools[0]) " +
          "until those run out, then IPv4 ones (spec.pools[1])",
      ]);
      // Entries that yield nothing do not count: one family is handed out.
      const oneYields = pool({ pools: [{ subnet: "10.0.1.0/24" }, { subnet: "2001:db8::1/128" }] });
      expect(ipPoolWarnings(oneYields, [])).to.deep.equal([
        "spec.pools[1] yields no address: no address follows the one written in subnet",
      ]);
    });

    it("entries that yield nothing and an ignored end", () => {
      const p = pool({
        pools: [
          { start: "10.0.0.5", subnet: "10.0.1.0/24" },
          { subnet: "10.0.0.1/32" },
          { end: "10.0.0.1" },
          { subnet: "10.0.0.0/24", end: "10.0.0.9" },
        ],
      });
      expect(ipPoolWarnings(p, [])).to.deep.equal([
        "spec.pools[0] yields no address: start lies outside subnet",
        "spec.pools[1] yields no address: no address follows the one written in subnet",
        "spec.pools[2] yields no address: without start or subnet an entry yields nothing",
        "spec.pools[3].end is ignored: without start an entry is its subnet",
      ]);
    });
  });

  describe("ipPoolUpdateWarnings", () => {
    const old = pool({ pools: [{ start: "10.0.0.0", end: "10.0.0.20" }] });
    it("names in-use addresses that no entry yields any more but Metal3's bounds still hold", () => {
      const next = pool({ pools: [{ subnet: "10.0.0.0/27" }] });
      expect(ipPoolUpdateWarnings(next, old, ["10.0.0.0", "10.0.0.5", "junk"])).to.deep.equal([
        "spec.pools: 10.0.0.0 is in use and no entry yields it any more (it stays held by its IPAddress)",
      ]);
    });
    it("says nothing on create, for an unchanged spec, or for addresses it refuses", () => {
      expect(ipPoolUpdateWarnings(old, undefined, ["10.0.0.0"])).to.deep.equal([]);
      expect(ipPoolUpdateWarnings(old, old, ["10.0.0.0"])).to.deep.equal([]);
      expect(
        ipPoolUpdateWarnings(pool({ pools: [{ start: "10.0.0.1", end: "10.0.0.9" }] }), old, ["10.0.0.15"]),
      ).to.deep.equal([]);
    });
  });

  describe("validateIPClaim", () => {
    const claim = (poolName: string, annotations?: Record<string, string>, poolNs?: string): IPClaim => ({
      metadata: { name: "c", namespace: "ns", ...(annotations ? { annotations } : {}) },
      spec: { pool: { name: poolName, ...(poolNs !== undefined ? { namespace: poolNs } : {}) } },
    });
    const cases: Array<{ name: string; claim: IPClaim; old?: IPClaim; errors: string[] }> = [
      { name: "valid", claim: claim("p", { ipAddress: "2001:db8::0005" }), errors: [] },
      {
        name: "pool name required",
        claim: claim(""),
        errors: ["spec.pool.name: Required value: the name of the IPPool to allocate from"],
      },
      {
        name: "missing spec",
        claim: { metadata: {} } as IPClaim,
        errors: ["spec.pool.name: Required value: the name of the IPPool to allocate from"],
      },
      {
        name: "annotation not an IP",
        claim: claim("p", { ipAddress: "10.0.0.1/24" }),
        errors: ['metadata.annotations[ipAddress]: Invalid value: "10.0.0.1/24": not a valid IP address'],
      },
      {
        name: "pool immutable",
        claim: claim("q"),
        old: claim("p"),
        errors: ["spec.pool: Forbidden: field is immutable"],
      },
      {
        name: "empty namespace equals own namespace",
        claim: claim("p", undefined, "ns"),
        old: claim("p", undefined, ""),
        errors: [],
      },
      {
        name: "namespace change",
        claim: claim("p", undefined, "other"),
        old: claim("p"),
        errors: ["spec.pool: Forbidden: field is immutable"],
      },
      {
        name: "annotation may change",
        claim: claim("p", { ipAddress: "10.0.0.2" }),
        old: claim("p", { ipAddress: "10.0.0.1" }),
        errors: [],
      },
      // Metal3 treats `ipAddress: ""` as absent and its webhook accepts it.
      { name: "empty annotation is accepted", claim: claim("p", { ipAddress: "" }), errors: [] },
      {
        name: "empty annotation on update",
        claim: claim("p", { ipAddress: "" }),
        old: claim("p", { ipAddress: "10.0.0.1" }),
        errors: [],
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        expect(validateIPClaim(c.claim, c.old).map(formatFieldError)).to.deep.equal(c.errors);
      });
    }
  });

  describe("ipClaimWarnings", () => {
    const claim = (annotations?: Record<string, string>): IPClaim => ({
      metadata: { name: "c", namespace: "ns", ...(annotations ? { annotations } : {}) },
      spec: { pool: { name: "p" } },
    });
    it("warns once when the annotation becomes empty", () => {
      const warning = "metadata.annotations[ipAddress] is empty: treated as absent, the claim gets any free address";
      expect(ipClaimWarnings(claim({ ipAddress: "" }))).to.deep.equal([warning]);
      expect(ipClaimWarnings(claim({ ipAddress: "" }), claim())).to.deep.equal([warning]);
      expect(ipClaimWarnings(claim({ ipAddress: "" }), claim({ ipAddress: "" }))).to.deep.equal([]);
      expect(ipClaimWarnings(claim({ ipAddress: "10.0.0.1" }))).to.deep.equal([]);
      expect(ipClaimWarnings(claim())).to.deep.equal([]);
    });
  });

  describe("validateIPAddress", () => {
    const addr = (address: string, extra: Partial<IPAddress["spec"]> = {}): IPAddress => ({
      metadata: { name: "a", namespace: "ns" },
      spec: { address, pool: { name: "p" }, claim: { name: "c" }, prefix: 24, ...extra },
    });
    const cases: Array<{ name: string; addr: IPAddress; old?: IPAddress; errors: string[] }> = [
      { name: "valid", addr: addr("10.0.0.1", { gateway: "10.0.0.254", dnsServers: ["8.8.8.8"] }), errors: [] },
      { name: "address required", addr: addr(""), errors: ["spec.address: Required value: the address"] },
      {
        name: "address an IP",
        addr: addr("10.0.0.1/24"),
        errors: ['spec.address: Invalid value: "10.0.0.1/24": not a valid IP address'],
      },
      {
        name: "references required",
        addr: { metadata: {}, spec: { address: "10.0.0.1", pool: { name: "" }, claim: { name: "" } } },
        errors: [
          "spec.pool.name: Required value: the IPPool of the address",
          "spec.claim.name: Required value: the claim of the address",
        ],
      },
      {
        name: "missing spec",
        addr: { metadata: {} } as IPAddress,
        errors: [
          "spec.pool.name: Required value: the IPPool of the address",
          "spec.claim.name: Required value: the claim of the address",
          "spec.address: Required value: the address",
        ],
      },
      {
        name: "gateway an IP",
        addr: addr("10.0.0.1", { gateway: "gw" }),
        errors: ['spec.gateway: Invalid value: "gw": not a valid IP address'],
      },
      { name: "unchanged spec", addr: addr("10.0.0.1"), old: addr("10.0.0.1"), errors: [] },
      // Immutable exactly where Metal3's webhook says so (spec §1.3): address, pool (name, namespace, kind), claim.
      {
        name: "address immutable",
        addr: addr("10.0.0.2"),
        old: addr("10.0.0.1"),
        errors: ['spec.address: Invalid value: "10.0.0.2": field is immutable'],
      },
      {
        name: "address respelled is a change",
        addr: addr("2001:db8::0005"),
        old: addr("2001:db8::5"),
        errors: ['spec.address: Invalid value: "2001:db8::0005": field is immutable'],
      },
      {
        name: "pool name immutable",
        addr: addr("10.0.0.1", { pool: { name: "q" } }),
        old: addr("10.0.0.1"),
        errors: ["spec.pool: Forbidden: field is immutable"],
      },
      {
        name: "pool namespace immutable",
        addr: addr("10.0.0.1", { pool: { name: "p", namespace: "other" } }),
        old: addr("10.0.0.1"),
        errors: ["spec.pool: Forbidden: field is immutable"],
      },
      {
        name: "pool kind immutable",
        addr: addr("10.0.0.1", { pool: { name: "p", kind: "Other" } }),
        old: addr("10.0.0.1", { pool: { name: "p", kind: "IPPool" } }),
        errors: ["spec.pool: Forbidden: field is immutable"],
      },
      {
        name: "claim name immutable",
        addr: addr("10.0.0.1", { claim: { name: "d" } }),
        old: addr("10.0.0.1"),
        errors: ["spec.claim: Forbidden: field is immutable"],
      },
      {
        name: "claim namespace immutable",
        addr: addr("10.0.0.1", { claim: { name: "c", namespace: "other" } }),
        old: addr("10.0.0.1", { claim: { name: "c", namespace: "ns" } }),
        errors: ["spec.claim: Forbidden: field is immutable"],
      },
      {
        name: "all three at once",
        addr: addr("10.0.0.2", { pool: { name: "q" }, claim: { name: "d" } }),
        old: addr("10.0.0.1"),
        errors: [
          'spec.address: Invalid value: "10.0.0.2": field is immutable',
          "spec.pool: Forbidden: field is immutable",
          "spec.claim: Forbidden: field is immutable",
        ],
      },
      { name: "prefix may change", addr: addr("10.0.0.1", { prefix: 26 }), old: addr("10.0.0.1"), errors: [] },
      {
        name: "gateway may change",
        addr: addr("10.0.0.1", { gateway: "10.0.0.253" }),
        old: addr("10.0.0.1", { gateway: "10.0.0.254" }),
        errors: [],
      },
      {
        name: "dnsServers may change",
        addr: addr("10.0.0.1", { dnsServers: ["1.1.1.1"] }),
        old: addr("10.0.0.1", { dnsServers: ["8.8.8.8"] }),
        errors: [],
      },
      {
        // A Go client omits zero values: prefix 0, an empty list and "" strings are absent in its full update.
        name: "a Go client's full update with zero values omitted",
        addr: {
          metadata: { name: "a", namespace: "ns" },
          spec: { address: "10.0.0.1", pool: { name: "p" }, claim: { name: "c" } },
        },
        old: addr("10.0.0.1", {
          prefix: 0,
          dnsServers: [],
          pool: { name: "p", namespace: "", kind: "" },
          claim: { name: "c", namespace: "" },
        }),
        errors: [],
      },
      {
        name: "reference fields Metal3 does not compare may change",
        addr: addr("10.0.0.1", { pool: { name: "p", uid: "2" } }),
        old: addr("10.0.0.1", { pool: { name: "p", uid: "1" } }),
        errors: [],
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        expect(validateIPAddress(c.addr, c.old).map(formatFieldError)).to.deep.equal(c.errors);
      });
    }
  });
});
