/**
 * Resilience (issue 8): API server restarts, expired watches (410 Gone), hung watches and controller crashes never
 * lose or duplicate an address. Every test runs a local plane of its own, since it breaks it; the controller runs in
 * this process (watch faults) or as a child process (crashes).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { API_VERSION, IPADDRESS_FINALIZER } from "../api/v1alpha1/types.js";
import { LocalPlane, type LocalPlaneOptions } from "../hack/testkit/plane.js";
import { freshNamespace, OUR_CRDS, repoRoot, usingExistingCluster } from "../hack/testkit/cluster.js";
import {
  auditAllocations,
  createClaimsRetrying,
  FaultProxy,
  startObservedController,
  type AllocationAudit,
  type LogCapture,
} from "../hack/testkit/faults.js";
import { startControllerProcess } from "../hack/testkit/controller.js";
import { addressOf, claim, clients, exists, pool, type Clients } from "../hack/testkit/ipam.js";
import { consistently, eventually, sleep } from "../hack/testkit/wait.js";

const LOG_DIR = join(repoRoot, ".cache", "e2e", "resilience");

async function withPlane<T>(options: LocalPlaneOptions, body: (plane: LocalPlane) => Promise<T>): Promise<T> {
  const plane = await LocalPlane.start({ crdDirs: [OUR_CRDS], controllerManager: false, ...options });
  try {
    return await body(plane);
  } finally {
    await plane.stop();
  }
}

const claimNames = (count: number, prefix = "claim"): string[] =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, "0")}`);

/** Waits until `expected` claims are bound and as many IPAddresses exist; returns the audit. */
async function settled(c: Clients, ns: string, expected: number, timeoutMs = 120_000): Promise<AllocationAudit> {
  return await eventually(
    `${expected} claims bound to ${expected} IPAddresses`,
    async () => {
      const audit = await auditAllocations(c, ns);
      return audit.bound === expected && audit.addresses === expected ? audit : undefined;
    },
    timeoutMs,
    500,
  );
}

/** Every claim bound exactly once: one IPAddress per claim, all distinct, each naming a live claim that names it. */
function expectSound(audit: AllocationAudit, expected: number): void {
  expect(audit.unbound, "claims without an address").to.deep.equal([]);
  expect(audit.duplicateAddresses, "addresses held twice").to.deep.equal([]);
  expect(audit.claimsWithSeveral, "claims with several IPAddresses").to.deep.equal([]);
  expect(audit.orphans, "IPAddresses whose claim is gone").to.deep.equal([]);
  expect(audit.claims).to.equal(expected);
  expect(audit.bound).to.equal(expected);
  expect(audit.addresses).to.equal(expected);
}

async function expectStaysSound(c: Clients, ns: string, expected: number): Promise<void> {
  await consistently(
    "the allocations to stay sound",
    async () => {
      const audit = await auditAllocations(c, ns);
      return audit.addresses === expected && audit.bound === expected && audit.orphans.length === 0;
    },
    3_000,
    500,
  );
}

async function bindOne(c: Clients, ns: string, poolName: string, name: string, timeoutMs: number): Promise<string> {
  await c.claims.create(ns, claim(ns, name, poolName));
  return await eventually(`claim ${name} to be bound`, () => addressOf(c, ns, name), timeoutMs, 100);
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

describe("resilience: faults never lose or duplicate an address (own local planes)", function () {
  this.timeout(240_000);

  before(function () {
    // These tests break the control plane: only a plane this run owns will do.
    if (usingExistingCluster() || process.env.E2E_EXTERNAL_CONTROLLER === "true") this.skip();
    rmSync(LOG_DIR, { recursive: true, force: true });
  });

  it("binds a burst of 500 claims to 500 distinct addresses while kube-apiserver restarts twice", async () => {
    await withPlane({}, async (plane) => {
      const kc = plane.kubeConfig;
      const c = clients(kc);
      const ns = await freshNamespace(kc, "restarts");
      const ctl = await startObservedController(kc, ns, { watchTimeoutSeconds: 10 });
      try {
        await c.pools.create(ns, pool(ns, "big", { pools: [{ subnet: "10.30.0.0/22" }], prefix: 22 }));
        const progress = { created: 0 };
        const creating = createClaimsRetrying(c, ns, "big", claimNames(500), { progress });
        await eventually("150 claims created", () => progress.created >= 150, 120_000, 20);
        await plane.restartApiServer();
        await eventually("350 claims created", () => progress.created >= 350, 120_000, 20);
        // The second restart is a crash: no graceful end of watches and requests.
        await plane.restartApiServer({ kill: true });
        await creating;
        expectSound(await settled(c, ns, 500, 150_000), 500);
        await expectStaysSound(c, ns, 500);
      } finally {
        await ctl.stop();
      }
    });
  });

  it("turns unready while kube-apiserver is down and serves claims created right after it returns, without a restart", async () => {
    await withPlane({}, async (plane) => {
      const kc = plane.kubeConfig;
      const c = clients(kc);
      const ns = await freshNamespace(kc, "down");
      const ctl = await startObservedController(kc, ns, { watchTimeoutSeconds: 10 });
      try {
        await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.40.0.1", end: "10.40.0.200" }] }));
        await bindOne(c, ns, "p", "before", 30_000);
        expect(ctl.manager.synced).to.equal(true);
        await plane.stopApiServer();
        await eventually("the controller to report its caches not synced", () => !ctl.manager.synced, 30_000);
        await sleep(5_000); // down for a while: the informers' backoff grows
        await plane.startApiServer();
        await eventually("the controller to report its caches synced again", () => ctl.manager.synced, 60_000);
        const names = claimNames(20, "after");
        await createClaimsRetrying(c, ns, "p", names);
        expectSound(await settled(c, ns, 21, 60_000), 21);
        await expectStaysSound(c, ns, 21);
      } finally {
        await ctl.stop();
      }
    });
  });

  it("relists after 410 Gone (watch cache off, fast compaction) and still reacts to a new claim within seconds", async () => {
    await withPlane({ apiServerFlags: ["--watch-cache=false", "--etcd-compaction-interval=2s"] }, async (plane) => {
      const kc = plane.kubeConfig;
      const c = clients(kc);
      const ns = await freshNamespace(kc, "gone");
      const noise = await freshNamespace(kc, "noise");
      // Short watches: each one resumes from the last resourceVersion this namespace produced, which goes stale
      // while only the other namespace is written to, and is compacted away.
      const ctl = await startObservedController(kc, ns, { watchTimeoutSeconds: 2 });
      const stopChurn = churnConfigMaps(kc, noise);
      try {
        await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.50.0.1", end: "10.50.0.200" }] }));
        await bindOne(c, ns, "p", "first", 30_000);
        const expired = (resource: string): number =>
          ctl.logs.matching("Watch expired (410 Gone); relisting", { resource }).length;
        await eventually(
          "the claims and addresses watches to get 410 Gone",
          () => expired("ipclaims") > 0 && expired("ipaddresses") > 0,
          90_000,
          200,
        );
        await bindOne(c, ns, "p", "after-gone", 15_000);
        expectSound(await auditAllocations(c, ns), 2);
        expect(ctl.manager.synced).to.equal(true);
      } finally {
        await stopChurn();
        await ctl.stop();
      }
    });
  });

  it("recovers from hung watches (kube-apiserver frozen with SIGSTOP; connections frozen silently) through its watchdog", async () => {
    await withPlane({}, async (plane) => {
      const c = clients(plane.kubeConfig);
      const ns = await freshNamespace(plane.kubeConfig, "hung");
      const target = new URL(plane.server);
      const proxy = await FaultProxy.start(target.hostname, Number(target.port));
      // Watchdog at 2·3 + 3 = 9 s of silence.
      const ctl = await startObservedController(proxy.kubeConfigFor(plane.kubeConfig), ns, { watchTimeoutSeconds: 3 });
      try {
        await c.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.60.0.1", end: "10.60.0.200" }] }));
        await bindOne(c, ns, "p", "first", 30_000);

        // 1. The API server freezes for longer than the watchdog's limit, then thaws.
        await plane.pauseApiServer();
        try {
          await eventually("the watchdog to notice the silent watches", () => silentWatches(ctl.logs) > 0, 30_000, 200);
        } finally {
          await plane.resumeApiServer();
        }
        await bindOne(c, ns, "p", "after-sigstop", 20_000);

        // 2. Every open connection goes silent, the server stays healthy: only the watchdog can notice.
        await ctl.manager.idle();
        const before = silentWatches(ctl.logs);
        expect(proxy.freeze()).to.be.greaterThan(0);
        await bindOne(c, ns, "p", "after-freeze", 30_000);
        expect(silentWatches(ctl.logs)).to.be.greaterThan(before);
        expectSound(await auditAllocations(c, ns), 3);
      } finally {
        await ctl.stop();
        await proxy.close();
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
        expect(await bindOne(c, ns, "p", "a", 30_000)).to.equal("10.80.0.1");
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

  it("binds every claim of a 300-claim burst exactly once although the controller process is SIGKILLed 6 times", async () => {
    await withPlane({}, async (plane) => {
      const c = clients(plane.kubeConfig);
      const ns = await freshNamespace(plane.kubeConfig, "sigkill");
      await c.pools.create(ns, pool(ns, "big", { pools: [{ subnet: "10.70.0.0/22" }], prefix: 22 }));
      const names = claimNames(300);
      const waves = 6;
      const perWave = names.length / waves;
      const unfinishedAtKill: number[] = [];
      for (let wave = 0; wave < waves; wave++) {
        const child = startControllerProcess({ kubeconfigPath: plane.kubeconfigPath, namespace: ns, logDir: LOG_DIR });
        try {
          await child.waitSynced();
          const existing = (await c.addresses.list(ns)).items.length;
          // Kill once the controller is in the middle of this wave: a random number of its IPAddresses exist.
          const killAt = existing + 1 + Math.floor(Math.random() * (perWave - 10));
          const creating = createClaimsRetrying(c, ns, "big", names.slice(wave * perWave, (wave + 1) * perWave));
          await eventually(
            `${killAt} IPAddresses`,
            async () => (await c.addresses.list(ns)).items.length >= killAt,
            60_000,
            30,
          );
          await child.kill();
          await creating;
          const audit = await auditAllocations(c, ns);
          unfinishedAtKill.push(audit.unbound.length);
        } finally {
          await child.kill();
        }
      }
      const last = startControllerProcess({ kubeconfigPath: plane.kubeconfigPath, namespace: ns, logDir: LOG_DIR });
      try {
        await last.waitSynced();
        expectSound(await settled(c, ns, 300, 120_000), 300);
        await expectStaysSound(c, ns, 300);
      } finally {
        await last.stop();
      }
      // The kills did land mid-allocation: claims were left without an address for the next process to finish.
      expect(
        unfinishedAtKill.some((n) => n > 0),
        `unbound claims at each kill: ${unfinishedAtKill.join(", ")}`,
      ).to.equal(true);
    });
  });
});
