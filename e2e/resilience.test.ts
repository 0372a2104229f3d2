/**
 * Resilience: API server restarts, expired watches (410 Gone), hung watches and controller crashes never
 * lose or duplicate an address. Every test runs a local plane of its own, since it breaks it; the controller runs in
 * this process (watch faults) or as a child process (crashes).
 *
 * The faults run on a Metal3 IPPool (IPClaims in one namespace) and on a GlobalInClusterIPPool
 * (IPAddressClaims of three namespaces, each name claimed in every one, served by a controller of all namespaces).
 * The global pool's records are named after their claims, so no AlreadyExists stops a second record of one address:
 * only the pool-keyed queue, the allocator's `<namespace>/<name>` holders and the freshness barrier do; the lagging
 * records' watch is the case that fails without the barrier. One scenario function per fault, run for each kind
 * (hack/testkit/pooltarget.ts). The API server that stays down for a while runs on the Metal3 pool only: its
 * allocations are those of the restarts, which run on both, and its subject, readiness, is the same for every kind
 * (`downAndBack(GLOBAL)` runs it on the global pool, in 30 s).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { PROTECT_ADDRESS_FINALIZER } from "../api/incluster/types.js";
import { apiVersionOf, GLOBAL_INCLUSTER_IPPOOL, IPADDRESS } from "../api/registry.js";
import { API_VERSION, IPADDRESS_FINALIZER } from "../api/v1alpha1/types.js";
import { Manager } from "../src/controllers/manager.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import { LocalPlane, type LocalPlaneOptions } from "../hack/testkit/plane.js";
import {
  CAPI_CRDS,
  freshNamespace,
  INCLUSTER_POOL_CRDS,
  OUR_CRDS,
  repoRoot,
  usingExistingCluster,
} from "../hack/testkit/cluster.js";
import { auditAllocations, FaultProxy, lagWatch, LogCapture, startObservedController } from "../hack/testkit/faults.js";
import { startControllerProcess } from "../hack/testkit/controller.js";
import { addressOf, capiClients, claim, clients, exists, globalPoolRef, pool } from "../hack/testkit/ipam.js";
import {
  expectSound,
  freshTarget,
  metal3Target,
  type ClaimRef,
  type PoolTarget,
  type TargetAudit,
  type TargetKind,
} from "../hack/testkit/pooltarget.js";
import { consistently, eventually, sleep } from "../hack/testkit/wait.js";

const LOG_DIR = join(repoRoot, ".cache", "e2e", "resilience");
const GLOBAL: TargetKind = "GlobalInClusterIPPool";

/** The CRDs a plane needs for `kind`: ours for Metal3; the in-cluster pools' and Cluster API's for a global pool. */
function crdsFor(kind: TargetKind): Pick<LocalPlaneOptions, "crdDirs"> {
  return { crdDirs: kind === "IPPool" ? [OUR_CRDS] : [OUR_CRDS, INCLUSTER_POOL_CRDS, CAPI_CRDS] };
}

async function withPlane<T>(options: LocalPlaneOptions, body: (plane: LocalPlane) => Promise<T>): Promise<T> {
  const plane = await LocalPlane.start({ crdDirs: [OUR_CRDS], controllerManager: false, ...options });
  try {
    return await body(plane);
  } finally {
    await plane.stop();
  }
}

/**
 * Holds the end of the next list of `type` this process makes: its pages are handed over as they come, but it
 * resolves only once released (a cache whose first list is slow). Reaches into ResourceClient, as lagWatch reaches
 * into an informer; `restore` puts the method back.
 */
function holdNextList(type: { group: string; plural: string }): { release: () => void; restore: () => void } {
  const proto = ResourceClient.prototype as unknown as { listPages: ResourceClient<KubeObject>["listPages"] };
  const original = proto.listPages;
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  proto.listPages = async function (this: ResourceClient<KubeObject>, ...args) {
    const resourceVersion = await original.apply(this, args);
    if (!held && this.type.group === type.group && this.type.plural === type.plural) {
      held = true;
      await released;
    }
    return resourceVersion;
  };
  return { release, restore: () => (proto.listPages = original) };
}

/** Claim names `<prefix>-0000`, `<prefix>-0001`, … */
const claimName =
  (prefix = "claim") =>
  (i: number): string =>
    `${prefix}-${String(i).padStart(4, "0")}`;

/** One claim name per index (as many claims as names). */
const named =
  (...names: string[]) =>
  (i: number): string =>
    names[i] ?? "";

/** Waits until `expected` claims are bound and as many IPAddresses exist; returns the audit. */
async function settled(t: PoolTarget, expected: number, timeoutMs = 120_000): Promise<TargetAudit> {
  return await eventually(
    `${expected} claims bound to ${expected} IPAddresses`,
    async () => {
      const audit = await t.audit();
      return audit.bound === expected && audit.addresses === expected ? audit : undefined;
    },
    timeoutMs,
    500,
  );
}

async function expectStaysSound(t: PoolTarget, expected: number): Promise<void> {
  await consistently(
    "the allocations to stay sound",
    async () => {
      const audit = await t.audit();
      return audit.addresses === expected && audit.bound === expected && audit.orphans.length === 0;
    },
    3_000,
    500,
  );
}

async function bindOne(t: PoolTarget, ref: ClaimRef, timeoutMs: number): Promise<string> {
  await t.createClaim(ref);
  return await eventually(`claim ${ref.name} to be bound`, () => t.addressOf(ref), timeoutMs, 100);
}

/** The `i`-th of `refs`, which must exist. */
function nth(refs: readonly ClaimRef[], i: number): ClaimRef {
  const ref = refs[i];
  if (!ref) throw new Error(`no claim ${i} among ${refs.length}`);
  return ref;
}

/** Writes a ConfigMap in `ns` every `everyMs` until stopped: moves etcd's revision so compaction passes old ones. */
function churnConfigMaps(kc: KubeConfig, ns: string, everyMs = 100): () => Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      await core
        .createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `churn-${i}` } } })
        .catch(() => undefined);
      await sleep(everyMs);
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}

const silentWatches = (logs: LogCapture): number => logs.matching("Watch silent for too long; reconnecting").length;

/** A burst of 500 claims while kube-apiserver restarts gracefully, then crashes. */
async function restartsTwice(kind: TargetKind): Promise<void> {
  await withPlane(crdsFor(kind), async (plane) => {
    const kc = plane.kubeConfig;
    const t = await freshTarget(kind, kc, "restarts", "big");
    const ctl = await startObservedController(kc, t.watchNamespace, { watchTimeoutSeconds: 10 });
    try {
      await t.createPool({ subnet: "10.30.0.0/22", prefix: 22 });
      const progress = { created: 0 };
      const creating = t.createClaims(t.claimRefs(500, claimName()), { progress });
      await eventually("150 claims created", () => progress.created >= 150, 120_000, 20);
      await plane.restartApiServer();
      await eventually("350 claims created", () => progress.created >= 350, 120_000, 20);
      // The second restart is a crash: no graceful end of watches and requests.
      await plane.restartApiServer({ kill: true });
      await creating;
      t.expectSound(await settled(t, 500, 150_000), 500);
      await expectStaysSound(t, 500);
    } finally {
      await ctl.stop();
    }
  });
}

/** kube-apiserver down for a while: the controller turns unready, then serves claims made right after it returns. */
async function downAndBack(kind: TargetKind): Promise<void> {
  await withPlane(crdsFor(kind), async (plane) => {
    const kc = plane.kubeConfig;
    const t = await freshTarget(kind, kc, "down", "p");
    const ctl = await startObservedController(kc, t.watchNamespace, { watchTimeoutSeconds: 10 });
    try {
      await t.createPool({ start: "10.40.0.1", end: "10.40.0.200" });
      await bindOne(t, nth(t.claimRefs(1, named("before")), 0), 30_000);
      expect(ctl.manager.synced).to.equal(true);
      await plane.stopApiServer();
      await eventually("the controller to report its caches not synced", () => !ctl.manager.synced, 30_000);
      await sleep(5_000); // down for a while: the informers' backoff grows
      await plane.startApiServer();
      await eventually("the controller to report its caches synced again", () => ctl.manager.synced, 60_000);
      await t.createClaims(t.claimRefs(20, claimName("after")));
      t.expectSound(await settled(t, 21, 60_000), 21);
      await expectStaysSound(t, 21);
    } finally {
      await ctl.stop();
    }
  });
}

/** Watches of the claims and records expire (410 Gone) and relist; a new claim is still served within seconds. */
async function watchesExpire(kind: TargetKind): Promise<void> {
  const flags = ["--watch-cache=false", "--etcd-compaction-interval=2s"];
  await withPlane({ ...crdsFor(kind), apiServerFlags: flags }, async (plane) => {
    const kc = plane.kubeConfig;
    const t = await freshTarget(kind, kc, "gone", "p");
    const noise = await freshNamespace(kc, "noise");
    // Short watches: each one resumes from the last resourceVersion the watched claims and records produced, which
    // goes stale while only the other namespace is written to, and is compacted away.
    const ctl = await startObservedController(kc, t.watchNamespace, { watchTimeoutSeconds: 2 });
    const stopChurn = churnConfigMaps(kc, noise);
    try {
      await t.createPool({ start: "10.50.0.1", end: "10.50.0.200" });
      // A global pool's second claim is the first's namesake in another namespace.
      const refs = t.claimRefs(2, named("first", "after-gone"));
      await bindOne(t, nth(refs, 0), 30_000);
      const expired = (fields: { resource: string; group: string }): number =>
        ctl.logs.matching("Watch expired (410 Gone); relisting", fields).length;
      await eventually(
        "the claims and addresses watches to get 410 Gone",
        () => t.claimAndRecordResources.every((r) => expired(r) > 0),
        90_000,
        200,
      );
      await bindOne(t, nth(refs, 1), 15_000);
      t.expectSound(await t.audit(), 2);
      expect(ctl.manager.synced).to.equal(true);
    } finally {
      await stopChurn();
      await ctl.stop();
    }
  });
}

/** Watches that hang (API server frozen with SIGSTOP; connections frozen silently) end through the watchdog. */
async function watchesHang(kind: TargetKind): Promise<void> {
  await withPlane(crdsFor(kind), async (plane) => {
    const t = await freshTarget(kind, plane.kubeConfig, "hung", "p");
    const target = new URL(plane.server);
    const proxy = await FaultProxy.start(target.hostname, Number(target.port));
    // Watchdog at 2·3 + 3 = 9 s of silence.
    const ctl = await startObservedController(proxy.kubeConfigFor(plane.kubeConfig), t.watchNamespace, {
      watchTimeoutSeconds: 3,
    });
    try {
      await t.createPool({ start: "10.60.0.1", end: "10.60.0.200" });
      const refs = t.claimRefs(3, named("first", "after-sigstop", "after-freeze"));
      await bindOne(t, nth(refs, 0), 30_000);

      // 1. The API server freezes for longer than the watchdog's limit, then thaws.
      await plane.pauseApiServer();
      try {
        await eventually("the watchdog to notice the silent watches", () => silentWatches(ctl.logs) > 0, 30_000, 200);
      } finally {
        await plane.resumeApiServer();
      }
      await bindOne(t, nth(refs, 1), 20_000);

      // 2. Every open connection goes silent, the server stays healthy: only the watchdog can notice.
      await ctl.manager.idle();
      const before = silentWatches(ctl.logs);
      expect(proxy.freeze()).to.be.greaterThan(0);
      await bindOne(t, nth(refs, 2), 30_000);
      expect(silentWatches(ctl.logs)).to.be.greaterThan(before);
      t.expectSound(await t.audit(), 3);
    } finally {
      await ctl.stop();
      await proxy.close();
    }
  });
}

/** A burst of 300 claims in 6 waves; the controller process is SIGKILLed in the middle of each. */
async function sigkilledSixTimes(kind: TargetKind): Promise<void> {
  await withPlane(crdsFor(kind), async (plane) => {
    const t = await freshTarget(kind, plane.kubeConfig, "sigkill", "big");
    await t.createPool({ subnet: "10.70.0.0/22", prefix: 22 });
    const refs = t.claimRefs(300, claimName());
    const waves = 6;
    const perWave = refs.length / waves;
    const unfinishedAtKill: number[] = [];
    const controller = (): ReturnType<typeof startControllerProcess> =>
      startControllerProcess({ kubeconfigPath: plane.kubeconfigPath, namespace: t.watchNamespace, logDir: LOG_DIR });
    for (let wave = 0; wave < waves; wave++) {
      const child = controller();
      try {
        await child.waitSynced();
        const existing = await t.records();
        // Kill once the controller is in the middle of this wave: a random number of its IPAddresses exist.
        const killAt = existing + 1 + Math.floor(Math.random() * (perWave - 10));
        const creating = t.createClaims(refs.slice(wave * perWave, (wave + 1) * perWave));
        await eventually(`${killAt} IPAddresses`, async () => (await t.records()) >= killAt, 60_000, 30);
        await child.kill();
        await creating;
        unfinishedAtKill.push((await t.audit()).unbound.length);
      } finally {
        await child.kill();
      }
    }
    const last = controller();
    try {
      await last.waitSynced();
      t.expectSound(await settled(t, 300, 120_000), 300);
      await expectStaysSound(t, 300);
    } finally {
      await last.stop();
    }
    // The kills did land mid-allocation: claims were left without an address for the next process to finish.
    expect(
      unfinishedAtKill.some((n) => n > 0),
      `unbound claims at each kill: ${unfinishedAtKill.join(", ")}`,
    ).to.equal(true);
  });
}

describe("resilience: faults never lose or duplicate an address (own local planes)", function () {
  this.timeout(240_000);

  before(function () {
    // These tests break the control plane: only a plane this run owns will do.
    if (usingExistingCluster() || process.env.E2E_EXTERNAL_CONTROLLER === "true") this.skip();
    rmSync(LOG_DIR, { recursive: true, force: true });
  });

  it("binds a burst of 500 claims to 500 distinct addresses while kube-apiserver restarts twice", () =>
    restartsTwice("IPPool"));

  it("GlobalInClusterIPPool: binds a burst of 500 IPAddressClaims of 3 namespaces to 500 distinct addresses while kube-apiserver restarts twice", () =>
    restartsTwice(GLOBAL));

  it("turns unready while kube-apiserver is down and serves claims created right after it returns, without a restart", () =>
    downAndBack("IPPool"));

  it("relists after 410 Gone (watch cache off, fast compaction) and still reacts to a new claim within seconds", () =>
    watchesExpire("IPPool"));

  it("GlobalInClusterIPPool: relists IPAddressClaims and their IPAddresses after 410 Gone and still serves a same-named claim of another namespace", () =>
    watchesExpire(GLOBAL));

  it("recovers from hung watches (kube-apiserver frozen with SIGSTOP; connections frozen silently) through its watchdog", () =>
    watchesHang("IPPool"));

  it("GlobalInClusterIPPool: recovers from hung watches through its watchdog, serving same-named IPAddressClaims of 3 namespaces", () =>
    watchesHang(GLOBAL));

  // The Metal3 pool's case is in e2e/ippool.test.ts ("while the records' watch lags").
  it("GlobalInClusterIPPool: never gives a claim the address a record made just before it in another namespace holds, while the records' watch lags", async () => {
    await withPlane(crdsFor(GLOBAL), async (plane) => {
      const kc = plane.kubeConfig;
      const capi = capiClients(kc);
      const t = await freshTarget(GLOBAL, kc, "lag", "p");
      const ctl = await startObservedController(kc, t.watchNamespace, { watchTimeoutSeconds: 10 });
      // The Cluster API IPAddresses' watch delivers every event 400 ms late: a claim's event then arrives before the
      // event of a record made just before it.
      lagWatch(ctl.manager, (store) => store.capi?.addresses, 400);
      try {
        await t.createPool({ start: "10.7.0.1", end: "10.7.0.250" });
        const refs = t.claimRefs(20, claimName("r"));
        // Each round: a person-made record in the next namespace takes the next free address, then a claim arrives.
        for (const [i, ref] of refs.entries()) {
          const elsewhere = t.namespaces[(i + 1) % t.namespaces.length] ?? "";
          await capi.addresses.create(elsewhere, {
            metadata: { name: `manual-${i}`, namespace: elsewhere },
            spec: {
              claimRef: { name: `outside-${i}` },
              poolRef: globalPoolRef(t.poolName),
              address: `10.7.0.${2 * i + 1}`,
              prefix: 24,
            },
          });
          await t.createClaim(ref);
          await eventually(`${ref.namespace}/${ref.name} bound`, () => t.addressOf(ref), 30_000, 20);
        }
        const audit = await t.audit();
        expect(audit.duplicateAddresses, "addresses held twice").to.deep.equal([]);
        expect(audit.unbound, "claims without an address").to.deep.equal([]);
        expect(audit.bound).to.equal(20);
        expect(audit.addresses).to.equal(40);
        for (const ref of refs) {
          const address = (await t.addressOf(ref)) ?? "";
          expect(Number(address.split(".")[3]) % 2, `${ref.namespace}/${ref.name} ${address}`).to.equal(0);
        }
        // The race did happen: records made on a stale view were released once their event showed the other.
        expect(ctl.logs.matching("Released a new IPAddress: another record holds its address")).to.not.be.empty;
      } finally {
        await ctl.stop();
      }
    });
  });

  it("releases a second IPAddress made for a bound claim (an allocation redone after its answer was lost), keeping the bound one", async () => {
    await withPlane({}, async (plane) => {
      const c = clients(plane.kubeConfig);
      const ns = await freshNamespace(plane.kubeConfig, "dup");
      const ctl = await startObservedController(plane.kubeConfig, ns, { watchTimeoutSeconds: 10 });
      try {
        const p = await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.80.0.1", end: "10.80.0.9" }] }));
        expect(await bindOne(metal3Target(plane.kubeConfig, ns, "p"), { namespace: ns, name: "a" }, 30_000)).to.equal(
          "10.80.0.1",
        );
        const a = await c.claims.get(ns, "a");
        const bound = a.status?.address?.name;
        // What the first, unseen create of a redone allocation leaves behind: an IPAddress of ours for the same claim.
        await c.addresses.create(ns, {
          metadata: {
            name: "p-10-80-0-5",
            namespace: ns,
            finalizers: [IPADDRESS_FINALIZER],
            ownerReferences: [
              { apiVersion: API_VERSION, kind: "IPPool", name: "p", uid: p.metadata.uid ?? "", controller: true },
              { apiVersion: API_VERSION, kind: "IPClaim", name: "a", uid: a.metadata.uid ?? "" },
            ],
          },
          spec: {
            address: "10.80.0.5",
            prefix: 24,
            pool: { name: "p", namespace: ns },
            claim: { name: "a", namespace: ns },
          },
        });
        await eventually(
          "the duplicate to be released",
          async () => !(await exists(c.addresses, ns, "p-10-80-0-5")),
          30_000,
        );
        expect((await c.claims.get(ns, "a")).status?.address?.name).to.equal(bound);
        expectSound(await auditAllocations(c, ns), 1);
        expect(
          ctl.logs.matching("Releasing duplicate IPAddress of a claim", { ipAddress: "p-10-80-0-5" }),
        ).to.have.length(1);
      } finally {
        await ctl.stop();
      }
    });
  });

  it("GlobalInClusterIPPool: releases a second IPAddress made for a bound claim on the address of its namesake in another namespace, keeping both claims' addresses", async () => {
    await withPlane(crdsFor(GLOBAL), async (plane) => {
      const kc = plane.kubeConfig;
      const capi = capiClients(kc);
      const t = await freshTarget(GLOBAL, kc, "dup", "p");
      const ctl = await startObservedController(kc, t.watchNamespace, { watchTimeoutSeconds: 10 });
      try {
        await t.createPool({ start: "10.80.0.1", end: "10.80.0.9" });
        // Claims named "a" in each of the three namespaces.
        const refs = t.claimRefs(3, named("a"));
        const [inA, inB, inC] = [nth(refs, 0), nth(refs, 1), nth(refs, 2)];
        expect(await bindOne(t, inA, 30_000)).to.equal("10.80.0.1");
        expect(await bindOne(t, inB, 30_000)).to.equal("10.80.0.2");
        const a = await capi.claims.get(inA.namespace, inA.name);
        const p = await capi.globalPools.get("", t.poolName);
        // What an allocation decided on a stale view leaves behind: a second IPAddress of ours for the first "a",
        // on the address the second "a" holds.
        await capi.addresses.create(inA.namespace, {
          metadata: {
            name: "a-stale",
            namespace: inA.namespace,
            finalizers: [PROTECT_ADDRESS_FINALIZER],
            ownerReferences: [
              {
                apiVersion: a.apiVersion ?? "",
                kind: "IPAddressClaim",
                name: inA.name,
                uid: a.metadata.uid ?? "",
                controller: true,
                blockOwnerDeletion: true,
              },
              {
                apiVersion: apiVersionOf(GLOBAL_INCLUSTER_IPPOOL),
                kind: GLOBAL_INCLUSTER_IPPOOL.kind,
                name: t.poolName,
                uid: p.metadata.uid ?? "",
                blockOwnerDeletion: true,
              },
            ],
          },
          spec: { claimRef: { name: inA.name }, poolRef: globalPoolRef(t.poolName), address: "10.80.0.2", prefix: 24 },
        });
        await eventually(
          "the stale IPAddress to be released",
          async () => !(await exists(capi.addresses, inA.namespace, "a-stale")),
          30_000,
        );
        expect(await t.addressOf(inA)).to.equal("10.80.0.1");
        expect(await t.addressOf(inB)).to.equal("10.80.0.2");
        // 10.80.0.2 is still the second "a"'s: the third gets the next free address.
        expect(await bindOne(t, inC, 30_000)).to.equal("10.80.0.3");
        t.expectSound(await t.audit(), 3);
        expect(
          ctl.logs.matching("Releasing duplicate IPAddress of an IPAddressClaim", { ipAddress: "a-stale" }),
        ).to.have.length(1);
      } finally {
        await ctl.stop();
      }
    });
  });

  it("serves a pool with a claim waiting while the start-up's lists still run once they went past its namespace, and not before", async () => {
    await withPlane(crdsFor(GLOBAL), async (plane) => {
      const kc = plane.kubeConfig;
      const c = clients(kc);
      // Caches list in key order (<namespace>/<name>): the "a-" namespace's objects come before the "z-" one's.
      const early = await freshNamespace(kc, "a-listed");
      const late = await freshNamespace(kc, "z-listed");
      for (const ns of [early, late]) {
        await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.9.0.1", end: "10.9.0.20" }], prefix: 24 }));
        await c.claims.create(ns, claim(ns, "c", "p"));
      }
      // A pool nobody waits on: its pass would only write its status, which waits for the end of the lists.
      await c.pools.create(
        early,
        pool(early, "idle", { pools: [{ start: "10.8.0.1", end: "10.8.0.20" }], prefix: 24 }),
      );
      // Someone else's record in the late namespace holds its pool's first address.
      await c.addresses.create(late, {
        metadata: { name: "manual", namespace: late },
        spec: { address: "10.9.0.1", pool: { name: "p" }, claim: { name: "outside-kubernetes" } },
      });
      // The records' first list hands over its one page (both namespaces) but does not end until released.
      const held = holdNextList(IPADDRESS);
      const logs = new LogCapture();
      const manager = new Manager(kc, { poolConcurrency: 4, logger: logs.logger, serveInClusterPools: true });
      const started = manager.start();
      try {
        const address = await eventually("the early claim bound", () => addressOf(c, early, "c"), 30_000, 50);
        expect(address).to.equal("10.9.0.1");
        expect(manager.synced, "every cache listed").to.equal(false);
        // The late namespace is where the held list stopped: its pool waits.
        await consistently("the late claim unbound", async () => !(await addressOf(c, late, "c")), 2_000);
        expect((await c.pools.get(early, "idle")).status, "the idle pool's status while the lists run").to.equal(
          undefined,
        );
        held.release();
        await started;
        await eventually("the idle pool's status", async () => (await c.pools.get(early, "idle")).status, 30_000);
        expect(await eventually("the late claim bound", () => addressOf(c, late, "c"), 30_000)).to.equal("10.9.0.2");
        const audits = [await auditAllocations(c, early), await auditAllocations(c, late)];
        expect(audits.map((a) => a.duplicateAddresses).flat(), "addresses held twice").to.deep.equal([]);
      } finally {
        held.release();
        held.restore();
        await manager.stop();
      }
    });
  });

  it("binds every claim of a 300-claim burst exactly once although the controller process is SIGKILLed 6 times", () =>
    sigkilledSixTimes("IPPool"));

  it("GlobalInClusterIPPool: binds each of 300 IPAddressClaims of 3 namespaces exactly once although the controller process is SIGKILLed 6 times", () =>
    sigkilledSixTimes(GLOBAL));
});
