import { expect } from "chai";
import type { CapiIPAddress } from "../../../api/capi/types.js";
import type { Condition, IPAddress, IPPool, IPPoolStatus } from "../../../api/v1alpha1/types.js";
import { INT64_MAX_NUMBER, type Capacity } from "../../ipam/allocator.js";
import { desiredPoolStatus, indexesFrom, indexesPatch, sameIndexes, sameStatus, type PoolHealth } from "./status.js";

function addressFor(claimName: string, address: string): IPAddress {
  return {
    metadata: { name: `p-${address}`, namespace: "ns" },
    spec: { address, prefix: 24, pool: { name: "p", namespace: "ns" }, claim: { name: claimName, namespace: "ns" } },
  };
}

function capiAddressFor(claimName: string, address: string): CapiIPAddress {
  return {
    metadata: { name: `p-${address}`, namespace: "ns" },
    spec: {
      address,
      prefix: 24,
      poolRef: { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "p" },
      claimRef: { name: claimName },
    },
  };
}

/** A reservation: an IPAddress that names no claim (made by a person, or left by a migration). */
function reservation(address: string): IPAddress {
  return {
    metadata: { name: `p-${address}`, namespace: "ns" },
    spec: { address, pool: { name: "p", namespace: "ns" }, claim: { name: "" } },
  };
}

describe("indexesFrom (pure)", () => {
  const rows: [string, IPAddress[], CapiIPAddress[], Record<string, string>][] = [
    ["no records", [], [], {}],
    [
      "an IPClaim's record, by claim name",
      [addressFor("a", "10.0.0.1"), addressFor("b", "10.0.0.2")],
      [],
      { a: "10.0.0.1", b: "10.0.0.2" },
    ],
    ["an IPAddressClaim's record, by claim name", [], [capiAddressFor("m", "10.0.0.3")], { m: "10.0.0.3" }],
    [
      "both kinds in one list, as Metal3 lists them",
      [addressFor("a", "10.0.0.1")],
      [capiAddressFor("m", "10.0.0.3")],
      { a: "10.0.0.1", m: "10.0.0.3" },
    ],
    ["a reservation names no claim: not listed", [reservation("10.0.0.9")], [], {}],
    [
      "addresses in canonical form",
      [addressFor("v6", "2001:DB8:0:0::0005")],
      [capiAddressFor("m", "2001:db8:0:0:0:0:0:6")],
      { v6: "2001:db8::5", m: "2001:db8::6" },
    ],
    ["an unparsable address is listed as written", [addressFor("odd", "not-an-ip")], [], { odd: "not-an-ip" }],
    [
      "a shared name lists the IPClaim's address",
      [addressFor("shared", "10.0.0.1")],
      [capiAddressFor("shared", "10.0.0.2")],
      { shared: "10.0.0.1" },
    ],
  ];
  for (const [what, addresses, capiAddresses, expected] of rows)
    it(what, () => expect(indexesFrom(addresses, capiAddresses)).to.deep.equal(expected));

  it("the IPClaim wins a shared name whatever the order of the lists", () => {
    const addresses = [addressFor("x", "10.0.0.5"), addressFor("shared", "10.0.0.1")];
    const capi = [capiAddressFor("shared", "10.0.0.2"), capiAddressFor("y", "10.0.0.6")];
    expect(indexesFrom([...addresses].reverse(), [...capi].reverse())).to.deep.equal(indexesFrom(addresses, capi));
    expect(indexesFrom(addresses, capi).shared).to.equal("10.0.0.1");
  });
});

describe("desiredPoolStatus (pure)", () => {
  const CREATED = "2026-11-01T08:00:00Z";
  const EARLIER = "2026-11-20T00:00:00Z";
  const NOW = new Date("2026-11-23T10:20:30.456Z");
  const NOW_STAMP = "2026-11-23T10:20:30Z";
  const HEALTHY: PoolHealth = { specErrors: [], collisions: [] };
  const small: Capacity = { total: 27n, used: 2n, free: 25n };

  /** `creationTimestamp` null: an object not stored yet. */
  function pool(status?: IPPoolStatus, creationTimestamp: string | null = CREATED): IPPool {
    return {
      metadata: { name: "p", namespace: "ns", ...(creationTimestamp ? { creationTimestamp } : {}) },
      spec: { namePrefix: "p", pools: [{ start: "10.0.0.1", end: "10.0.0.27" }], prefix: 24 },
      ...(status ? { status } : {}),
    };
  }
  const bound = [addressFor("a", "10.0.0.1"), addressFor("b", "10.0.0.2")];
  const desired = (
    p: IPPool,
    addresses: IPAddress[] = bound,
    capi: CapiIPAddress[] = [],
    capacity = small,
    health = HEALTHY,
  ): IPPoolStatus => desiredPoolStatus(p, addresses, capi, capacity, health, NOW);

  describe("lastUpdated moves only when indexes change", () => {
    const stored = { a: "10.0.0.1", b: "10.0.0.2" };
    const rows: [string, IPPool, IPAddress[], string][] = [
      ["a fresh status starts at the creation time", pool(), bound, CREATED],
      ["a fresh status of an empty pool starts at the creation time", pool(), [], CREATED],
      [
        "a wiped status (indexes kept, no stamp) starts at the creation time",
        pool({ indexes: { a: "10.0.0.9" } }),
        bound,
        CREATED,
      ],
      ["without a creation time (not stored yet): now, in whole seconds", pool(undefined, null), bound, NOW_STAMP],
      ["same indexes: the stamp stays", pool({ indexes: stored, lastUpdated: EARLIER }), bound, EARLIER],
      [
        "same indexes in another key order: the stamp stays",
        pool({ indexes: { b: "10.0.0.2", a: "10.0.0.1" }, lastUpdated: EARLIER }),
        bound,
        EARLIER,
      ],
      ["a new claim: now", pool({ indexes: { a: "10.0.0.1" }, lastUpdated: EARLIER }), bound, NOW_STAMP],
      ["a released claim: now", pool({ indexes: stored, lastUpdated: EARLIER }), bound.slice(0, 1), NOW_STAMP],
      [
        "a claim moved to another address: now",
        pool({ indexes: { a: "10.0.0.1", b: "10.0.0.7" }, lastUpdated: EARLIER }),
        bound,
        NOW_STAMP,
      ],
      [
        "a reservation added: indexes unchanged, the stamp stays",
        pool({ indexes: stored, lastUpdated: EARLIER }),
        [...bound, reservation("10.0.0.9")],
        EARLIER,
      ],
    ];
    for (const [what, p, addresses, expected] of rows)
      it(what, () => expect(desired(p, addresses).lastUpdated).to.equal(expected));
  });

  describe("counts, capped at the int64 maximum", () => {
    const huge = 1n << 64n;
    const rows: [string, Capacity, Pick<IPPoolStatus, "total" | "used" | "free">][] = [
      ["exact for small pools", small, { total: 27, used: 2, free: 25 }],
      ["an empty pool", { total: 0n, used: 0n, free: 0n }, { total: 0, used: 0, free: 0 }],
      [
        "a /64 is capped, never rounded past int64",
        { total: huge, used: 3n, free: huge - 3n },
        { total: INT64_MAX_NUMBER, used: 3, free: INT64_MAX_NUMBER },
      ],
      [
        "exactly 2^63 - 1 is capped too (as a double it would round up to 2^63)",
        { total: (1n << 63n) - 1n, used: 0n, free: (1n << 63n) - 1n },
        { total: INT64_MAX_NUMBER, used: 0, free: INT64_MAX_NUMBER },
      ],
    ];
    for (const [what, capacity, expected] of rows) {
      it(what, () => {
        const s = desired(pool(), bound, [], capacity);
        expect({ total: s.total, used: s.used, free: s.free }).to.deep.equal(expected);
      });
    }
  });

  describe("the Ready condition", () => {
    const rows: [string, PoolHealth, Pick<Condition, "status" | "reason" | "message">][] = [
      ["healthy", HEALTHY, { status: "True", reason: "PoolReady", message: "Pool is ready" }],
      [
        "spec errors, joined",
        { specErrors: ["spec.pools[0]: bad", "spec.prefix: bad"], collisions: [] },
        { status: "False", reason: "InvalidSpec", message: "spec.pools[0]: bad; spec.prefix: bad" },
      ],
      [
        "name collisions, joined",
        { specErrors: [], collisions: ["p-10-0-0-1 is taken", "p-10-0-0-2 is taken"] },
        { status: "False", reason: "NameCollision", message: "p-10-0-0-1 is taken; p-10-0-0-2 is taken" },
      ],
      [
        "an invalid spec wins over collisions",
        { specErrors: ["spec.prefix: bad"], collisions: ["p-10-0-0-1 is taken"] },
        { status: "False", reason: "InvalidSpec", message: "spec.prefix: bad" },
      ],
    ];
    for (const [what, health, expected] of rows) {
      it(what, () => {
        const conditions = desired(pool(), bound, [], small, health).conditions ?? [];
        expect(conditions).to.deep.equal([{ type: "Ready", ...expected, lastTransitionTime: NOW_STAMP }]);
      });
    }

    it("keeps its transition time while the status holds, and other conditions as they are", () => {
      const other: Condition = {
        type: "Other",
        status: "True",
        reason: "Fine",
        message: "",
        lastTransitionTime: EARLIER,
      };
      const ready: Condition = {
        type: "Ready",
        status: "True",
        reason: "PoolReady",
        message: "Pool is ready",
        lastTransitionTime: EARLIER,
      };
      expect(desired(pool({ conditions: [other, ready] })).conditions).to.deep.equal([other, ready]);
      const failing = desired(pool({ conditions: [other, ready] }), bound, [], small, {
        specErrors: ["x"],
        collisions: [],
      });
      expect(failing.conditions?.[1]).to.deep.equal({
        type: "Ready",
        status: "False",
        reason: "InvalidSpec",
        message: "x",
        lastTransitionTime: NOW_STAMP,
      });
    });
  });

  it("lists both kinds in indexes, the IPClaim winning a shared name", () => {
    const s = desired(
      pool(),
      [addressFor("shared", "10.0.0.1")],
      [capiAddressFor("shared", "10.0.0.2"), capiAddressFor("m", "10.0.0.3")],
    );
    expect(s.indexes).to.deep.equal({ shared: "10.0.0.1", m: "10.0.0.3" });
  });

  it("is a fixed point: the status it returns, stored, yields itself a day later (no self-triggered reconciles)", () => {
    const first = desired(pool(), bound, [capiAddressFor("m", "10.0.0.3")], small, {
      specErrors: [],
      collisions: ["c"],
    });
    const later = desiredPoolStatus(
      pool(first),
      bound,
      [capiAddressFor("m", "10.0.0.3")],
      small,
      { specErrors: [], collisions: ["c"] },
      new Date("2026-11-24T00:00:00Z"),
    );
    expect(later).to.deep.equal(first);
  });

  it("keeps status fields it does not own", () => {
    const current = { indexes: {}, lastUpdated: EARLIER, extra: "kept" } as IPPoolStatus;
    expect(desired(pool(current), [])).to.include({ extra: "kept", lastUpdated: EARLIER });
  });
});

describe("indexesPatch (the indexes of a status merge patch)", () => {
  it("sends only entries that changed, and removed ones as null", () => {
    const current = { indexes: { a: "10.0.0.1", b: "10.0.0.2", c: "10.0.0.3" } };
    const desired = { indexes: { a: "10.0.0.1", c: "10.0.0.9", d: "10.0.0.4" } };
    expect(indexesPatch(current, desired)).to.deep.equal({ b: null, c: "10.0.0.9", d: "10.0.0.4" });
  });

  it("leaves indexes out when nothing changed, and sends everything to a status without them", () => {
    expect(indexesPatch({ indexes: { a: "10.0.0.1" } }, { indexes: { a: "10.0.0.1" } })).to.equal(undefined);
    expect(indexesPatch(undefined, { indexes: { a: "10.0.0.1" } })).to.deep.equal({ a: "10.0.0.1" });
  });
});

describe("sameStatus (nothing to write)", () => {
  const conditions: Condition[] = [
    {
      type: "Ready",
      status: "True",
      reason: "PoolReady",
      message: "Pool is ready",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
  ];
  const current: IPPoolStatus = {
    indexes: { a: "10.0.0.1", b: "10.0.0.2" },
    lastUpdated: "2026-01-01T00:00:00Z",
    total: 10,
    used: 2,
    free: 8,
    conditions,
  };

  it("says the same only when indexes, counts, time and conditions are", () => {
    expect(sameStatus({ ...current, indexes: { b: "10.0.0.2", a: "10.0.0.1" } }, current)).to.equal(true);
    const variants: Partial<IPPoolStatus>[] = [
      { indexes: { a: "10.0.0.1" } },
      { indexes: { a: "10.0.0.1", b: "10.0.0.3" } },
      { indexes: { a: "10.0.0.1", c: "10.0.0.2" } },
      { used: 3 },
      { lastUpdated: "2026-01-02T00:00:00Z" },
      { conditions: [{ ...conditions[0]!, status: "False" as const }] },
    ];
    for (const changed of variants)
      expect(sameStatus({ ...current, ...changed }, current), JSON.stringify(changed)).to.equal(false);
    expect(sameStatus(current, undefined)).to.equal(false);
    expect(
      sameStatus({ ...current, indexes: {} }, { ...current, indexes: undefined }),
      "indexes never written",
    ).to.equal(false);
  });

  it("compares indexes by entries", () => {
    expect(sameIndexes({}, {})).to.equal(true);
    expect(sameIndexes({ a: "1" }, { a: "1", b: "2" })).to.equal(false);
  });
});
