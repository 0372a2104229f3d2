/**
 * Property tests: thousands of random pool specs (valid and invalid, IPv4 and IPv6, odd spellings, edges of the
 * address space) through the shared validation and the allocator. Properties:
 * - validation, warnings and defaulting never throw;
 * - the allocator agrees with validation (`specErrors` empty exactly when accepted);
 * - an accepted pool hands out only addresses inside its entries (checked against an independent reading of
 *   spec §2), never one address twice, preallocations exactly to their claims, and says "exhausted" only when full;
 * - a preallocation no entry yields is accepted only with a warning naming it (Metal3's bounds are looser than its
 *   arithmetic), and its claim then fails with Metal3's "Pre-allocated IP out of bounds".
 * Deterministic: the seed is in the test name; change SEED to explore.
 */
import { expect } from "chai";
import type { IPPool, IPPoolSpec, Pool } from "../../api/v1alpha1/types.js";
import { canonicalAddress, formatAddress, maxValue, parseAddress, parseSubnet } from "../ipam/address.js";
import type { Addr, Family } from "../ipam/address.js";
import { AllocationMessages, PoolAllocator } from "../ipam/allocator.js";
import { seededRng } from "../ipam/random.js";
import type { Rng } from "../ipam/random.js";
import { defaultIPPool, ipPoolWarnings, validateIPPool } from "../ipam/validation.js";

const SEED = 20_240_611;
const SPECS = 4000;
const CLAIMS_PER_POOL = 24;

class Gen {
  constructor(readonly rng: Rng) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.rng() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.rng() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length - 1)] as T;
  }
  big(bits: number): bigint {
    let v = 0n;
    for (let i = 0; i < bits; i += 16) v = (v << 16n) | BigInt(this.int(0, 0xffff));
    return v & ((1n << BigInt(bits)) - 1n);
  }
}

const GARBAGE = [
  "",
  "x",
  "10.0.0.256",
  "10.0.0",
  "010.0.0.1",
  "2001:db8::g",
  "2001:db8:::1",
  "::ffff:10.0.0.1",
  "10.0.0.1/33",
  "fe80::1%eth0",
  " 10.0.0.1",
];

/** Some spelling of `a`: canonical, or (IPv6) fully expanded with leading zeros, upper case. */
function spell(g: Gen, a: Addr): string {
  const canonical = formatAddress(a);
  if (a.family === 4 || g.chance(0.6)) return canonical;
  const groups = a.value.toString(16).padStart(32, "0").match(/.{4}/g) ?? [];
  const text = groups.join(":");
  return g.chance(0.5) ? text.toUpperCase() : text;
}

function randomBase(g: Gen, family: Family): bigint {
  const top = maxValue(family);
  if (g.chance(0.05)) return top - BigInt(g.int(0, 40));
  if (g.chance(0.05)) return BigInt(g.int(0, 40));
  return family === 4 ? g.big(32) : (0x20010db8n << 96n) | g.big(64);
}

function addrAt(family: Family, value: bigint): Addr {
  const top = maxValue(family);
  return { family, value: value < 0n ? 0n : value > top ? top : value };
}

function randomEntry(g: Gen, family: Family): Pool {
  const base = randomBase(g, family);
  const bits = family === 4 ? 32 : 128;
  const prefixLength = g.int(bits - 7, bits);
  const at = (delta: number): string => spell(g, addrAt(family, base + BigInt(delta)));
  const subnet = `${at(g.int(-3, 3))}/${prefixLength}`;
  const entry: Pool = {};
  // Kind 6 (nothing set) is invalid, kind 7 (mixed families) yields nothing with a warning: both rarer.
  switch (g.chance(0.1) ? g.int(6, 7) : g.int(0, 5)) {
    case 0:
      entry.subnet = subnet;
      break;
    case 1:
      entry.start = at(0);
      entry.end = at(g.int(-3, 40));
      break;
    case 2:
      entry.start = at(0);
      entry.subnet = subnet;
      break;
    case 3:
      entry.start = at(0);
      entry.end = at(g.int(-3, 60));
      entry.subnet = subnet;
      break;
    case 4:
      entry.start = at(0);
      break;
    case 5:
      entry.end = at(0);
      if (g.chance(0.5)) entry.subnet = subnet;
      break;
    case 6:
      break;
    default:
      entry.start = at(0);
      entry.end = spell(g, addrAt(family === 4 ? 6 : 4, g.big(32)));
      break;
  }
  if (g.chance(0.05)) (entry as Record<string, string>)[g.pick(["start", "end", "subnet"])] = g.pick(GARBAGE);
  if (g.chance(0.3)) entry.prefix = g.int(0, 128);
  if (g.chance(0.2)) entry.gateway = g.chance(0.9) ? at(1) : g.pick(GARBAGE);
  if (g.chance(0.2)) entry.dnsServers = [at(2), ...(g.chance(0.1) ? [g.pick(GARBAGE)] : [])];
  return entry;
}

function randomPreallocations(g: Gen, pools: readonly Pool[]): Record<string, string> {
  const out: Record<string, string> = {};
  const count = g.chance(0.5) ? 0 : g.int(1, 3);
  for (let i = 0; i < count; i++) {
    const entry = pools.length > 0 ? g.pick(pools) : undefined;
    const anchor = parseAddress(entry?.start ?? "") ?? parseSubnet(entry?.subnet ?? "")?.network;
    let text: string;
    if (g.chance(0.1)) text = g.pick(GARBAGE);
    else if (anchor) text = spell(g, addrAt(anchor.family, anchor.value + BigInt(g.int(0, 6))));
    else text = "192.0.2.1";
    out[g.chance(0.1) && i > 0 ? `dup-${i}` : `pre-${i}`] = text;
  }
  return out;
}

function randomSpec(g: Gen): IPPoolSpec {
  const family: Family = g.chance(0.5) ? 4 : 6;
  const pools = Array.from({ length: g.int(0, 4) }, () =>
    randomEntry(g, g.chance(0.95) ? family : family === 4 ? 6 : 4),
  );
  const spec: IPPoolSpec = { namePrefix: g.chance(0.97) ? "pool" : "", pools };
  const strategy = g.chance(0.03) ? "bogus" : g.pick([undefined, "", "sequential", "random", "random"]);
  if (strategy !== undefined) spec.allocationStrategy = strategy as IPPoolSpec["allocationStrategy"];
  const pre = randomPreallocations(g, pools);
  if (Object.keys(pre).length > 0) spec.preAllocations = pre;
  if (g.chance(0.3)) spec.prefix = g.int(0, 128);
  if (g.chance(0.2)) spec.gateway = g.chance(0.9) ? "10.0.0.1" : g.pick(GARBAGE);
  return spec;
}

/** spec §2 read independently of src/ipam/entries.ts: does some entry yield `a`? */
function yieldedBySomeEntry(spec: IPPoolSpec, a: Addr): boolean {
  return (spec.pools ?? []).some((e) => {
    const start = e.start === undefined ? undefined : parseAddress(e.start);
    const end = e.end === undefined ? undefined : parseAddress(e.end);
    const subnet = e.subnet === undefined ? undefined : parseSubnet(e.subnet);
    const inSubnet = (x: Addr): boolean =>
      !!subnet && subnet.network.family === x.family && x.value >= subnet.first && x.value <= subnet.last;
    if (start) {
      // Mixed families: we give such an entry no arithmetic (admission warns), so it yields nothing.
      if (end && end.family !== start.family) return false;
      if (start.family !== a.family || a.value < start.value) return false;
      if (end && a.value > end.value) return false;
      return !subnet || (inSubnet(start) && inSubnet(a));
    }
    return !!subnet && inSubnet(a) && a.value > subnet.network.value;
  });
}

interface Tally {
  accepted: number;
  rejected: number;
  allocated: number;
  exhausted: number;
  warnedPreallocations: number;
  families: Set<Family>;
}

function exercise(g: Gen, spec: IPPoolSpec, warnings: readonly string[], tally: Tally): void {
  const label = JSON.stringify(spec);
  const allocator = new PoolAllocator(spec, { rng: g.rng });
  expect(allocator.specErrors, label).to.deep.equal([]);
  const given = new Map<string, string>();
  const hand = (claimName: string, address: string): void => {
    const a = parseAddress(address);
    expect(a, label).to.not.equal(undefined);
    expect(yieldedBySomeEntry(spec, a!), `${address} in ${label}`).to.equal(true);
    expect(given.has(address), `${address} twice in ${label}`).to.equal(false);
    given.set(address, claimName);
    tally.families.add(a!.family);
    allocator.reserve(address, { kind: "claim", claimName });
  };
  for (const [claimName, text] of Object.entries(spec.preAllocations ?? {})) {
    const r = allocator.allocate({ claimName });
    const pre = parseAddress(text);
    if (pre && !yieldedBySomeEntry(spec, pre)) {
      expect(r, `${claimName} in ${label}`).to.deep.equal({
        ok: false,
        reason: "AllocationFailed",
        message: AllocationMessages.preallocatedOutOfBounds,
      });
      expect(
        warnings.some((w) => w.startsWith(`spec.preAllocations[${claimName}]: `)),
        `warning for ${claimName} in ${label}`,
      ).to.equal(true);
      tally.warnedPreallocations++;
      continue;
    }
    expect(r.ok, `${claimName} in ${label}`).to.equal(true);
    if (r.ok) {
      expect(r.address).to.equal(canonicalAddress(text));
      hand(claimName, r.address);
    }
  }
  for (let i = 0; i < CLAIMS_PER_POOL; i++) {
    const claimName = `c${i}`;
    const r = allocator.allocate({ claimName });
    if (!r.ok) {
      expect(r.reason, `${r.message} in ${label}`).to.equal("PoolExhausted");
      expect(allocator.capacity().free, label).to.equal(0n);
      tally.exhausted++;
      return;
    }
    hand(claimName, r.address);
    tally.allocated++;
  }
}

describe(`random pool specs through validation and the allocator (seed ${SEED})`, function () {
  this.timeout(60_000);

  it(`${SPECS} specs: validation never throws; accepted pools allocate inside their entries, never twice`, () => {
    const g = new Gen(seededRng(SEED));
    const tally: Tally = {
      accepted: 0,
      rejected: 0,
      allocated: 0,
      exhausted: 0,
      warnedPreallocations: 0,
      families: new Set(),
    };
    let previous: IPPool = { metadata: { name: "prev", namespace: "ns" }, spec: { namePrefix: "pool" } };
    for (let n = 0; n < SPECS; n++) {
      const spec = randomSpec(g);
      const pool: IPPool = { metadata: { name: `p${n}`, namespace: "ns" }, spec };
      const errors = validateIPPool(pool);
      // The other entry points must not throw on the same input either.
      validateIPPool(pool, previous, [spec.preAllocations?.["pre-0"] ?? "10.0.0.1", "garbage"]);
      const warnings = ipPoolWarnings(pool, [previous]);
      expect(defaultIPPool(pool).spec.allocationStrategy).to.equal(spec.allocationStrategy || "sequential");
      if (errors.length > 0) {
        tally.rejected++;
        expect(new PoolAllocator(spec).specErrors).to.have.length.greaterThan(0);
      } else {
        tally.accepted++;
        exercise(g, spec, warnings, tally);
      }
      previous = pool;
    }
    // The generator must cover both outcomes and both families, or the properties prove little.
    expect(tally.accepted).to.be.greaterThan(SPECS / 5);
    expect(tally.rejected).to.be.greaterThan(SPECS / 5);
    expect(tally.exhausted).to.be.greaterThan(50);
    expect(tally.allocated).to.be.greaterThan(SPECS * 2);
    expect(tally.warnedPreallocations, "accepted preallocations no entry yields").to.be.greaterThan(10);
    expect([...tally.families].sort()).to.deep.equal([4, 6]);
  });
});
