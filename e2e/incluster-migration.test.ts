/**
 * Migration from the Cluster API in-cluster IPAM provider to this controller, and back, on a real API
 * server, after e2e/migration.test.ts (Metal3's). The suite builds what the provider leaves (hack/testkit/inclusterleftovers.ts:
 * an InClusterIPPool with a reuse grace period and a deleted claim left waiting out its period, a GlobalInClusterIPPool
 * used from two namespaces with same-named claims in both, the provider's finalizers, owners, labels, records named
 * after claims, counts; no conditions), runs our controller of every namespace over it, and stops it again.
 *
 * Each assertion can fail: "nothing rewritten" fails if the controller writes any of the provider's objects on
 * adoption (a Ready condition on a bound claim, an equal status, a finalizer or owner it already has); "new claims
 * avoid every held address" fails if a held address is handed out (each pool has a gap below a held address, so the
 * lowest-free rule is seen too); the releases fail if a finalizer is left; "what the provider expects" fails on any
 * finalizer, kind, name, owner or condition the provider would not write or understand; the waiting claim's checks
 * fail if its period is restarted or ignored.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { IPAddressClaim } from "../api/capi/types.js";
import { CLUSTER_NAME_LABEL } from "../api/v1alpha1/types.js";
import { isNotFound } from "../src/kube/errors.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { cluster, gone, startController } from "../hack/testkit/ipam.js";
import { consistently, eventually, poll } from "../hack/testkit/wait.js";
import {
  inventory,
  providerClaim,
  providerPool,
  providerProblems,
  usedBy,
  versionsOf,
  type Inventory,
} from "../hack/testkit/inclusterleftovers.js";
import {
  addressClaim,
  expectBoundClaim,
  expectRecord,
  GLOBAL,
  IN,
  inClusterClients,
  inClusterPool,
  ref,
  waitBound,
  waitCounts,
  type InClusterClients,
} from "../hack/testkit/incluster.js";

const runId = `${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
const GLOBAL_NAME = `migrate-${runId}`;
/** The pool has a reuse grace period, so the provider may leave a deleted claim waiting out its period. */
const GRACE_S = 12;
const POOL_SPEC = {
  addresses: ["10.60.0.10-10.60.0.20"],
  prefix: 24,
  gateway: "10.60.0.1",
  addressReuseGracePeriodSeconds: GRACE_S,
};
const GLOBAL_SPEC = { addresses: ["10.61.0.10-10.61.0.20"], prefix: 24, gateway: "10.61.0.1" };

describe("migration from the in-cluster provider, and back to it", function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let k: InClusterClients;
  let ns1 = "";
  let ns2 = "";

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    k = inClusterClients(kc);
    ns1 = await freshNamespace(kc, "inc-migrate-a");
    ns2 = await freshNamespace(kc, "inc-migrate-b");
  });

  // The global pool is cluster-scoped on a shared plane, and no controller runs any more: strip and delete by hand.
  after(async function () {
    this.timeout(60_000);
    if (!k) return;
    const ignoreGone = (err: unknown) => {
      if (!isNotFound(err)) throw err;
    };
    const strip = { metadata: { finalizers: null } };
    for (const ns of [ns1, ns2].filter(Boolean)) {
      for (const c of (await k.claims.list(ns)).items)
        await k.claims.patch(ns, c.metadata.name ?? "", strip).catch(ignoreGone);
      for (const a of (await k.addresses.list(ns)).items)
        await k.addresses.patch(ns, a.metadata.name ?? "", strip).catch(ignoreGone);
    }
    await k.globals.patch("", GLOBAL_NAME, strip).catch(ignoreGone);
    await k.globals.delete("", GLOBAL_NAME).catch(ignoreGone);
  });

  /**
   * The namespaces as the provider leaves them, with claim "waiting" deleted and waiting out the pool's period (the
   * provider stopped meanwhile); returns when that period ends.
   */
  async function providerLeftovers(): Promise<number> {
    await k.clusters.create(ns1, cluster(ns1, "wl"));
    const counts = (used: number) => ({ total: 11, used, free: 11 - used, outOfRange: 0 });
    const pool = await providerPool(k, IN, ns1, "pool", POOL_SPEC, counts(3));
    await providerClaim(k, IN, pool, ns1, "a", "10.60.0.10", "wl");
    await providerClaim(k, IN, pool, ns1, "c", "10.60.0.12", "wl");
    await providerClaim(k, IN, pool, ns1, "waiting", "10.60.0.13", "wl");
    await k.claims.delete(ns1, "waiting");
    const deleted = (await k.claims.get(ns1, "waiting")).metadata.deletionTimestamp ?? "";
    const global = await providerPool(k, GLOBAL, "", GLOBAL_NAME, GLOBAL_SPEC, counts(3));
    await providerClaim(k, GLOBAL, global, ns1, "same", "10.61.0.10", "wl");
    await providerClaim(k, GLOBAL, global, ns2, "same", "10.61.0.11");
    await providerClaim(k, GLOBAL, global, ns2, "b", "10.61.0.13");
    return Date.parse(deleted) + GRACE_S * 1000;
  }

  const everything = (): Promise<Inventory> => inventory(kc, k, [ns1, ns2], [GLOBAL_NAME]);

  it("takes over without rewriting anything, serves new claims around held addresses, releases, and leaves what the provider expects", async () => {
    const graceEnd = await providerLeftovers();
    const fixture = await everything();
    expect(providerProblems(fixture), "the fixture itself is what the provider leaves").to.deep.equal([]);
    expect(
      fixture.claims.every((c) => c.status?.conditions === undefined),
      "the provider writes no conditions",
    ).to.be.true;
    const before = versionsOf(fixture);
    expect(before.size, "2 pools, 6 claims, 6 IPAddresses").to.equal(14);

    const ctl = await startController(kc, "");
    try {
      // A claim of another pool, bound, proves the controller synced and reconciling; the provider's pools were
      // queued before it (they were in the first lists), so their passes have run by then.
      await k.pools.create(ns1, inClusterPool(ns1, "sentinel", { addresses: ["10.62.0.10"], prefix: 24 }));
      await k.claims.create(ns1, addressClaim(ns1, "sentinel", ref(IN, "sentinel")));
      await waitBound(k, ns1, "sentinel");
      const unchanged = async (keys: Iterable<string>): Promise<string[]> => {
        const now = versionsOf(await everything());
        return [...keys].filter((key) => now.get(key) !== before.get(key));
      };
      await consistently(
        "every object the provider left keeps its uid and resourceVersion",
        async () => (await unchanged(before.keys())).length === 0,
        3_000,
      );

      // New claims get the lowest free address: below the held ones, never one of them.
      const pool = await k.pools.get(ns1, "pool");
      const global = await k.globals.get("", GLOBAL_NAME);
      // The Cluster "wl" lives in ns1: only claims there name it.
      const fresh = async (ns: string, name: string, kind: typeof IN | typeof GLOBAL): Promise<IPAddressClaim> =>
        await k.claims.create(
          ns,
          addressClaim(
            ns,
            name,
            ref(kind, kind === IN ? "pool" : GLOBAL_NAME),
            ns === ns1 ? { labels: { [CLUSTER_NAME_LABEL]: "wl" } } : {},
          ),
        );
      const claims = {
        inPool: await fresh(ns1, "new", IN),
        global1: await fresh(ns1, "new-g", GLOBAL),
        global2: await fresh(ns2, "new-g", GLOBAL),
      };
      const got = {
        inPool: await waitBound(k, ns1, "new"),
        global1: await waitBound(k, ns1, "new-g"),
        global2: await waitBound(k, ns2, "new-g"),
      };
      expect(got.inPool.spec.address).to.equal("10.60.0.11");
      expect([got.global1.spec.address, got.global2.spec.address].sort()).to.deep.equal(["10.61.0.12", "10.61.0.14"]);
      const clusterOf = (which: keyof typeof claims): { cluster?: string } =>
        which === "global2" ? {} : { cluster: "wl" };
      expectRecord(got.inPool, {
        claim: claims.inPool,
        pool,
        kind: IN,
        gateway: "10.60.0.1",
        prefix: 24,
        ...clusterOf("inPool"),
        address: "10.60.0.11",
      });
      for (const which of ["global1", "global2"] as const)
        expectRecord(got[which], {
          claim: claims[which],
          pool: global,
          kind: GLOBAL,
          gateway: "10.61.0.1",
          address: got[which].spec.address,
          prefix: 24,
          ...clusterOf(which),
        });
      expectBoundClaim(await k.claims.get(ns1, "new"), "new", "10.60.0.11");
      // The provider's claims and records are still untouched (only the pools' counts moved).
      const claimsAndRecords = [...before.keys()].filter((key) => !key.includes("Pool "));
      expect(await unchanged(claimsAndRecords), "claims and IPAddresses the provider left").to.deep.equal([]);

      // The claim the provider left waiting out its period is still held (and untouched: the hold writes nothing).
      expect(Date.now(), "still within the period").to.be.below(graceEnd - 500);
      expect(await unchanged([`IPAddressClaim ${ns1}/waiting`, `IPAddress ${ns1}/waiting`])).to.deep.equal([]);

      // Releases: our controller removes the provider's finalizers and deletes the IPAddresses.
      await k.claims.delete(ns1, "a");
      await k.claims.delete(ns2, "same");
      await eventually(
        "the deleted claims and their IPAddresses gone",
        async () =>
          (await gone(k.claims, ns1, "a")) &&
          (await gone(k.addresses, ns1, "a")) &&
          (await gone(k.claims, ns2, "same")) &&
          (await gone(k.addresses, ns2, "same")),
      );
      expect(
        await unchanged([`IPAddressClaim ${ns1}/same`, `IPAddress ${ns1}/same`]),
        "the same name elsewhere",
      ).to.deep.equal([]);
      // Released at the end of the period the provider started counting, not of a new one.
      const released = await poll(
        async () => (await gone(k.claims, ns1, "waiting")) && (await gone(k.addresses, ns1, "waiting")),
        graceEnd + 1_500 - Date.now(),
        50,
      );
      expect(released, "the waiting claim released within 1.5 s after its period").to.equal(true);
      expect(Date.now(), "not before the period ends").to.be.at.least(graceEnd - 50);
      // a, c, waiting, new in the pool minus a and waiting; same×2, b, new-g×2 in the global pool minus ns2's same.
      await waitCounts(k, IN, ns1, "pool", { total: 11, used: 2, free: 9, outOfRange: 0 });
      await waitCounts(k, GLOBAL, "", GLOBAL_NAME, { total: 11, used: 4, free: 7, outOfRange: 0 });
    } finally {
      await ctl.stop();
    }

    // Back to the provider: nothing it would not remove, write or understand is left.
    const after = await everything();
    expect(providerProblems(after)).to.deep.equal([]);
    // The check itself sees what it looks for: one of our finalizers on a record, a Ready contradicting addressRef.
    const doctored = structuredClone(after);
    doctored.addresses[0]?.metadata.finalizers?.push("ipam.metal3.io/ipaddress");
    const claim = doctored.claims.find((c) => c.status?.addressRef);
    if (claim?.status)
      claim.status.conditions = [
        {
          type: "Ready",
          status: "False",
          reason: "PoolExhausted",
          message: "",
          lastTransitionTime: "2026-11-01T00:00:00Z",
        },
      ];
    expect(providerProblems(doctored).join("\n"))
      .to.match(/never removes/)
      .and.to.match(/contradicts/);
    for (const p of after.pools) {
      const kind = p.metadata.namespace ? IN : GLOBAL;
      const used = usedBy(after, kind, p.metadata.name ?? "");
      expect(p.status?.ipAddresses, `${p.metadata.name ?? ""} counts`).to.deep.equal({
        total: p.metadata.name === "sentinel" ? 1 : 11,
        used,
        free: (p.metadata.name === "sentinel" ? 1 : 11) - used,
        outOfRange: 0,
      });
    }
    // The provider's own claims still carry no condition; ours carry Ready=True (docs/install.md: harmless to the
    // provider).
    const served = new Set([`${ns1}/new`, `${ns1}/new-g`, `${ns2}/new-g`, `${ns1}/sentinel`]);
    for (const c of after.claims) {
      const key = `${c.metadata.namespace ?? ""}/${c.metadata.name ?? ""}`;
      expect(c.status?.conditions === undefined, `${key} conditions`).to.equal(!served.has(key));
    }
  });
});
