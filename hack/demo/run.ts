/**
 * The demo's work on a running control plane with the controller serving it: applies config/samples (Metal3 IPPools
 * and IPClaims in `default`) and config/samples/clusterapi (IPAddressClaims on a Metal3 IPPool, an InClusterIPPool and
 * a GlobalInClusterIPPool, in `capi-demo`), waits for every claim to be decided, and reads back one row per claim and
 * per pool. Kept apart from hack/demo.ts (the command) so that hack/demo/demo.test.ts runs exactly what it prints.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  GLOBAL_INCLUSTER_IPPOOL,
  INCLUSTER_IPPOOL,
  IPADDRESS,
  IPCLAIM,
  IPPOOL,
  resourceType,
  type ResourceDescriptor,
} from "../../api/registry.js";
import {
  READY_CONDITION,
  type Condition,
  type IPAddress,
  type IPClaim,
  type IPPool,
} from "../../api/v1alpha1/types.js";
import { isConflict } from "../../src/kube/errors.js";
import { ResourceClient, type KubeObject } from "../../src/kube/resource.js";
import { repoRoot } from "../testkit/cluster.js";
import { poll } from "../testkit/wait.js";

export const SAMPLES = join(repoRoot, "config", "samples");
export const CLUSTER_API_SAMPLES = join(SAMPLES, "clusterapi");

/** The pool kinds, in the order the tables show them. */
export const POOL_KINDS = [IPPOOL, INCLUSTER_IPPOOL, GLOBAL_INCLUSTER_IPPOOL] as const;
const CLAIM_DESCRIPTORS = [IPCLAIM, CAPI_IPADDRESSCLAIM] as const;
type Descriptor = (typeof POOL_KINDS)[number] | (typeof CLAIM_DESCRIPTORS)[number];

/** One object of the samples. */
export interface Sample extends KubeObject {
  spec?: unknown;
}

/** Every object of the YAML files of `dir` (kustomization.yaml aside), in file order. */
export function loadSamples(dir: string): Sample[] {
  const out: Sample[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith(".yaml") || file === "kustomization.yaml") continue;
    for (const doc of loadAll(readFileSync(join(dir, file), "utf8"))) if (doc) out.push(doc as Sample);
  }
  return out;
}

/** One claim and what it got. */
export interface ClaimRow {
  namespace: string;
  kind: string;
  name: string;
  poolKind: string;
  pool: string;
  address: string;
  prefix: string;
  gateway: string;
  result: string;
}

/** One pool and its counts. */
export interface PoolRow {
  kind: string;
  namespace: string;
  name: string;
  total: string;
  used: string;
  free: string;
}

export interface DemoResult {
  claims: ClaimRow[];
  pools: PoolRow[];
  /** Sample kinds that were not applied, and why. */
  skipped: string[];
}

const descriptorOf = (kind: string | undefined): Descriptor | undefined =>
  [...POOL_KINDS, ...CLAIM_DESCRIPTORS].find((d) => d.kind === kind);

function clientsOf(kc: KubeConfig): Map<Descriptor, ResourceClient<KubeObject>> {
  return new Map(
    [...POOL_KINDS, ...CLAIM_DESCRIPTORS].map((d) => [d, new ResourceClient<KubeObject>(kc, resourceType(d))] as const),
  );
}

async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  try {
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
}

/** Namespaces, then pools, then claims (as `kubectl apply` users usually order them; the controller copes with any). */
async function apply(kc: KubeConfig, samples: Sample[], clusterApi: boolean): Promise<string[]> {
  const clients = clientsOf(kc);
  const skipped: string[] = [];
  for (const s of samples.filter((x) => x.kind === "Namespace")) await ensureNamespace(kc, s.metadata.name ?? "");
  const rank = (s: Sample): number =>
    (POOL_KINDS as readonly ResourceDescriptor[]).includes(descriptorOf(s.kind)!) ? 0 : 1;
  for (const s of samples.filter((x) => descriptorOf(x.kind)).sort((a, b) => rank(a) - rank(b))) {
    const d = descriptorOf(s.kind)!;
    if (d === CAPI_IPADDRESSCLAIM && !clusterApi) {
      if (!skipped.includes(d.kind)) skipped.push(d.kind);
      continue;
    }
    await clients.get(d)!.create(s.metadata.namespace ?? "", s);
  }
  return skipped;
}

const readyOf = (conditions: readonly Condition[] | undefined): Condition | undefined =>
  conditions?.find((c) => c.type === READY_CONDITION);

function resultOf(ready: Condition | undefined, errorMessage?: string): string {
  if (ready?.status === "True") return "Allocated";
  return `${ready?.reason ?? "Pending"}: ${errorMessage ?? ready?.message ?? ""}`;
}

const nsName = (o: KubeObject): string => `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;

/** The address columns of a claim's row, from its record (dashes while it has none). */
function addressColumns(a: { spec: { address: string; prefix?: number; gateway?: string } } | undefined) {
  return {
    address: a?.spec.address ?? "-",
    prefix: a ? String(a.spec.prefix ?? "") : "-",
    gateway: a?.spec.gateway ?? "-",
  };
}

const ipClaimRow = (c: IPClaim, a: IPAddress | undefined): ClaimRow => ({
  namespace: c.metadata.namespace ?? "",
  kind: IPCLAIM.kind,
  name: c.metadata.name ?? "",
  poolKind: IPPOOL.kind,
  pool: c.spec.pool.name,
  ...addressColumns(a),
  result: resultOf(readyOf(c.status?.conditions), c.status?.errorMessage),
});

const capiClaimRow = (c: IPAddressClaim, a: CapiIPAddress | undefined): ClaimRow => ({
  namespace: c.metadata.namespace ?? "",
  kind: CAPI_IPADDRESSCLAIM.kind,
  name: c.metadata.name ?? "",
  poolKind: c.spec.poolRef.kind,
  pool: c.spec.poolRef.name,
  ...addressColumns(a),
  result: resultOf(readyOf(c.status?.conditions as Condition[] | undefined)),
});

/** Lists every object of `d`; an empty list when the kind is not served (Cluster API's CRDs absent). */
async function listAll<T extends KubeObject>(kc: KubeConfig, d: ResourceDescriptor): Promise<T[]> {
  return await new ResourceClient<T>(kc, resourceType(d))
    .list()
    .then((l) => l.items)
    .catch(() => [] as T[]);
}

async function claimRows(kc: KubeConfig): Promise<ClaimRow[]> {
  const byKey = <T extends KubeObject>(items: T[]): Map<string, T> => new Map(items.map((a) => [nsName(a), a]));
  const m3 = byKey(await listAll<IPAddress>(kc, IPADDRESS));
  const capi = byKey(await listAll<CapiIPAddress>(kc, CAPI_IPADDRESS));
  const ref = (c: KubeObject, name: string | undefined): string => `${c.metadata.namespace ?? ""}/${name ?? ""}`;
  const rows = [
    ...(await listAll<IPClaim>(kc, IPCLAIM)).map((c) => ipClaimRow(c, m3.get(ref(c, c.status?.address?.name)))),
    ...(await listAll<IPAddressClaim>(kc, CAPI_IPADDRESSCLAIM)).map((c) =>
      capiClaimRow(c, capi.get(ref(c, c.status?.addressRef?.name))),
    ),
  ];
  const key = (r: ClaimRow): string => `${r.namespace}/${r.kind}/${r.name}`;
  return rows.sort((a, b) => key(a).localeCompare(key(b)));
}

async function poolRows(kc: KubeConfig): Promise<PoolRow[]> {
  const rows: PoolRow[] = [];
  const count = (n: number | undefined): string => (n === undefined ? "-" : String(n));
  for (const p of (await new ResourceClient<IPPool>(kc, resourceType(IPPOOL)).list()).items)
    rows.push({
      kind: IPPOOL.kind,
      namespace: p.metadata.namespace ?? "",
      name: p.metadata.name ?? "",
      total: count(p.status?.total),
      used: count(p.status?.used),
      free: count(p.status?.free),
    });
  for (const d of [INCLUSTER_IPPOOL, GLOBAL_INCLUSTER_IPPOOL]) {
    for (const p of (await new ResourceClient<InClusterIPPool>(kc, resourceType(d)).list()).items) {
      const counts = p.status?.ipAddresses;
      rows.push({
        kind: d.kind,
        namespace: p.metadata.namespace ?? "-",
        name: p.metadata.name ?? "",
        total: count(counts?.total),
        used: count(counts?.used),
        free: count(counts?.free),
      });
    }
  }
  return rows;
}

/** Pools whose `used` agrees with the claims bound to them (pool counts are written a little after the claims). */
function countsAgree(claims: readonly ClaimRow[], pools: readonly PoolRow[]): boolean {
  return pools.every((p) => {
    const bound = claims.filter(
      (c) =>
        c.poolKind === p.kind &&
        c.pool === p.name &&
        (p.namespace === "-" || c.namespace === p.namespace) &&
        c.address !== "-",
    ).length;
    return p.used === String(bound);
  });
}

/**
 * Applies the samples and waits (up to `timeoutMs`) until every claim is decided (a Ready condition, True or False)
 * and every pool's count agrees; then returns the rows as they are. `clusterApi`: Cluster API's CRDs are served (else
 * the IPAddressClaims are skipped and said so).
 */
export async function runDemo(kc: KubeConfig, clusterApi: boolean, timeoutMs = 60_000): Promise<DemoResult> {
  const samples = [...loadSamples(SAMPLES), ...loadSamples(CLUSTER_API_SAMPLES)];
  const skipped = await apply(kc, samples, clusterApi);
  const expected = samples.filter(
    (s) => s.kind === IPCLAIM.kind || (clusterApi && s.kind === CAPI_IPADDRESSCLAIM.kind),
  ).length;
  let result: DemoResult = { claims: [], pools: [], skipped };
  await poll(
    async () => {
      result = { claims: await claimRows(kc), pools: await poolRows(kc), skipped };
      const decided = result.claims.filter((c) => !c.result.startsWith("Pending")).length;
      return decided >= expected && countsAgree(result.claims, result.pools);
    },
    timeoutMs,
    250,
  );
  return result;
}
