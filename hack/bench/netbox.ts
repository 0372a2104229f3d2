/**
 * The NetBox burst: `count` IPAddressClaims created at once on one NetBoxIPPool whose addresses a real
 * NetBox hands out, served by the compiled controller; beside it, in the same run, a bare client making the NetBox
 * calls those claims need at the least (netboxbare.ts) on a fresh prefix of the same size, once right before the burst
 * and once right after (the machine's load drifts; the ratio is to their mean). Reports the burst's usual
 * figures (bindBurst), the controller's NetBox calls per claim and its passes (its /metrics), the bare client's time
 * and the ratio of the two, and checks NetBox's side: exactly `count` records of ours in the prefix, one per claim,
 * each holding the address its claim was bound to.
 */
import { OWNER_TAG, parseKey } from "../../src/controllers/netbox/identity.js";
import type { NetBoxServer } from "../testkit/netbox.js";
import { processesMentioning } from "../testkit/reaper.js";
import type { BenchController } from "./controller.js";
import { capiClaimKind } from "./kinds.js";
import { bareNetBoxCalls, type BareNetBoxResult } from "./netboxbare.js";
import { activityDelta, readActivity, type ControllerActivity } from "./netboxcalls.js";
import { ActivityTimeline, type TimelinePoint } from "./netboxtimeline.js";
import { netBoxBenchPool, prefixLengthFor } from "./netboxpool.js";
import { treeCpuSeconds } from "./proctree.js";
import { bindBurst, boundAddresses, type BenchContext, type BurstResult } from "./scenarios.js";

/** Options of {@link netBoxBurst}. */
export interface NetBoxBurstOptions {
  count: number;
  concurrency: number;
  /** A controller started with its /metrics served ({@link BenchController.metricsPort}). */
  controller: BenchController;
  settleMs: number;
  /** The local plane's processes (etcd, kube-apiserver), whose CPU in the burst's window is reported. */
  planePids: () => number[];
}

/** CPU seconds of the burst's window by who spent them (process trees, from /proc). */
export interface BurstCpu {
  netbox: number;
  /** etcd and kube-apiserver. */
  plane: number;
  controller: number;
  /** This process: the claims' creates, the watch, the readings. */
  bench: number;
}

/** What NetBox holds for the burst's claims, read back by the admin once all were bound. */
export interface NetBoxCheck {
  /** Records of ours (our tag) in the burst's prefix. */
  records: number;
  /** Claims bound to exactly the address of the one record described as theirs. */
  matching: number;
  /** Distinct addresses among those records. */
  distinct: number;
}

/** Result of {@link netBoxBurst}. */
export interface NetBoxBurstResult {
  /** The burst's figures, as for the other pool kinds. */
  burst: BurstResult;
  /** The prefix the pool served. */
  prefix: string;
  /** The controller's NetBox calls and passes over the burst's window. */
  activity: ControllerActivity;
  /** The same, read every {@link TIMELINE_STEP_MS} from the window's start: where the time went. */
  timeline: TimelinePoint[];
  /** The bare client's runs, before and after the burst, each on a prefix of its own. */
  bare: BareRun[];
  /** Where the burst window's CPU went. */
  cpu: BurstCpu;
  check: NetBoxCheck;
}

/** One run of the bare client: its calls, its prefix, and how many distinct addresses NetBox gave it. */
export type BareRun = Omit<BareNetBoxResult, "addresses"> & {
  prefix: string;
  distinct: number;
  /** CPU seconds NetBox (PostgreSQL, Redis, gunicorn) spent meanwhile. */
  netboxCpu: number;
};

/** NetBox's processes: those naming its folder, and (through the tree) PostgreSQL's backends. */
const netBoxCpu = (server: NetBoxServer): number => treeCpuSeconds(processesMentioning(server.dir));

/** The bare client on a fresh prefix for `count` claims. */
async function bareRun(server: NetBoxServer, count: number, namespace: string): Promise<BareRun> {
  const prefix = await server.admin.freshPrefix(prefixLengthFor(count));
  const cpuBefore = netBoxCpu(server);
  const { addresses, ...figures } = await bareNetBoxCalls(server, prefix, namespace, count);
  const netboxCpu = netBoxCpu(server) - cpuBefore;
  return { ...figures, prefix: prefix.cidr, distinct: new Set(addresses).size, netboxCpu };
}

/** CPU seconds so far of NetBox, the plane and this process (the controller's come from bindBurst). */
function cpuNow(server: NetBoxServer, planePids: () => number[]): Omit<BurstCpu, "controller"> {
  const own = process.cpuUsage();
  return { netbox: netBoxCpu(server), plane: treeCpuSeconds(planePids()), bench: (own.user + own.system) / 1e6 };
}

/** Records created by a warm-up batch before anything is timed: gunicorn's first answers of a route are slower. */
const WARM_UP_RECORDS = 10;

export async function netBoxBurst(
  ctx: BenchContext,
  server: NetBoxServer,
  options: NetBoxBurstOptions,
): Promise<NetBoxBurstResult> {
  const { controller, count } = options;
  const port = controller.metricsPort;
  if (port === undefined) throw new Error("the NetBox burst needs a controller serving /metrics");
  await ensureOwnerTag(server);
  const warm = await server.admin.freshPrefix(24);
  await bareNetBoxCalls(server, warm, "bench-warm-up", WARM_UP_RECORDS);
  const bareBefore = await bareRun(server, count, "bench-bare-before");

  const pool = netBoxBenchPool(server);
  const kind = capiClaimKind(pool);
  let cpuBefore: Omit<BurstCpu, "controller"> | undefined;
  let cpuAfter: Omit<BurstCpu, "controller"> | undefined;
  let before: ControllerActivity | undefined;
  let after: ControllerActivity | undefined;
  const timeline = new ActivityTimeline(port);
  const burst = await bindBurst(ctx, kind, {
    count,
    concurrency: options.concurrency,
    controller,
    settleMs: options.settleMs,
    window: {
      opened: async () => {
        cpuBefore = cpuNow(server, options.planePids);
        before = await readActivity(port);
        timeline.start(before);
      },
      closed: async () => {
        cpuAfter = cpuNow(server, options.planePids);
        await timeline.stop();
        after = await readActivity(port);
      },
    },
  });
  if (!before || !after || !cpuBefore || !cpuAfter) throw new Error("the burst's window was never closed");
  const cpu: BurstCpu = {
    netbox: cpuAfter.netbox - cpuBefore.netbox,
    plane: cpuAfter.plane - cpuBefore.plane,
    controller: burst.cpuSeconds,
    bench: cpuAfter.bench - cpuBefore.bench,
  };
  // bindBurst names its pool "burst" in its one namespace.
  const made = pool.created("burst");
  if (!made) throw new Error("the NetBox burst made no pool");
  const claims = await boundAddresses(ctx.kc, kind, [made.namespace]);
  const bareAfter = await bareRun(server, count, "bench-bare-after");
  return {
    burst,
    prefix: made.cidr,
    activity: activityDelta(before, after),
    timeline: timeline.points,
    bare: [bareBefore, bareAfter],
    cpu,
    check: checkRecords(await ownedRecords(server, made.cidr), made.namespace, claims),
  };
}

/** Our tag, made by the admin when missing (the bare client's listing filters on it; NetBox refuses unknown tags). */
async function ensureOwnerTag(server: NetBoxServer): Promise<void> {
  const found = (await server.admin.request("GET", `/api/extras/tags/?slug=${OWNER_TAG.slug}`)) as { count: number };
  if (found.count === 0) await server.admin.request("POST", "/api/extras/tags/", { ...OWNER_TAG });
}

/** A record as the admin reads it. */
interface RecordView {
  id: number;
  address: string;
  description: string;
}

/** Every record of ours inside `cidr`, every page (keyset paging by id; NetBox caps a page at 1,000). */
async function ownedRecords(server: NetBoxServer, cidr: string): Promise<RecordView[]> {
  const found: RecordView[] = [];
  for (let after = 0; ;) {
    const page = (await server.admin.request(
      "GET",
      `/api/ipam/ip-addresses/?parent=${encodeURIComponent(cidr)}&tag=${OWNER_TAG.slug}&ordering=id&id__gt=${after}&limit=1000`,
    )) as { count: number; results: RecordView[] };
    found.push(...page.results);
    const last = page.results.at(-1);
    if (!last || page.results.length >= page.count) return found;
    after = last.id;
  }
}

/** Compares NetBox's records with the claims' addresses (claim name → address) of `namespace`. */
export function checkRecords(
  records: readonly RecordView[],
  namespace: string,
  claims: ReadonlyMap<string, string>,
): NetBoxCheck {
  // By the claim a record names, whatever installation made it: the bench runs one.
  const byClaim = new Map<string, string[]>();
  for (const r of records) {
    const key = parseKey(r.description);
    const claim = key ? `${key.namespace}/${key.name}` : "";
    byClaim.set(claim, [...(byClaim.get(claim) ?? []), r.address]);
  }
  let matching = 0;
  for (const [name, address] of claims) {
    const mine = byClaim.get(`${namespace}/${name}`) ?? [];
    if (mine.length === 1 && mine[0]?.split("/")[0] === address) matching++;
  }
  return { records: records.length, matching, distinct: new Set(records.map((r) => r.address)).size };
}
