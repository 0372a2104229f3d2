import { expect } from "chai";
import type { IPAddress, IPClaim, IPPool, IPPoolSpec } from "../../api/v1alpha1/types.js";
import { silentLogger } from "../runtime/logger.js";
import type { AdmissionRequest, AdmissionResponse, Operation } from "./admission.js";
import { mutateIPPool, validateIPAddressRoute, validateIPClaimRoute, validateIPPoolRoute } from "./handlers.js";
import type { HandlerContext, Route } from "./route.js";
import { staticLookup } from "./lookup.js";
import type { ClusterLookup } from "./lookup.js";

const NS = "ns";

function pool(name: string, spec: Partial<IPPoolSpec>, meta: Partial<IPPool["metadata"]> = {}): IPPool {
  return {
    apiVersion: "ipam.metal3.io/v1alpha1",
    kind: "IPPool",
    metadata: { name, namespace: NS, ...meta },
    spec: { namePrefix: name, ...spec },
  };
}

function claim(name: string, poolName: string, annotations?: Record<string, string>): IPClaim {
  return {
    metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) },
    spec: { pool: { name: poolName } },
  };
}

function address(name: string, spec: Partial<IPAddress["spec"]>, meta: Partial<IPAddress["metadata"]> = {}): IPAddress {
  return {
    metadata: { name, namespace: NS, ...meta },
    spec: { address: "10.0.0.1", pool: { name: "p" }, claim: { name: "c" }, ...spec },
  };
}

function req(kind: string, operation: Operation, object: unknown, oldObject?: unknown): AdmissionRequest {
  const name = (object as { metadata?: { name?: string } } | undefined)?.metadata?.name;
  return {
    uid: "uid-1",
    kind: { group: "ipam.metal3.io", version: "v1alpha1", kind },
    operation,
    namespace: NS,
    ...(name ? { name } : {}),
    object,
    ...(oldObject !== undefined ? { oldObject } : {}),
  };
}

const failingLookup: ClusterLookup = {
  poolsInNamespace: () => Promise.reject(new Error("apiserver down")),
  addressesOfPool: () => Promise.reject(new Error("apiserver down")),
  inClusterPoolAddresses: () => Promise.reject(new Error("apiserver down")),
  inClusterPoolUid: () => Promise.reject(new Error("apiserver down")),
};

function ctx(lookup: ClusterLookup = staticLookup([])): HandlerContext {
  return { lookup, logger: silentLogger() };
}

async function run(route: Route, request: AdmissionRequest, lookup?: ClusterLookup): Promise<AdmissionResponse> {
  const res = await route.handle(request, ctx(lookup));
  expect(res.uid).to.equal(request.uid);
  return res;
}

function patchOf(res: AdmissionResponse): unknown {
  return res.patch === undefined ? undefined : JSON.parse(Buffer.from(res.patch, "base64").toString("utf8"));
}

describe("admission handlers (spec §6)", () => {
  describe("IPPool defaulting", () => {
    it("adds allocationStrategy when absent", async () => {
      const res = await run(mutateIPPool, req("IPPool", "CREATE", pool("p", {})));
      expect(res.allowed).to.equal(true);
      expect(res.patchType).to.equal("JSONPatch");
      expect(patchOf(res)).to.deep.equal([{ op: "add", path: "/spec/allocationStrategy", value: "sequential" }]);
    });
    it("replaces an empty allocationStrategy, on update too", async () => {
      const res = await run(
        mutateIPPool,
        req("IPPool", "UPDATE", pool("p", { allocationStrategy: "" }), pool("p", {})),
      );
      expect(patchOf(res)).to.deep.equal([{ op: "replace", path: "/spec/allocationStrategy", value: "sequential" }]);
    });
    it("leaves a set strategy alone (no patch at all)", async () => {
      const res = await run(mutateIPPool, req("IPPool", "CREATE", pool("p", { allocationStrategy: "random" })));
      expect(res).to.deep.equal({ uid: "uid-1", allowed: true });
    });
    it("allows an object without a spec unpatched (validation reports it)", async () => {
      const res = await run(mutateIPPool, req("IPPool", "CREATE", { metadata: { name: "p" } }));
      expect(res).to.deep.equal({ uid: "uid-1", allowed: true });
    });
  });

  describe("IPPool validation on create", () => {
    it("allows a valid pool without warnings", async () => {
      const res = await run(
        validateIPPoolRoute,
        req("IPPool", "CREATE", pool("p", { pools: [{ subnet: "10.0.0.0/24" }] })),
      );
      expect(res).to.deep.equal({ uid: "uid-1", allowed: true });
    });

    it("reports one error in kubectl's form, with its cause", async () => {
      const res = await run(
        validateIPPoolRoute,
        req(
          "IPPool",
          "CREATE",
          pool("x", { pools: [{ subnet: "10.0.0.0/24" }, { start: "10.0.0.9", end: "10.0.0.1" }] }),
        ),
      );
      expect(res.allowed).to.equal(false);
      expect(res.status?.code).to.equal(422);
      expect(res.status?.reason).to.equal("Invalid");
      expect(res.status?.message).to.equal(
        'IPPool.ipam.metal3.io "x" is invalid: spec.pools[1].end: Invalid value: "10.0.0.1": end is before start',
      );
      expect(res.status?.details).to.deep.equal({
        name: "x",
        group: "ipam.metal3.io",
        kind: "IPPool",
        causes: [
          {
            type: "FieldValueInvalid",
            field: "spec.pools[1].end",
            message: 'Invalid value: "10.0.0.1": end is before start',
          },
        ],
      });
    });

    it("reports every error at once", async () => {
      const spec: Partial<IPPoolSpec> = {
        pools: [{ prefix: 24 }, { start: "10.0.0.9", end: "10.0.0.1" }, { start: "10.1.0.1" }],
        allocationStrategy: "random",
        preAllocations: { a: "10.0.0.5", b: "nope" },
      };
      const res = await run(validateIPPoolRoute, req("IPPool", "CREATE", pool("x", spec)));
      expect(res.status?.message).to.equal(
        'IPPool.ipam.metal3.io "x" is invalid: [' +
          [
            "spec.pools[0]: Required value: one of start, end or subnet is required",
            'spec.pools[1].end: Invalid value: "10.0.0.1": end is before start',
            'spec.allocationStrategy: Invalid value: "random": spec.pools[2] has no known size: random needs start with end or subnet, or a subnet',
            'spec.preAllocations[a]: Invalid value: "10.0.0.5": out of bounds: the address lies in no entry of spec.pools',
            'spec.preAllocations[b]: Invalid value: "nope": not a valid IP address',
          ].join(", ") +
          "]",
      );
      expect(res.status?.details?.causes?.map((c) => c.field)).to.deep.equal([
        "spec.pools[0]",
        "spec.pools[1].end",
        "spec.allocationStrategy",
        "spec.preAllocations[a]",
        "spec.preAllocations[b]",
      ]);
    });

    it("names the namespace from the request when the object has none", async () => {
      const object = pool("p", { pools: [{ subnet: "10.0.0.0/24" }] });
      delete object.metadata.namespace;
      const other = pool("other", { namePrefix: "p", pools: [{ subnet: "10.0.0.128/25" }] });
      const res = await run(validateIPPoolRoute, req("IPPool", "CREATE", object), staticLookup([other]));
      expect(res.allowed).to.equal(true);
      expect(res.warnings).to.have.length(2);
    });
  });

  describe("IPPool warnings", () => {
    const others = [
      pool("a", { namePrefix: "shared", pools: [{ start: "10.0.0.50", end: "10.0.0.60" }] }),
      pool("b", { pools: [{ subnet: "2001:db8::/64" }] }),
      pool("elsewhere", { namePrefix: "shared", pools: [{ subnet: "10.0.0.0/24" }] }, { namespace: "other" }),
    ];

    it("warns about overlaps and a shared namePrefix in the namespace only, and still allows", async () => {
      const res = await run(
        validateIPPoolRoute,
        req(
          "IPPool",
          "CREATE",
          pool("p", { namePrefix: "shared", pools: [{ subnet: "10.0.0.0/24" }, { subnet: "10.1.0.0/24" }] }),
        ),
        staticLookup(others),
      );
      expect(res.allowed).to.equal(true);
      expect(res.warnings).to.deep.equal([
        'namePrefix "shared" is also used by IPPool "a": names of IPAddresses of overlapping ranges collide',
        'spec.pools[0] overlaps spec.pools[0] of IPPool "a"',
      ]);
    });

    it("keeps warnings on a denial", async () => {
      const res = await run(
        validateIPPoolRoute,
        req(
          "IPPool",
          "CREATE",
          pool("p", {
            namePrefix: "shared",
            pools: [{ start: "10.0.0.9", end: "10.0.0.1" }, { subnet: "10.0.0.0/24" }],
          }),
        ),
        staticLookup(others),
      );
      expect(res.allowed).to.equal(false);
      expect(res.warnings).to.include('spec.pools[1] overlaps spec.pools[0] of IPPool "a"');
    });

    it("caps a flood of warnings", async () => {
      const many = Array.from({ length: 40 }, (_, i) => pool(`o${i}`, { pools: [{ subnet: "10.0.0.0/24" }] }));
      const res = await run(
        validateIPPoolRoute,
        req("IPPool", "CREATE", pool("p", { pools: [{ subnet: "10.0.0.0/24" }] })),
        staticLookup(many),
      );
      expect(res.warnings).to.have.length(20);
      expect(res.warnings?.[19]).to.equal("and 21 more warnings");
    });

    it("allows entries that mix address families (Metal3 does), with a warning", async () => {
      const res = await run(
        validateIPPoolRoute,
        req(
          "IPPool",
          "CREATE",
          pool("p", { pools: [{ start: "10.0.0.1", end: "2001:db8::1" }, { subnet: "10.0.0.0/24" }] }),
        ),
      );
      expect(res.allowed).to.equal(true);
      expect(res.warnings).to.deep.equal([
        'spec.pools[0].end "2001:db8::1": start, end and subnet are of different address families: the entry yields no address',
      ]);
    });

    it("allows a pool of IPv4 and IPv6 entries (Metal3 does), warning about the order and spec.prefix", async () => {
      const res = await run(
        validateIPPoolRoute,
        req(
          "IPPool",
          "CREATE",
          pool("p", { pools: [{ subnet: "10.0.0.0/24" }, { start: "2001:db8::10", end: "2001:db8::ff" }], prefix: 24 }),
        ),
      );
      expect(res.allowed).to.equal(true);
      expect(res.warnings).to.deep.equal([
        "spec.pools mixes IPv4 and IPv6 entries: claims that request no address get IPv4 addresses (spec.pools[0]) " +
          "until those run out, then IPv6 ones (spec.pools[1]); and one spec.prefix cannot suit both families: set a " +
          "prefix on each entry (spec.pools[0], spec.pools[1] have none)",
      ]);
    });

    it("allows when the pools cannot be listed (warnings are advice)", async () => {
      const res = await run(
        validateIPPoolRoute,
        req("IPPool", "CREATE", pool("p", { pools: [{ subnet: "10.0.0.0/24" }] })),
        failingLookup,
      );
      expect(res.allowed).to.equal(true);
    });
  });

  describe("IPPool validation on update", () => {
    const before = pool("p", { pools: [{ start: "10.0.0.10", end: "10.0.0.20" }] });
    const inUse = [
      address("p-10-0-0-12", { address: "10.0.0.12", pool: { name: "p" } }),
      address("q-10-0-0-15", { address: "10.0.0.15", pool: { name: "q" } }),
    ];

    it("allows any write that leaves the spec alone, without reading the cluster", async () => {
      const broken = pool("p", { pools: [{}] });
      const patched = pool("p", { pools: [{}] }, { finalizers: ["ippool.ipam.metal3.io"], labels: { a: "b" } });
      const res = await run(validateIPPoolRoute, req("IPPool", "UPDATE", patched, broken), failingLookup);
      expect(res).to.deep.equal({ uid: "uid-1", allowed: true });
    });

    it("refuses ranges that drop an address in use, naming it", async () => {
      const after = pool("p", { pools: [{ start: "10.0.0.13", end: "10.0.0.20" }] });
      const res = await run(validateIPPoolRoute, req("IPPool", "UPDATE", after, before), staticLookup([], inUse));
      expect(res.allowed).to.equal(false);
      expect(res.status?.message).to.equal(
        'IPPool.ipam.metal3.io "p" is invalid: spec.pools: Invalid value: "10.0.0.12": the address is in use and would be out of bounds of the pools',
      );
    });

    it("allows ranges that stop yielding an address in use still inside Metal3's bounds, with a warning", async () => {
      // start below its subnet: the arithmetic yields nothing from this entry, Metal3's box check still holds .12.
      const after = pool("p", { pools: [{ start: "10.0.0.9", subnet: "10.0.0.12/30" }] });
      const res = await run(validateIPPoolRoute, req("IPPool", "UPDATE", after, before), staticLookup([], inUse));
      expect(res.allowed).to.equal(true);
      expect(res.warnings).to.deep.equal([
        "spec.pools[0] yields no address: start lies outside subnet",
        "spec.pools: 10.0.0.12 is in use and no entry yields it any more (it stays held by its IPAddress)",
      ]);
    });

    it("allows ranges that keep every address in use (another pool's addresses do not count)", async () => {
      const after = pool("p", { pools: [{ start: "10.0.0.11", end: "10.0.0.13" }] });
      const res = await run(validateIPPoolRoute, req("IPPool", "UPDATE", after, before), staticLookup([], inUse));
      expect(res.allowed).to.equal(true);
    });

    it("fails closed with 500 when the addresses in use cannot be read", async () => {
      const after = pool("p", { pools: [{ start: "10.0.0.11", end: "10.0.0.13" }] });
      const res = await run(validateIPPoolRoute, req("IPPool", "UPDATE", after, before), failingLookup);
      expect(res.allowed).to.equal(false);
      expect(res.status?.code).to.equal(500);
      expect(res.status?.message).to.contain("apiserver down");
    });

    it("does not read addresses when the ranges are unchanged", async () => {
      const after = pool("p", { pools: [{ start: "10.0.0.10", end: "10.0.0.20" }], gateway: "10.0.0.1" });
      const lookup: ClusterLookup = {
        ...staticLookup([]),
        addressesOfPool: () => Promise.reject(new Error("must not be called")),
      };
      expect((await run(validateIPPoolRoute, req("IPPool", "UPDATE", after, before), lookup)).allowed).to.equal(true);
    });

    it("refuses changes of namePrefix and strategy, allows '' ↔ sequential", async () => {
      const after = pool("p", { namePrefix: "other", allocationStrategy: "random", pools: before.spec.pools });
      const res = await run(validateIPPoolRoute, req("IPPool", "UPDATE", after, before));
      expect(res.status?.details?.causes?.map((c) => `${c.field}: ${c.message}`)).to.deep.equal([
        'spec.namePrefix: Invalid value: "other": field is immutable',
        'spec.allocationStrategy: Invalid value: "random": field is immutable',
      ]);
      const seq = pool("p", { allocationStrategy: "sequential", pools: before.spec.pools });
      const empty = pool("p", { allocationStrategy: "", pools: before.spec.pools });
      expect((await run(validateIPPoolRoute, req("IPPool", "UPDATE", seq, empty))).allowed).to.equal(true);
    });

    it("denies an update without oldObject as a bad request", async () => {
      const res = await run(validateIPPoolRoute, req("IPPool", "UPDATE", before));
      expect(res.status?.code).to.equal(400);
    });
  });

  describe("every validator", () => {
    const routes: Array<[string, Route, unknown]> = [
      ["IPPool", validateIPPoolRoute, pool("p", { pools: [{}] })],
      ["IPClaim", validateIPClaimRoute, claim("c", "")],
      ["IPAddress", validateIPAddressRoute, address("a", { address: "x" })],
    ];
    for (const [kind, route, broken] of routes) {
      it(`${kind}: allows DELETE and CONNECT whatever the object`, async () => {
        expect((await run(route, req(kind, "DELETE", undefined, broken))).allowed).to.equal(true);
        expect((await run(route, req(kind, "CONNECT", broken))).allowed).to.equal(true);
      });
      it(`${kind}: denies another kind and unreadable objects with 400`, async () => {
        const wrongKind = await run(route, req("ConfigMap", "CREATE", broken));
        expect(wrongKind.allowed).to.equal(false);
        expect(wrongKind.status?.code).to.equal(400);
        expect(wrongKind.status?.message).to.contain(`serves ${kind}.ipam.metal3.io`);
        for (const object of [undefined, "text", [1, 2], { metadata: "x" }, { metadata: {}, spec: 5 }]) {
          const res = await run(route, req(kind, "CREATE", object));
          expect(res.status?.code, JSON.stringify(object)).to.equal(400);
        }
      });
    }
  });

  describe("IPClaim validation", () => {
    it("refuses an ipAddress annotation that is not an address", async () => {
      const res = await run(
        validateIPClaimRoute,
        req("IPClaim", "CREATE", claim("c", "p", { ipAddress: "10.0.0.300" })),
      );
      expect(res.status?.message).to.equal(
        'IPClaim.ipam.metal3.io "c" is invalid: metadata.annotations[ipAddress]: Invalid value: "10.0.0.300": not a valid IP address',
      );
    });
    it("allows an empty ipAddress annotation (Metal3 treats it as absent), with a warning", async () => {
      const res = await run(validateIPClaimRoute, req("IPClaim", "CREATE", claim("c", "p", { ipAddress: "" })));
      expect(res.allowed).to.equal(true);
      expect(res.warnings).to.deep.equal([
        "metadata.annotations[ipAddress] is empty: treated as absent, the claim gets any free address",
      ]);
      const later = await run(
        validateIPClaimRoute,
        req("IPClaim", "UPDATE", claim("c", "p", { ipAddress: "" }), claim("c", "p", { ipAddress: "" })),
      );
      expect(later).to.deep.equal({ uid: "uid-1", allowed: true });
    });
    it("refuses a missing pool name", async () => {
      const res = await run(validateIPClaimRoute, req("IPClaim", "CREATE", claim("c", "")));
      expect(res.status?.message).to.contain("spec.pool.name: Required value");
    });
    it("refuses a change of spec.pool, allows its namespace spelled out", async () => {
      const moved = await run(validateIPClaimRoute, req("IPClaim", "UPDATE", claim("c", "q"), claim("c", "p")));
      expect(moved.status?.message).to.equal(
        'IPClaim.ipam.metal3.io "c" is invalid: spec.pool: Forbidden: field is immutable',
      );
      const spelled: IPClaim = { ...claim("c", "p"), spec: { pool: { name: "p", namespace: NS } } };
      expect((await run(validateIPClaimRoute, req("IPClaim", "UPDATE", spelled, claim("c", "p")))).allowed).to.equal(
        true,
      );
    });
    it("ratchets: a claim stored with a bad annotation still takes finalizer writes, but no new bad value", async () => {
      const stored = claim("c", "p", { ipAddress: "bad" });
      const withFinalizer = { ...stored, metadata: { ...stored.metadata, finalizers: ["ipclaim.ipam.metal3.io"] } };
      expect((await run(validateIPClaimRoute, req("IPClaim", "UPDATE", withFinalizer, stored))).allowed).to.equal(true);
      const worse = claim("c", "p", { ipAddress: "worse" });
      expect((await run(validateIPClaimRoute, req("IPClaim", "UPDATE", worse, stored))).allowed).to.equal(false);
    });
  });

  describe("IPAddress validation", () => {
    it("allows a valid address and refuses a broken one with every error", async () => {
      expect((await run(validateIPAddressRoute, req("IPAddress", "CREATE", address("a", {})))).allowed).to.equal(true);
      const broken = address("a", { address: "10.0.0.x", claim: { name: "" }, gateway: "gw" });
      const res = await run(validateIPAddressRoute, req("IPAddress", "CREATE", broken));
      expect(res.status?.message).to.equal(
        'IPAddress.ipam.metal3.io "a" is invalid: [spec.claim.name: Required value: the claim of the address, ' +
          'spec.address: Invalid value: "10.0.0.x": not a valid IP address, spec.gateway: Invalid value: "gw": not a valid IP address]',
      );
    });
    it("refuses a change of address, pool or claim and allows metadata changes", async () => {
      const stored = address("a", {});
      const changed = await run(
        validateIPAddressRoute,
        req("IPAddress", "UPDATE", address("a", { address: "10.0.0.2" }), stored),
      );
      expect(changed.status?.message).to.equal(
        'IPAddress.ipam.metal3.io "a" is invalid: spec.address: Invalid value: "10.0.0.2": field is immutable',
      );
      const moved = await run(
        validateIPAddressRoute,
        req("IPAddress", "UPDATE", address("a", { pool: { name: "q" }, claim: { name: "d" } }), stored),
      );
      expect(moved.status?.message).to.equal(
        'IPAddress.ipam.metal3.io "a" is invalid: [spec.pool: Forbidden: field is immutable, spec.claim: Forbidden: field is immutable]',
      );
      const released = address("a", {}, { finalizers: [], deletionTimestamp: "2026-01-01T00:00:00Z" });
      expect((await run(validateIPAddressRoute, req("IPAddress", "UPDATE", released, stored))).allowed).to.equal(true);
    });
    it("allows prefix, gateway and DNS changes, and a full update with zero values omitted (Metal3's webhook does)", async () => {
      const stored = address("a", {
        prefix: 0,
        gateway: "10.0.0.254",
        dnsServers: [],
        pool: { name: "p", namespace: "" },
      });
      const edited = address("a", { prefix: 26, gateway: "10.0.0.253", dnsServers: ["8.8.8.8"] });
      expect(await run(validateIPAddressRoute, req("IPAddress", "UPDATE", edited, stored))).to.deep.equal({
        uid: "uid-1",
        allowed: true,
      });
      const fromGo: IPAddress = {
        metadata: { name: "a", namespace: NS },
        spec: { address: "10.0.0.1", pool: { name: "p" }, claim: { name: "c" } },
      };
      expect(await run(validateIPAddressRoute, req("IPAddress", "UPDATE", fromGo, stored))).to.deep.equal({
        uid: "uid-1",
        allowed: true,
      });
    });
  });
});
