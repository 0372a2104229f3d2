/** The NetBox burst's table section (scenario 6; netbox.ts): the controller's figures beside the bare client's. */
import type { NetBoxBurstResult } from "./netbox.js";
import { totalCalls, type RouteCalls } from "./netboxcalls.js";
import { fmt, fmtBytes, fmtMs } from "./stats.js";
import type { Row, Section } from "./table.js";

/** `POST available-ips 20 (1.2 s)`: the calls of each route, the last path segments naming it. */
export function describeCalls(calls: Readonly<Record<string, RouteCalls>>, perClaim?: number): string {
  return Object.entries(calls)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, c]) => {
      const [method, route] = key.split(" ");
      const name = (route ?? "").split("/").filter((part) => part && part !== "api" && part !== "{id}");
      const n = perClaim ? fmt(c.count / perClaim) : fmt(c.count);
      return `${method} ${name.slice(-1)[0] ?? route} ${n} (${fmtMs((c.seconds * 1000) / c.count)} each)`;
    })
    .join(", ");
}

/** The verdict of the NetBox side's check: every record of ours one claim's, every address once, bare runs too. */
export function checkOf(r: Pick<NetBoxBurstResult, "burst" | "check" | "bare">): string {
  const { count } = r.burst;
  const { records, matching, distinct } = r.check;
  const bareOk = r.bare.every((run) => run.distinct === run.count);
  return records === count && matching === count && distinct === count && bareOk ? "OK" : "FAIL";
}

/** The bare client's mean time over its runs (NaN without one). */
export function meanBareMs(r: Pick<NetBoxBurstResult, "bare">): number {
  return r.bare.reduce((sum, run) => sum + run.ms, 0) / r.bare.length;
}

export function netBoxSection(r: NetBoxBurstResult): Section {
  const b = r.burst;
  const cpu = r.cpu;
  const controllerCalls = totalCalls(r.activity.netbox);
  const bareMs = meanBareMs(r);
  const bareCalls = totalCalls(r.bare[0]?.calls ?? {});
  const passes = Object.entries(r.activity.passes)
    .map(([controller, p]) => `${controller} ${fmt(p.count)} (${fmt(p.seconds)} s)`)
    .join(", ");
  const rows: Row[] = [
    {
      metric: `${b.count} IPAddressClaims on a NetBoxIPPool (${r.prefix}): bound in`,
      value: fmtMs(b.bindAllMs),
      detail: `${fmt(b.claimsPerSecond)} claims/s${b.timedOut ? "; TIMED OUT" : ""}; creates took ${fmtMs(b.createAllMs)}`,
    },
    {
      metric: "  bare client's NetBox calls, same count",
      value: fmtMs(bareMs),
      detail:
        `controller / bare ${fmt(b.bindAllMs / bareMs)}× (the issue's aim: at most 1.5×); mean of ` +
        r.bare.map((run, i) => `${fmtMs(run.ms)} ${i === 0 ? "before" : "after"} (${run.prefix})`).join(", "),
    },
    {
      metric: "  controller CPU",
      value: `${fmt(b.cpuSeconds)} s`,
      detail: `${fmt((b.cpuSeconds * 1000) / b.count)} s per 1,000 claims`,
    },
    {
      metric: "  controller RSS after",
      value: fmtBytes(b.memoryAfter.rss),
      detail: `${fmtBytes(b.memorySettled.rss)} after ${fmt(b.settleMs / 1000)} s idle`,
    },
    {
      metric: "  API requests per claim",
      value: `${fmt(b.requests.writes)} writes`,
      detail: `${fmt(b.requests.reads)} reads; ${Object.entries(b.requests.byVerb)
        .sort(([x], [y]) => (x < y ? -1 : 1))
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(", ")}`,
    },
    {
      metric: "  NetBox requests per claim (controller)",
      value: fmt(controllerCalls.count / b.count),
      detail: `${fmt(controllerCalls.count)} calls, ${fmt(controllerCalls.seconds)} s waiting: ${describeCalls(r.activity.netbox)}`,
    },
    {
      metric: "  NetBox requests per claim (bare client)",
      value: fmt(bareCalls.count / (r.bare[0]?.count ?? b.count)),
      detail: `${fmt(bareCalls.count)} calls, ${fmt(bareCalls.seconds)} s waiting: ${describeCalls(r.bare[0]?.calls ?? {})}`,
    },
    { metric: "  controller passes in the window", value: "", detail: passes },
    {
      metric: "  CPU in the window, by process tree",
      value: `${fmt(cpu.netbox + cpu.plane + cpu.controller + cpu.bench)} s`,
      detail:
        `NetBox ${fmt(cpu.netbox)} s (bare: ${r.bare.map((run) => `${fmt(run.netboxCpu)} s`).join(", ")}), ` +
        `etcd + kube-apiserver ${fmt(cpu.plane)} s, controller ${fmt(cpu.controller)} s, bench (creates, watch) ${fmt(cpu.bench)} s`,
    },
    {
      metric: "  NetBox holds, in the pool's prefix",
      value: `${r.check.records} records`,
      detail:
        `${r.check.matching}/${b.count} claims bound to their one record's address, ${r.check.distinct} distinct; ` +
        `Kubernetes: ${b.distinctAddresses}/${b.boundVerified} distinct; ` +
        `bare: ${r.bare.map((run) => `${run.distinct}/${run.count}`).join(", ")} distinct; ${checkOf(r)}`,
    },
  ];
  return {
    title:
      `6. NetBox: ${b.count} IPAddressClaims at once (${b.concurrency} creates in flight) on one NetBoxIPPool of a ` +
      "real NetBox, compiled controller; bare = a client making the NetBox calls they need at the least, same run",
    rows,
  };
}
