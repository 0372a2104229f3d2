/**
 * The Cluster API in-cluster IPAM provider's own integration scenarios (docs/incluster.md, "Its tests":
 * ipaddressclaim_test.go and inclusterippool_test.go) for `InClusterIPPool`, against the real API server, each with its
 * exact outcome. Every test runs a controller limited to its own fresh namespace (as `--namespace` runs it). The
 * scenarios that need several namespaces or a `GlobalInClusterIPPool` are in e2e/incluster-global.test.ts; the
 * admission rules in e2e/incluster-webhooks.test.ts (no in-cluster webhook is registered for this suite's pools).
 *
 * Where we do more than the provider, the extra is asserted too: our Ready condition on claims (True when bound,
 * False with the reason when not), and a waiting claim served as soon as an address frees.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { PROTECT_POOL_FINALIZER, RELEASE_ADDRESS_FINALIZER } from "../api/incluster/types.js";
import { CLUSTER_NAME_LABEL, PAUSED_ANNOTATION } from "../api/v1alpha1/types.js";
import { sharedCluster } from "../hack/testkit/cluster.js";
import { cluster, gone, withController } from "../hack/testkit/ipam.js";
import { consistently, eventually, sleep } from "../hack/testkit/wait.js";
import {
  addressClaim,
  COUNT_ROWS,
  expectBoundClaim,
  expectRecord,
  IN,
  inClusterClients,
  inClusterPool,
  owner,
  recordNames,
  ref,
  unallocated,
  untouched,
  waitBound,
  waitCounts,
  waitNotReady,
  type InClusterClients,
} from "../hack/testkit/incluster.js";

describe("in-cluster provider scenarios: InClusterIPPool (controller limited to the namespace)", function () {
  this.timeout(120_000);
  let kc: KubeConfig;
  let k: InClusterClients;

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    k = inClusterClients(kc);
  });

  /** Creates claim `name` of pool `pool` and waits until it is bound; returns its address. */
  async function claimAddress(ns: string, name: string, pool: string): Promise<string> {
    await k.claims.create(ns, addressClaim(ns, name, ref(IN, pool)));
    return (await waitBound(k, ns, name)).spec.address;
  }

  describe("which claims are served", () => {
    it("ignores a claim whose poolRef names a kind we do not serve", async () => {
      await withController(kc, "inc-unknown", async (ns) => {
        await k.pools.create(
          ns,
          inClusterPool(ns, "p", { addresses: ["10.0.1.1-10.0.1.254"], prefix: 24, gateway: "10.0.1.2" }),
        );
        await k.claims.create(ns, addressClaim(ns, "unknown-kind", ref("UnknownIPPool", "p")));
        await k.claims.create(
          ns,
          addressClaim(ns, "other-group", { apiGroup: "ipam.example.com", kind: IN, name: "p" }),
        );
        // The controller is alive: a claim of the pool it serves is bound meanwhile.
        expect(await claimAddress(ns, "served", "p")).to.equal("10.0.1.1");
        await consistently(
          "the foreign claims untouched, no IPAddress for them",
          async () =>
            untouched(await k.claims.get(ns, "unknown-kind")) &&
            untouched(await k.claims.get(ns, "other-group")) &&
            (await recordNames(k, ns)).join() === "served",
          2_000,
        );
      });
    });

    it("allocates from a namespaced pool: the exact IPAddress, the claim's finalizer and addressRef", async () => {
      await withController(kc, "inc-alloc", async (ns) => {
        await k.clusters.create(ns, cluster(ns, "test-cluster"));
        const pool = await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24, gateway: "10.0.0.2" }),
        );
        const claim = await k.claims.create(
          ns,
          addressClaim(ns, "test", ref(IN, "test-pool"), { labels: { [CLUSTER_NAME_LABEL]: "test-cluster" } }),
        );
        const record = await waitBound(k, ns, "test");
        expectRecord(record, {
          claim,
          pool,
          kind: IN,
          address: "10.0.0.1",
          prefix: 24,
          gateway: "10.0.0.2",
          cluster: "test-cluster",
        });
        expectBoundClaim(await k.claims.get(ns, "test"), "test", "10.0.0.1");
        await eventually("the pool's finalizer", async () =>
          (await k.pools.get(ns, "test-pool")).metadata.finalizers?.includes(PROTECT_POOL_FINALIZER),
        );
        expect(await recordNames(k, ns)).to.deep.equal(["test"]);
      });
    });

    it("allocates nothing for a missing pool (Ready=False PoolNotReady) and heals once it exists", async () => {
      await withController(kc, "inc-nopool", async (ns) => {
        await k.pools.create(ns, inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24 }));
        await k.claims.create(ns, addressClaim(ns, "test", ref(IN, "wrong-test-pool")));
        await waitNotReady(k, ns, "test", "PoolNotReady", "InClusterIPPool wrong-test-pool not found");
        const claim = await k.claims.get(ns, "test");
        expect(claim.status?.addressRef).to.equal(undefined);
        await consistently("no IPAddress", async () => (await recordNames(k, ns)).length === 0, 1_500);
        await k.pools.create(ns, inClusterPool(ns, "wrong-test-pool", { addresses: ["10.0.0.5"], prefix: 24 }));
        expect((await waitBound(k, ns, "test")).spec.address).to.equal("10.0.0.5");
      });
    });
  });

  describe("which address", () => {
    it("never hands out the network, the gateway or the broadcast, unless allocateReservedIPAddresses", async () => {
      await withController(kc, "inc-reserved", async (ns) => {
        const pool = await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool", {
            addresses: ["10.0.1.0", "10.0.1.1", "10.0.1.2", "10.0.1.255"],
            prefix: 24,
            gateway: "10.0.1.1",
          }),
        );
        const claim = await k.claims.create(ns, addressClaim(ns, "test", ref(IN, "test-pool")));
        const rec = await waitBound(k, ns, "test");
        expectRecord(rec, { claim, pool, kind: IN, address: "10.0.1.2", prefix: 24, gateway: "10.0.1.1" });
        await k.claims.create(ns, addressClaim(ns, "test2", ref(IN, "test-pool")));
        await waitNotReady(k, ns, "test2", "PoolExhausted", "Exhausted IP Pools");
        await consistently("only one IPAddress", async () => (await recordNames(k, ns)).join() === "test", 1_500);

        // With allocateReservedIPAddresses the network and the broadcast are handed out too.
        await k.pools.create(
          ns,
          inClusterPool(ns, "reserved-ok", {
            addresses: ["10.0.2.0", "10.0.2.255"],
            prefix: 24,
            allocateReservedIPAddresses: true,
          }),
        );
        expect(await claimAddress(ns, "r1", "reserved-ok")).to.equal("10.0.2.0");
        expect(await claimAddress(ns, "r2", "reserved-ok")).to.equal("10.0.2.255");

        // Reserved are those of (first address)/prefix: in a /16, x.y.0.255 and x.y.1.0 are ordinary addresses.
        await k.pools.create(ns, inClusterPool(ns, "wide", { addresses: ["10.7.0.255-10.7.1.0"], prefix: 16 }));
        expect(await claimAddress(ns, "w1", "wide")).to.equal("10.7.0.255");
        expect(await claimAddress(ns, "w2", "wide")).to.equal("10.7.1.0");
      });
    });

    it("skips excluded addresses (.6, .8, .9)", async () => {
      await withController(kc, "inc-excluded", async (ns) => {
        await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool-excluded", {
            addresses: ["10.1.1.0/24"],
            prefix: 24,
            gateway: "10.1.1.1",
            excludedAddresses: ["10.1.1.2-10.1.1.5", "10.1.1.7"],
          }),
        );
        expect(await claimAddress(ns, "first", "test-pool-excluded")).to.equal("10.1.1.6");
        expect(await claimAddress(ns, "second", "test-pool-excluded")).to.equal("10.1.1.8");
        expect(await claimAddress(ns, "third", "test-pool-excluded")).to.equal("10.1.1.9");
      });
    });

    it("hands out the lowest address whatever the order of addresses", async () => {
      await withController(kc, "inc-order", async (ns) => {
        await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool", { addresses: ["10.0.1.3", "10.0.1.2"], prefix: 24, gateway: "10.0.1.1" }),
        );
        expect(await claimAddress(ns, "test", "test-pool")).to.equal("10.0.1.2");
        await k.pools.create(
          ns,
          inClusterPool(ns, "mixed", { addresses: ["10.0.3.200-10.0.3.210", "10.0.3.20/30"], prefix: 24 }),
        );
        expect(await claimAddress(ns, "m1", "mixed")).to.equal("10.0.3.20");
        expect(await claimAddress(ns, "m2", "mixed")).to.equal("10.0.3.21");
      });
    });

    it("never hands out the gateway; a pool without one writes no gateway", async () => {
      await withController(kc, "inc-gateway", async (ns) => {
        const pool = await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24 }),
        );
        const claim = await k.claims.create(ns, addressClaim(ns, "test", ref(IN, "test-pool")));
        expectRecord(await waitBound(k, ns, "test"), { claim, pool, kind: IN, address: "10.0.0.1", prefix: 24 });

        await k.pools.create(
          ns,
          inClusterPool(ns, "gw", { addresses: ["10.0.9.1-10.0.9.3"], prefix: 24, gateway: "10.0.9.1" }),
        );
        expect(await claimAddress(ns, "g1", "gw")).to.equal("10.0.9.2");
        expect(await claimAddress(ns, "g2", "gw")).to.equal("10.0.9.3");
        await k.claims.create(ns, addressClaim(ns, "g3", ref(IN, "gw")));
        await waitNotReady(k, ns, "g3", "PoolExhausted", "Exhausted IP Pools");
        expect(await gone(k.addresses, ns, "g3")).to.equal(true);
      });
    });

    it("allocates from pools of single addresses", async () => {
      await withController(kc, "inc-single", async (ns) => {
        await k.pools.create(
          ns,
          inClusterPool(ns, "single", { addresses: ["10.0.0.50", "10.0.0.128"], prefix: 24, gateway: "10.0.0.1" }),
        );
        await k.claims.create(ns, addressClaim(ns, "test-1", ref(IN, "single")));
        await k.claims.create(ns, addressClaim(ns, "test-2", ref(IN, "single")));
        expect((await waitBound(k, ns, "test-1")).spec.address).to.equal("10.0.0.50");
        expect((await waitBound(k, ns, "test-2")).spec.address).to.equal("10.0.0.128");
      });
    });
  });

  describe("pause and Clusters", () => {
    const unpause = { metadata: { annotations: { [PAUSED_ANNOTATION]: null } } };

    it("a paused pool neither allocates nor releases; unpausing resumes both", async () => {
      await withController(kc, "inc-pausedpool", async (ns) => {
        await k.pools.create(
          ns,
          inClusterPool(
            ns,
            "paused-pool",
            { addresses: ["10.0.0.50"], prefix: 24, gateway: "10.0.0.1" },
            {
              [PAUSED_ANNOTATION]: "",
            },
          ),
        );
        await k.claims.create(ns, addressClaim(ns, "paused-pool-test", ref(IN, "paused-pool")));
        await consistently(
          "no allocation while paused",
          async () =>
            unallocated(await k.claims.get(ns, "paused-pool-test")) && (await recordNames(k, ns)).length === 0,
          2_500,
        );
        await k.pools.patch(ns, "paused-pool", unpause);
        expect((await waitBound(k, ns, "paused-pool-test")).spec.address).to.equal("10.0.0.50");

        await k.pools.patch(ns, "paused-pool", { metadata: { annotations: { [PAUSED_ANNOTATION]: "" } } });
        // The pool's and the claim's events come on separate watches: let the pause arrive first.
        await sleep(1_500);
        await k.claims.delete(ns, "paused-pool-test");
        await consistently(
          "no release while paused",
          async () => {
            const claim = await k.claims.get(ns, "paused-pool-test");
            return (
              claim.metadata.deletionTimestamp !== undefined &&
              (claim.metadata.finalizers ?? []).includes(RELEASE_ADDRESS_FINALIZER) &&
              (await recordNames(k, ns)).join() === "paused-pool-test"
            );
          },
          2_500,
        );
        await k.pools.patch(ns, "paused-pool", unpause);
        await eventually(
          "claim and IPAddress gone",
          async () => (await gone(k.claims, ns, "paused-pool-test")) && (await recordNames(k, ns)).length === 0,
        );
      });
    });

    it("a claim of a Cluster paused by annotation or by spec.paused waits; unpausing allocates", async () => {
      await withController(kc, "inc-pausedcluster", async (ns) => {
        await k.clusters.create(ns, {
          ...cluster(ns, "annotated"),
          metadata: { name: "annotated", namespace: ns, annotations: { [PAUSED_ANNOTATION]: "" } },
        });
        await k.clusters.create(ns, cluster(ns, "flagged", true));
        await k.pools.create(ns, inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24 }));
        await k.claims.create(
          ns,
          addressClaim(ns, "by-annotation", ref(IN, "test-pool"), {}, { clusterName: "annotated" }),
        );
        await k.claims.create(
          ns,
          addressClaim(ns, "by-flag", ref(IN, "test-pool"), { labels: { [CLUSTER_NAME_LABEL]: "flagged" } }),
        );
        expect(await claimAddress(ns, "no-cluster", "test-pool")).to.equal("10.0.0.1");
        // An update of a paused Cluster that leaves it paused changes nothing.
        await k.clusters.patch(ns, "flagged", { metadata: { labels: { superficial: "change" } } });
        await consistently(
          "neither claim allocated",
          async () =>
            unallocated(await k.claims.get(ns, "by-annotation")) &&
            unallocated(await k.claims.get(ns, "by-flag")) &&
            (await recordNames(k, ns)).join() === "no-cluster",
          2_500,
        );
        await k.clusters.patch(ns, "flagged", { spec: { paused: false } });
        expect((await waitBound(k, ns, "by-flag")).spec.address).to.equal("10.0.0.2");
        expect(unallocated(await k.claims.get(ns, "by-annotation"))).to.equal(true);
        await k.clusters.patch(ns, "annotated", unpause);
        expect((await waitBound(k, ns, "by-annotation")).spec.address).to.equal("10.0.0.3");
      });
    });

    it("a claim whose Cluster does not exist yet waits (Ready=False), stays waiting if it comes paused", async () => {
      await withController(kc, "inc-latecluster", async (ns) => {
        await k.pools.create(ns, inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24 }));
        await k.claims.create(ns, addressClaim(ns, "test", ref(IN, "test-pool"), {}, { clusterName: "test-cluster" }));
        await k.claims.create(
          ns,
          addressClaim(ns, "unfindable", ref(IN, "test-pool"), {
            labels: { [CLUSTER_NAME_LABEL]: "an-unfindable-cluster" },
          }),
        );
        await waitNotReady(k, ns, "test", "PoolNotReady", "Cluster test-cluster not found");
        await waitNotReady(k, ns, "unfindable", "PoolNotReady", "Cluster an-unfindable-cluster not found");
        await k.clusters.create(ns, cluster(ns, "test-cluster", true));
        await consistently("no IPAddress", async () => (await recordNames(k, ns)).length === 0, 2_000);
        await k.clusters.patch(ns, "test-cluster", { spec: { paused: false } });
        expect((await waitBound(k, ns, "test")).spec.address).to.equal("10.0.0.1");
        expect(await recordNames(k, ns)).to.deep.equal(["test"]);
      });
    });

    it("a claim whose Cluster is missing is still released when deleted, fulfilled or not", async () => {
      await withController(kc, "inc-clustergone", async (ns) => {
        await k.clusters.create(ns, cluster(ns, "test-cluster"));
        await k.pools.create(ns, inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24 }));
        await k.claims.create(ns, addressClaim(ns, "test", ref(IN, "test-pool"), {}, { clusterName: "test-cluster" }));
        expect((await waitBound(k, ns, "test")).spec.address).to.equal("10.0.0.1");
        await k.clusters.delete(ns, "test-cluster");
        await eventually("the Cluster gone", () => gone(k.clusters, ns, "test-cluster"));
        await k.claims.delete(ns, "test");
        await eventually(
          "claim and IPAddress gone",
          async () => (await gone(k.claims, ns, "test")) && (await recordNames(k, ns)).length === 0,
        );
        // Never fulfilled, but carrying the provider's finalizer (as the provider's test creates it).
        await k.claims.create(
          ns,
          addressClaim(
            ns,
            "unfulfilled",
            ref(IN, "test-pool"),
            { finalizers: [RELEASE_ADDRESS_FINALIZER] },
            { clusterName: "test-cluster" },
          ),
        );
        await waitNotReady(k, ns, "unfulfilled", "PoolNotReady", "Cluster test-cluster not found");
        await k.claims.delete(ns, "unfulfilled");
        await eventually("the unfulfilled claim gone", () => gone(k.claims, ns, "unfulfilled"));
        expect(await recordNames(k, ns)).to.deep.equal([]);
      });
    });

    it("a claim paused by its own annotation waits; unpausing allocates", async () => {
      await withController(kc, "inc-pausedclaim", async (ns) => {
        const pool = await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24, gateway: "10.0.0.2" }),
        );
        await k.claims.create(
          ns,
          addressClaim(ns, "test", ref(IN, "test-pool"), { annotations: { [PAUSED_ANNOTATION]: "" } }),
        );
        await consistently(
          "no allocation while paused",
          async () => untouched(await k.claims.get(ns, "test")) && (await recordNames(k, ns)).length === 0,
          2_000,
        );
        const claim = await k.claims.patch(ns, "test", unpause);
        const record = await waitBound(k, ns, "test");
        expectRecord(record, { claim, pool, kind: IN, address: "10.0.0.1", prefix: 24, gateway: "10.0.0.2" });
      });
    });
  });

  describe("waiting and adoption", () => {
    it("an exhausted pool leaves a claim waiting (Ready=False PoolExhausted) until an address frees", async () => {
      await withController(kc, "inc-exhausted", async (ns) => {
        const pool = await k.pools.create(
          ns,
          inClusterPool(ns, "full-pool", { addresses: ["10.0.0.1"], prefix: 24, gateway: "10.0.0.2" }),
        );
        const existing = await k.claims.create(ns, addressClaim(ns, "existing-address", ref(IN, "full-pool")));
        const held = { pool, kind: IN, address: "10.0.0.1", prefix: 24, gateway: "10.0.0.2" } as const;
        expectRecord(await waitBound(k, ns, "existing-address"), { claim: existing, ...held });
        const waiting = await k.claims.create(ns, addressClaim(ns, "new-address", ref(IN, "full-pool")));
        await waitNotReady(k, ns, "new-address", "PoolExhausted", "Exhausted IP Pools");
        await consistently(
          "one IPAddress",
          async () => (await recordNames(k, ns)).join() === "existing-address",
          3_000,
        );
        await k.claims.delete(ns, "existing-address");
        expectRecord(await waitBound(k, ns, "new-address"), { claim: waiting, ...held });
        expect(await recordNames(k, ns)).to.deep.equal(["new-address"]);
      });
    });

    it("adopts an IPAddress made before its claim: same address, missing finalizer and owners added", async () => {
      await withController(kc, "inc-adopt", async (ns) => {
        const pool = await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool", { addresses: ["10.0.0.1-10.0.0.254"], prefix: 24, gateway: "10.0.0.2" }),
        );
        const cm = await k.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "unrelated" } } });
        const unrelated = owner({
          apiVersion: "v1",
          kind: "ConfigMap",
          name: "unrelated",
          uid: cm.metadata?.uid ?? "",
        });
        const made = (name: string, address: string, owners: ReturnType<typeof owner>[] = []) =>
          k.addresses.create(ns, {
            metadata: { name, namespace: ns, ...(owners.length > 0 ? { ownerReferences: owners } : {}) },
            spec: { claimRef: { name }, poolRef: ref(IN, "test-pool"), address, prefix: 24, gateway: "10.0.0.2" },
          });
        await made("bare", "10.0.0.7");
        await made("owned", "10.0.0.9", [unrelated]);
        const bare = await k.claims.create(ns, addressClaim(ns, "bare", ref(IN, "test-pool")));
        const owned = await k.claims.create(ns, addressClaim(ns, "owned", ref(IN, "test-pool")));
        const fresh = await k.claims.create(ns, addressClaim(ns, "fresh", ref(IN, "test-pool")));
        const common = { pool, kind: IN, prefix: 24, gateway: "10.0.0.2" } as const;
        expectRecord(await waitBound(k, ns, "bare"), { claim: bare, address: "10.0.0.7", ...common });
        expectRecord(await waitBound(k, ns, "owned"), {
          claim: owned,
          address: "10.0.0.9",
          foreignOwners: [unrelated],
          ...common,
        });
        expectRecord(await waitBound(k, ns, "fresh"), { claim: fresh, address: "10.0.0.1", ...common });
        expectBoundClaim(await k.claims.get(ns, "bare"), "bare", "10.0.0.7");
        expect(await recordNames(k, ns)).to.deep.equal(["bare", "fresh", "owned"]);
      });
    });
  });

  describe("pool status and finalizer", () => {
    it("counts total, used and free (gateway inside and outside, network, broadcast, last IPv6 address)", async () => {
      await withController(kc, "inc-counts", async (ns) => {
        await Promise.all(
          COUNT_ROWS.map((row) =>
            k.pools.create(
              ns,
              inClusterPool(ns, row.name, {
                addresses: row.addresses,
                prefix: row.prefix,
                ...(row.gateway ? { gateway: row.gateway } : {}),
              }),
            ),
          ),
        );
        for (const row of COUNT_ROWS)
          await waitCounts(k, IN, ns, row.name, { total: row.total, used: 0, free: row.total, outOfRange: 0 });
        for (const row of COUNT_ROWS) {
          for (const [i, address] of row.allocated.entries())
            expect(await claimAddress(ns, `${row.name}-${i}`, row.name), row.name).to.equal(address);
        }
        for (const row of COUNT_ROWS) {
          const used = row.allocated.length;
          await waitCounts(k, IN, ns, row.name, { total: row.total, used, free: row.total - used, outOfRange: 0 });
        }
      });
    });

    it("counts IPAddresses outside the pool's set as used and out of range (free may go negative)", async () => {
      await withController(kc, "inc-outofrange", async (ns) => {
        await k.pools.create(
          ns,
          inClusterPool(ns, "test-pool", { addresses: ["10.0.0.10-10.0.0.20"], prefix: 24, gateway: "10.0.0.1" }),
        );
        for (let i = 0; i < 5; i++)
          expect(await claimAddress(ns, `test${i}`, "test-pool")).to.equal(`10.0.0.${10 + i}`);
        await waitCounts(k, IN, ns, "test-pool", { total: 11, used: 5, free: 6, outOfRange: 0 });
        // The webhook refuses to shrink a pool under an address in use, but IPAddresses made by hand for the pool are
        // legitimate (a restore, a reservation): the gateway, the network, one outside `addresses` (twice), one inside.
        const byHand = {
          gateway: "10.0.0.1",
          network: "10.0.0.0",
          outside: "10.0.0.5",
          outside2: "10.0.0.5",
          inside: "10.0.0.16",
        };
        for (const [name, address] of Object.entries(byHand)) {
          await k.addresses.create(ns, {
            metadata: { name: `by-hand-${name}`, namespace: ns },
            spec: { claimRef: { name: `nobody-${name}` }, poolRef: ref(IN, "test-pool"), address, prefix: 24 },
          });
        }
        await waitCounts(k, IN, ns, "test-pool", { total: 11, used: 10, free: 1, outOfRange: 3 });
        // The address held by hand inside the set is skipped.
        expect(await claimAddress(ns, "test5", "test-pool")).to.equal("10.0.0.15");
        expect(await claimAddress(ns, "test6", "test-pool")).to.equal("10.0.0.17");
        await waitCounts(k, IN, ns, "test-pool", { total: 11, used: 12, free: -1, outOfRange: 3 });
        for (const name of ["gateway", "network", "outside", "outside2"])
          await k.addresses.delete(ns, `by-hand-${name}`);
        await waitCounts(k, IN, ns, "test-pool", { total: 11, used: 8, free: 3, outOfRange: 0 });
      });
    });

    it("keeps the pool's ProtectPool finalizer until no IPAddress refers to it", async () => {
      await withController(kc, "inc-poolfinalizer", async (ns) => {
        await k.pools.create(
          ns,
          inClusterPool(ns, "finalizer-pool-test", {
            addresses: ["10.0.1.1-10.0.1.254"],
            prefix: 24,
            gateway: "10.0.1.2",
          }),
        );
        expect(await claimAddress(ns, "finalizer-pool-test", "finalizer-pool-test")).to.equal("10.0.1.1");
        await eventually("the pool's finalizer", async () =>
          (await k.pools.get(ns, "finalizer-pool-test")).metadata.finalizers?.includes(PROTECT_POOL_FINALIZER),
        );
        await k.pools.delete(ns, "finalizer-pool-test");
        // A deleting pool hands out nothing new (our Ready=False says why).
        await k.claims.create(ns, addressClaim(ns, "late", ref(IN, "finalizer-pool-test")));
        await waitNotReady(k, ns, "late", "PoolNotReady", "InClusterIPPool finalizer-pool-test is being deleted");
        await consistently(
          "the pool held by its finalizer",
          async () => {
            const pool = await k.pools.get(ns, "finalizer-pool-test");
            return (
              pool.metadata.deletionTimestamp !== undefined &&
              (pool.metadata.finalizers ?? []).includes(PROTECT_POOL_FINALIZER)
            );
          },
          2_500,
        );
        await k.claims.delete(ns, "finalizer-pool-test");
        await eventually("the pool gone", () => gone(k.pools, ns, "finalizer-pool-test"));
        expect(await recordNames(k, ns)).to.deep.equal([]);
      });
    });
  });
});
