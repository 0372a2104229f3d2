import { expect } from "chai";
import type { Pool } from "../../api/v1alpha1/types.js";
import { formatAddress, maxValue, parseAddress } from "./address.js";
import { metal3Candidate, metal3Scan } from "./metal3oracle.testutil.js";
import type { Family } from "./address.js";
import { compileEntries, compileEntry, entryUnion } from "./entries.js";
import type { CompiledEntry } from "./entries.js";
import { formatFieldError } from "./fielderror.js";
import { seededRng } from "./random.js";

function show(e: CompiledEntry | undefined): string {
  if (!e) return "error";
  if (e.size === 0n) return "empty";
  const first = formatAddress({ family: e.family, value: e.first });
  const last = formatAddress({ family: e.family, value: e.last });
  return `${first} … ${last}`;
}

describe("entries (spec §2)", () => {
  describe("compileEntry: the rows of spec §2", () => {
    const cases: Array<{ name: string; pool: Pool; range: string; size: bigint; space: bigint | undefined }> = [
      {
        name: "start+end",
        pool: { start: "10.0.0.1", end: "10.0.0.3" },
        range: "10.0.0.1 … 10.0.0.3",
        size: 3n,
        space: 3n,
      },
      {
        name: "start=end",
        pool: { start: "10.0.0.1", end: "10.0.0.1" },
        range: "10.0.0.1 … 10.0.0.1",
        size: 1n,
        space: 1n,
      },
      {
        name: "start+end past the subnet: the subnet ends it",
        pool: { start: "10.0.0.250", end: "10.0.1.5", subnet: "10.0.0.0/24" },
        range: "10.0.0.250 … 10.0.0.255",
        size: 6n,
        space: 12n,
      },
      {
        name: "start+subnet",
        pool: { start: "10.0.0.10", subnet: "10.0.0.0/24" },
        range: "10.0.0.10 … 10.0.0.255",
        size: 246n,
        space: 246n,
      },
      {
        name: "start below subnet: yields nothing",
        pool: { start: "10.0.0.5", subnet: "10.0.1.0/24" },
        range: "empty",
        size: 0n,
        space: 507n,
      },
      {
        name: "start above subnet: yields nothing",
        pool: { start: "10.0.2.5", subnet: "10.0.1.0/24" },
        range: "empty",
        size: 0n,
        space: 0n,
      },
      {
        name: "start+end below subnet: yields nothing",
        pool: { start: "10.0.0.250", end: "10.0.1.5", subnet: "10.0.1.0/24" },
        range: "empty",
        size: 0n,
        space: 12n,
      },
      {
        name: "subnet /30",
        pool: { subnet: "192.168.0.0/30" },
        range: "192.168.0.1 … 192.168.0.3",
        size: 3n,
        space: 3n,
      },
      {
        name: "subnet written above its network",
        pool: { subnet: "192.168.0.10/24" },
        range: "192.168.0.11 … 192.168.0.255",
        size: 245n,
        space: 255n,
      },
      {
        name: "subnet written at its broadcast",
        pool: { subnet: "192.168.0.255/24" },
        range: "empty",
        size: 0n,
        space: 255n,
      },
      { name: "subnet /31", pool: { subnet: "10.0.0.0/31" }, range: "10.0.0.1 … 10.0.0.1", size: 1n, space: 1n },
      { name: "subnet /32", pool: { subnet: "10.0.0.7/32" }, range: "empty", size: 0n, space: 0n },
      {
        name: "subnet /0",
        pool: { subnet: "0.0.0.0/0" },
        range: "0.0.0.1 … 255.255.255.255",
        size: 4294967295n,
        space: 4294967295n,
      },
      {
        name: "subnet 255.255.255.255/32",
        pool: { subnet: "255.255.255.255/32" },
        range: "empty",
        size: 0n,
        space: 0n,
      },
      {
        name: "subnet 255.255.255.254/31",
        pool: { subnet: "255.255.255.254/31" },
        range: "255.255.255.255 … 255.255.255.255",
        size: 1n,
        space: 1n,
      },
      {
        name: "subnet /127",
        pool: { subnet: "2001:db8::/127" },
        range: "2001:db8::1 … 2001:db8::1",
        size: 1n,
        space: 1n,
      },
      { name: "subnet /128", pool: { subnet: "2001:db8::1/128" }, range: "empty", size: 0n, space: 0n },
      {
        name: "subnet /64",
        pool: { subnet: "2001:db8::/64" },
        range: "2001:db8::1 … 2001:db8::ffff:ffff:ffff:ffff",
        size: (1n << 64n) - 1n,
        space: (1n << 64n) - 1n,
      },
      {
        name: "IPv6 top of space",
        pool: { subnet: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127" },
        range: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff … ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        size: 1n,
        space: 1n,
      },
      {
        name: "start only: unbounded to the top of IPv4",
        pool: { start: "255.255.255.254" },
        range: "255.255.255.254 … 255.255.255.255",
        size: 2n,
        space: undefined,
      },
      {
        name: "start only at the top",
        pool: { start: "255.255.255.255" },
        range: "255.255.255.255 … 255.255.255.255",
        size: 1n,
        space: undefined,
      },
      {
        name: "start only IPv6",
        pool: { start: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0" },
        range: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0 … ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        size: 16n,
        space: undefined,
      },
      {
        name: "start=subnet last",
        pool: { start: "10.0.0.255", subnet: "10.0.0.0/24" },
        range: "10.0.0.255 … 10.0.0.255",
        size: 1n,
        space: 1n,
      },
      { name: "end only: yields nothing", pool: { end: "10.0.0.9" }, range: "empty", size: 0n, space: undefined },
      {
        name: "subnet+end without start: end ignored",
        pool: { subnet: "10.0.0.0/29", end: "10.0.0.2" },
        range: "10.0.0.1 … 10.0.0.7",
        size: 7n,
        space: 7n,
      },
      {
        name: "end before start: yields nothing",
        pool: { start: "10.0.0.9", end: "10.0.0.1" },
        range: "empty",
        size: 0n,
        space: 0n,
      },
    ];
    for (const c of cases) {
      it(`${c.name}: ${JSON.stringify(c.pool)} → ${c.range}`, () => {
        const { entry } = compileEntry(c.pool, 0);
        expect(show(entry)).to.equal(c.range);
        expect(entry!.size).to.equal(c.size);
        expect(entry!.indexSpace).to.equal(c.space);
        if (c.size <= 100_000n) {
          const scan = metal3Scan(c.pool);
          expect(BigInt(scan.length)).to.equal(c.size);
          if (scan.length > 0) expect([scan[0], scan[scan.length - 1]]).to.deep.equal([entry!.first, entry!.last]);
        }
      });
    }

    it("2001:db8::ffff:ffff + 1 is 2001:db8::1:0:0 (no IPv4 overflow)", () => {
      const { entry } = compileEntry({ start: "2001:db8::ffff:ffff", end: "2001:db8::1:0:5" }, 0);
      expect(formatAddress({ family: 6, value: entry!.first + 1n })).to.equal("2001:db8::1:0:0");
      expect(entry!.size).to.equal(7n);
      expect(metal3Candidate({ start: "2001:db8::ffff:ffff" }, 1n)).to.equal(parseAddress("2001:db8::1:0:0")!.value);
    });

    it("start only IPv6 is unbounded", () => {
      const { entry } = compileEntry({ start: "2001:db8::" }, 3);
      expect(entry!.bounded).to.equal(false);
      expect(entry!.last).to.equal(maxValue(6));
      expect(entry!.index).to.equal(3);
    });
  });

  describe("compileEntry errors (typed, never thrown)", () => {
    const cases: Array<{ pool: Pool; errors: string[]; hasEntry: boolean; warnings?: string[] }> = [
      { pool: {}, errors: ["spec.pools[2]: Required value: one of start, end or subnet is required"], hasEntry: false },
      {
        pool: { start: "10.0.0.300" },
        errors: ['spec.pools[2].start: Invalid value: "10.0.0.300": not a valid IP address'],
        hasEntry: false,
      },
      {
        pool: { start: "10.0.0.1", end: "x" },
        errors: ['spec.pools[2].end: Invalid value: "x": not a valid IP address'],
        hasEntry: false,
      },
      {
        pool: { subnet: "10.0.0.0/24", end: "x" },
        errors: ['spec.pools[2].end: Invalid value: "x": not a valid IP address'],
        hasEntry: true,
      },
      {
        pool: { subnet: "10.0.0.0/33" },
        errors: ['spec.pools[2].subnet: Invalid value: "10.0.0.0/33": not a valid subnet (address/prefix length)'],
        hasEntry: false,
      },
      {
        pool: { start: "10.0.0.9", end: "10.0.0.1" },
        errors: ['spec.pools[2].end: Invalid value: "10.0.0.1": end is before start'],
        hasEntry: true,
      },
      // Mixed families: Metal3's webhook accepts them, so they are warnings; the entry yields nothing here.
      {
        pool: { start: "10.0.0.1", end: "2001:db8::1" },
        errors: [],
        warnings: [
          'spec.pools[2].end "2001:db8::1": start, end and subnet are of different address families: the entry yields no address',
        ],
        hasEntry: false,
      },
      {
        pool: { start: "10.0.0.1", subnet: "2001:db8::/64" },
        errors: [],
        warnings: [
          'spec.pools[2].subnet "2001:db8::/64": start, end and subnet are of different address families: the entry yields no address',
        ],
        hasEntry: false,
      },
      {
        pool: { subnet: "10.0.0.0/30", end: "2001:db8::1" },
        errors: [],
        warnings: [
          'spec.pools[2].end "2001:db8::1": start, end and subnet are of different address families (end is ignored without start)',
        ],
        hasEntry: true,
      },
      {
        pool: { start: "10.0.0.1", gateway: "gw", dnsServers: ["8.8.8.8", "dns"] },
        errors: [
          'spec.pools[2].gateway: Invalid value: "gw": not a valid IP address',
          'spec.pools[2].dnsServers[1]: Invalid value: "dns": not a valid IP address',
        ],
        hasEntry: true,
      },
    ];
    for (const c of cases) {
      it(JSON.stringify(c.pool), () => {
        const r = compileEntry(c.pool, 2);
        expect(r.errors.map(formatFieldError)).to.deep.equal(c.errors);
        expect(r.warnings).to.deep.equal(c.warnings ?? []);
        expect(r.entry !== undefined).to.equal(c.hasEntry);
      });
    }
  });

  describe("overrides (spec §1.1)", () => {
    const defaults = { prefix: 24, gateway: "10.0.0.1", dnsServers: ["8.8.8.8"] };
    const cases: Array<{ name: string; pool: Pool; prefix: number; gateway?: string; dns?: string[] }> = [
      { name: "pool defaults", pool: { start: "10.0.0.2" }, prefix: 24, gateway: "10.0.0.1", dns: ["8.8.8.8"] },
      {
        name: "zero prefix does not override",
        pool: { start: "10.0.0.2", prefix: 0 },
        prefix: 24,
        gateway: "10.0.0.1",
        dns: ["8.8.8.8"],
      },
      {
        name: "entry prefix",
        pool: { start: "10.0.0.2", prefix: 26 },
        prefix: 26,
        gateway: "10.0.0.1",
        dns: ["8.8.8.8"],
      },
      {
        name: "entry gateway",
        pool: { start: "10.0.0.2", gateway: "10.0.0.254" },
        prefix: 24,
        gateway: "10.0.0.254",
        dns: ["8.8.8.8"],
      },
      {
        name: "empty DNS list does not override",
        pool: { start: "10.0.0.2", dnsServers: [] },
        prefix: 24,
        gateway: "10.0.0.1",
        dns: ["8.8.8.8"],
      },
      {
        name: "entry DNS",
        pool: { start: "10.0.0.2", dnsServers: ["1.1.1.1", "9.9.9.9"] },
        prefix: 24,
        gateway: "10.0.0.1",
        dns: ["1.1.1.1", "9.9.9.9"],
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const { entry } = compileEntry(c.pool, 0, defaults);
        expect(entry!.prefix).to.equal(c.prefix);
        expect(entry!.gateway).to.equal(c.gateway);
        expect(entry!.dnsServers).to.deep.equal(c.dns);
      });
    }
    it("nothing set anywhere", () => {
      const { entry } = compileEntry({ start: "10.0.0.2" }, 0);
      expect(entry!.prefix).to.equal(0);
      expect("gateway" in entry!).to.equal(false);
      expect("dnsServers" in entry!).to.equal(false);
    });
  });

  it("compileEntries skips broken entries and reports pool-wide problems", () => {
    const r = compileEntries({
      pools: [{ start: "10.0.0.1", end: "10.0.0.2" }, { start: "bad" }, { subnet: "10.0.1.0/30" }],
      gateway: "nope",
      dnsServers: ["1.1.1.1", "x"],
    });
    expect(r.entries.map((e) => e.index)).to.deep.equal([0, 2]);
    expect(r.errors.map(formatFieldError)).to.deep.equal([
      'spec.pools[1].start: Invalid value: "bad": not a valid IP address',
      'spec.gateway: Invalid value: "nope": not a valid IP address',
      'spec.dnsServers[1]: Invalid value: "x": not a valid IP address',
    ]);
  });

  it("entryUnion merges overlapping and adjacent ranges per family", () => {
    const { entries } = compileEntries({
      pools: [
        { start: "10.0.0.10", end: "10.0.0.20" },
        { start: "10.0.0.15", end: "10.0.0.30" },
        { start: "10.0.0.31", end: "10.0.0.31" },
        { start: "10.0.0.40", end: "10.0.0.41" },
        { subnet: "10.0.0.0/32" },
        { start: "2001:db8::1", end: "2001:db8::5" },
      ],
    });
    const u = entryUnion(entries);
    const v4 = (s: string): bigint => parseAddress(s)!.value;
    expect(u[4]).to.deep.equal([
      [v4("10.0.0.10"), v4("10.0.0.31")],
      [v4("10.0.0.40"), v4("10.0.0.41")],
    ]);
    expect(u[6]).to.have.length(1);
  });

  it("property: compiled intervals equal Metal3's sequential scan for random entries", () => {
    const rng = seededRng(42);
    const pick = (n: number): number => Math.floor(rng() * n);
    for (let round = 0; round < 400; round++) {
      const family: Family = rng() < 0.5 ? 4 : 6;
      const bases = [0n, 1n << (family === 4 ? 24n : 100n), maxValue(family) - 300n, 0xc0a80000n];
      const base = bases[pick(bases.length)]! + BigInt(pick(200));
      const clamp = (v: bigint): bigint => (v < 0n ? 0n : v > maxValue(family) ? maxValue(family) : v);
      const fmt = (v: bigint): string => formatAddress({ family, value: clamp(v) });
      const width = family === 4 ? 32 : 128;
      const len = width - (1 + pick(9));
      const subnet = `${fmt(base + BigInt(pick(300)) - 150n)}/${len}`;
      const kinds: Pool[] = [
        { start: fmt(base), end: fmt(base + BigInt(pick(300)) - 20n) },
        { start: fmt(base), subnet },
        { start: fmt(base), end: fmt(base + BigInt(pick(300))), subnet },
        { subnet },
        { start: fmt(maxValue(family) - BigInt(pick(200))) },
      ];
      const pool = kinds[pick(kinds.length)]!;
      const { entry } = compileEntry(pool, 0);
      const scan = metal3Scan(pool);
      expect(entry, JSON.stringify(pool)).to.not.equal(undefined);
      expect(entry!.size, JSON.stringify(pool)).to.equal(BigInt(scan.length));
      if (scan.length > 0) {
        expect([entry!.first, entry!.last], JSON.stringify(pool)).to.deep.equal([scan[0], scan[scan.length - 1]]);
      }
      if (entry!.indexSpace !== undefined) expect(entry!.indexSpace >= entry!.size).to.equal(true);
    }
  });
});
