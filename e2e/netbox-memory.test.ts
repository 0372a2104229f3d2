/**
 * What the controller keeps of a NetBox pool goes with the pool: 200 pools on a prefix of 5,000 records of ours,
 * created and deleted, leave the controller process's heap (its /metrics) where it was. A loopback server plays the
 * NetBox (the records are what is measured here, not NetBox); the controller runs as its own process, as the image
 * runs it, with its inspector open so the heap is read after a full collection (garbage not yet collected is not kept).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { freshNamespace, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { startControllerProcess, type ControllerProcess } from "../hack/testkit/controller.js";
import { gone } from "../hack/testkit/ipam.js";
import { liveHeapBytes } from "../hack/testkit/inspector.js";
import { claimPort } from "../hack/testkit/ports.js";
import { serviceAccountKubeconfigFile } from "../hack/testkit/serviceaccount.js";
import { eventually, sleep } from "../hack/testkit/wait.js";
import { netBoxClients, netBoxPool, writeToken } from "../hack/testkit/netboxpools.js";

const RECORDS = 5_000;
const POOLS = 200;
const MiB = 1024 * 1024;
/** The controller's installation id: the records carry it, so every pool keeps them as its own while it serves. */
const INSTALLATION = "memory-test";

describe("NetBox pools: memory freed with the pool (controller process)", function () {
  this.timeout(600_000);
  let dir: string;
  let controller: ControllerProcess | undefined;
  let server: Server | undefined;

  before(function () {
    if (usingExistingCluster()) this.skip();
    dir = mkdtempSync(join(tmpdir(), "netbox-memory-test-"));
  });

  after(async () => {
    await controller?.stop();
    server?.closeAllConnections();
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Prefix #7 holding {@link RECORDS} records of ours (other claims'), paged by id as NetBox pages them. */
  async function fakeNetBox(): Promise<string> {
    const records = Array.from({ length: RECORDS }, (_, i) => ({
      id: i + 1,
      address: `10.90.${i >> 8}.${i & 255}/16`,
      description: `IPAddressClaim elsewhere/claim-${i} @${INSTALLATION}`,
      dns_name: "",
      status: { value: "active" },
      tags: [{ slug: "metal3-ipam-ts" }],
    }));
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const after = Number(url.searchParams.get("id__gt") ?? "0");
      const limit = Number(url.searchParams.get("limit") ?? "1000");
      const left = records.filter((r) => r.id > after);
      const body = url.pathname.startsWith("/api/ipam/prefixes/")
        ? { id: 7, prefix: "10.90.0.0/16", vrf: null, is_pool: false }
        : { count: left.length, next: null, previous: null, results: left.slice(0, limit) };
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it(`${POOLS} pools created and deleted on a prefix of ${RECORDS} records leave the heap flat`, async () => {
    const admin = (await sharedCluster()).kubeConfig;
    const k = netBoxClients(admin);
    const ns = await freshNamespace(admin, "nb-memory");
    const url = await fakeNetBox();
    const inspectPort = await claimPort();
    const kubeconfigPath = await serviceAccountKubeconfigFile(admin, dir);
    // After the controller's namespace exists (serviceAccountKubeconfigFile makes it).
    await writeToken(k, ns, "nbt_fake.tokentokentoken", { url });
    controller = startControllerProcess({
      kubeconfigPath,
      namespace: ns,
      logDir: dir,
      nodeFlags: [`--inspect=127.0.0.1:${inspectPort}`],
      flags: [`--netbox-installation-id=${INSTALLATION}`],
    });
    await controller.waitSynced();
    /** What the heap holds once the work in flight has ended. */
    const settledHeap = async (): Promise<number> => {
      await sleep(5_000);
      return await liveHeapBytes(inspectPort);
    };
    const before = await settledHeap();

    const names = Array.from({ length: POOLS }, (_, i) => `p-${i}`);
    for (const name of names) await k.pools.create(ns, netBoxPool(ns, name, { prefix: { id: 7 } }));
    await eventually(
      `${POOLS} pools served`,
      async () => (await k.pools.list(ns)).items.filter((p) => p.status?.netbox?.id === 7).length === POOLS,
      300_000,
      1_000,
    );
    const served = await settledHeap();
    for (const name of names) await k.pools.delete(ns, name);
    await eventually(
      `${POOLS} pools gone`,
      async () => (await Promise.all(names.map((n) => gone(k.pools, ns, n)))).every(Boolean),
      300_000,
      1_000,
    );
    const after = await settledHeap();
    console.log(
      `      heap (MiB): before ${(before / MiB).toFixed(0)}, ${POOLS} pools served ${(served / MiB).toFixed(0)}, ` +
        `after their deletion ${(after / MiB).toFixed(0)}`,
    );
    expect((after - before) / MiB, "heap left by the deleted pools (MiB)").to.be.below(32);
  });
});
