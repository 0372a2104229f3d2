/**
 * The controller's memory release (src/runtime/memory.ts) as the process wires it: with V8's gc() exposed (the image
 * passes --expose-gc), a controller whose RSS grew while it allocated gives freed heap pages back and says so on
 * /metrics. The release interval is cut to 1 s so the test does not wait a minute.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { freshNamespace, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { startControllerProcess, type ControllerProcess } from "../hack/testkit/controller.js";
import { auditAllocations, createClaimsRetrying } from "../hack/testkit/faults.js";
import { clients, pool } from "../hack/testkit/ipam.js";
import { metricSample, scrapeMetrics } from "../hack/testkit/metrics.js";
import { claimPort } from "../hack/testkit/ports.js";
import { serviceAccountKubeconfigFile } from "../hack/testkit/serviceaccount.js";
import { eventually } from "../hack/testkit/wait.js";

describe("memory release in the controller process", function () {
  this.timeout(180_000);
  let dir: string;
  let controller: ControllerProcess | undefined;

  before(function () {
    // The controller runs here as a process whose /metrics this test reads on loopback.
    if (usingExistingCluster()) this.skip();
    dir = mkdtempSync(join(tmpdir(), "memory-test-"));
  });

  after(async () => {
    await controller?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("gives freed heap pages back after a burst of claims, counted on /metrics", async () => {
    const admin = (await sharedCluster()).kubeConfig;
    const c = clients(admin);
    const ns = await freshNamespace(admin, "memory");
    const port = await claimPort();
    controller = startControllerProcess({
      kubeconfigPath: await serviceAccountKubeconfigFile(admin, dir),
      namespace: ns,
      logDir: dir,
      diagnosticsAddress: `127.0.0.1:${port}`,
      insecureDiagnostics: true,
      nodeFlags: ["--expose-gc"],
      flags: ["--memory-release-interval=1s"],
    });
    await controller.waitSynced();
    await c.pools.create(ns, pool(ns, "burst", { pools: [{ subnet: "10.60.0.0/22" }], prefix: 22 }));
    const names = Array.from({ length: 400 }, (_, i) => `claim-${i}`);
    await createClaimsRetrying(c, ns, "burst", names);
    await eventually(
      "every claim bound",
      async () => (await auditAllocations(c, ns)).bound === names.length,
      120_000,
      500,
    );

    const text = await eventually(
      "a memory release on /metrics",
      async () => {
        const metrics = await scrapeMetrics(port);
        return (metricSample(metrics, "metal3_ipam_memory_releases_total") ?? 0) >= 1 && metrics;
      },
      30_000,
      250,
    );
    const released = metricSample(text, "metal3_ipam_memory_released_bytes_total");
    const after = metricSample(text, "metal3_ipam_memory_rss_after_release_bytes");
    // Releases give something back in all (a single one may not, if RSS rose while it ran), and the RSS after the
    // last is a plausible resident size for a Node process.
    expect(released, "bytes given back").to.be.above(0);
    expect(after, "RSS after the last release").to.be.within(20 * 1024 * 1024, 1024 * 1024 * 1024);
  });
});
