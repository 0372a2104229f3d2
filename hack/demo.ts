/**
 * `npm run demo`: the main job, end to end, on an embedded local control plane. Starts the plane with our CRDs, the
 * in-cluster provider's pool CRDs and Cluster API's, runs the controller, applies config/samples (IPClaims on Metal3
 * IPPools: an IPv4 pool with several ranges and a preallocation, an IPv6 pool, a claim that requests an address, four
 * claims on a pool of three) and config/samples/clusterapi (IPAddressClaims on a Metal3 IPPool, an InClusterIPPool
 * and a GlobalInClusterIPPool), and prints who got which address from which pool (hack/demo/run.ts).
 *
 *   npm run demo              print the tables and stop everything
 *   npm run demo -- --keep    keep the plane and controller running; prints the KUBECONFIG to explore with kubectl
 */
import { existsSync } from "node:fs";
import { Manager } from "../src/controllers/manager.js";
import { createLogger } from "../src/runtime/logger.js";
import { CAPI_CRDS, INCLUSTER_POOL_CRDS, OUR_CRDS } from "./testkit/cluster.js";
import { LocalPlane } from "./testkit/plane.js";
import { runDemo } from "./demo/run.js";
import { renderDemo } from "./demo/table.js";

async function main(): Promise<void> {
  const keep = process.argv.includes("--keep");
  console.log("Starting a local control plane (the first run builds it from Go modules; see docs/development.md)...");
  const started = Date.now();
  const clusterApi = existsSync(CAPI_CRDS);
  const plane = await LocalPlane.start({
    crdDirs: clusterApi ? [OUR_CRDS, INCLUSTER_POOL_CRDS, CAPI_CRDS] : [OUR_CRDS, INCLUSTER_POOL_CRDS],
  });
  console.log(`Control plane ready in ${((Date.now() - started) / 1000).toFixed(1)} s at ${plane.server}`);
  const manager = new Manager(plane.kubeConfig, {
    logger: createLogger({ level: "warn", format: "text" }),
    serveInClusterPools: true,
  });
  try {
    await manager.start();
    console.log("Applying config/samples and config/samples/clusterapi; waiting for the controller...\n");
    console.log(renderDemo(await runDemo(plane.kubeConfig, clusterApi)));
    if (keep) {
      console.log(
        `\nStill running. In another shell:\n  export KUBECONFIG=${plane.kubeconfigPath}\n  kubectl get ippools,ipclaims,ipaddresses.ipam.metal3.io -A\n  kubectl get ipaddressclaims,inclusterippools,globalinclusterippools,ipaddresses.ipam.cluster.x-k8s.io -A\nPress Ctrl-C to stop.`,
      );
      await new Promise<void>((resolve) => process.once("SIGINT", () => resolve()));
    }
  } finally {
    await manager.stop();
    await plane.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
