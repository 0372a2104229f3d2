import { expect } from "chai";
import { CONVERSION_DATA_ANNOTATION } from "../../api/incluster/types.js";
import { convertInClusterPool, V1ALPHA1, V1ALPHA2 } from "./incluster-conversion.js";
import { seededRng } from "./random.js";
import type { Rng } from "./random.js";

type Json = Record<string, unknown>;

const KINDS = ["InClusterIPPool", "GlobalInClusterIPPool"];

function pool(apiVersion: string, spec: Json, extra: Json = {}, kind = "InClusterIPPool"): Json {
  return { apiVersion, kind, metadata: { name: "p", namespace: "ns" }, spec, ...extra };
}

function convert(object: Json, to: string): Json {
  const outcome = convertInClusterPool(object, to);
  if (!outcome.ok) throw new Error(outcome.message);
  return outcome.object;
}

function annotationsOf(object: Json): Record<string, string> | undefined {
  return (object.metadata as { annotations?: Record<string, string> }).annotations;
}

describe("in-cluster pool conversion: v1alpha1 → v1alpha2 (the provider's table)", () => {
  const cases: [string, Json, Json][] = [
    [
      "start, end, subnet and prefix",
      { gateway: "1.1.1.1", subnet: "1.1.1.1/28", start: "1.1.1.1", end: "1.1.1.10", prefix: 28 },
      { gateway: "1.1.1.1", addresses: ["1.1.1.1-1.1.1.10"], prefix: 28 },
    ],
    [
      "addresses only",
      { gateway: "1.1.1.1", addresses: ["1.1.1.1-1.1.1.10"], prefix: 28 },
      { gateway: "1.1.1.1", addresses: ["1.1.1.1-1.1.1.10"], prefix: 28 },
    ],
    [
      "prefix from the subnet",
      { subnet: "1.1.1.0/24", start: "1.1.1.10", end: "1.1.1.15", gateway: "1.1.1.1" },
      { gateway: "1.1.1.1", addresses: ["1.1.1.10-1.1.1.15"], prefix: 24 },
    ],
    [
      "start and end from the (masked) subnet",
      { subnet: "1.1.1.7/24", gateway: "1.1.1.1" },
      { gateway: "1.1.1.1", addresses: ["1.1.1.1-1.1.1.254"], prefix: 24 },
    ],
    [
      "IPv6 subnet, addresses kept before start-end",
      { subnet: "2001:db8::/64", addresses: ["2001:db8:1::5"] },
      { addresses: ["2001:db8:1::5", "2001:db8::1-2001:db8::ffff:ffff:ffff:fffe"], prefix: 64 },
    ],
    [
      "an explicit prefix wins over the subnet's",
      { subnet: "10.0.0.0/16", prefix: 24 },
      { addresses: ["10.0.0.1-10.0.255.254"], prefix: 24 },
    ],
    ["start without end is not an address", { start: "10.0.0.1", prefix: 24 }, { addresses: [], prefix: 24 }],
    ["an empty spec", {}, { addresses: [], prefix: 0 }],
    [
      "a /32 gives a reversed range, as Go's Next and Prev do",
      { subnet: "10.0.0.5/32" },
      { addresses: ["10.0.0.6-10.0.0.4"], prefix: 32 },
    ],
    [
      "past the end of the family is Go's invalid IP",
      { subnet: "255.255.255.255/32" },
      { addresses: ["invalid IP-255.255.255.254"], prefix: 32 },
    ],
  ];
  for (const [name, spoke, hub] of cases) {
    it(name, () => {
      for (const kind of KINDS) {
        const out = convert(pool(V1ALPHA1, spoke, {}, kind), V1ALPHA2);
        expect(out.apiVersion).to.equal(V1ALPHA2);
        expect(out.kind).to.equal(kind);
        expect(out.spec).to.deep.equal(hub);
      }
    });
  }

  it("keeps the defaulted v1alpha1 spec in the annotation, sorted like Go's JSON, and only when it is needed", () => {
    const out = convert(pool(V1ALPHA1, { subnet: "1.1.1.0/24", gateway: "1.1.1.1" }), V1ALPHA2);
    expect(annotationsOf(out)?.[CONVERSION_DATA_ANNOTATION]).to.equal(
      '{"apiVersion":"ipam.cluster.x-k8s.io/v1alpha1","kind":"InClusterIPPool","spec":' +
        '{"end":"1.1.1.254","gateway":"1.1.1.1","prefix":24,"start":"1.1.1.1","subnet":"1.1.1.0/24"}}',
    );
    const plain = convert(pool(V1ALPHA1, { addresses: ["1.1.1.1"], prefix: 24 }), V1ALPHA2);
    expect(annotationsOf(plain)).to.equal(undefined);
  });

  it("keeps status, labels, other annotations and unknown fields", () => {
    const status = { ipAddresses: { total: 3, used: 1, free: 2, outOfRange: 0 } };
    const object = pool(V1ALPHA1, { addresses: ["10.0.0.1-10.0.0.3"], prefix: 24 }, { status });
    (object.metadata as Json).labels = { a: "b" };
    (object.metadata as Json).annotations = { keep: "me" };
    const out = convert(object, V1ALPHA2);
    expect(out.status).to.deep.equal(status);
    expect(out.metadata).to.deep.equal({ name: "p", namespace: "ns", labels: { a: "b" }, annotations: { keep: "me" } });
  });
});

describe("in-cluster pool conversion: v1alpha2 → v1alpha1", () => {
  it("copies addresses, prefix and gateway (the provider's table) and leaves Go's empty values out", () => {
    const spec = { gateway: "1.2.3.5", addresses: ["1.1.1.1-1.1.1.10"], prefix: 10 };
    for (const kind of KINDS) {
      const out = convert(pool(V1ALPHA2, spec, {}, kind), V1ALPHA1);
      expect(out).to.deep.include({ apiVersion: V1ALPHA1, kind, spec });
      expect(annotationsOf(out)).to.equal(undefined);
    }
    expect(convert(pool(V1ALPHA2, { addresses: [], prefix: 0, gateway: "" }), V1ALPHA1).spec).to.deep.equal({});
  });

  it("stores the v1alpha2 object when it has fields v1alpha1 lacks, and restores them on the way up", () => {
    const spec = {
      addresses: ["10.0.0.0/24"],
      prefix: 24,
      excludedAddresses: ["10.0.0.7"],
      allocateReservedIPAddresses: true,
      addressReuseGracePeriodSeconds: 30,
    };
    const down = convert(pool(V1ALPHA2, spec), V1ALPHA1);
    expect(down.spec).to.deep.equal({ addresses: ["10.0.0.0/24"], prefix: 24 });
    expect(JSON.parse(annotationsOf(down)?.[CONVERSION_DATA_ANNOTATION] ?? "")).to.deep.equal({
      apiVersion: V1ALPHA2,
      kind: "InClusterIPPool",
      spec,
    });
    // An edit through v1alpha1 keeps its own change and gets the v1alpha2-only fields back.
    const edited = { ...down, spec: { ...(down.spec as Json), gateway: "10.0.0.1" } };
    const up = convert(edited, V1ALPHA2);
    expect(up.spec).to.deep.equal({ ...spec, gateway: "10.0.0.1" });
    expect(annotationsOf(up)).to.equal(undefined);
  });

  it("ignores a stored v1alpha1 spec that no longer describes the object (edited at v1alpha2), for both kinds", () => {
    for (const kind of KINDS) {
      const up = convert(pool(V1ALPHA1, { subnet: "10.0.0.0/24" }, {}, kind), V1ALPHA2);
      const edited = { ...up, spec: { ...(up.spec as Json), addresses: ["10.0.0.10-10.0.0.20"] } };
      const down = convert(edited, V1ALPHA1);
      expect(down.spec).to.deep.equal({ addresses: ["10.0.0.10-10.0.0.20"], prefix: 24 });
      expect(annotationsOf(down)).to.equal(undefined);
    }
  });
});

describe("in-cluster pool conversion: bad input fails with a message, never throws", () => {
  const bad: [string, unknown, string, RegExp][] = [
    ["not an object", "x", V1ALPHA2, /not a JSON object/],
    ["another kind", { ...pool(V1ALPHA1, {}), kind: "IPPool" }, V1ALPHA2, /cannot convert kind "IPPool"/],
    ["another version", pool("ipam.cluster.x-k8s.io/v1beta1", {}), V1ALPHA2, /apiVersion .*v1beta1.* is not one of/],
    ["another desired version", pool(V1ALPHA1, {}), "v1", /desiredAPIVersion "v1" is not one of/],
    [
      "a subnet Go cannot parse",
      pool(V1ALPHA1, { subnet: "10.0.0.0" }),
      V1ALPHA2,
      /spec\.subnet: Invalid value: "10\.0\.0\.0": netip\.ParsePrefix\("10\.0\.0\.0"\): no '\/'/,
    ],
    ["a prefix length out of range", pool(V1ALPHA1, { subnet: "10.0.0.0/33" }), V1ALPHA2, /prefix length out of range/],
    ["a leading zero in the length", pool(V1ALPHA1, { subnet: "10.0.0.0/08" }), V1ALPHA2, /bad bits after slash: "08"/],
    ["a spec that is not an object", pool(V1ALPHA1, [] as unknown as Json), V1ALPHA2, /spec must be an object/],
    [
      "a field of the wrong type",
      pool(V1ALPHA2, { addresses: "10.0.0.1" }),
      V1ALPHA1,
      /spec\.addresses must be a list/,
    ],
    [
      "an annotation that is not JSON",
      {
        ...pool(V1ALPHA2, { addresses: [], prefix: 0 }),
        metadata: { annotations: { [CONVERSION_DATA_ANNOTATION]: "{" } },
      },
      V1ALPHA1,
      /cluster\.x-k8s\.io\/conversion-data is not JSON/,
    ],
  ];
  for (const [name, object, to, message] of bad) {
    it(name, () => {
      const outcome = convertInClusterPool(object, to);
      expect(outcome.ok).to.equal(false);
      if (!outcome.ok) expect(outcome.message).to.match(message);
    });
  }

  it("returns an object already at the desired version unchanged", () => {
    const object = pool(V1ALPHA2, { addresses: ["10.0.0.1"], prefix: 24 });
    expect(convert(object, V1ALPHA2)).to.equal(object);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Round trips over generated inputs
// ---------------------------------------------------------------------------------------------------------------

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)] as T;
}

function ipv4(rng: Rng): string {
  return [0, 1, 2, 3].map(() => Math.floor(rng() * 256)).join(".");
}

function ipv6(rng: Rng): string {
  const groups = [0, 1, 2, 3, 4, 5, 6, 7].map(() => (rng() < 0.4 ? "0" : Math.floor(rng() * 65536).toString(16)));
  return groups.join(":");
}

function address(rng: Rng, v6: boolean): string {
  return v6 ? ipv6(rng) : ipv4(rng);
}

function maybe<T>(rng: Rng, make: () => T): T | undefined {
  return rng() < 0.5 ? make() : undefined;
}

/** A v1alpha1 spec as the API server could hold it: every field optional, Go's empty values never written. */
function spokeSpec(rng: Rng): Json {
  const v6 = rng() < 0.4;
  const spec: Json = {
    addresses: maybe(rng, () => Array.from({ length: 1 + Math.floor(rng() * 3) }, () => address(rng, v6))),
    subnet: maybe(rng, () => `${address(rng, v6)}/${Math.floor(rng() * (v6 ? 129 : 33))}`),
    start: maybe(rng, () => address(rng, v6)),
    end: maybe(rng, () => address(rng, v6)),
    prefix: maybe(rng, () => 1 + Math.floor(rng() * 128)),
    gateway: maybe(rng, () => address(rng, v6)),
  };
  return Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined));
}

/** A v1alpha2 spec: addresses and prefix always, the rest optional (false, 0 and empty lists included). */
function hubSpec(rng: Rng): Json {
  const v6 = rng() < 0.4;
  const spec: Json = {
    addresses: Array.from({ length: Math.floor(rng() * 3) }, () =>
      pick(rng, [address(rng, v6), `${address(rng, v6)}/24`]),
    ),
    prefix: Math.floor(rng() * 129),
    gateway: maybe(rng, () => address(rng, v6)),
    excludedAddresses: maybe(rng, () => Array.from({ length: Math.floor(rng() * 3) }, () => address(rng, v6))),
    allocateReservedIPAddresses: maybe(rng, () => rng() < 0.5),
    addressReuseGracePeriodSeconds: maybe(rng, () => Math.floor(rng() * 3)),
  };
  return Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined));
}

function withMetadata(rng: Rng, object: Json): Json {
  const annotations = maybe(rng, () => ({ "example.com/note": String(Math.floor(rng() * 100)) }));
  return { ...object, metadata: { name: "p", uid: "u-1", ...(annotations ? { annotations } : {}) } };
}

describe("in-cluster pool conversion: round trips over generated inputs", () => {
  const RUNS = 3000;

  it("v1alpha1 → v1alpha2 → v1alpha1 gives the input back, with the provider's defaults filled in", () => {
    const rng = seededRng(25);
    let withSubnet = 0;
    for (let i = 0; i < RUNS; i++) {
      const spec = spokeSpec(rng);
      const before = withMetadata(
        rng,
        pool(
          V1ALPHA1,
          spec,
          { status: { ipAddresses: { total: i, used: 0, free: i, outOfRange: 0 } } },
          pick(rng, KINDS),
        ),
      );
      const up = convertInClusterPool(before, V1ALPHA2);
      if (!up.ok) {
        // Only a subnet Go cannot parse may fail, and then always.
        expect(up.message, JSON.stringify(spec)).to.match(/spec\.subnet: Invalid value/);
        continue;
      }
      const after = convert(up.object, V1ALPHA1);
      const expected = structuredClone(before);
      if (typeof spec.subnet === "string") {
        withSubnet++;
        const defaults = expected.spec as Json;
        expect(after.spec, JSON.stringify(spec)).to.deep.include({ subnet: spec.subnet });
        defaults.start ??= (after.spec as Json).start;
        defaults.end ??= (after.spec as Json).end;
        if ((after.spec as Json).prefix !== undefined) defaults.prefix ??= (after.spec as Json).prefix;
        const bits = Number(spec.subnet.split("/")[1]);
        expect((after.spec as Json).prefix).to.equal(spec.prefix ?? (bits === 0 ? undefined : bits));
      }
      expect(after, JSON.stringify(spec)).to.deep.equal(expected);
    }
    expect(withSubnet).to.be.greaterThan(RUNS / 5);
  });

  it("v1alpha2 → v1alpha1 → v1alpha2 gives the input back exactly, annotation gone", () => {
    const rng = seededRng(2025);
    for (let i = 0; i < RUNS; i++) {
      const spec = hubSpec(rng);
      const before = withMetadata(rng, pool(V1ALPHA2, spec, {}, pick(rng, KINDS)));
      const after = convert(convert(before, V1ALPHA1), V1ALPHA2);
      expect(after, JSON.stringify(spec)).to.deep.equal(before);
    }
  });

  it("a v1alpha2 object written through v1alpha1 and then given v1alpha2-only fields survives a v1alpha1 round trip", () => {
    const rng = seededRng(7);
    let checked = 0;
    for (let i = 0; i < RUNS; i++) {
      const up = convertInClusterPool(
        withMetadata(rng, pool(V1ALPHA1, spokeSpec(rng), {}, pick(rng, KINDS))),
        V1ALPHA2,
      );
      if (!up.ok) continue;
      const { addresses, prefix, gateway, ...extra } = hubSpec(rng);
      void addresses;
      void prefix;
      void gateway;
      const stored = { ...up.object, spec: { ...(up.object.spec as Json), ...extra } };
      const viaV1alpha1 = convert(stored, V1ALPHA1);
      const back = convert(viaV1alpha1, V1ALPHA2);
      expect(back).to.deep.equal(stored);
      checked++;
    }
    expect(checked).to.be.greaterThan(RUNS / 2);
  });
});
