/**
 * `kubectl ipam who ADDRESS|CLAIM`: who holds an address, or what a claim holds, with the claim's owners up to its
 * Cluster and the host CAPM3 recorded, on pools of every kind. Pure: finding targets in an inventory and rendering;
 * the owner chain is read elsewhere (read.ts) and handed in. An address of a GlobalInClusterIPPool is found whatever
 * namespace holds it (the pool's addresses are shared by every namespace).
 */
import { CAPI_IPAM_GROUP } from "../../api/capi/types.js";
import { CLUSTER_NAME_LABEL, GROUP } from "../../api/v1alpha1/types.js";
import { IPPOOL, isGlobalKind, poolKindOfRef, type ClaimKind, type PoolKindName } from "../../api/registry.js";
import { canonicalAddress, parseAddress } from "../ipam/index.js";
import {
  allocatorOf,
  allPools,
  distinct,
  holdingsOfAddress,
  ipAddressClaimState,
  ipClaimState,
  type ClaimState,
  type Holding,
  type Inventory,
} from "./inventory.js";
import { table } from "./output.js";
import { claimRole, type ClaimRole } from "./reserve.js";
import { idOf, poolTitle, UNTAGGED_KIND } from "./poolkind.js";

/** CAPM3's annotation on a Metal3Machine naming its BareMetalHost (`namespace/name`). */
export const BAREMETALHOST_ANNOTATION = "metal3.io/BareMetalHost";

/** One object of an owner chain. */
export interface ChainLink {
  apiVersion: string;
  kind: string;
  name: string;
  /** The owner reference names an object that does not exist (or has another uid). */
  missing?: boolean;
  /** CAPM3's host annotation, when the object carries it. */
  host?: string;
  /** A Machine's `status.nodeRef.name`. */
  node?: string;
}

/** A claim (of either kind) found for the query, with its record when it has one. */
export interface Target {
  namespace: string;
  pool: string;
  /** The pool's kind; undefined for a pool kind we do not serve (another provider's). */
  poolKind?: PoolKindName;
  claimKind: ClaimKind;
  claimName: string;
  /** Undefined when the claim object does not exist (a dangling record or a person-made reservation). */
  claimState?: ClaimState;
  holding?: Holding;
  /** Cluster named by the claim's label or spec (used when the chain does not reach one). */
  clusterByName?: string;
  /** What the claim is for, by its labels: a `kubectl ipam reserve` reservation or a control-plane endpoint. */
  role?: ClaimRole;
}

/** A target with its owners resolved. */
export interface WhoEntry extends Target {
  owners: ChainLink[];
}

/** The answer. `freeIn` lists pools whose ranges contain an address nobody holds. */
export interface WhoReport {
  query: string;
  by: "address" | "claim";
  entries: WhoEntry[];
  freeIn: FreeIn[];
}

/** A pool whose ranges contain the address nobody holds; `namespace` "" for a global pool. */
export interface FreeIn {
  namespace: string;
  pool: string;
  poolKind: PoolKindName;
}

/** IPAddressClaims of the inventory: the namespaces looked at, and those of global pools from any namespace. */
const allCapiClaims = (inv: Inventory) => distinct(inv.capiClaims, inv.globalRecords.claims);

function claimTarget(inv: Inventory, kind: ClaimKind, namespace: string, name: string, holding?: Holding): Target {
  const base = { namespace, claimKind: kind, claimName: name, ...(holding ? { holding } : {}) };
  const kindOfHolding = holding?.poolKind ? { poolKind: holding.poolKind } : {};
  if (kind === "IPClaim") {
    const c = inv.claims.find((x) => x.metadata.namespace === namespace && x.metadata.name === name);
    if (!c) return { ...base, ...kindOfHolding, pool: holding?.pool ?? "" };
    const cluster = c.metadata.labels?.[CLUSTER_NAME_LABEL];
    return {
      ...base,
      pool: c.spec.pool.name,
      poolKind: IPPOOL.kind,
      claimState: ipClaimState(c),
      ...(cluster ? { clusterByName: cluster } : {}),
    };
  }
  const c = allCapiClaims(inv).find((x) => x.metadata.namespace === namespace && x.metadata.name === name);
  if (!c) return { ...base, ...kindOfHolding, pool: holding?.pool ?? "" };
  const cluster = c.spec.clusterName || c.metadata.labels?.[CLUSTER_NAME_LABEL];
  const poolKind = poolKindOfRef(c.spec.poolRef);
  const role = claimRole(c.metadata.labels);
  return {
    ...base,
    ...(role ? { role } : {}),
    pool: c.spec.poolRef.name,
    ...(poolKind ? { poolKind } : {}),
    claimState: ipAddressClaimState(c),
    ...(cluster ? { clusterByName: cluster } : {}),
  };
}

/** Targets for an address: every record holding it (both kinds). */
export function targetsForAddress(address: string, inv: Inventory): Target[] {
  return holdingsOfAddress(address, inv).map((h) => claimTarget(inv, h.claimKind, h.namespace, h.claimName, h));
}

/** Pools (every kind) whose ranges contain `address` although no record holds it. */
export function poolsWithFree(address: string, inv: Inventory): FreeIn[] {
  return allPools(inv)
    .filter((p) => allocatorOf(p, inv).contains(address))
    .map(idOf)
    .map((id) => ({ namespace: id.namespace, pool: id.name, poolKind: id.kind }));
}

/** Parses `ipclaim/NAME`, `ipaddressclaim/NAME` (kubectl's short forms too) or a bare NAME. */
export function parseClaimQuery(query: string): { kind?: ClaimKind; name: string } {
  const slash = query.indexOf("/");
  if (slash < 0) return { name: query };
  const kind = query.slice(0, slash).toLowerCase();
  const name = query.slice(slash + 1);
  if (["ipclaim", "ipclaims", "ipc", "ipclaim.ipam.metal3.io"].includes(kind)) return { kind: "IPClaim", name };
  if (["ipaddressclaim", "ipaddressclaims", "ipaddressclaim.ipam.cluster.x-k8s.io"].includes(kind))
    return { kind: "IPAddressClaim", name };
  return { name: query };
}

/** Targets for a claim name: IPClaims and IPAddressClaims of that name, with their records. */
export function targetsForClaim(query: string, inv: Inventory): Target[] {
  const { kind, name } = parseClaimQuery(query);
  const out: Target[] = [];
  const record = (k: ClaimKind, namespace: string): Holding | undefined => holdingFor(inv, k, namespace, name);
  if (kind !== "IPAddressClaim") {
    for (const c of inv.claims.filter((x) => x.metadata.name === name))
      out.push(
        claimTarget(inv, "IPClaim", c.metadata.namespace ?? "", name, record("IPClaim", c.metadata.namespace ?? "")),
      );
  }
  if (kind !== "IPClaim") {
    for (const c of inv.capiClaims.filter((x) => x.metadata.name === name))
      out.push(
        claimTarget(
          inv,
          "IPAddressClaim",
          c.metadata.namespace ?? "",
          name,
          record("IPAddressClaim", c.metadata.namespace ?? ""),
        ),
      );
  }
  return out;
}

/** The record a claim's status points at. */
function holdingFor(inv: Inventory, kind: ClaimKind, namespace: string, name: string): Holding | undefined {
  if (kind === "IPClaim") {
    const c = inv.claims.find((x) => x.metadata.namespace === namespace && x.metadata.name === name);
    const a = inv.addresses.find(
      (x) => x.metadata.namespace === namespace && x.metadata.name === c?.status?.address?.name,
    );
    return a
      ? {
          address: a.spec.address,
          object: a.metadata.name ?? "",
          api: GROUP,
          namespace,
          pool: a.spec.pool.name,
          poolKind: IPPOOL.kind,
          claimKind: kind,
          claimName: name,
        }
      : undefined;
  }
  const c = inv.capiClaims.find((x) => x.metadata.namespace === namespace && x.metadata.name === name);
  const a = inv.capiAddresses.find(
    (x) => x.metadata.namespace === namespace && x.metadata.name === c?.status?.addressRef?.name,
  );
  const poolKind = poolKindOfRef(a?.spec.poolRef);
  return a
    ? {
        address: a.spec.address,
        object: a.metadata.name ?? "",
        api: CAPI_IPAM_GROUP,
        namespace,
        pool: a.spec.poolRef.name,
        ...(poolKind ? { poolKind } : {}),
        claimKind: kind,
        claimName: name,
      }
    : undefined;
}

/** Whether the query is an address (any spelling). */
export function isAddressQuery(query: string): boolean {
  return parseAddress(query) !== undefined;
}

function chainText(e: WhoEntry): string {
  if (e.owners.length === 0) return e.clusterByName ? `none (Cluster ${e.clusterByName} by label)` : "none";
  const links = e.owners.map((o) => `${o.kind} ${o.name}${o.missing ? " (missing)" : ""}`);
  const reachesCluster = e.owners.some((o) => o.kind === "Cluster" && !o.missing);
  if (!reachesCluster && e.clusterByName) links.push(`(Cluster ${e.clusterByName} by label)`);
  return links.join(" → ");
}

const ROLE_TEXT: Record<ClaimRole, string> = {
  reservation: "reservation (kubectl ipam reserve; kubectl ipam release frees it)",
  "control-plane-endpoint": "control-plane endpoint",
};

function entryRows(e: WhoEntry): string[][] {
  const rows: string[][] = [];
  // A global pool's holders may be in any namespace: the claim line says which (the pool line cannot).
  const claimName = e.poolKind && isGlobalKind(e.poolKind) ? `${e.namespace}/${e.claimName}` : e.claimName;
  const claimLine = `${e.claimKind} ${claimName}${e.claimState ? ` (${e.claimState})` : " (does not exist: a reservation or a leftover)"}`;
  rows.push(["address", e.holding ? e.holding.address : "-"]);
  // A Metal3 pool (or another provider's) reads as before, `NS/NAME`; the in-cluster kinds name their kind.
  const inCluster = e.poolKind && e.poolKind !== UNTAGGED_KIND && e.pool;
  rows.push([
    "pool",
    inCluster
      ? poolTitle({ kind: e.poolKind!, namespace: e.namespace, name: e.pool })
      : `${e.namespace}/${e.pool || "-"}`,
  ]);
  rows.push(["IPAddress", e.holding ? `${e.holding.object} (${e.holding.api})` : "-"]);
  rows.push(["claim", claimLine]);
  if (e.role) rows.push(["role", ROLE_TEXT[e.role]]);
  rows.push(["owners", chainText(e)]);
  const host = e.owners.find((o) => o.host)?.host;
  const node = e.owners.find((o) => o.node)?.node;
  if (host) rows.push(["host", host]);
  if (node) rows.push(["node", node]);
  return rows;
}

/** The text form: one block per entry. */
export function renderWho(report: WhoReport): string {
  if (report.entries.length === 0 && report.freeIn.length > 0) {
    const where = report.freeIn
      .map((p) => poolTitle({ kind: p.poolKind, namespace: p.namespace, name: p.pool }))
      .join(", ");
    return `${canonicalAddress(report.query) ?? report.query} is free: nobody holds it (in the ranges of ${where})`;
  }
  return report.entries.map((e) => table(entryRows(e))).join("\n\n");
}

/** `poolKind` in the machine form only for the in-cluster kinds (the documents had no such key before). */
const poolKindKey = (kind: PoolKindName | undefined): { poolKind?: PoolKindName } =>
  kind && kind !== UNTAGGED_KIND ? { poolKind: kind } : {};

/** The machine form. A holder's `namespace` is its claim's (a global pool has none of its own). */
export function whoDocument(report: WhoReport): object {
  return {
    query: report.query,
    by: report.by,
    holders: report.entries.map((e) => ({
      address: e.holding?.address ?? null,
      namespace: e.namespace,
      pool: e.pool || null,
      ...poolKindKey(e.poolKind),
      ipAddress: e.holding ? { name: e.holding.object, apiGroup: e.holding.api } : null,
      claim: { kind: e.claimKind, name: e.claimName, state: e.claimState ?? "missing" },
      ...(e.role ? { role: e.role } : {}),
      owners: e.owners.map((o) => ({
        apiVersion: o.apiVersion,
        kind: o.kind,
        name: o.name,
        ...(o.missing ? { missing: true } : {}),
      })),
      cluster: e.owners.find((o) => o.kind === "Cluster" && !o.missing)?.name ?? e.clusterByName ?? null,
      host: e.owners.find((o) => o.host)?.host ?? null,
      node: e.owners.find((o) => o.node)?.node ?? null,
    })),
    freeIn: report.freeIn.map((p) => ({
      namespace: isGlobalKind(p.poolKind) ? null : p.namespace,
      pool: p.pool,
      ...poolKindKey(p.poolKind),
    })),
  };
}
