/**
 * NetBox pools under faults of our own side: a GlobalNetBoxIPPool used from several namespaces (same claim names in
 * each), and the controller killed (SIGKILL) in the middle of bursts, between NetBox's answers and the IPAddress
 * creates. Against a real NetBox and the real API server; the controller runs as a child process, as in a pod.
 */
import { expect } from "chai";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { GLOBAL_NETBOX_IPPOOL_KIND, type NetBoxIPPool } from "../api/netbox/types.js";
import { RECHECK_AFTER_START_MS } from "../src/controllers/netbox/engine.js";
import { freshNamespace } from "../hack/testkit/cluster.js";
import { startControllerProcess } from "../hack/testkit/controller.js";
import { gone, startController } from "../hack/testkit/ipam.js";
import type { NetBoxServer } from "../hack/testkit/netbox.js";
import { FaultProxy } from "../hack/testkit/faults.js";
import { serviceAccountKubeConfig, serviceAccountKubeconfigFile } from "../hack/testkit/serviceaccount.js";
import { eventually } from "../hack/testkit/wait.js";
import { isNotFound } from "../src/kube/errors.js";
import { addressClaim, readyOf } from "../hack/testkit/incluster.js";
import {
  claimOfRecord,
  hostOf,
  netBoxPool,
  netBoxSuite,
  netBoxRef,
  ourRecordsIn,
  tokenSecret,
  writeToken,
  type NetBoxClients,
} from "../hack/testkit/netboxpools.js";

/** A delete's not-found is what a cleanup wants; anything else fails the test. */
function ignoreNotFound(err: unknown): void {
  if (!isNotFound(err)) throw err;
}

describe("NetBox pools: global pools and a controller killed mid-burst (a real NetBox)", function () {
  this.timeout(600_000);
  let kc: KubeConfig;
  let k: NetBoxClients;
  let nb: NetBoxServer;

  before(async function () {
    ({ kc, nb, k } = await netBoxSuite(this));
  });

  /** Bound claims of `namespaces`, as namespace/name → address. */
  async function boundAddresses(namespaces: readonly string[]): Promise<Map<string, string>> {
    const bound = new Map<string, string>();
    for (const ns of namespaces) {
      // Claims first: a claim is bound only after its IPAddress exists, so a list of IPAddresses taken after the claims
      // holds the record of every claim found bound. Listed the other way round, a claim bound between the two lists
      // read "?" (a flake of the kill test below).
      const claims = (await k.claims.list(ns)).items;
      const records = new Map((await k.addresses.list(ns)).items.map((a) => [a.metadata.name, a.spec.address]));
      for (const c of claims)
        if (readyOf(c)?.status === "True" && c.status?.addressRef?.name)
          bound.set(`${ns}/${c.metadata.name}`, records.get(c.status.addressRef.name) ?? "?");
    }
    return bound;
  }

  it("a GlobalNetBoxIPPool serves claims of three namespaces, same names in each: one NetBox record per claim", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const namespaces = await Promise.all(["nbg-a", "nbg-b", "nbg-c"].map((p) => freshNamespace(kc, p)));
    const poolName = `nbg-${prefix.id}`;
    // A global pool may use any token Secret of the controller's namespace: this one allows no namespace at all.
    await writeToken(k, poolName, nb.token);
    const global: NetBoxIPPool = {
      metadata: { name: poolName },
      spec: { netbox: { credentialsRef: { name: tokenSecret(poolName) } }, prefix: { id: prefix.id } },
    };
    await k.globals.create("", global);
    const ctl = await startController(kc, "");
    try {
      for (const ns of namespaces)
        for (const name of ["m-0", "m-1", "m-2"])
          await k.claims.create(ns, addressClaim(ns, name, netBoxRef(poolName, GLOBAL_NETBOX_IPPOOL_KIND)));
      const bound = await eventually(
        "9 claims bound",
        async () => {
          const b = await boundAddresses(namespaces);
          return b.size === 9 ? b : undefined;
        },
        90_000,
      );
      expect(new Set(bound.values()).size).to.equal(9);
      const records = await ourRecordsIn(nb, prefix.cidr);
      expect(records).to.have.length(9);
      for (const [key, address] of bound) {
        const [namespace = "", name = ""] = key.split("/");
        const mine = records.filter((r) => claimOfRecord(r.description) === `${namespace}/${name}`);
        expect(
          mine.map((r) => hostOf(r.address)),
          key,
        ).to.deep.equal([address]);
      }
      for (const ns of namespaces) await k.claims.delete(ns, "m-1");
      await eventually("three released in NetBox", async () => (await ourRecordsIn(nb, prefix.cidr)).length === 6);
    } finally {
      try {
        // Released while the controller runs, so no global pool is left on the shared plane (other suites list them).
        // A claim listed while its release finishes is gone by its delete: not found is what the cleanup wants.
        for (const ns of namespaces)
          for (const c of (await k.claims.list(ns)).items)
            await k.claims.delete(ns, c.metadata.name ?? "").catch(ignoreNotFound);
        await k.globals.delete("", poolName).catch(ignoreNotFound);
        await eventually("the global pool gone", async () => await gone(k.globals, "", poolName), 60_000);
      } finally {
        await ctl.stop();
      }
    }
  });

  it("the controller SIGKILLed three times in bursts of 80, between NetBox's answers and the IPAddresses: every claim bound once, no second record, no orphan", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const ns = await freshNamespace(kc, "nb-kill");
    await writeToken(k, ns, nb.token);
    await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
    const logDir = mkdtempSync(join(tmpdir(), "nb-kill-"));
    const kubeconfigPath = await serviceAccountKubeconfigFile(kc, logDir);
    // The killed controllers reach the API server over a slow link, so each batch NetBox answered stays ahead of its
    // IPAddresses long enough to be seen and killed in (unslowed, that window was at times too short to catch).
    const server = new URL(kc.getCurrentCluster()?.server ?? "");
    const slowLink = await FaultProxy.start(server.hostname, Number(server.port), { requestDelayMs: 500 });
    const slowKubeconfigPath = join(logDir, "slow.kubeconfig");
    writeFileSync(slowKubeconfigPath, slowLink.kubeConfigFor(await serviceAccountKubeConfig(kc)).exportConfig());
    const names = Array.from({ length: 240 }, (_, i) => `m-${i}`);
    const perWave = 80;
    let caught = 0;
    try {
      for (let wave = 0; wave < 3; wave++) {
        const child = startControllerProcess({ kubeconfigPath: slowKubeconfigPath, namespace: ns, logDir });
        try {
          await child.waitSynced();
          const creating = Promise.all(
            names
              .slice(wave * perWave, (wave + 1) * perWave)
              .map((name) => k.claims.create(ns, addressClaim(ns, name, netBoxRef("p")))),
          );
          // Kill as soon as NetBox holds records that Kubernetes has no IPAddress for yet.
          await eventually(
            "NetBox ahead of Kubernetes",
            async () => {
              const inNetBox = (await ourRecordsIn(nb, prefix.cidr)).length;
              const inKube = (await k.addresses.list(ns)).items.length;
              return inNetBox > inKube || inNetBox >= (wave + 1) * perWave;
            },
            60_000,
            10,
          );
          await child.kill();
          // Counted after the kill: what the killed controller left behind.
          if ((await ourRecordsIn(nb, prefix.cidr)).length > (await k.addresses.list(ns)).items.length) caught++;
          await creating;
        } finally {
          await child.kill();
        }
      }
    } finally {
      await slowLink.close();
    }
    const last = startControllerProcess({ kubeconfigPath, namespace: ns, logDir });
    try {
      await last.waitSynced();
      const bound = await eventually(
        "240 claims bound",
        async () => {
          const b = await boundAddresses([ns]);
          return b.size === 240 ? b : undefined;
        },
        180_000,
      );
      expect(new Set(bound.values()).size, "no address twice").to.equal(240);
      expect((await k.addresses.list(ns)).items, "one IPAddress per claim").to.have.length(240);
      // A request of a killed controller may commit in NetBox after the next one listed; the second look after a start
      // (RECHECK_AFTER_START_MS) keeps one record per claim.
      const records = await eventually(
        "one NetBox record per claim",
        async () => {
          const r = await ourRecordsIn(nb, prefix.cidr);
          return r.length === 240 ? r : undefined;
        },
        RECHECK_AFTER_START_MS + 30_000,
      );
      for (const r of records) {
        const name = claimOfRecord(r.description).split("/")[1] ?? "";
        expect(bound.get(`${ns}/${name}`), r.description).to.equal(hostOf(r.address));
      }
      // The window was hit at least once (else the test proved nothing about it).
      expect(caught, "kills that left NetBox ahead of Kubernetes").to.be.greaterThan(0);
      // Deleted twenty at a time, as Cluster API deletes a MachineSet's machines: each deletion waits for the API
      // server, so one at a time the loop itself would outlast the release it tests.
      const names = (await k.claims.list(ns)).items.map((c) => c.metadata.name ?? "");
      for (let i = 0; i < names.length; i += 20)
        await Promise.all(names.slice(i, i + 20).map((name) => k.claims.delete(ns, name)));
      await eventually("released", async () => (await ourRecordsIn(nb, prefix.cidr)).length === 0, 300_000);
      await eventually("pool deletable", async () => {
        await k.pools.delete(ns, "p").catch(() => undefined);
        return await gone(k.pools, ns, "p");
      });
    } finally {
      await last.stop();
    }
  });
});
