/**
 * `npm run demo`: the main job, end to end, on an embedded local control plane. Starts the plane with our CRDs,
 * runs the controller, applies config/samples (an IPv4 pool with several ranges and a preallocation, an IPv6 pool, a
 * claim that requests an address, and four claims on a pool of three), and prints who got which address.
 *
 *   npm run demo              print the table and stop everything
 *   npm run demo -- --keep    keep the plane and controller running; prints the KUBECONFIG to explore with kubectl
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import type { IPAddress, IPClaim, IPPool } from "../api/v1alpha1/types.js";
import { IPCLAIM_KIND, IPPOOL_KIND, READY_CONDITION } from "../api/v1alpha1/types.js";
import { Manager } from "../src/controllers/manager.js";
import { createLogger } from "../src/runtime/logger.js";
import { clients, type Clients } from "./testkit/ipam.js";
import { CAPI_CRDS, OUR_CRDS, repoRoot } from "./testkit/cluster.js";
import { existsSync } from "node:fs";
import { LocalPlane } from "./testkit/plane.js";
import { poll } from "./testkit/wait.js";

const SAMPLES = join(repoRoot, "config", "samples");

type Sample = IPPool | IPClaim;

function loadSamples(): Sample[] {
  const docs: Sample[] = [];
  for (const file of readdirSync(SAMPLES).sort()) {
    if (!file.endsWith(".yaml") || file === "kustomization.yaml") continue;
    for (const doc of loadAll(readFileSync(join(SAMPLES, file), "utf8"))) {
      const obj = doc as Sample | null;
      if (obj?.kind === IPPOOL_KIND || obj?.kind === IPCLAIM_KIND) docs.push(obj);
    }
  }
  // Pools first, as `kubectl apply` users usually do; the controller copes with either order.
  return docs.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === IPPOOL_KIND ? -1 : 1));
}

async function apply(c: Clients, samples: Sample[]): Promise<void> {
  for (const s of samples) {
    const ns = s.metadata.namespace ?? "default";
    if (s.kind === IPPOOL_KIND) await c.pools.create(ns, s as IPPool);
    else await c.claims.create(ns, s as IPClaim);
  }
}

/** Waits until every claim has a Ready condition (True or False). */
async function settle(c: Clients, count: number): Promise<IPClaim[]> {
  let claims: IPClaim[] = [];
  const decided = (cl: IPClaim): boolean => cl.status?.conditions?.some((x) => x.type === READY_CONDITION) ?? false;
  // After a minute the table shows whatever state the claims are in.
  await poll(
    async () => {
      claims = (await c.claims.list()).items;
      return claims.filter(decided).length >= count;
    },
    60_000,
    200,
  );
  return claims;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function resultOf(cl: IPClaim): string {
  const ready = cl.status?.conditions?.find((x) => x.type === READY_CONDITION);
  if (ready?.status === "True") return "Allocated";
  return `${ready?.reason ?? "Pending"}: ${cl.status?.errorMessage ?? ready?.message ?? ""}`;
}

function claimRow(cl: IPClaim, ip: IPAddress | undefined): string[] {
  if (!ip) return [cl.metadata.name ?? "", cl.spec.pool.name, "-", "-", "-", resultOf(cl)];
  return [
    cl.metadata.name ?? "",
    cl.spec.pool.name,
    ip.spec.address,
    String(ip.spec.prefix ?? ""),
    ip.spec.gateway ?? "-",
    resultOf(cl),
  ];
}

function claimRows(claims: IPClaim[], addresses: Map<string, IPAddress>): string[][] {
  const sorted = [...claims].sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  return [
    ["CLAIM", "POOL", "ADDRESS", "PREFIX", "GATEWAY", "RESULT"],
    ...sorted.map((cl) => claimRow(cl, addresses.get(cl.status?.address?.name ?? ""))),
  ];
}

async function main(): Promise<void> {
  const keep = process.argv.includes("--keep");
  console.log("Starting a local control plane (the first run builds it from Go modules; see README)...");
  const started = Date.now();
  const plane = await LocalPlane.start({ crdDirs: existsSync(CAPI_CRDS) ? [OUR_CRDS, CAPI_CRDS] : [OUR_CRDS] });
  console.log(`Control plane ready in ${((Date.now() - started) / 1000).toFixed(1)} s at ${plane.server}`);
  const manager = new Manager(plane.kubeConfig, { logger: createLogger({ level: "warn", format: "text" }) });
  try {
    await manager.start();
    const c = clients(plane.kubeConfig);
    const samples = loadSamples();
    await apply(c, samples);
    console.log(`Applied ${samples.length} objects from config/samples; waiting for the controller...\n`);
    const claims = await settle(c, samples.filter((s) => s.kind === IPCLAIM_KIND).length);
    const addresses = new Map((await c.addresses.list()).items.map((a) => [a.metadata.name ?? "", a]));
    console.log(table(claimRows(claims, addresses)));
    const pools = (await c.pools.list()).items;
    console.log(
      "\n" +
        table([
          ["POOL", "STRATEGY", "TOTAL", "USED", "FREE"],
          ...pools.map((p) => [
            p.metadata.name ?? "",
            p.spec.allocationStrategy || "sequential",
            String(p.status?.total ?? "-"),
            String(p.status?.used ?? "-"),
            String(p.status?.free ?? "-"),
          ]),
        ]),
    );
    if (keep) {
      console.log(
        `\nStill running. In another shell:\n  export KUBECONFIG=${plane.kubeconfigPath}\n  kubectl get ippools,ipclaims,ipaddresses.ipam.metal3.io\nPress Ctrl-C to stop.`,
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
