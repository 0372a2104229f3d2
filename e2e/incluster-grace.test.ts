/**
 * The in-cluster pools' address reuse grace period (`addressReuseGracePeriodSeconds`, spec §5 "In-cluster pools"),
 * against the real API server: a deleted claim's address stays held (claim finalizer and IPAddress kept, counted as
 * used) until the claim's deletionTimestamp plus the period, then is released as usual; a pool being deleted skips
 * the wait; a controller process killed and started again during the period waits until the same moment. The period is 5 s (4 to 5 s of real wait): long enough to
 * see the hold from outside, short enough for CI. Each test runs a controller limited to its fresh namespace.
 *
 * On a controller without the period (main before it) the first and third tests fail: the IPAddress is gone at once
 * and the second claim gets the released address.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { PROTECT_POOL_FINALIZER, RELEASE_ADDRESS_FINALIZER } from "../api/incluster/types.js";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { freshNamespace, repoRoot, sharedCluster } from "../hack/testkit/cluster.js";
import { startControllerProcess } from "../hack/testkit/controller.js";
import { serviceAccountKubeconfigFile } from "../hack/testkit/serviceaccount.js";
import { exists, gone, withController } from "../hack/testkit/ipam.js";
import { consistently, eventually, poll } from "../hack/testkit/wait.js";
import {
  addressClaim,
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

/** Whole seconds of deletionTimestamp make the real wait 4 to 5 s. */
const GRACE_S = 5;
const LOG_DIR = join(repoRoot, ".cache", "e2e", "grace");

describe("in-cluster pools: address reuse grace period", function () {
  this.timeout(120_000);
  let kc: KubeConfig;
  let k: InClusterClients;

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    k = inClusterClients(kc);
  });

  /** A pool of two addresses (10.0.0.10, 10.0.0.11) with the given period. */
  const twoAddresses = (ns: string, name: string, grace: number) =>
    k.pools.create(
      ns,
      inClusterPool(ns, name, {
        addresses: ["10.0.0.10-10.0.0.11"],
        prefix: 24,
        gateway: "10.0.0.1",
        addressReuseGracePeriodSeconds: grace,
      }),
    );

  /** Deletes claim `name` and returns when its period ends (deletionTimestamp + `grace` s, in ms since the epoch). */
  async function deleteClaim(ns: string, name: string, grace = GRACE_S): Promise<number> {
    await k.claims.delete(ns, name);
    const stamp = (await k.claims.get(ns, name)).metadata.deletionTimestamp;
    expect(stamp, "the claim waits under its finalizer").to.be.a("string");
    return Date.parse(stamp ?? "") + grace * 1000;
  }

  /** Whether claim `name` is still held: deleting, with the provider's finalizer, and its IPAddress there. */
  async function held(ns: string, name: string): Promise<boolean> {
    const claim = await k.claims.get(ns, name);
    return (
      claim.metadata.deletionTimestamp !== undefined &&
      (claim.metadata.finalizers ?? []).includes(RELEASE_ADDRESS_FINALIZER) &&
      (await exists(k.addresses, ns, name))
    );
  }

  /**
   * Asserts that claim `name` stays held until shortly before `end`, then is released (claim and IPAddress gone) soon
   * after it: not early, and not left to a resync 10 minutes later (the pool is queued for the period's end). The bound
   * is loose on purpose (10 s): it tells a queued pass from a resync without timing a busy machine.
   */
  const RELEASE_BOUND_MS = 10_000;

  async function heldUntil(ns: string, name: string, end: number): Promise<void> {
    const left = end - 600 - Date.now();
    expect(left, "time left in the period to watch the hold").to.be.above(0);
    await consistently(`${name} held during the period`, () => held(ns, name), left, 150);
    const releasedAt = await poll(
      async () => ((await gone(k.claims, ns, name)) && (await gone(k.addresses, ns, name)) ? Date.now() : false),
      end + RELEASE_BOUND_MS - Date.now(),
      50,
    );
    expect(releasedAt, `${name} released within ${RELEASE_BOUND_MS} ms after the period`).to.be.a("number");
    // deletionTimestamp has whole seconds, the controller and this test share the clock: never before the end.
    expect(releasedAt ?? 0, "not released before the period ends").to.be.at.least(end - 50);
  }

  it("holds a deleted claim's address for the period (a new claim gets another), then releases it", async () => {
    await withController(kc, "grace-hold", async (ns) => {
      await twoAddresses(ns, "pool", GRACE_S);
      await k.claims.create(ns, addressClaim(ns, "old", ref(IN, "pool")));
      expect((await waitBound(k, ns, "old")).spec.address).to.equal("10.0.0.10");
      const end = await deleteClaim(ns, "old");
      // The lowest free address would be 10.0.0.10 again: the period keeps it held.
      await k.claims.create(ns, addressClaim(ns, "new", ref(IN, "pool")));
      await k.claims.create(ns, addressClaim(ns, "third", ref(IN, "pool")));
      expect((await waitBound(k, ns, "new")).spec.address).to.equal("10.0.0.11");
      await waitNotReady(k, ns, "third", "PoolExhausted", "Exhausted IP Pools");
      expect(await recordNames(k, ns)).to.deep.equal(["new", "old"]);
      // Counted as used meanwhile (without the period: 1, the new claim's).
      await waitCounts(k, IN, ns, "pool", { total: 2, used: 2, free: 0, outOfRange: 0 });
      await heldUntil(ns, "old", end);
      // Released as usual: the waiting claim gets the address that rested.
      expect((await waitBound(k, ns, "third")).spec.address).to.equal("10.0.0.10");
      expect(await recordNames(k, ns)).to.deep.equal(["new", "third"]);
    });
  });

  it("skips the period when the pool is being deleted", async () => {
    await withController(kc, "grace-teardown", async (ns) => {
      await twoAddresses(ns, "pool", 300);
      await k.claims.create(ns, addressClaim(ns, "c", ref(IN, "pool")));
      expect((await waitBound(k, ns, "c")).spec.address).to.equal("10.0.0.10");
      await eventually("the pool's finalizer", async () =>
        (await k.pools.get(ns, "pool")).metadata.finalizers?.includes(PROTECT_POOL_FINALIZER),
      );
      // No in-cluster webhook is registered for this suite: the pool's delete is accepted while it holds an address.
      await k.pools.delete(ns, "pool");
      await eventually("the pool deleting", async () => (await k.pools.get(ns, "pool")).metadata.deletionTimestamp);
      await k.claims.delete(ns, "c");
      await eventually(
        "claim, IPAddress and pool gone well within the 300 s period",
        async () =>
          (await gone(k.claims, ns, "c")) && (await gone(k.addresses, ns, "c")) && (await gone(k.pools, ns, "pool")),
        15_000,
      );
    });
  });

  it("a controller killed and restarted during the period waits until deletionTimestamp + period", async function () {
    // The controller runs as a process of its own here, so the new one shares no memory with the killed one.
    if (process.env.E2E_EXTERNAL_CONTROLLER === "true") this.skip();
    const ns = await freshNamespace(kc, "grace-restart");
    mkdirSync(LOG_DIR, { recursive: true });
    const kubeconfigPath = await serviceAccountKubeconfigFile(kc, LOG_DIR);
    const launch = () => startControllerProcess({ kubeconfigPath, namespace: ns, logDir: LOG_DIR });
    // Long enough for a kill, a restart and a cache sync inside it.
    const grace = 10;
    let ctl = launch();
    try {
      await ctl.waitSynced();
      await twoAddresses(ns, "pool", grace);
      await k.claims.create(ns, addressClaim(ns, "old", ref(IN, "pool")));
      expect((await ctl.guard(waitBound(k, ns, "old"))).spec.address).to.equal("10.0.0.10");
      const end = await deleteClaim(ns, "old", grace);
      await consistently("held by the first controller", () => held(ns, "old"), 1_000, 150);
      await ctl.kill();
      // The new controller knows nothing of the delete but the claim's deletionTimestamp, and first sees it several
      // seconds after it: counting from then instead would release the address seconds late.
      ctl = launch();
      await ctl.waitSynced();
      await k.claims.create(ns, addressClaim(ns, "new", ref(IN, "pool")));
      expect((await ctl.guard(waitBound(k, ns, "new"))).spec.address).to.equal("10.0.0.11");
      await ctl.guard(heldUntil(ns, "old", end));
    } finally {
      await ctl.stop();
    }
  });
});
