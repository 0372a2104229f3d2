/**
 * `kubectl ipam preflight-move`: what `clusterctl move` would leave behind or refuse, each with its fix. Pure: the
 * move graph is computed here from objects read elsewhere (read.ts), following clusterctl's own rules (spec §7):
 * - clusterctl only sees kinds whose CRD carries the `clusterctl.cluster.x-k8s.io` label;
 * - Clusters (and kinds labelled move-hierarchy) root the move; an object is a tenant when an owner chain leads to
 *   a root, and it is placed in the move sequence only once ALL its owners are: an IPAddress whose pool stays stays
 *   too, and an owner that does not exist (or is of a kind clusterctl does not see) keeps its dependents behind;
 * - objects of kinds labelled `clusterctl.cluster.x-k8s.io/move` move on their own, owners permitting;
 * - a Cluster with `spec.paused: true` makes clusterctl refuse to start;
 * - objects of labelled cluster-scoped kinds are seen whatever the namespace (GlobalInClusterIPPool: copied, never
 *   deleted from the source; preflight-global.ts). NetBox pools: preflight-netbox.ts.
 */
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import {
  IPADDRESS_FINALIZER,
  IPCLAIM_FINALIZER,
  IPPOOL_KIND,
  type IPAddress,
  type IPClaim,
  type IPPool,
} from "../../api/v1alpha1/types.js";
import { IPADDRESSCLAIM_FINALIZER, type PoolRef } from "../../api/capi/types.js";
import { IPPOOL, poolKindOfRef, type ClaimKind } from "../../api/registry.js";
import { byNamespaceAndName, claimPool, isOurPoolRef, type Inventory } from "./inventory.js";
import { globalPoolFindings, type GlobalPoolUse, type TargetGlobalPools } from "./preflight-global.js";
import { isMetal3Kind } from "./poolkind.js";
import { netBoxPoolFindings, type NetBoxPoolUse, type TargetNetBoxPools } from "./preflight-netbox.js";

/** One object of the move graph. */
export interface MoveNode {
  uid: string;
  apiVersion: string;
  kind: string;
  name: string;
  /** uids of every owner reference. */
  owners: string[];
  /** Its kind roots a move hierarchy (Cluster, ClusterClass, ClusterResourceSet, or labelled move-hierarchy). */
  hierarchyRoot: boolean;
  /** Its kind (or the object) is labelled to move on its own. */
  forceMove: boolean;
}

function dependentsOf(nodes: readonly MoveNode[]): Map<string, MoveNode[]> {
  const dependents = new Map<string, MoveNode[]>();
  for (const n of nodes) for (const o of n.owners) dependents.set(o, [...(dependents.get(o) ?? []), n]);
  return dependents;
}

/** For every object an owner chain leads from a move root to: the names of those roots (its Clusters). */
export function tenancy(nodes: readonly MoveNode[]): Map<string, Set<string>> {
  const dependents = dependentsOf(nodes);
  const tenants = new Map<string, Set<string>>();
  for (const root of nodes.filter((n) => n.hierarchyRoot)) {
    const stack = [root];
    while (stack.length > 0) {
      const n = stack.pop()!;
      const roots = tenants.get(n.uid) ?? new Set<string>();
      if (roots.has(root.name)) continue;
      tenants.set(n.uid, roots.add(root.name));
      stack.push(...(dependents.get(n.uid) ?? []));
    }
  }
  return tenants;
}

/** uids of the objects clusterctl would move. */
export function movedSet(nodes: readonly MoveNode[]): Set<string> {
  const tenants = tenancy(nodes);
  const moved = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const n of nodes) {
      if (moved.has(n.uid) || !(tenants.has(n.uid) || n.forceMove)) continue;
      if (n.owners.every((o) => moved.has(o))) {
        moved.add(n.uid);
        changed = true;
      }
    }
  }
  return moved;
}

/** What a finding means for the move. */
export type Severity = "blocker" | "left-behind" | "warning";

/** One problem, with what to do about it. */
export interface Finding {
  severity: Severity;
  kind: string;
  name: string;
  problem: string;
  fix: string;
}

/** A Cluster as preflight needs it. */
export interface ClusterInfo {
  name: string;
  uid: string;
  paused: boolean;
}

/** Everything the analysis reads. */
export interface PreflightInput {
  namespace: string;
  nodes: MoveNode[];
  inv: Inventory;
  clusters: ClusterInfo[];
  /** CRDs (`plural.group`) of kinds that matter here but lack the clusterctl label. */
  unlabelledCrds: string[];
  /** The GlobalInClusterIPPools the namespace's IPAddressClaims name, and who else uses them. */
  globalPools?: GlobalPoolUse[];
  /** The target's pools of those names, when preflight-move was told the target. */
  targetGlobalPools?: TargetGlobalPools;
  /** The NetBox pools the namespace's IPAddressClaims name. */
  netBoxPools?: NetBoxPoolUse[];
  /** The target's GlobalNetBoxIPPools of those names, when preflight-move was told the target. */
  targetNetBoxPools?: TargetNetBoxPools;
}

/** The result; `exitCode` is 1 when anything would be left behind or the move would be refused. */
export interface PreflightReport {
  namespace: string;
  findings: Finding[];
  leftBehind: string[];
}

const uidOf = (o: { metadata: { uid?: string } }): string => o.metadata.uid ?? "";
const nameOf = (o: { metadata: { name?: string } }): string => o.metadata.name ?? "";

interface Context {
  input: PreflightInput;
  moved: Set<string>;
  known: Set<string>;
  tenants: Map<string, Set<string>>;
  out: Finding[];
}

function kubectl(c: Context, args: string): string {
  return `kubectl -n ${c.input.namespace} ${args}`;
}

function missingOwners(
  c: Context,
  o: { metadata: { ownerReferences?: { kind: string; name: string; uid: string }[] } },
): string[] {
  return (o.metadata.ownerReferences ?? []).filter((r) => !c.known.has(r.uid)).map((r) => `${r.kind} ${r.name}`);
}

/** Clusters the claims of `pool` belong to (by owner chain, else by label), for suggesting its clusterName. */
function clustersOfPoolClaims(c: Context, pool: IPPool): string[] {
  const names = new Set<string>();
  const mine = [...c.input.inv.claims, ...c.input.inv.capiClaims].filter((cl) => claimPool(cl) === nameOf(pool));
  for (const cl of mine) {
    const label =
      cl.metadata.labels?.["cluster.x-k8s.io/cluster-name"] ??
      ("clusterName" in cl.spec ? cl.spec.clusterName : undefined);
    for (const cluster of c.tenants.get(uidOf(cl)) ?? (label ? [label] : [])) names.add(cluster);
  }
  return [...names].sort();
}

function checkPool(c: Context, pool: IPPool): void {
  if (c.moved.has(uidOf(pool))) return;
  const clusterName = pool.spec.clusterName;
  const cluster = c.input.clusters.find((x) => x.name === clusterName);
  let problem: string;
  let fix: string;
  if (!clusterName) {
    const suggested = clustersOfPoolClaims(c, pool);
    problem =
      "has no spec.clusterName, so no owner reference ties it to a Cluster: it stays, with every address it holds";
    fix =
      kubectl(
        c,
        `patch ippool ${nameOf(pool)} --type merge -p '{"spec":{"clusterName":"${suggested.length === 1 ? suggested[0]! : "<cluster>"}"}}'`,
      ) +
      (suggested.length > 1
        ? ` (its claims belong to ${suggested.join(", ")}: one pool per Cluster moves cleanly)`
        : "");
  } else if (!cluster) {
    problem = `names Cluster ${clusterName}, which does not exist in this namespace`;
    fix = `create Cluster ${clusterName} or set spec.clusterName to an existing one`;
  } else if (!(pool.metadata.ownerReferences ?? []).some((r) => r.uid === cluster.uid)) {
    problem = `has no owner reference to Cluster ${clusterName} yet (the controller adds it)`;
    fix = "make sure the IPAM controller runs and reconciles the pool, then run preflight-move again";
  } else {
    problem = `an owner does not move (${missingOwners(c, pool).join(", ") || "see the other findings"})`;
    fix = "remove owner references to objects that do not move";
  }
  c.out.push({ severity: "left-behind", kind: IPPOOL.kind, name: nameOf(pool), problem, fix });
}

function checkClaim(c: Context, kind: ClaimKind, claim: IPClaim | IPAddressClaim): void {
  if (c.moved.has(uidOf(claim))) return;
  const owners = claim.metadata.ownerReferences ?? [];
  const missing = missingOwners(c, claim);
  const problem =
    owners.length === 0
      ? "is not tied to a Cluster: it has no owner, so no owner chain reaches one"
      : missing.length > 0
        ? `is not tied to a Cluster: its owner ${missing.join(", ")} does not exist or is of a kind clusterctl does not move`
        : "is not tied to a Cluster: no owner chain reaches one";
  const fix =
    "let the object that uses the address own the claim (CAPM3's Metal3Data does), or delete the claim if nothing uses it";
  c.out.push({ severity: "left-behind", kind, name: nameOf(claim), problem, fix });
}

/** A pool as the address checks need it: its kind, name and uid. */
type PoolIdentity = { kind: string; metadata: { name?: string; uid?: string } };

function addressProblem(
  c: Context,
  a: { metadata: IPAddress["metadata"] },
  pool: PoolIdentity | undefined,
  claim: { metadata: { uid?: string } } | undefined,
  claimName: string,
): { problem: string; fix: string } {
  const owners = a.metadata.ownerReferences ?? [];
  if (!claim) {
    const tail = owners.length === 0 ? "and has no owners" : "and an owner stays behind";
    return {
      problem: `is a person-made reservation (claim ${claimName || "-"} does not exist) outside the move graph ${tail}`,
      fix: pool
        ? `add an owner reference to ${pool.kind} ${nameOf(pool)} (uid ${uidOf(pool)}) so it moves with the pool, or re-create it on the target after the move`
        : "re-create it on the target after the move",
    };
  }
  if (owners.length === 0)
    return {
      problem: "has no owners: clusterctl never moves it",
      fix: "let the IPAM controller restore its owner references (IPPool and claim), or re-create it on the target",
    };
  if (pool && !c.moved.has(uidOf(pool)))
    return {
      problem: `stays with its pool ${nameOf(pool)}`,
      fix: `fix ${pool.kind} ${nameOf(pool)} (see its finding)`,
    };
  if (!c.moved.has(uidOf(claim)))
    return { problem: `stays with its claim ${claimName}`, fix: `fix the claim ${claimName} (see its finding)` };
  const missing = missingOwners(c, a);
  return {
    problem: `an owner does not move (${missing.join(", ") || "see the other findings"})`,
    fix: "remove owner references to objects that do not move",
  };
}

/** Whether a poolRef names a pool kind we serve besides Metal3's IPPool (the in-cluster provider's, NetBox's). */
const isServedPoolRef = (ref: PoolRef | undefined): boolean => {
  const kind = poolKindOfRef(ref);
  return kind !== undefined && !isMetal3Kind(kind);
};

/** The pool a Cluster API IPAddress names: a Metal3 IPPool of the inventory, or another served pool of the graph. */
function poolOfRef(c: Context, ref: PoolRef): PoolIdentity | undefined {
  if (isOurPoolRef(ref)) {
    const pool = c.input.inv.pools.find((p) => nameOf(p) === ref.name);
    return pool ? { kind: IPPOOL_KIND, metadata: pool.metadata } : undefined;
  }
  const node = c.input.nodes.find((n) => n.kind === ref.kind && n.name === ref.name);
  return node ? { kind: node.kind, metadata: { name: node.name, uid: node.uid } } : undefined;
}

function checkAddresses(c: Context): void {
  const { inv } = c.input;
  const poolByName = (n: string): IPPool | undefined => inv.pools.find((p) => nameOf(p) === n);
  for (const a of byNamespaceAndName(inv.addresses)) {
    if (c.moved.has(uidOf(a))) continue;
    const claim = inv.claims.find((x) => nameOf(x) === a.spec.claim?.name);
    const pool = poolByName(a.spec.pool?.name ?? "");
    const identity = pool ? { kind: IPPOOL_KIND, metadata: pool.metadata } : undefined;
    const { problem, fix } = addressProblem(c, a, identity, claim, a.spec.claim?.name ?? "");
    c.out.push({
      severity: "left-behind",
      kind: "IPAddress.ipam.metal3.io",
      name: nameOf(a),
      problem: `${a.spec.address} ${problem}`,
      fix,
    });
  }
  const served = (x: CapiIPAddress): boolean => isOurPoolRef(x.spec.poolRef) || isServedPoolRef(x.spec.poolRef);
  for (const a of byNamespaceAndName(inv.capiAddresses).filter(served)) {
    if (c.moved.has(uidOf(a))) continue;
    const claim = inv.capiClaims.find((x) => nameOf(x) === a.spec.claimRef?.name);
    const { problem, fix } = addressProblem(c, a, poolOfRef(c, a.spec.poolRef), claim, a.spec.claimRef?.name ?? "");
    c.out.push({
      severity: "left-behind",
      kind: "IPAddress.ipam.cluster.x-k8s.io",
      name: nameOf(a),
      problem: `${a.spec.address} ${problem}`,
      fix,
    });
  }
}

const OUR_CLAIM_FINALIZERS = new Set([IPCLAIM_FINALIZER, IPADDRESSCLAIM_FINALIZER, IPADDRESS_FINALIZER]);

function checkDeleting(c: Context, kind: ClaimKind, claim: IPClaim | IPAddressClaim): void {
  if (!claim.metadata.deletionTimestamp) return;
  const foreign = (claim.metadata.finalizers ?? []).filter((f) => !OUR_CLAIM_FINALIZERS.has(f));
  if (foreign.length === 0) return;
  c.out.push({
    severity: "warning",
    kind,
    name: nameOf(claim),
    problem: `is being deleted but held by ${foreign.join(", ")}: clusterctl cannot copy a deletion, so it arrives alive on the target with its address`,
    fix: `let ${foreign.join(", ")} finish before the move, or delete the claim again on the target after it`,
  });
}

const SEVERITY_ORDER: Record<Severity, number> = { blocker: 0, "left-behind": 1, warning: 2 };

/** Runs every check. */
export function preflight(input: PreflightInput): PreflightReport {
  const moved = movedSet(input.nodes);
  const c: Context = {
    input,
    moved,
    known: new Set(input.nodes.map((n) => n.uid)),
    tenants: tenancy(input.nodes),
    out: [],
  };
  for (const crd of input.unlabelledCrds) {
    c.out.push({
      severity: "blocker",
      kind: "CustomResourceDefinition",
      name: crd,
      problem: "lacks the clusterctl.cluster.x-k8s.io label: clusterctl does not see its objects at all",
      fix: `kubectl label crd ${crd} clusterctl.cluster.x-k8s.io=`,
    });
  }
  for (const cl of input.clusters.filter((x) => x.paused)) {
    c.out.push({
      severity: "blocker",
      kind: "Cluster",
      name: cl.name,
      problem: "is paused (spec.paused): clusterctl move refuses to start",
      fix: kubectl(c, `patch cluster ${cl.name} --type merge -p '{"spec":{"paused":false}}'`),
    });
  }
  const { inv } = input;
  for (const p of byNamespaceAndName(inv.pools)) checkPool(c, p);
  for (const cl of byNamespaceAndName(inv.claims)) checkClaim(c, "IPClaim", cl);
  for (const cl of byNamespaceAndName(inv.capiClaims)) checkClaim(c, "IPAddressClaim", cl);
  checkAddresses(c);
  c.out.push(...globalPoolFindings(input.globalPools ?? [], input.targetGlobalPools));
  c.out.push(...netBoxPoolFindings(input.netBoxPools ?? [], input.namespace, input.targetNetBoxPools));
  for (const cl of byNamespaceAndName(inv.claims)) checkDeleting(c, "IPClaim", cl);
  for (const cl of byNamespaceAndName(inv.capiClaims)) checkDeleting(c, "IPAddressClaim", cl);
  const findings = c.out
    .map((f, i) => ({ f, i }))
    .sort((a, b) => SEVERITY_ORDER[a.f.severity] - SEVERITY_ORDER[b.f.severity] || a.i - b.i)
    .map(({ f }) => f);
  const leftBehind = findings.filter((f) => f.severity === "left-behind").map((f) => `${f.kind}/${f.name}`);
  return { namespace: input.namespace, findings, leftBehind };
}

/** Whether the report should fail a pipeline. */
export function preflightFails(report: PreflightReport): boolean {
  return report.findings.some((f) => f.severity !== "warning");
}

const LABEL: Record<Severity, string> = { blocker: "BLOCKER", "left-behind": "LEFT BEHIND", warning: "WARNING" };

/** The text form. */
export function renderPreflight(report: PreflightReport): string {
  const lines: string[] = [];
  for (const f of report.findings) {
    lines.push(`${LABEL[f.severity]}  ${f.kind} ${f.name} ${f.problem}`);
    lines.push(`  fix: ${f.fix}`);
  }
  const count = (s: Severity): number => report.findings.filter((f) => f.severity === s).length;
  const [blockers, behind, warnings] = [count("blocker"), count("left-behind"), count("warning")];
  const verdict =
    blockers > 0
      ? `clusterctl move -n ${report.namespace} would be refused or incomplete: ${blockers} blocker(s), ${behind} object(s) left behind, ${warnings} warning(s)`
      : behind > 0
        ? `clusterctl move -n ${report.namespace} would leave ${behind} object(s) behind (${warnings} warning(s))`
        : `clusterctl move -n ${report.namespace} would take every pool, claim and address along (${warnings} warning(s))`;
  lines.push(verdict);
  return lines.join("\n");
}

/** The machine form. */
export function preflightDocument(report: PreflightReport): object {
  return {
    namespace: report.namespace,
    ok: !preflightFails(report),
    leftBehind: report.leftBehind,
    findings: report.findings,
  };
}
