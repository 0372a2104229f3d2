/**
 * The in-cluster provider's pool webhooks (incluster.ts): every create/update message of docs/incluster.md (the
 * provider's own invalid scenarios, asserted as it asserts them: the detail is contained in the message), the valid
 * specs of its defaulting test (allowed unchanged, no patch), the update that drops an address in use, and delete with
 * and without the skip annotation; for both kinds, with the IPAddresses' namespaces that count for each.
 */
import { expect } from "chai";
import type { CapiIPAddress } from "../../api/capi/types.js";
import type { InClusterIPPool, InClusterIPPoolSpec } from "../../api/incluster/types.js";
import { silentLogger } from "../runtime/logger.js";
import type { AdmissionRequest, AdmissionResponse, Operation } from "./admission.js";
import type { Route } from "./route.js";
import { validateGlobalInClusterIPPoolRoute, validateInClusterIPPoolRoute } from "./incluster.js";
import { staticLookup } from "./lookup.js";
import type { ClusterLookup } from "./lookup.js";

const NS = "ns";
const GROUP = "ipam.cluster.x-k8s.io";
const SKIP = "ipam.cluster.x-k8s.io/skip-validate-delete-webhook";
const DELETE_REFUSAL = "Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed.";
const DROPPED = "pool addresses do not contain allocated addresses: ";

interface Kind {
  kind: "InClusterIPPool" | "GlobalInClusterIPPool";
  route: Route;
  namespace: string | undefined;
}
const NAMESPACED: Kind = { kind: "InClusterIPPool", route: validateInClusterIPPoolRoute, namespace: NS };
const GLOBAL: Kind = { kind: "GlobalInClusterIPPool", route: validateGlobalInClusterIPPoolRoute, namespace: undefined };
const KINDS = [NAMESPACED, GLOBAL];
const VALID_SPEC: Partial<InClusterIPPoolSpec> = {
  addresses: ["10.0.0.10-10.0.0.20"],
  prefix: 24,
  gateway: "10.0.0.1",
};

/** The uid of the stored my-pool of each kind; reviews carry it, as the API server's do. */
const POOL_UID = "6f1c0d4e-stored-pool";

function pool(k: Kind, spec: Partial<InClusterIPPoolSpec>, meta: Partial<InClusterIPPool["metadata"]> = {}) {
  const metadata = { name: "my-pool", uid: POOL_UID, ...(k.namespace ? { namespace: k.namespace } : {}), ...meta };
  return { apiVersion: `${GROUP}/v1alpha2`, kind: k.kind, metadata, spec: spec as InClusterIPPoolSpec };
}

function req(k: Kind, operation: Operation, object: unknown, oldObject?: unknown): AdmissionRequest {
  return {
    uid: "uid-1",
    kind: { group: GROUP, version: "v1alpha2", kind: k.kind },
    operation,
    name: "my-pool",
    ...(k.namespace ? { namespace: k.namespace } : {}),
    ...(object !== undefined ? { object } : {}),
    ...(oldObject !== undefined ? { oldObject } : {}),
  };
}

/** A Cluster API IPAddress of `namespace` whose poolRef names `kind`/`name`. */
function ipAddress(namespace: string, address: string, ref: Partial<CapiIPAddress["spec"]["poolRef"]> = {}) {
  const poolRef = { apiGroup: GROUP, kind: "InClusterIPPool", name: "my-pool", ...ref };
  return {
    metadata: { name: `ip-${address}`, namespace },
    spec: { claimRef: { name: `ip-${address}` }, poolRef, address, prefix: 24 },
  } satisfies CapiIPAddress;
}

/** The stored my-pool of each kind, whose uid reviews must carry before the addresses in use are read. */
const STORED_POOLS = KINDS.map((k) => pool(k, VALID_SPEC));

/** A lookup holding the stored pools and these Cluster API IPAddresses. */
const holding = (capiAddresses: CapiIPAddress[] = []): ClusterLookup =>
  staticLookup([], [], capiAddresses, STORED_POOLS);

/** IPAddresses of both kinds of pool named my-pool, as `addresses` of `kind` in `namespace`. */
function inUse(k: Kind, namespace: string, ...addresses: string[]): ClusterLookup {
  return holding(addresses.map((a) => ipAddress(namespace, a, { kind: k.kind })));
}

const failingLookup: ClusterLookup = {
  ...holding(),
  inClusterPoolAddresses: () => Promise.reject(new Error("apiserver down")),
};

async function run(k: Kind, request: AdmissionRequest, lookup: ClusterLookup = holding()) {
  const res: AdmissionResponse = await k.route.handle(request, { lookup, logger: silentLogger() });
  expect(res.uid).to.equal(request.uid);
  return res;
}

const VALID: Partial<InClusterIPPoolSpec> = VALID_SPEC;

/** The provider's invalid scenarios (its webhook tests), and what its message contains. */
const INVALID: Array<{ name: string; spec: Partial<InClusterIPPoolSpec>; message: string }> = [
  {
    name: "addresses must be set",
    spec: { addresses: [], prefix: 24, gateway: "10.0.0.1" },
    message: "addresses is required",
  },
  {
    name: "addresses absent",
    spec: { prefix: 24 },
    message: "addresses is required",
  },
  {
    name: "invalid gateway",
    spec: { addresses: ["10.0.0.25", "10.0.0.26", "10.0.0.27"], prefix: 24, gateway: "invalid" },
    message: 'spec.gateway: Invalid value: "invalid": ParseAddr("invalid"): unable to parse IP',
  },
  {
    name: "address in a separate subnet",
    spec: { addresses: ["10.0.0.25", "10.0.0.26", "10.0.1.27"], prefix: 24, gateway: "10.0.0.1" },
    message: "provided address belongs to a different subnet than others",
  },
  {
    name: "invalid address",
    spec: { addresses: ["10.0.0.25", "10.0.0.26", "garbage"], prefix: 24, gateway: "10.0.0.1" },
    message: "provided address is not a valid IP, range, nor CIDR",
  },
  {
    name: "negative prefix",
    spec: { addresses: ["10.0.0.25", "10.0.0.26"], prefix: -1, gateway: "10.0.0.1" },
    message: "a valid prefix is required",
  },
  {
    name: "prefix too long for any family",
    spec: { addresses: ["10.0.0.25", "10.0.0.26"], prefix: 9999, gateway: "10.0.0.1" },
    message: "provided prefix is not valid",
  },
  {
    name: "prefix /33 on IPv4",
    spec: { addresses: ["10.0.0.25", "10.0.0.26"], prefix: 33 },
    message: "provided prefix is not valid",
  },
  {
    name: "reversed range",
    spec: { addresses: ["10.0.0.10-10.0.0.5"], prefix: 24, gateway: "10.0.0.1" },
    message: "provided address is not a valid IP, range, nor CIDR",
  },
  {
    name: "CIDR with prefix /33",
    spec: { addresses: ["10.0.0.10/33"], prefix: 24, gateway: "10.0.0.1" },
    message: "provided address is not a valid IP, range, nor CIDR",
  },
  {
    name: "range of two families",
    spec: { addresses: ["10.0.0.10-fd00::1"], prefix: 24 },
    message: "provided address is not a valid IP, range, nor CIDR",
  },
  ...[
    ["address below the prefix", ["10.0.1.0", "10.0.0.10-10.0.0.20"]],
    ["range above the prefix", ["10.0.1.0", "10.0.2.10-10.0.2.20"]],
    ["range starting below the prefix", ["10.0.1.0", "10.0.0.20-10.0.1.20"]],
    ["range ending above the prefix", ["10.0.1.0", "10.0.1.20-10.0.2.20"]],
    ["CIDR below the prefix", ["10.0.1.0", "10.0.0.1/24"]],
    ["CIDR above the prefix", ["10.0.1.0", "10.0.2.1/24"]],
    ["CIDR starting below the prefix", ["10.0.1.0", "10.0.0.0/23"]],
    ["CIDR ending above the prefix", ["10.0.1.0", "10.0.1.0/23"]],
  ].map(([name, addresses]) => ({
    name: name as string,
    spec: { addresses: addresses as string[], prefix: 24, gateway: "10.0.0.1" },
    message: "provided address belongs to a different subnet than others",
  })),
  {
    name: "IPv4 addresses, IPv6 gateway",
    spec: { addresses: ["10.0.1.0", "10.0.0.2-10.0.0.250"], prefix: 24, gateway: "fd00::1" },
    message: "provided gateway and addresses are of mixed IP families",
  },
  {
    name: "IPv6 addresses, IPv4 gateway",
    spec: { addresses: ["fd00::1", "fd00::100-fd00::200"], prefix: 24, gateway: "10.0.0.1" },
    message: "provided gateway and addresses are of mixed IP families",
  },
  {
    name: "addresses of mixed families",
    spec: { addresses: ["fd00::1", "fd00::100-fd00::200", "10.0.1.0", "10.0.0.2-10.0.0.250"], prefix: 24 },
    message: "provided addresses are of mixed IP families",
  },
  {
    name: "excluded addresses of mixed families",
    spec: { ...VALID, addresses: ["10.0.1.0", "10.0.0.2-10.0.0.250"], excludedAddresses: ["fd00::1", "10.0.0.4"] },
    message: "provided addresses are of mixed IP families",
  },
  {
    name: "addresses and excluded addresses of different families",
    spec: { ...VALID, addresses: ["10.0.1.0", "10.0.0.2-10.0.0.250"], excludedAddresses: ["fd00::1"] },
    message: "addresses and excluded addresses are of mixed IP families",
  },
  {
    name: "unreadable excluded address",
    spec: { ...VALID, excludedAddresses: ["10.0.0.12-10.0.0.11"] },
    message: 'spec.excludedAddresses: Invalid value: "10.0.0.12-10.0.0.11"',
  },
  {
    name: "negative grace period",
    spec: { ...VALID, addressReuseGracePeriodSeconds: -1 },
    message: "addressReuseGracePeriodSeconds must not be negative",
  },
];

/** The provider's valid specs (its defaulting test): allowed, and left as they are. */
const DEFAULTING: Array<Partial<InClusterIPPoolSpec>> = [
  { addresses: ["10.0.0.25", "10.0.0.26", "10.0.0.27"], gateway: "10.0.0.24", prefix: 28 },
  { addresses: ["10.0.0.25", "10.0.0.26", "10.0.0.27"], prefix: 28 },
  { addresses: ["10.0.0.25", "10.0.0.26", "10.0.0.27"], prefix: 28, excludedAddresses: ["10.0.0.23", "10.0.0.24"] },
  { addresses: ["fe01::2", "fe01::3-fe01::5", "fe01::1:1/126"], gateway: "fe01::1", prefix: 28 },
  { addresses: ["fe01::2", "fe01::3-fe01::5", "fe01::1:1/126"], prefix: 28 },
  {
    addresses: ["fe01::2", "fe01::3-fe01::5", "fe01::1:1/126"],
    prefix: 28,
    excludedAddresses: ["fe01::4", "fe01::6-fe01::8", "fe01::1:10/126"],
  },
  { addresses: ["10.0.0.25", "10.0.0.26"], gateway: "10.0.0.24", prefix: 28, addressReuseGracePeriodSeconds: 60 },
  { addresses: ["10.0.0.10-10.0.0.20"], prefix: 0, gateway: "10.0.0.1" },
  { addresses: ["10.0.0.10-10.0.0.20"], gateway: "10.0.0.1" },
];

function expectInvalid(res: AdmissionResponse, k: Kind, contains: string): void {
  expect(res.allowed).to.equal(false);
  expect(res.status).to.include({ code: 422, reason: "Invalid" });
  expect(res.status?.message).to.match(new RegExp(`^${k.kind}\\.ipam\\.cluster\\.x-k8s\\.io "my-pool" is invalid: `));
  expect(res.status?.message).to.contain(contains);
  expect(res.status?.details).to.include({ name: "my-pool", group: GROUP, kind: k.kind });
}

function expectBadRequest(res: AdmissionResponse, message: string | RegExp): void {
  expect(res.allowed).to.equal(false);
  expect(res.status).to.include({ code: 400, reason: "BadRequest" });
  if (typeof message === "string") expect(res.status?.message).to.equal(message);
  else expect(res.status?.message).to.match(message);
}

/** The 400 of an update that drops `addresses` (each named in the ranges of the message). */
function expectDropped(res: AdmissionResponse, ...addresses: string[]): void {
  expectBadRequest(res, new RegExp(`^${DROPPED.replace(/[.]/g, "\\.")}`));
  for (const a of addresses) expect(res.status?.message).to.contain(a);
}

describe("admission handlers of the in-cluster provider's pools", () => {
  for (const k of KINDS) {
    describe(`${k.kind} on create and update`, () => {
      for (const spec of DEFAULTING) {
        it(`allows ${JSON.stringify(spec)} as it is (defaulting changes nothing)`, async () => {
          expect(await run(k, req(k, "CREATE", pool(k, spec)))).to.deep.equal({ uid: "uid-1", allowed: true });
          const before = pool(k, { ...spec, addressReuseGracePeriodSeconds: 7 });
          const update = await run(k, req(k, "UPDATE", pool(k, spec), before));
          expect(update).to.deep.equal({ uid: "uid-1", allowed: true });
        });
      }

      for (const c of INVALID) {
        it(`refuses ${c.name} with 422 (${c.message})`, async () => {
          expectInvalid(await run(k, req(k, "CREATE", pool(k, c.spec))), k, c.message);
          expectInvalid(await run(k, req(k, "UPDATE", pool(k, c.spec), pool(k, VALID))), k, c.message);
        });
      }

      it("reports every error of the first pass at once, each a cause with its field", async () => {
        const spec = { addresses: ["garbage"], prefix: -1, gateway: "nope", addressReuseGracePeriodSeconds: -5 };
        const res = await run(k, req(k, "CREATE", pool(k, spec)));
        expectInvalid(res, k, "provided address is not a valid IP, range, nor CIDR");
        expect(res.status?.message).to.contain("a valid prefix is required");
        expect(res.status?.message).to.contain("addressReuseGracePeriodSeconds must not be negative");
        expect(res.status?.details?.causes?.map((c) => c.field)).to.have.members([
          "spec.addresses",
          "spec.prefix",
          "spec.gateway",
          "spec.addressReuseGracePeriodSeconds",
        ]);
      });

      it("does not check gateway and excluded addresses against the prefix (neither does the provider)", async () => {
        const spec = { ...VALID, gateway: "10.9.9.9", excludedAddresses: ["10.8.0.0/16"] };
        expect((await run(k, req(k, "CREATE", pool(k, spec)))).allowed).to.equal(true);
      });
    });

    describe(`${k.kind} on update`, () => {
      const before = pool(k, { addresses: ["10.0.0.10-10.0.0.20"], prefix: 24, gateway: "10.0.0.1" });
      const lookup = inUse(k, NS, "10.0.0.10", "10.0.0.11", "10.0.0.15");

      it("allows any write that leaves the spec alone, without reading the cluster, a stored invalid spec too", async () => {
        const broken = pool(k, { addresses: ["garbage"], prefix: 24 });
        const patched = pool(k, broken.spec, { finalizers: ["ipam.cluster.x-k8s.io/ProtectPool"], labels: { a: "b" } });
        const res = await run(k, req(k, "UPDATE", patched, broken), failingLookup);
        expect(res).to.deep.equal({ uid: "uid-1", allowed: true });
      });

      it("refuses with 400 addresses that no longer hold an address in use, naming the runs dropped", async () => {
        const after = pool(k, { ...before.spec, addresses: ["10.0.0.12-10.0.0.14", "10.0.0.16-10.0.0.20"] });
        const res = await run(k, req(k, "UPDATE", after, before), lookup);
        // The provider renders its IP set's ranges (netipx): sorted, adjacent addresses merged, always `from-to`.
        expectBadRequest(res, `${DROPPED}[10.0.0.10-10.0.0.11 10.0.0.15-10.0.0.15]`);
      });

      it("refuses an in-use address becoming the gateway", async () => {
        const after = pool(k, { ...before.spec, gateway: "10.0.0.15" });
        expectDropped(await run(k, req(k, "UPDATE", after, before), lookup), "10.0.0.15");
      });

      it("refuses an in-use address becoming excluded", async () => {
        const after = pool(k, { ...before.spec, excludedAddresses: ["10.0.0.11-10.0.0.12"] });
        expectDropped(await run(k, req(k, "UPDATE", after, before), lookup), "10.0.0.11");
      });

      it("refuses an in-use address becoming reserved: network, IPv4 broadcast, IPv6 anycast", async () => {
        const v4 = pool(k, { addresses: ["10.0.0.0-10.0.0.255"], prefix: 24, allocateReservedIPAddresses: true });
        const held = inUse(k, NS, "10.0.0.0", "10.0.0.255", "10.0.0.7");
        const res = await run(
          k,
          req(k, "UPDATE", pool(k, { ...v4.spec, allocateReservedIPAddresses: false }), v4),
          held,
        );
        expectBadRequest(res, `${DROPPED}[10.0.0.0-10.0.0.0 10.0.0.255-10.0.0.255]`);
        // A shorter subnet moves the IPv4 broadcast onto an address in use.
        const low = pool(k, { addresses: ["10.0.0.0-10.0.0.127"], prefix: 24 });
        const res25 = await run(
          k,
          req(k, "UPDATE", pool(k, { ...low.spec, prefix: 25 }), low),
          inUse(k, NS, "10.0.0.127"),
        );
        expectBadRequest(res25, `${DROPPED}[10.0.0.127-10.0.0.127]`);

        const v6 = pool(k, { addresses: ["fd00::/120"], prefix: 120, allocateReservedIPAddresses: true });
        const held6 = inUse(k, NS, "fd00::", "fd00::ff");
        const res6 = await run(
          k,
          req(k, "UPDATE", pool(k, { ...v6.spec, allocateReservedIPAddresses: false }), v6),
          held6,
        );
        expectBadRequest(res6, `${DROPPED}[fd00::-fd00::]`);
      });

      it("allows changes that keep every address in use, and ignores unreadable in-use addresses", async () => {
        const after = pool(k, { ...before.spec, addresses: ["10.0.0.10-10.0.0.11", "10.0.0.15-10.0.0.30"] });
        const held = inUse(k, NS, "10.0.0.10", "10.0.0.11", "10.0.0.15", "not-an-ip");
        expect((await run(k, req(k, "UPDATE", after, before), held)).allowed).to.equal(true);
      });

      it("counts only IPAddresses whose poolRef names this kind and name, in the group (or none)", async () => {
        const after = pool(k, { ...before.spec, addresses: ["10.0.0.16-10.0.0.20"] });
        const other = k === NAMESPACED ? GLOBAL : NAMESPACED;
        const strangers = holding([
          ipAddress(NS, "10.0.0.10", { kind: other.kind }),
          ipAddress(NS, "10.0.0.11", { kind: k.kind, name: "other-pool" }),
          ipAddress(NS, "10.0.0.12", { kind: k.kind, apiGroup: "ipam.metal3.io" }),
        ]);
        expect((await run(k, req(k, "UPDATE", after, before), strangers)).allowed).to.equal(true);
        const groupless = holding([ipAddress(NS, "10.0.0.13", { kind: k.kind, apiGroup: undefined })]);
        expectDropped(await run(k, req(k, "UPDATE", after, before), groupless), "10.0.0.13");
      });

      it("validates before reading: an invalid spec is a 422 even when the read would fail", async () => {
        const after = pool(k, { ...before.spec, addresses: ["10.0.0.20-10.0.0.10"] });
        expectInvalid(await run(k, req(k, "UPDATE", after, before), failingLookup), k, "not a valid IP");
      });

      it("fails closed with 500 when the IPAddresses cannot be read", async () => {
        const after = pool(k, { ...before.spec, addresses: ["10.0.0.10-10.0.0.30"] });
        const res = await run(k, req(k, "UPDATE", after, before), failingLookup);
        expect(res.allowed).to.equal(false);
        expect(res.status).to.include({ code: 500, reason: "InternalError" });
        expect(res.status?.message).to.contain("apiserver down");
      });
    });

    describe(`${k.kind} on delete`, () => {
      const stored = pool(k, VALID);

      it("refuses with 400 while IPAddresses refer to the pool", async () => {
        expectBadRequest(await run(k, req(k, "DELETE", undefined, stored), inUse(k, NS, "10.0.0.10")), DELETE_REFUSAL);
      });

      it("allows when none does", async () => {
        expect(await run(k, req(k, "DELETE", undefined, stored))).to.deep.equal({ uid: "uid-1", allowed: true });
      });

      it("allows a pool annotated skip-validate-delete-webhook (any value) without reading the cluster", async () => {
        for (const value of ["", "true"]) {
          const annotated = pool(k, VALID, { annotations: { [SKIP]: value } });
          const res = await run(k, req(k, "DELETE", undefined, annotated), failingLookup);
          expect(res).to.deep.equal({ uid: "uid-1", allowed: true });
        }
      });

      it("fails closed with 500 when the IPAddresses cannot be read", async () => {
        const res = await run(k, req(k, "DELETE", undefined, stored), failingLookup);
        expect(res.status).to.include({ code: 500, reason: "InternalError" });
      });

      it("refuses with 400 when the stored object is missing or unreadable", async () => {
        expectBadRequest(await run(k, req(k, "DELETE", undefined)), `request.oldObject is not a readable ${k.kind}`);
        expectBadRequest(
          await run(k, req(k, "DELETE", undefined, "x")),
          `request.oldObject is not a readable ${k.kind}`,
        );
      });
    });
  }

  describe("which namespaces count", () => {
    it("InClusterIPPool: only IPAddresses of its own namespace (the request's when the object names none)", async () => {
      const elsewhere = inUse(NAMESPACED, "other", "10.0.0.10");
      const stored = pool(NAMESPACED, VALID);
      expect((await run(NAMESPACED, req(NAMESPACED, "DELETE", undefined, stored), elsewhere)).allowed).to.equal(true);
      const here = inUse(NAMESPACED, NS, "10.0.0.10");
      const { namespace: _, ...noNamespace } = stored.metadata;
      const res = await run(
        NAMESPACED,
        req(NAMESPACED, "DELETE", undefined, { ...stored, metadata: noNamespace }),
        here,
      );
      expectBadRequest(res, DELETE_REFUSAL);
    });

    it("GlobalInClusterIPPool: IPAddresses of every namespace", async () => {
      const stored = pool(GLOBAL, VALID);
      const elsewhere = inUse(GLOBAL, "far-away", "10.0.0.10");
      expectBadRequest(await run(GLOBAL, req(GLOBAL, "DELETE", undefined, stored), elsewhere), DELETE_REFUSAL);
      const after = pool(GLOBAL, { ...VALID, addresses: ["10.0.0.11-10.0.0.20"] });
      expectDropped(await run(GLOBAL, req(GLOBAL, "UPDATE", after, stored), elsewhere), "10.0.0.10");
    });
  });

  describe("what a caller who is not the API server learns (any pod can reach the webhook port)", () => {
    /** A lookup holding addresses of my-pool of both kinds that counts the reads of addresses. */
    function watched(): { lookup: ClusterLookup; reads: () => number } {
      let reads = 0;
      const held = holding(
        KINDS.flatMap((k) => ["10.0.0.10", "10.0.0.11"].map((a) => ipAddress(k.namespace ?? NS, a, { kind: k.kind }))),
      );
      const lookup: ClusterLookup = {
        ...held,
        inClusterPoolAddresses: (...args) => {
          reads++;
          return held.inClusterPoolAddresses(...args);
        },
      };
      return { lookup, reads: () => reads };
    }
    const notStored = (k: Kind, name = "my-pool"): string =>
      `request.oldObject is not the stored ${k.kind} "${name}" (its metadata.uid differs): the addresses in use are not read`;

    for (const k of KINDS) {
      it(`${k.kind}: a forged update or delete, without the stored uid, learns nothing of the addresses held`, async () => {
        const { lookup, reads } = watched();
        // The widest old range and the narrowest new one: the provider's message would list every address held.
        const wide = (meta: Partial<InClusterIPPool["metadata"]>) =>
          pool(k, { addresses: ["10.0.0.0/8"], prefix: 8 }, meta);
        const narrow = pool(k, { addresses: ["10.255.255.1"], prefix: 8 });
        for (const meta of [{ uid: "guessed" }, { uid: "" }]) {
          const update = await run(
            k,
            req(k, "UPDATE", { ...narrow, metadata: wide(meta).metadata }, wide(meta)),
            lookup,
          );
          expectBadRequest(update, notStored(k));
          const removal = await run(k, req(k, "DELETE", undefined, wide(meta)), lookup);
          expectBadRequest(removal, notStored(k));
        }
        // A pool that does not exist gets the same answer as one whose uid differs.
        const ghost = pool(k, VALID, { name: "ghost" });
        expectBadRequest(await run(k, req(k, "DELETE", undefined, ghost), lookup), notStored(k, "ghost"));
        expect(reads(), "reads of the addresses in use").to.equal(0);
      });

      it(`${k.kind}: the API server's review (the stored uid) still names the addresses, as the provider does`, async () => {
        const { lookup, reads } = watched();
        const before = pool(k, { addresses: ["10.0.0.0/24"], prefix: 24 });
        const after = pool(k, { addresses: ["10.0.0.200"], prefix: 24 });
        expectBadRequest(await run(k, req(k, "UPDATE", after, before), lookup), `${DROPPED}[10.0.0.10-10.0.0.11]`);
        expect(reads()).to.equal(1);
      });
    }
  });

  describe("requests it cannot serve", () => {
    it("refuses another kind with 400", async () => {
      const res = await run(NAMESPACED, { ...req(GLOBAL, "CREATE", pool(GLOBAL, VALID)) });
      expectBadRequest(
        res,
        "this webhook serves InClusterIPPool.ipam.cluster.x-k8s.io, not GlobalInClusterIPPool.ipam.cluster.x-k8s.io",
      );
    });

    it("refuses unreadable objects with 400", async () => {
      expectBadRequest(await run(GLOBAL, req(GLOBAL, "CREATE", [1])), /^request\.object is not a readable/);
      const res = await run(GLOBAL, req(GLOBAL, "UPDATE", pool(GLOBAL, VALID), { spec: "x" }));
      expectBadRequest(res, /^request\.object or request\.oldObject is not a readable/);
    });

    it("allows CONNECT", async () => {
      expect((await run(GLOBAL, req(GLOBAL, "CONNECT", undefined))).allowed).to.equal(true);
    });
  });
});
