/**
 * `npm run bench`: a benchmark, not a test. Prints a table of figures and writes them as JSON (.cache/bench/last.json).
 *
 *   0. machine: the load average at the start, and the share of CPU time busy and stolen by the hypervisor over the
 *      run (bench/machine.ts), with a NO where the figures are not a quiet machine's
 *   1. burst: BENCH_CLAIMS claims of each kind (default 1000; 10,000 too with `--large`) created at once on one pool;
 *      time until all are bound, distinctness, controller CPU seconds and RSS, API requests per claim (from the API
 *      server's apiserver_request_total), and the ratio to a bare client doing the unavoidable writes in the same run.
 *      Kinds: IPClaim and IPAddressClaim on an IPPool, IPAddressClaim on an InClusterIPPool and on a
 *      GlobalInClusterIPPool (claims spread over 3 namespaces); see bench/kinds.ts
 *   2. latency: BENCH_LATENCY_CLAIMS claims (default 50) one at a time on a quiet pool; median and p90
 *   3. allocator only: cost of allocations 1-100 versus 9,901-10,000 in a /16 and a /64, sequential and random;
 *      3b: cost per decision against the number of entries (10 to 100,000): an in-cluster pool's excluded addresses,
 *      a Metal3 pool's entries with preallocations (bench/entries.ts)
 *   4. memory: the controller process idle, and holding BENCH_ADDRESSES IPAddresses (default 10000)
 *   5. trickle: BENCH_TRICKLE_CLAIMS claims (default 100) of each kind created one at a time into pools already holding
 *      BENCH_TRICKLE_HELD claims (default 0,2000; 10000 too with `--large`), each controller after a warm-up of
 *      BENCH_TRICKLE_WARMUP claims (default 200) in a pool of its own; per claim: controller CPU, API requests,
 *      body bytes at the controller's API door, create → bound (median, p99). Then its floor (5b): the same trickle into
 *      an empty pool served by no controller but a bare client (bench/floorclient.ts) that receives each claim's events
 *      and makes its four requests and nothing else; its CPU per claim, and the controller's over it
 *
 *   6. netbox (only when BENCH_SCENARIOS names it): BENCH_CLAIMS IPAddressClaims at once on a NetBoxIPPool of a real
 *      NetBox (the test kit's), beside a bare client making the NetBox calls they need at the least; NetBox calls per
 *      claim from the controller's /metrics, CPU by process tree, NetBox's records checked (see bench/netbox.ts)
 *   7. admission only: the pool webhooks' validation of pools of 10 to 100,000 entries (bench/admission.ts)
 *   8. site (only when BENCH_SCENARIOS names it): BENCH_SITE_ADDRESSES addresses (default 100,000) held across
 *      BENCH_SITE_POOLS pools (default 1,000) of every kind in 10 namespaces, both claim APIs; a trickle into the empty
 *      site, a restart with the site held, a trickle and a burst on it, a handover to a warm standby; CPU of the controller, the API server and
 *      etcd, requests, RSS and heap, V8's collections and the memory releases per stage (see bench/sitescenario.ts);
 *      its controllers release memory every BENCH_SITE_RELEASE_INTERVAL seconds (default 2; the controller's is 60)
 *
 * BENCH_SCENARIOS=trickle (say) runs only the named ones (allocator, burst, memory, trickle, netbox, admission, site; all
 * but netbox and site by default); BENCH_POOLS=IPPool (say)
 * only the claim kinds on the named pool kinds (IPPool, InClusterIPPool, GlobalInClusterIPPool).
 * Scenarios 3 and 7 run first, before the local plane starts, so nothing else competes for the CPU. The others run against a
 * LocalPlane of their own with the compiled controller (dist/, built by `npm run bench`, as is the floor client in .cache/bench/floor) as a child process. Only a crash fails the run; everything started is
 * stopped at the end, on error and on Ctrl-C. Smoke run: `BENCH_CLAIMS=50 BENCH_ADDRESSES=200 npm run bench`.
 * BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each measured controller there; BENCH_NODE_FLAGS adds Node flags to
 * every measured process (`--perf-basic-prof` for `perf`, say).
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { CAPI_CRDS, INCLUSTER_POOL_CRDS, OUR_CRDS, repoRoot } from "./testkit/cluster.js";
import { ALLOCATOR_CASES, measureAllocator } from "./bench/allocator.js";
import { ADMISSION_SIZES, measureAdmission } from "./bench/admission.js";
import { PURE_SCENARIOS, readConfig, type BenchConfig } from "./bench/config.js";
import { ENTRIES_CASES, ENTRY_COUNTS, measureEntries } from "./bench/entries.js";
import { startBenchController, stopAllControllers } from "./bench/controller.js";
import { CAPI_IPADDRESSCLAIM, BENCH_CLAIM_KINDS, METAL3_IPCLAIM, type BenchClaimKind } from "./bench/kinds.js";
import { sectionsOf, type BenchResults } from "./bench/report.js";
import {
  bareClientCeiling,
  bindBurst,
  controllerMemory,
  idleMemory,
  singleClaimLatency,
  type BenchContext,
} from "./bench/scenarios.js";
import { renderTable } from "./bench/table.js";
import { trickle, trickleFloor, trickleProfileName } from "./bench/trickle.js";
import { describeError } from "../src/kube/errors.js";
import { LocalPlane } from "./testkit/plane.js";
import { NetBoxServer } from "./testkit/netbox.js";
import { netBoxUnavailable } from "./testkit/netboxinstall.js";
import { netBoxBurst } from "./bench/netbox.js";
import { siteChecks } from "./bench/site.js";
import { siteScenario } from "./bench/sitescenario.js";
import { machineReading, readCpuTimes } from "./bench/machine.js";

const BENCH_DIR = join(repoRoot, ".cache", "bench");
/** "IPAddressClaims on InClusterIPPool", for the progress lines. */
const plural = (kind: BenchClaimKind): string => `${kind.label}s on ${kind.pool.label}`;

let plane: LocalPlane | undefined;
let netBox: NetBoxServer | undefined;

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Stops every controller and the plane; safe to call twice. */
async function cleanup(): Promise<void> {
  await stopAllControllers();
  const [p, nb] = [plane, netBox];
  plane = undefined;
  netBox = undefined;
  await Promise.all([p?.stop(), nb?.stop()]);
}

function runAllocator(config: BenchConfig, results: BenchResults): void {
  for (const c of ALLOCATOR_CASES) {
    progress(`allocator: ${c.label}, ${config.allocations} allocations × ${config.repeats + 1}`);
    results.allocator.push(measureAllocator(c, config.allocations, config.window, config.repeats));
  }
  results.allocatorEntries = [];
  for (const c of ENTRIES_CASES) {
    for (const n of ENTRY_COUNTS) {
      progress(`allocator: ${c}, ${n} entries × ${config.repeats + 1}`);
      results.allocatorEntries.push(measureEntries(c, n, config.repeats));
    }
  }
}

function runAdmission(config: BenchConfig, results: BenchResults): void {
  results.admission = [];
  for (const n of ADMISSION_SIZES) {
    progress(`admission: pools of ${n} entries × ${config.repeats + 1}`);
    results.admission.push(measureAdmission(n, config.repeats));
  }
}

async function runClusterScenarios(config: BenchConfig, results: BenchResults): Promise<void> {
  progress("starting the local plane (etcd, kube-apiserver) with our CRDs, the in-cluster pools' and Cluster API's");
  // No kube-controller-manager: its garbage collector checks owners with GETs of its own, which would be counted as
  // the controller's requests per claim (the bench never deletes, so nothing needs collecting). The measured
  // controller serves no webhooks, so the CRDs come without their conversion webhook: the in-cluster pools' other
  // version would otherwise keep the API server retrying its watch cache beside every stage. Nor does the API server
  // check its watch caches against etcd (a beta feature on by default): every few minutes per resource it decodes
  // every object of it from etcd, which at a large site is most of the API server's CPU in any stage it falls into,
  // whatever the controller does.
  plane = await LocalPlane.start({
    crdDirs: [OUR_CRDS, INCLUSTER_POOL_CRDS, CAPI_CRDS],
    controllerManager: false,
    crdsWithoutConversionWebhooks: true,
    apiServerFlags: ["--feature-gates=DetectCacheInconsistency=false"],
  });
  const ctx: BenchContext = {
    kc: plane.kubeConfig,
    kubeconfigPath: plane.kubeconfigPath,
    logDir: join(BENCH_DIR, "logs"),
    timeoutMs: config.timeoutSeconds * 1000,
  };

  if (config.scenarios.includes("memory")) {
    progress("memory: idle node, node + tsx, idle controller (empty cluster)");
    results.idleMemory = await idleMemory(ctx);
  }
  if (config.scenarios.includes("burst")) await runBursts(ctx, config, results);
  if (config.scenarios.includes("trickle")) await runTrickles(ctx, config, results);
  if (config.scenarios.includes("netbox")) await runNetBox(ctx, config, results);
  if (config.scenarios.includes("memory")) {
    progress(`memory: loading ${config.addresses} IPAddresses, then a controller on them`);
    results.memory = await controllerMemory(ctx, { addresses: config.addresses, concurrency: config.concurrency });
  }
  // Last: its controllers serve all namespaces, so a scenario after it would share the cluster with the whole site.
  if (config.scenarios.includes("site")) {
    progress(`site: ${config.siteAddresses} addresses across ${config.sitePools} pools in 10 namespaces`);
    results.site = await siteScenario(ctx, {
      addresses: config.siteAddresses,
      pools: config.sitePools,
      trickle: config.siteTrickle,
      gapMs: config.trickleGapMs,
      burst: config.siteBurst,
      concurrency: config.concurrency,
      loadConcurrency: config.siteConcurrency,
      releaseIntervalS: config.siteReleaseIntervalS,
      planePids: () => plane?.pids ?? {},
      progress: (message) => progress(`site: ${message}`),
    });
  }
}

/** The claim kinds this run drives: those whose pool kind BENCH_POOLS names. */
function kindsOf(config: BenchConfig): BenchClaimKind[] {
  return BENCH_CLAIM_KINDS.filter((kind) => config.pools.some((label) => label === kind.pool.label));
}

/** Scenario 5: each pool size, each kind; a namespace, a pool and controllers of its own each (see trickle.ts). */
async function runTrickles(ctx: BenchContext, config: BenchConfig, results: BenchResults): Promise<void> {
  results.trickles = [];
  for (const held of config.trickleHeld)
    for (const kind of kindsOf(config)) {
      progress(`trickle: ${config.trickleClaims} ${plural(kind)} one at a time, the pool holding ${held}`);
      const result = await trickle(ctx, kind, {
        held,
        claims: config.trickleClaims,
        gapMs: config.trickleGapMs,
        concurrency: config.concurrency,
        warmup: config.trickleWarmup,
      });
      results.trickles.push(result);
      const dir = process.env.BENCH_CPU_PROF;
      if (dir)
        progress(
          `  its profile over the window: npx tsx hack/bench/cpuprofile.ts ${join(dir, trickleProfileName(kind, held))} ` +
            `25 --window=${result.monotonicWindowMs.map((ms) => ms.toFixed(0)).join(",")}`,
        );
    }
  results.floors = [];
  for (const kind of kindsOf(config)) {
    progress(`trickle floor: ${config.trickleClaims} ${plural(kind)} one at a time, served by the floor client`);
    results.floors.push(
      await trickleFloor(ctx, kind, {
        claims: config.trickleClaims,
        gapMs: config.trickleGapMs,
        warmup: config.trickleWarmup,
      }),
    );
  }
}

/**
 * Scenario 6: a NetBox of its own (the test kit's; installed first if the machine can and has none), the bare
 * client's NetBox calls, then a burst on a NetBoxIPPool served by a controller of its own with /metrics (its NetBox
 * calls are counted there). NetBox is stopped right after, so the scenarios after it do not share the cores with it.
 */
async function runNetBox(ctx: BenchContext, config: BenchConfig, results: BenchResults): Promise<void> {
  const missing = netBoxUnavailable();
  if (missing) {
    progress(`netbox: skipped: ${missing}`);
    return;
  }
  progress("netbox: starting a NetBox (PostgreSQL, Redis, gunicorn)");
  netBox = await NetBoxServer.start();
  const controller = await startBenchController(ctx.kubeconfigPath, ctx.logDir, { ports: true });
  try {
    progress(`netbox: a bare client's NetBox calls for ${config.claims} claims, then ${config.claims} IPAddressClaims`);
    results.netbox = await netBoxBurst(ctx, netBox, {
      count: config.claims,
      concurrency: config.concurrency,
      controller,
      settleMs: config.settleSeconds * 1000,
      planePids: () => Object.values(plane?.pids ?? {}).filter((pid) => pid !== undefined),
    });
  } finally {
    await controller.stop();
    await netBox.stop();
    netBox = undefined;
  }
}

/** Scenarios 1 and 2: ceilings and bursts per size and kind, then the single-claim latencies on the last controller. */
async function runBursts(ctx: BenchContext, config: BenchConfig, results: BenchResults): Promise<void> {
  // Each size's ceilings run right before its bursts, while no controller serves the cluster (a controller would
  // reconcile the bare client's claims), so both meet the cluster in the same state: with the 10,000 ceilings run
  // first, the 1,000-claim bursts came after 40,000 more writes and deletes, and their ratio fell to 0.50-0.64.
  // A controller serves one size's bursts; the next size's starts on the claims the earlier bursts left.
  for (const [i, size] of config.sizes.entries()) {
    for (const kind of kindsOf(config)) {
      progress(
        `ceiling: a bare client writes what ${size} ${plural(kind)} need, ${config.concurrency} claims in flight`,
      );
      results.ceilings.push(await bareClientCeiling(ctx, kind, size, config.concurrency));
    }
    progress(`starting the compiled controller (all namespaces) for the ${size}-claim bursts`);
    const controller = await startBenchController(ctx.kubeconfigPath, ctx.logDir);
    try {
      for (const kind of kindsOf(config)) {
        progress(`burst: ${size} ${plural(kind)}, ${config.concurrency} in flight`);
        results.bursts.push(
          await bindBurst(ctx, kind, {
            count: size,
            concurrency: config.concurrency,
            controller,
            settleMs: config.settleSeconds * 1000,
          }),
        );
      }
      if (i === config.sizes.length - 1) {
        progress(`latency: ${config.latencyClaims} IPClaims one at a time`);
        results.latency = await singleClaimLatency(ctx, METAL3_IPCLAIM, { count: config.latencyClaims, controller });
        progress(`latency: ${config.latencyClaims} IPAddressClaims one at a time`);
        results.capiLatency = await singleClaimLatency(ctx, CAPI_IPADDRESSCLAIM, {
          count: config.latencyClaims,
          controller,
        });
        results.afterBurstMemory = await controller.memory();
      }
    } finally {
      await controller.stop();
    }
  }
}

function output(config: BenchConfig, results: BenchResults): void {
  console.log(renderTable(sectionsOf(results)));
  mkdirSync(dirname(config.outFile), { recursive: true });
  const json = JSON.stringify(results, null, 2);
  writeFileSync(config.outFile, `${json}\n`);
  console.log(`JSON: ${config.outFile}${results.error ? "   (partial: the run failed, see the error below)" : ""}`);
  if (config.printJson) console.log(json);
}

async function main(): Promise<number> {
  const config = readConfig(process.env, join(BENCH_DIR, "last.json"), process.argv.slice(2));
  rmSync(join(BENCH_DIR, "logs"), { recursive: true, force: true });
  const cpuAtStart = readCpuTimes();
  const results: BenchResults = {
    startedAt: new Date().toISOString(),
    host: {
      node: process.version,
      platform: `${process.platform}/${process.arch}`,
      cpus: cpus().length,
      loadAverageAtStart: loadavg(),
    },
    config,
    allocator: [],
    ceilings: [],
    bursts: [],
  };
  let failure: unknown;
  try {
    if (config.scenarios.includes("allocator")) runAllocator(config, results);
    if (config.scenarios.includes("admission")) runAdmission(config, results);
    if (config.scenarios.some((s) => !PURE_SCENARIOS.includes(s))) await runClusterScenarios(config, results);
  } catch (err) {
    failure = err;
    results.error = describeError(err);
  } finally {
    progress("stopping the controller and the plane");
    await cleanup();
  }
  results.machine = machineReading(results.host.cpus, results.host.loadAverageAtStart, cpuAtStart, readCpuTimes());
  output(config, results);
  const over = config.siteCheck && results.site ? siteChecks(results.site).filter((c) => !c.ok) : [];
  if (over.length > 0) failure ??= new Error(`the site is over its bounds: ${over.map((c) => c.check).join("; ")}`);
  if (failure !== undefined) {
    console.error(failure instanceof Error ? (failure.stack ?? failure.message) : describeError(failure));
    return 1;
  }
  return 0;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping everything`);
    void cleanup().finally(() => process.exit(130));
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    void cleanup().finally(() => process.exit(1));
  },
);
