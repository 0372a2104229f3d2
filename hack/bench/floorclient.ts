/**
 * The trickle's floor client, a process of its own that trickle.ts starts and measures like the
 * controller: what any Node client must spend on one claim of a trickle, with no controller logic at all. It watches
 * one namespace's claims and the records it makes (so it receives a claim's four events, as the controller does: the
 * claim, its finalizer, its record, its status) and answers each new claim with the controller's four requests, in the
 * controller's order: the finalizer, the list of the other claim API's records (the read-your-writes barrier's), the
 * record, the status ({@link BenchClaimKind.bareBind}). No cache, no pool, no allocator: the n-th claim seen gets the
 * n-th address. It talks through the project's own API door (src/kube), as the controller does.
 *
 *   node .cache/bench/floor/hack/bench/floorclient.js <kubeconfig> <namespace> <claim kind> <pool kind> <pool name>
 *
 * `npm run bench` compiles it there (hack/bench/tsconfig.floor.json), with tsc as the controller is built.
 *
 * It prints `ready` once both watches are connected, and a line per claim it could not bind.
 */
import { pathToFileURL } from "node:url";
import type { ClusterAccess } from "../../src/kube/access.js";
import { loadClusterAccess } from "../../src/kube/kubeconfig.js";
import { ResourceClient, type KubeObject } from "../../src/kube/resource.js";
import { streamWatch, type WatchEvent } from "../../src/kube/watch.js";
import { BENCH_CLAIM_KINDS, type BenchClaimKind } from "./kinds.js";
import { nthAddress } from "./scenarios.js";

/** The claim kind whose claim label and pool label are given (`IPClaim IPPool`, say). */
export function floorKind(claimLabel: string, poolLabel: string): BenchClaimKind {
  const kind = BENCH_CLAIM_KINDS.find((k) => k.label === claimLabel && k.pool.label === poolLabel);
  if (!kind) throw new Error(`no claim kind ${claimLabel} on ${poolLabel}`);
  return kind;
}

/** Watches `path` until the process ends, handing every event on; connects again when the server ends the watch. */
async function watchForever(kube: ClusterAccess, path: string, onEvent: (event: WatchEvent) => void): Promise<void> {
  let connected = false;
  let resourceVersion: string | undefined;
  const connectedOnce = new Promise<void>((resolve) => {
    void (async () => {
      for (;;) {
        await streamWatch(kube, {
          path,
          query: { resourceVersion, allowWatchBookmarks: true },
          signal: new AbortController().signal,
          onConnected: () => {
            if (!connected) resolve();
            connected = true;
          },
          onEvent: (event) => {
            resourceVersion = (event.object as KubeObject | undefined)?.metadata?.resourceVersion ?? resourceVersion;
            onEvent(event);
          },
        }).catch(async (err: unknown) => {
          console.log(`watch ${path} failed, again in 1 s: ${String(err)}`);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        });
      }
    })();
  });
  await connectedOnce;
}

async function main(argv: readonly string[]): Promise<void> {
  const [kubeconfig, namespace, claimLabel, poolLabel, poolName] = argv;
  if (!kubeconfig || !namespace || !claimLabel || !poolLabel || !poolName)
    throw new Error("usage: floorclient.ts <kubeconfig> <namespace> <claim kind> <pool kind> <pool name>");
  const kind = floorKind(claimLabel, poolLabel);
  // The controller's own way to the API server (its --kubeconfig), credentials read once and kept.
  const kube = await loadClusterAccess(kubeconfig);
  const others = kind.barrierListType && new ResourceClient<KubeObject>(kube, kind.barrierListType);
  let seen = 0;
  const bind = async (claim: KubeObject): Promise<void> => {
    const address = nthAddress(++seen);
    const { name = "", resourceVersion } = claim.metadata;
    if (others) await others.list(namespace, resourceVersion ? { notOlderThan: resourceVersion } : {});
    await kind.bareBind(kube, { namespace, name, resourceVersion }, poolName, address);
  };
  const claims = new ResourceClient<KubeObject>(kube, kind.claimType);
  await watchForever(kube, claims.collectionPath(namespace), (event) => {
    const claim = event.object as KubeObject;
    if (event.type !== "ADDED" || (claim.metadata.finalizers?.length ?? 0) > 0) return;
    bind(claim).catch((err: unknown) => console.log(`claim ${claim.metadata.name ?? "?"}: ${String(err)}`));
  });
  // The records' events reach the floor as they reach the controller; nothing is done with them.
  const records = new ResourceClient<KubeObject>(kube, kind.recordType);
  await watchForever(kube, records.collectionPath(namespace), () => undefined);
  console.log("ready");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  });
