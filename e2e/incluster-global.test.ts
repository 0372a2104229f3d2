/**
 * The in-cluster provider's scenarios that span namespaces (docs/incluster.md, "Its tests"): `GlobalInClusterIPPool`,
 * same-named pools and claims in several namespaces. A controller limited to one namespace does not serve global pools
 * (it cannot see the other namespaces' records), so this suite runs one controller of every namespace, for all its
 * tests, in fresh namespaces of its own. Global pools are cluster-scoped and the plane is shared with other suites:
 * their names carry this run's id, and they are deleted in after() (their finalizer stripped if the controller could
 * not release them).
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { InClusterIPPool, InClusterIPPoolSpec } from "../api/incluster/types.js";
import { PROTECT_POOL_FINALIZER } from "../api/incluster/types.js";
import { isNotFound } from "../src/kube/errors.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { gone, startController } from "../hack/testkit/ipam.js";
import { consistently, eventually, poll } from "../hack/testkit/wait.js";
import {
  addressClaim,
  COUNT_ROWS,
  expectBoundClaim,
  expectRecord,
  GLOBAL,
  IN,
  inClusterClients,
  inClusterPool,
  recordNames,
  ref,
  waitBound,
  waitCounts,
  waitNotReady,
  type InClusterClients,
} from "../hack/testkit/incluster.js";

const runId = `${process.pid}-${Math.random().toString(36).slice(2, 7)}`;

describe("in-cluster provider scenarios across namespaces (controller of every namespace)", function () {
  this.timeout(120_000);
  let kc: KubeConfig;
  let k: InClusterClients;
  let ctl: { stop: () => Promise<void> } | undefined;
  const namespaces: string[] = [];
  const globalNames: string[] = [];

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    k = inClusterClients(kc);
    ctl = await startController(kc, "");
  });

  after(async function () {
    this.timeout(90_000);
    if (!k) return;
    const ignoreGone = (err: unknown) => {
      if (!isNotFound(err)) throw err;
    };
    // Claims first, so that the controller releases their IPAddresses and then the pools' finalizers.
    for (const ns of namespaces)
      for (const claim of (await k.claims.list(ns)).items)
        await k.claims.delete(ns, claim.metadata.name ?? "").catch(ignoreGone);
    for (const name of globalNames) await k.globals.delete("", name).catch(ignoreGone);
    const left = async () => {
      const present = await Promise.all(globalNames.map(async (name) => !(await gone(k.globals, "", name))));
      return globalNames.filter((_, i) => present[i]);
    };
    await poll(async () => (await left()).length === 0, 30_000, 250);
    await ctl?.stop();
    for (const name of await left())
      await k.globals.patch("", name, { metadata: { finalizers: null } }).catch(ignoreGone);
  });

  async function fresh(prefix: string): Promise<string> {
    const ns = await freshNamespace(kc, prefix);
    namespaces.push(ns);
    return ns;
  }

  /** A GlobalInClusterIPPool named after `name` and this run; returns it as created. */
  async function globalPool(name: string, spec: InClusterIPPoolSpec): Promise<InClusterIPPool> {
    const full = `${name}-${runId}`;
    globalNames.push(full);
    return await k.globals.create("", inClusterPool(undefined, full, spec));
  }

  const single = { addresses: ["10.0.0.50"], prefix: 24, gateway: "10.0.0.1" };
  const wide = { addresses: ["10.0.0.2-10.0.0.254"], prefix: 24, gateway: "10.0.0.1" };

  describe("GlobalInClusterIPPool", () => {
    it("allocates to claims of any namespace, each IPAddress in its claim's namespace", async () => {
      const [ns1, ns2] = [await fresh("incg-across"), await fresh("incg-across2")];
      const pool = await globalPool("global-pool", wide);
      const name = pool.metadata.name ?? "";
      const claim1 = await k.claims.create(ns1, addressClaim(ns1, "test", ref(GLOBAL, name)));
      const claim2 = await k.claims.create(ns2, addressClaim(ns2, "test-second-namespace", ref(GLOBAL, name)));
      const common = { pool, kind: GLOBAL, prefix: 24, gateway: "10.0.0.1" } as const;
      expectRecord(await waitBound(k, ns1, "test"), { claim: claim1, address: "10.0.0.2", ...common });
      expectRecord(await waitBound(k, ns2, "test-second-namespace"), { claim: claim2, address: "10.0.0.3", ...common });
      expectBoundClaim(await k.claims.get(ns2, "test-second-namespace"), "test-second-namespace", "10.0.0.3");
    });

    it("allocates nothing for a missing global pool (Ready=False PoolNotReady)", async () => {
      const ns = await fresh("incg-nopool");
      await globalPool("test-pool", wide);
      const wrong = `wrong-test-pool-${runId}`;
      await k.claims.create(ns, addressClaim(ns, "test", ref(GLOBAL, wrong)));
      await waitNotReady(k, ns, "test", "PoolNotReady", `GlobalInClusterIPPool ${wrong} not found`);
      await consistently("no IPAddress", async () => (await recordNames(k, ns)).length === 0, 1_500);
    });

    it("gives same-named claims of two namespaces different addresses", async () => {
      const [ns1, ns2] = [await fresh("incg-samename"), await fresh("incg-samename2")];
      const pool = await globalPool("test-pool-samename", wide);
      const name = pool.metadata.name ?? "";
      const common = { pool, kind: GLOBAL, prefix: 24, gateway: "10.0.0.1" } as const;
      const claim1 = await k.claims.create(ns1, addressClaim(ns1, "test", ref(GLOBAL, name)));
      expectRecord(await waitBound(k, ns1, "test"), { claim: claim1, address: "10.0.0.2", ...common });
      const claim2 = await k.claims.create(ns2, addressClaim(ns2, "test", ref(GLOBAL, name)));
      expectRecord(await waitBound(k, ns2, "test"), { claim: claim2, address: "10.0.0.3", ...common });
    });

    it("leaves a claim waiting on an exhausted global pool until an address frees in another namespace", async () => {
      const [ns1, ns2] = [await fresh("incg-full"), await fresh("incg-full2")];
      const pool = await globalPool("full-global-pool", { addresses: ["10.0.0.1"], prefix: 24, gateway: "10.0.0.2" });
      const name = pool.metadata.name ?? "";
      const held = { pool, kind: GLOBAL, address: "10.0.0.1", prefix: 24, gateway: "10.0.0.2" } as const;
      const existing = await k.claims.create(ns1, addressClaim(ns1, "existing-address", ref(GLOBAL, name)));
      expectRecord(await waitBound(k, ns1, "existing-address"), { claim: existing, ...held });
      const waiting = await k.claims.create(ns2, addressClaim(ns2, "new-address", ref(GLOBAL, name)));
      await waitNotReady(k, ns2, "new-address", "PoolExhausted", "Exhausted IP Pools");
      await consistently(
        "no IPAddress in the second namespace",
        async () => (await recordNames(k, ns2)).length === 0,
        3_000,
      );
      await k.claims.delete(ns1, "existing-address");
      expectRecord(await waitBound(k, ns2, "new-address"), { claim: waiting, ...held });
      expect(await recordNames(k, ns1)).to.deep.equal([]);
    });
  });

  describe("pools of one name", () => {
    it("allocates from same-named InClusterIPPools of two namespaces independently", async () => {
      const [ns1, ns2] = [await fresh("incg-twopools"), await fresh("incg-twopools2")];
      const pool1 = await k.pools.create(ns1, inClusterPool(ns1, "common-pool-name", single));
      const pool2 = await k.pools.create(ns2, inClusterPool(ns2, "common-pool-name", single));
      const claim1 = await k.claims.create(ns1, addressClaim(ns1, "test-1", ref(IN, "common-pool-name")));
      const claim2 = await k.claims.create(ns2, addressClaim(ns2, "test-2", ref(IN, "common-pool-name")));
      const common = { kind: IN, address: "10.0.0.50", prefix: 24, gateway: "10.0.0.1" } as const;
      expectRecord(await waitBound(k, ns1, "test-1"), { claim: claim1, pool: pool1, ...common });
      expectRecord(await waitBound(k, ns2, "test-2"), { claim: claim2, pool: pool2, ...common });
    });

    it("allocates from a namespaced and a global pool of one name independently", async () => {
      const ns = await fresh("incg-bothscopes");
      const global = await globalPool("common-pool-name", single);
      const name = global.metadata.name ?? "";
      const namespaced = await k.pools.create(ns, inClusterPool(ns, name, single));
      const fromNamespaced = await k.claims.create(ns, addressClaim(ns, "test-1", ref(IN, name)));
      const fromGlobal = await k.claims.create(ns, addressClaim(ns, "test-2", ref(GLOBAL, name)));
      const common = { address: "10.0.0.50", prefix: 24, gateway: "10.0.0.1" } as const;
      expectRecord(await waitBound(k, ns, "test-1"), { claim: fromNamespaced, pool: namespaced, kind: IN, ...common });
      expectRecord(await waitBound(k, ns, "test-2"), { claim: fromGlobal, pool: global, kind: GLOBAL, ...common });
    });
  });

  describe("GlobalInClusterIPPool status and finalizer", () => {
    it("counts total, used and free (gateway inside and outside, network, broadcast, last IPv6 address)", async () => {
      const ns = await fresh("incg-counts");
      const names = new Map<string, string>();
      for (const row of COUNT_ROWS) {
        const pool = await globalPool(row.name, {
          addresses: row.addresses,
          prefix: row.prefix,
          ...(row.gateway ? { gateway: row.gateway } : {}),
        });
        names.set(row.name, pool.metadata.name ?? "");
      }
      for (const row of COUNT_ROWS)
        await waitCounts(k, GLOBAL, "", names.get(row.name) ?? "", {
          total: row.total,
          used: 0,
          free: row.total,
          outOfRange: 0,
        });
      for (const row of COUNT_ROWS) {
        for (const [i, address] of row.allocated.entries()) {
          const claim = `${row.name}-${i}`;
          await k.claims.create(ns, addressClaim(ns, claim, ref(GLOBAL, names.get(row.name) ?? "")));
          expect((await waitBound(k, ns, claim)).spec.address, row.name).to.equal(address);
        }
      }
      for (const row of COUNT_ROWS) {
        const used = row.allocated.length;
        await waitCounts(k, GLOBAL, "", names.get(row.name) ?? "", {
          total: row.total,
          used,
          free: row.total - used,
          outOfRange: 0,
        });
      }
    });

    it("counts IPAddresses of every namespace, those outside the set as out of range", async () => {
      const [ns1, ns2] = [await fresh("incg-outofrange"), await fresh("incg-outofrange2")];
      const pool = await globalPool("out-of-range", {
        addresses: ["10.0.0.10-10.0.0.20"],
        prefix: 24,
        gateway: "10.0.0.1",
      });
      const name = pool.metadata.name ?? "";
      for (let i = 0; i < 5; i++) {
        await k.claims.create(ns1, addressClaim(ns1, `test${i}`, ref(GLOBAL, name)));
        expect((await waitBound(k, ns1, `test${i}`)).spec.address).to.equal(`10.0.0.${10 + i}`);
      }
      await waitCounts(k, GLOBAL, "", name, { total: 11, used: 5, free: 6, outOfRange: 0 });
      // Made by hand in another namespace (the webhook refuses shrinking the pool under them instead).
      for (const [i, address] of ["10.0.0.1", "10.0.0.5", "10.0.0.15"].entries()) {
        await k.addresses.create(ns2, {
          metadata: { name: `by-hand-${i}`, namespace: ns2 },
          spec: { claimRef: { name: `nobody-${i}` }, poolRef: ref(GLOBAL, name), address, prefix: 24 },
        });
      }
      await waitCounts(k, GLOBAL, "", name, { total: 11, used: 8, free: 3, outOfRange: 2 });
      await k.claims.create(ns1, addressClaim(ns1, "test5", ref(GLOBAL, name)));
      expect((await waitBound(k, ns1, "test5")).spec.address).to.equal("10.0.0.16");
      for (const i of [0, 1, 2]) await k.addresses.delete(ns2, `by-hand-${i}`);
      await waitCounts(k, GLOBAL, "", name, { total: 11, used: 6, free: 5, outOfRange: 0 });
    });

    it("keeps the pool's ProtectPool finalizer until no IPAddress refers to it", async () => {
      const ns = await fresh("incg-finalizer");
      const pool = await globalPool("finalizer-pool-test", {
        addresses: ["10.0.1.1-10.0.1.254"],
        prefix: 24,
        gateway: "10.0.1.2",
      });
      const name = pool.metadata.name ?? "";
      await k.claims.create(ns, addressClaim(ns, "finalizer-pool-test", ref(GLOBAL, name)));
      expect((await waitBound(k, ns, "finalizer-pool-test")).spec.address).to.equal("10.0.1.1");
      await eventually("the pool's finalizer", async () =>
        (await k.globals.get("", name)).metadata.finalizers?.includes(PROTECT_POOL_FINALIZER),
      );
      await k.globals.delete("", name);
      await consistently(
        "the pool held by its finalizer",
        async () => {
          const held = await k.globals.get("", name);
          return (
            held.metadata.deletionTimestamp !== undefined &&
            (held.metadata.finalizers ?? []).includes(PROTECT_POOL_FINALIZER)
          );
        },
        2_500,
      );
      await k.claims.delete(ns, "finalizer-pool-test");
      await eventually("the pool gone", () => gone(k.globals, "", name));
      expect(await recordNames(k, ns)).to.deep.equal([]);
    });
  });
});
