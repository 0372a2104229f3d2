/**
 * The IPAM core against a real API server, with the controller running (spec §3.3 to §4).
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { IPADDRESS_FINALIZER, IPCLAIM_FINALIZER, IPPOOL_FINALIZER, type IPClaim } from "../api/v1alpha1/types.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { addressOf, claim, clients, cluster, eventReasons, exists, pool, type Clients } from "../hack/testkit/ipam.js";
import { startController, withController as withControllerIn } from "../hack/testkit/ipam.js";
import { consistently, eventually, sleep } from "../hack/testkit/wait.js";
import { readRequestCounts } from "../hack/bench/efficiency.js";
import { startObservedController } from "../hack/testkit/faults.js";
import { describeError } from "../src/kube/errors.js";
import { metal3Caches } from "../src/controllers/ippool/caches.js";
import type { Store } from "../src/controllers/store.js";

/** A deployed controller serves the cluster, with its admission webhooks (hack/e2e-kind.sh, e2e/node.test.ts). */
const webhooksDeployed = process.env.E2E_EXTERNAL_CONTROLLER === "true";

const CAPM3_FINALIZER = "metal3data.infrastructure.cluster.x-k8s.io";

async function readyReason(c: Clients, ns: string, name: string): Promise<string | undefined> {
  const cl = await c.claims.get(ns, name);
  return cl.status?.conditions?.find((x) => x.type === "Ready")?.reason;
}

async function createMany(
  c: Clients,
  ns: string,
  poolName: string,
  count: number,
  prefix = "claim",
): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, "0")}`);
  for (let i = 0; i < names.length; i += 50) {
    await Promise.all(names.slice(i, i + 50).map((n) => c.claims.create(ns, claim(ns, n, poolName))));
  }
  return names;
}

async function allAddresses(c: Clients, ns: string): Promise<Map<string, string>> {
  const list = await c.claims.list(ns);
  const byName = new Map((await c.addresses.list(ns)).items.map((a) => [a.metadata.name ?? "", a.spec.address]));
  const out = new Map<string, string>();
  for (const cl of list.items) {
    const ref = cl.status?.address?.name;
    const addr = ref ? byName.get(ref) : undefined;
    if (addr) out.set(cl.metadata.name ?? "", addr);
  }
  return out;
}

describe("IPAM controller (real API server)", function () {
  this.timeout(300_000);
  let kc: KubeConfig;
  let c: Clients;

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    c = clients(kc);
  });

  const withController = <T>(prefix: string, body: (ns: string) => Promise<T>): Promise<T> =>
    withControllerIn(kc, prefix, body);

  it("gives 500 claims created at once 500 distinct addresses, the same set on a second run", async () => {
    const runOnce = async (): Promise<string[]> =>
      await withController("burst", async (ns) => {
        await c.pools.create(ns, pool(ns, "big", { pools: [{ subnet: "10.20.0.0/22" }], prefix: 22 }));
        const names = await createMany(c, ns, "big", 500);
        const got = await eventually(
          "500 bound claims",
          async () => {
            const m = await allAddresses(c, ns);
            return m.size === names.length ? m : undefined;
          },
          180_000,
          500,
        );
        const addresses = [...got.values()];
        expect(new Set(addresses).size).to.equal(500);
        const objects = (await c.addresses.list(ns)).items;
        expect(objects).to.have.length(500);
        for (const a of addresses) expect(a).to.match(/^10\.20\.[0-3]\.\d+$/);
        const p = await eventually("pool status to count 500", async () => {
          const fresh = await c.pools.get(ns, "big");
          return fresh.status?.used === 500 ? fresh : undefined;
        });
        expect(Object.keys(p.status?.indexes ?? {})).to.have.length(500);
        expect(p.status?.total).to.equal(1023);
        expect(p.status?.free).to.equal(523);
        return addresses.sort();
      });
    const first = await runOnce();
    const second = await runOnce();
    expect(second).to.deep.equal(first);
  });

  it("writes the objects of spec §3.3: finalizers, owner references, labels, pool status", async () => {
    await withController("objects", async (ns) => {
      await c.pools.create(
        ns,
        pool(ns, "p", {
          pools: [{ start: "192.168.1.10", end: "192.168.1.20", gateway: "192.168.1.1", dnsServers: ["8.8.8.8"] }],
          prefix: 24,
        }),
      );
      await c.claims.create(ns, claim(ns, "m1", "p", { labels: { role: "worker" } }));
      const address = await eventually("m1 bound", () => addressOf(c, ns, "m1"));
      expect(address).to.equal("192.168.1.10");
      const ip = await c.addresses.get(ns, "p-192-168-1-10");
      expect(ip.spec).to.deep.include({
        address: "192.168.1.10",
        prefix: 24,
        gateway: "192.168.1.1",
        dnsServers: ["8.8.8.8"],
      });
      expect(ip.spec.pool.name).to.equal("p");
      expect(ip.spec.claim.name).to.equal("m1");
      expect(ip.metadata.finalizers).to.include(IPADDRESS_FINALIZER);
      expect(ip.metadata.labels).to.deep.include({ role: "worker" });
      expect(ip.metadata.ownerReferences?.map((o) => o.kind)).to.deep.equal(["IPPool", "IPClaim"]);
      const cl = await c.claims.get(ns, "m1");
      expect(cl.metadata.finalizers).to.include(IPCLAIM_FINALIZER);
      expect(cl.status?.errorMessage).to.equal(undefined);
      expect(cl.status?.conditions?.find((x) => x.type === "Ready")).to.include({
        status: "True",
        reason: "Allocated",
      });
      const p = await eventually("pool indexes", async () => {
        const fresh = await c.pools.get(ns, "p");
        return fresh.status?.indexes?.m1 ? fresh : undefined;
      });
      expect(p.metadata.finalizers).to.include(IPPOOL_FINALIZER);
      expect(p.status?.indexes).to.deep.equal({ m1: "192.168.1.10" });
      expect(p.status?.lastUpdated).to.be.a("string");
    });
  });

  it("writes a trickle of claims' pool status in few writes, and the status still ends up complete", async function () {
    if (process.env.USE_EXISTING_CLUSTER === "true") this.skip(); // other controllers' writes would count too
    await withController("trickle", async (ns) => {
      await c.pools.create(ns, pool(ns, "t", { pools: [{ start: "10.40.0.1", end: "10.40.0.100" }] }));
      await c.claims.create(ns, claim(ns, "first", "t"));
      await eventually("the first status", async () => (await c.pools.get(ns, "t")).status?.used === 1, 30_000);
      const statusWrites = async (): Promise<number> =>
        (await readRequestCounts(kc)).get("PATCH ipam.metal3.io/ippools/status") ?? 0;
      const before = await statusWrites();
      // One at a time, each once the previous one is bound: a machine at a time, as they mostly arrive, and each in a
      // pass of its own (a status write per pass before).
      for (let i = 0; i < 20; i++) {
        await c.claims.create(ns, claim(ns, `t-${i}`, "t"));
        await eventually(`t-${i} bound`, async () => (await c.claims.get(ns, `t-${i}`)).status?.address, 30_000, 20);
      }
      const status = await eventually(
        "status with all 21 claims",
        async () => {
          const s = (await c.pools.get(ns, "t")).status;
          return s?.used === 21 && Object.keys(s.indexes ?? {}).length === 21 && s;
        },
        30_000,
      );
      expect(status.indexes?.["t-19"]).to.match(/^10\.40\.0\.\d+$/);
      expect(await statusWrites(), "status writes for 20 claims").to.be.at.most(before + 8);
      // The map is owned whole (x-kubernetes-map-type: atomic): the managed fields name it once, not once per claim,
      // so a pool of 10,000 claims does not carry 10,000 more keys in every write and watch event.
      const { metadata } = await c.pools.get(ns, "t");
      const managed = JSON.stringify((metadata as { managedFields?: unknown[] }).managedFields ?? []);
      expect(managed).to.include('"f:indexes"');
      expect(managed).not.to.include('"f:t-19"');
      // Merge patches of an atomic map still merge: a release drops its entry, and only its entry.
      await c.claims.delete(ns, "t-0");
      const after = await eventually(
        "status without t-0",
        async () => {
          const s = (await c.pools.get(ns, "t")).status;
          return s?.used === 20 && s.indexes && !("t-0" in s.indexes) ? s : undefined;
        },
        30_000,
      );
      expect(Object.keys(after.indexes ?? {}).sort()).to.deep.equal(
        Object.keys(status.indexes ?? {})
          .filter((name) => name !== "t-0")
          .sort(),
      );
    });
  });

  it("honours preallocations and the ipAddress annotation, and reports conflicts with Metal3's messages", async () => {
    await withController("prealloc", async (ns) => {
      await c.pools.create(
        ns,
        pool(ns, "p", { pools: [{ start: "10.0.0.1", end: "10.0.0.9" }], preAllocations: { pre: "10.0.0.5" } }),
      );
      await c.claims.create(ns, claim(ns, "first", "p"));
      await c.claims.create(ns, claim(ns, "pre", "p"));
      await c.claims.create(ns, claim(ns, "asks", "p", { annotations: { ipAddress: "10.0.0.7" } }));
      await c.claims.create(ns, claim(ns, "asks-taken", "p", { annotations: { ipAddress: "10.0.0.5" } }));
      // A deployed controller (E2E_EXTERNAL_CONTROLLER) comes with its webhooks, which refuse this claim at admission
      // (spec §6); a controller in this process has none, so the claim reaches it and it reports the annotation.
      const bad = claim(ns, "asks-bad", "p", { annotations: { ipAddress: "not-an-ip" } });
      const refused = await c.claims.create(ns, bad).then(
        () => "",
        (err: unknown) => describeError(err),
      );
      if (webhooksDeployed) expect(refused).to.contain("denied the request").and.contain('"not-an-ip": not a valid IP');
      else expect(refused).to.equal("");
      expect(await eventually("first", () => addressOf(c, ns, "first"))).to.equal("10.0.0.1");
      expect(await eventually("pre", () => addressOf(c, ns, "pre"))).to.equal("10.0.0.5");
      expect(await eventually("asks", () => addressOf(c, ns, "asks"))).to.equal("10.0.0.7");
      const taken = await eventually(
        "asks-taken to fail",
        async () => (await c.claims.get(ns, "asks-taken")).status?.errorMessage,
      );
      expect(taken).to.equal("Requested IP not available");
      if (webhooksDeployed) return;
      const reported = await eventually(
        "asks-bad to fail",
        async () => (await c.claims.get(ns, "asks-bad")).status?.errorMessage,
      );
      expect(reported).to.equal('Invalid ipAddress annotation "not-an-ip": not a valid IP address');
    });
  });

  it("heals a claim stuck on an exhausted pool within seconds of another claim's deletion", async () => {
    await withController("exhaust", async (ns) => {
      await c.pools.create(ns, pool(ns, "tiny", { pools: [{ subnet: "192.168.50.0/30" }] }));
      await createMany(c, ns, "tiny", 3, "a");
      await eventually("3 bound", async () => (await allAddresses(c, ns)).size === 3);
      await c.claims.create(ns, claim(ns, "late", "tiny"));
      expect(
        await eventually("late to be exhausted", () =>
          readyReason(c, ns, "late").then((r) => (r === "PoolExhausted" ? r : undefined)),
        ),
      ).to.equal("PoolExhausted");
      expect((await c.claims.get(ns, "late")).status?.errorMessage).to.equal("Exhausted IP Pools");
      expect(
        await eventually("an Event on the claim", async () =>
          (await eventReasons(c, ns, "late")).includes("PoolExhausted"),
        ),
      ).to.equal(true);
      const freed = await addressOf(c, ns, "a-0001");
      await c.claims.delete(ns, "a-0001");
      // "Within seconds" is the wait's deadline; a missed event would leave the claim waiting far longer.
      const healed = await eventually("late to get the freed address", () => addressOf(c, ns, "late"), 15_000);
      expect(healed).to.equal(freed);
      expect((await c.claims.get(ns, "late")).status?.errorMessage).to.equal(undefined);
    });
  });

  it("keeps the address of a deleting claim that carries a foreign finalizer, and releases it once that is gone", async () => {
    await withController("foreign", async (ns) => {
      await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.1.0.1", end: "10.1.0.9" }] }));
      await c.claims.create(ns, claim(ns, "held", "p", { finalizers: [CAPM3_FINALIZER] }));
      const address = await eventually("held bound", () => addressOf(c, ns, "held"));
      await c.claims.delete(ns, "held");
      await consistently("the IPAddress to stay", () => exists(c.addresses, ns, "p-10-1-0-1"), 2_000);
      expect((await c.pools.get(ns, "p")).status?.indexes?.held).to.equal(address);
      const current = await c.claims.get(ns, "held");
      await c.claims.patch(ns, "held", {
        metadata: {
          finalizers: (current.metadata.finalizers ?? []).filter((f) => f !== CAPM3_FINALIZER),
          resourceVersion: current.metadata.resourceVersion,
        },
      });
      await eventually(
        "the claim and its address to be gone",
        async () => !(await exists(c.claims, ns, "held")) && !(await exists(c.addresses, ns, "p-10-1-0-1")),
      );
      await eventually(
        "the pool index to drop it",
        async () => (await c.pools.get(ns, "p")).status?.indexes?.held === undefined,
      );
    });
  });

  it("freezes allocation and release under a paused Cluster and resumes at once when unpaused", async () => {
    await withController("pause", async (ns) => {
      await c.clusters.create(ns, cluster(ns, "c1", true));
      await c.pools.create(ns, pool(ns, "p", { clusterName: "c1", pools: [{ start: "10.2.0.1", end: "10.2.0.9" }] }));
      await c.claims.create(ns, claim(ns, "waits", "p"));
      await consistently(
        "the paused claim to stay untouched",
        async () => {
          const cl = await c.claims.get(ns, "waits");
          return (cl.metadata.finalizers ?? []).length === 0 && cl.status === undefined;
        },
        2_000,
      );
      // Paused, the pool gets no finalizer, but its Cluster labels and owner reference (spec §4), so a pool created
      // under a paused Cluster still moves with it.
      const paused = await eventually("the paused pool's Cluster owner reference", async () => {
        const p = await c.pools.get(ns, "p");
        return p.metadata.ownerReferences?.some((o) => o.kind === "Cluster" && o.name === "c1") ? p : undefined;
      });
      expect(paused.metadata.labels).to.deep.include({
        "cluster.x-k8s.io/cluster-name": "c1",
        "cluster.x-k8s.io/provider": "ipam-metal3",
      });
      expect(paused.metadata.finalizers ?? []).to.deep.equal([]);
      await c.clusters.patch(ns, "c1", { spec: { paused: false } });
      // "At once" is the wait's deadline: without the Cluster watch, Metal3 only notices on a resync.
      expect(await eventually("allocation after unpause", () => addressOf(c, ns, "waits"), 10_000)).to.equal(
        "10.2.0.1",
      );
      const p = await c.pools.get(ns, "p");
      expect(p.metadata.labels).to.deep.include({
        "cluster.x-k8s.io/cluster-name": "c1",
        "cluster.x-k8s.io/provider": "ipam-metal3",
      });
      expect(p.metadata.ownerReferences?.some((o) => o.kind === "Cluster" && o.name === "c1")).to.equal(true);

      await c.clusters.patch(ns, "c1", { metadata: { annotations: { "cluster.x-k8s.io/paused": "" } } });
      await sleep(300);
      await c.claims.delete(ns, "waits");
      await consistently("release to wait while paused", () => exists(c.addresses, ns, "p-10-2-0-1"), 2_000);
      await c.clusters.patch(ns, "c1", { metadata: { annotations: { "cluster.x-k8s.io/paused": null } } });
      await eventually(
        "release after unpause",
        async () => !(await exists(c.addresses, ns, "p-10-2-0-1")) && !(await exists(c.claims, ns, "waits")),
        10_000,
      );
    });
  });

  it("rebuilds wiped status of pools and claims with identical addresses and no new IPAddress", async () => {
    await withController("rebuild", async (ns) => {
      await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.3.0.1", end: "10.3.0.50" }] }));
      await createMany(c, ns, "p", 20, "r");
      const before = await eventually("20 bound", async () => {
        const m = await allAddresses(c, ns);
        return m.size === 20 ? m : undefined;
      });
      const uidsBefore = (await c.addresses.list(ns)).items.map((a) => a.metadata.uid).sort();
      await c.pools.patchStatus(ns, "p", { status: null });
      for (const name of before.keys()) await c.claims.patchStatus(ns, name, { status: null });
      const after = await eventually("status rebuilt", async () => {
        const m = await allAddresses(c, ns);
        const p = await c.pools.get(ns, "p");
        return m.size === 20 && Object.keys(p.status?.indexes ?? {}).length === 20 ? m : undefined;
      });
      expect([...after.entries()].sort()).to.deep.equal([...before.entries()].sort());
      expect((await c.addresses.list(ns)).items.map((a) => a.metadata.uid).sort()).to.deep.equal(uidsBefore);
    });
  });

  it("serves a new claim before the status refreshes a start-up queued for every pool", async function () {
    // Its own controller, one pass at a time, starts on pools made before it: a deployed one would not wait.
    if (process.env.E2E_EXTERNAL_CONTROLLER === "true") this.skip();
    // Pools whose status no pass has written yet, as after a restart of a large site: the start-up queues them all.
    // A claim of the pool listed last, made while they run, must not wait behind them.
    const ns = await freshNamespace(kc, "waiting");
    const others = Array.from({ length: 60 }, (_, i) => `p-${String(i).padStart(2, "0")}`);
    for (const [i, name] of others.entries())
      await c.pools.create(ns, pool(ns, name, { pools: [{ subnet: `10.31.${i}.0/24` }], prefix: 24 }));
    await c.pools.create(ns, pool(ns, "zz", { pools: [{ subnet: "10.31.200.0/24" }], prefix: 24 }));
    const ctl = await startController(kc, ns, 1);
    try {
      await c.claims.create(ns, claim(ns, "c", "zz"));
      await eventually("the claim bound", () => addressOf(c, ns, "c"));
      const refreshed = await eventually("every pool's status written", async () => {
        const pools = (await c.pools.list(ns)).items.filter((p) => p.metadata.name !== "zz");
        return pools.every((p) => p.status?.lastUpdated) ? pools : undefined;
      });
      // resourceVersions of one etcd are ordered: a pool last written before the claim was served before it.
      const boundAt = BigInt((await c.claims.get(ns, "c")).metadata.resourceVersion ?? "0");
      const before = refreshed.filter((p) => BigInt(p.metadata.resourceVersion ?? "0") < boundAt);
      expect(before.length, "pools refreshed before the claim was bound").to.be.below(others.length / 2);
    } catch (err) {
      process.stderr.write(`--- the controller's last log lines ---\n${ctl.recentLog()}\n---\n`);
      throw err;
    } finally {
      await ctl.stop();
    }
  });

  it("keeps a deleting pool until its addresses are gone", async () => {
    await withController("pooldel", async (ns) => {
      await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.4.0.1", end: "10.4.0.9" }] }));
      await c.claims.create(ns, claim(ns, "x", "p"));
      await eventually("x bound", () => addressOf(c, ns, "x"));
      await c.pools.delete(ns, "p");
      await consistently("the pool to wait", () => exists(c.pools, ns, "p"), 2_000);
      await c.claims.create(ns, claim(ns, "y", "p"));
      expect(await eventually("y refused while deleting", () => readyReason(c, ns, "y"))).to.equal("PoolNotReady");
      await c.claims.delete(ns, "x");
      await c.claims.delete(ns, "y");
      await eventually("the pool to be gone", async () => !(await exists(c.pools, ns, "p")));
    });
  });

  it("never hands out an IPAddress created by hand, and never touches it", async () => {
    await withController("byhand", async (ns) => {
      await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.5.0.1", end: "10.5.0.3" }] }));
      const hand = await c.addresses.create(ns, {
        metadata: { name: "kept-by-hand", namespace: ns },
        spec: { address: "10.5.0.1", pool: { name: "p" }, claim: { name: "outside-kubernetes" } },
      });
      await createMany(c, ns, "p", 3, "h");
      await eventually("two bound", async () => (await allAddresses(c, ns)).size === 2);
      const got = [...(await allAddresses(c, ns)).values()].sort();
      expect(got).to.deep.equal(["10.5.0.2", "10.5.0.3"]);
      // Which claim goes without depends on which pass saw it first; exactly one must.
      const reasons = await eventually("the third claim to fail", async () => {
        const r = await Promise.all(["h-0000", "h-0001", "h-0002"].map((n) => readyReason(c, ns, n)));
        return r.includes("PoolExhausted") ? r : undefined;
      });
      expect(reasons.filter((r) => r === "PoolExhausted")).to.have.length(1);
      const still = await c.addresses.get(ns, "kept-by-hand");
      expect(still.metadata.resourceVersion).to.equal(hand.metadata.resourceVersion);
    });
  });

  it("never gives a claim the address a record made just before it holds, while the records' watch lags", async function () {
    // It slows the watch of a controller in this process; a deployed controller would serve the claims instead.
    if (process.env.E2E_EXTERNAL_CONTROLLER === "true") this.skip();
    const ns = await freshNamespace(kc, "race");
    const ctl = await startObservedController(kc, ns);
    // The records' watch delivers every event 400 ms late (a busy API server, a slow link): a claim's event then
    // arrives before the event of a record made just before it. Events keep their order.
    const store = metal3Caches((ctl.manager as unknown as { store: Store }).store).addresses as unknown as {
      onEvent: (watch: unknown, event: unknown) => void;
    };
    const deliver = store.onEvent.bind(store);
    store.onEvent = (watch, event) => void setTimeout(() => deliver(watch, event), 400);
    try {
      await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.7.0.1", end: "10.7.0.250" }] }));
      // Each round: a person-made record takes the next free address (sequential pool), then a claim arrives at once.
      for (let i = 0; i < 20; i++) {
        await c.addresses.create(ns, {
          metadata: { name: `manual-${i}`, namespace: ns },
          spec: { address: `10.7.0.${2 * i + 1}`, pool: { name: "p" }, claim: { name: `outside-${i}` } },
        });
        await c.claims.create(ns, claim(ns, `r-${i}`, "p"));
        await eventually(`r-${i} bound`, async () => (await c.claims.get(ns, `r-${i}`)).status?.address, 30_000, 20);
      }
      const bound = await allAddresses(c, ns);
      expect(bound.size).to.equal(20);
      const held = (await c.addresses.list(ns)).items.map((a) => a.spec.address);
      expect(new Set(held).size, "records holding one address").to.equal(held.length);
      for (const [name, address] of bound) expect(Number(address.split(".")[3]) % 2, `${name} ${address}`).to.equal(0);
      // The race did happen: some records were made on a stale view, and were released once their event showed
      // the person-made record beside them.
      expect(ctl.logs.matching("Released a new IPAddress: another record holds its address")).to.not.be.empty;
    } finally {
      await ctl.stop();
    }
  });

  it("cleans up an IPAddress whose claim is gone, but not a person-made one", async () => {
    await withController("orphan", async (ns) => {
      const p = await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.6.0.1", end: "10.6.0.9" }] }));
      await c.addresses.create(ns, {
        metadata: {
          name: "p-10-6-0-4",
          namespace: ns,
          finalizers: [IPADDRESS_FINALIZER],
          ownerReferences: [
            { apiVersion: "ipam.metal3.io/v1alpha1", kind: "IPPool", name: "p", uid: p.metadata.uid ?? "" },
            {
              apiVersion: "ipam.metal3.io/v1alpha1",
              kind: "IPClaim",
              name: "gone",
              uid: "00000000-0000-0000-0000-000000000001",
            },
          ],
        },
        spec: { address: "10.6.0.4", pool: { name: "p" }, claim: { name: "gone" } },
      });
      await c.addresses.create(ns, {
        metadata: { name: "reservation", namespace: ns },
        spec: { address: "10.6.0.5", pool: { name: "p" }, claim: { name: "nobody" } },
      });
      await c.claims.create(ns, claim(ns, "poke", "p"));
      await eventually("the orphan to be removed", async () => !(await exists(c.addresses, ns, "p-10-6-0-4")));
      expect(await exists(c.addresses, ns, "reservation")).to.equal(true);
    });
  });

  it("reports bad input that slipped past admission on the object, and other pools keep working", async function () {
    // A deployed controller's webhooks reject such pools at the door, which is the point of them.
    if (process.env.E2E_EXTERNAL_CONTROLLER === "true") this.skip();
    await withController("badinput", async (ns) => {
      await c.pools.create(
        ns,
        pool(ns, "broken", { pools: [{ start: "10.7.0.9", end: "10.7.0.1" }], preAllocations: { z: "10.9.9.9" } }),
      );
      await c.pools.create(ns, pool(ns, "good", { pools: [{ start: "10.8.0.1", end: "10.8.0.9" }] }));
      await c.claims.create(ns, claim(ns, "on-broken", "broken"));
      await c.claims.create(ns, claim(ns, "on-missing", "no-such-pool"));
      await c.claims.create(ns, claim(ns, "on-good", "good"));
      expect(await eventually("on-good bound", () => addressOf(c, ns, "on-good"))).to.equal("10.8.0.1");
      const broken = await eventually("broken pool condition", async () => {
        const ready = (await c.pools.get(ns, "broken")).status?.conditions?.find((x) => x.type === "Ready");
        return ready?.status === "False" ? ready : undefined;
      });
      expect(broken.reason).to.equal("InvalidSpec");
      expect(broken.message).to.match(/spec\.pools\[0\]/);
      expect(
        await eventually("an Event on the pool", async () =>
          (await eventReasons(c, ns, "broken")).includes("InvalidSpec"),
        ),
      ).to.equal(true);
      expect(await eventually("on-missing to fail", () => readyReason(c, ns, "on-missing"))).to.equal("PoolNotFound");
      expect(
        await eventually("an Event on the claim", async () =>
          (await eventReasons(c, ns, "on-missing")).includes("PoolNotFound"),
        ),
      ).to.equal(true);
      // A pool whose spec yields no address and has errors is not ready: the claim is told its errors.
      expect(await eventually("on-broken to fail", () => readyReason(c, ns, "on-broken"))).to.equal("PoolNotReady");
      const told = (await c.claims.get(ns, "on-broken")).status?.conditions?.find((x) => x.type === "Ready");
      expect(told?.message).to.match(/^IPPool broken has no usable address range: spec\.pools\[0\]/);
      await c.pools.create(ns, pool(ns, "no-such-pool", { pools: [{ start: "10.9.0.1", end: "10.9.0.2" }] }));
      expect(await eventually("on-missing healed", () => addressOf(c, ns, "on-missing"))).to.equal("10.9.0.1");
    });
  });

  it("skips an address whose name another pool holds (shared namePrefix) and reports the collision", async () => {
    await withController("collide", async (ns) => {
      await c.pools.create(
        ns,
        pool(ns, "a", { namePrefix: "shared", pools: [{ start: "10.10.0.1", end: "10.10.0.9" }] }),
      );
      await c.pools.create(
        ns,
        pool(ns, "b", { namePrefix: "shared", pools: [{ start: "10.10.0.1", end: "10.10.0.9" }] }),
      );
      await c.claims.create(ns, claim(ns, "ca", "a"));
      expect(await eventually("ca bound", () => addressOf(c, ns, "ca"))).to.equal("10.10.0.1");
      await c.claims.create(ns, claim(ns, "cb", "b"));
      expect(await eventually("cb bound past the collision", () => addressOf(c, ns, "cb"))).to.equal("10.10.0.2");
      const ready = await eventually("collision condition", async () => {
        const r = (await c.pools.get(ns, "b")).status?.conditions?.find((x) => x.type === "Ready");
        return r?.reason === "NameCollision" ? r : undefined;
      });
      expect(ready.message).to.include("shared-10-10-0-1");
    });
  });

  it("fails a claim naming a pool of another namespace with a clear message", async () => {
    await withController("crossns", async (ns) => {
      const body: IPClaim = claim(ns, "far", "p");
      body.spec.pool.namespace = "elsewhere";
      await c.claims.create(ns, body);
      const msg = await eventually("far to fail", async () => (await c.claims.get(ns, "far")).status?.errorMessage);
      expect(msg).to.match(/another namespace/);
    });
  });
});
