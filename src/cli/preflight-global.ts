/**
 * preflight-move's findings for GlobalInClusterIPPools, the cluster-scoped pools a moved namespace's claims use
 * (spec §7). Pure. What clusterctl does with them (its CRD is labelled move-hierarchy, as the provider labels it):
 * - it copies the pool to the target unless the target has one of that name, which it then keeps as it is;
 * - it never deletes the pool from the source, nor the IPAddresses the pool owns: the moved claims' IPAddresses are
 *   copied and also stay in the source, where they keep their addresses reserved.
 * So nothing is left behind, but a pool shared with namespaces that stay ends up with two allocators, one per
 * management cluster. That is safe only when the target's pool can hand out nothing the source's can, or holds,
 * besides the moved claims' own addresses; anything else is a blocker, with the way to split the range.
 */
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import { GLOBAL_INCLUSTER_IPPOOL } from "../../api/registry.js";
import { inClusterAllocatable } from "../ipam/incluster-set.js";
import { parseAddress } from "../ipam/address.js";
import { formatRanges, normalizeRanges, subtractRanges, type IPRange } from "../ipam/ipset.js";

/** How the moved namespace uses one GlobalInClusterIPPool, and who else does. */
export interface GlobalPoolUse {
  name: string;
  /** The pool's spec in the source. */
  spec: InClusterIPPoolSpec;
  /** Addresses of the moved namespace's IPAddresses on it (copied to the target, kept in the source). */
  moving: string[];
  /** Claims of other namespaces on it (they stay), with the address each holds ("" while it has none). */
  elsewhere: { namespace: string; claim: string; address: string }[];
}

/**
 * The target's pools of those names, when preflight could look (`--to-kubeconfig` / `--to-context`): the spec, or
 * null when the target has none. Undefined: the target was not looked at.
 */
export type TargetGlobalPools = ReadonlyMap<string, InClusterIPPoolSpec | null> | undefined;

/** A finding (the shape of preflight.ts's Finding). */
export interface GlobalPoolFinding {
  severity: "blocker" | "warning";
  kind: typeof GLOBAL_INCLUSTER_IPPOOL.kind;
  name: string;
  problem: string;
  fix: string;
}

const single = (text: string): IPRange[] => {
  const a = parseAddress(text);
  return a ? [{ family: a.family, first: a.value, last: a.value }] : [];
};
const setOf = (addresses: readonly string[]): IPRange[] => normalizeRanges(addresses.flatMap(single));
const intersect = (a: readonly IPRange[], b: readonly IPRange[]): IPRange[] => subtractRanges(a, subtractRanges(a, b));

/** Addresses both management clusters could hand out or hold after the move, besides the moved claims' own. */
function contested(use: GlobalPoolUse, targetSpec: InClusterIPPoolSpec): IPRange[] {
  const held = use.elsewhere.map((e) => e.address).filter(Boolean);
  const sourceSide = normalizeRanges([...inClusterAllocatable(use.spec), ...setOf(held)]);
  return subtractRanges(intersect(inClusterAllocatable(targetSpec), sourceSide), setOf(use.moving));
}

function namespacesOf(use: GlobalPoolUse): string {
  const names = [...new Set(use.elsewhere.map((e) => e.namespace))].sort();
  return `${use.elsewhere.length} claim(s) in namespace(s) ${names.join(", ")}`;
}

const SPLIT_FIX =
  "split the range: give the target's pool addresses of its own (the moved claims keep theirs, counted outOfRange " +
  "there) and keep the source's away from them (excludedAddresses), then check again with --to-kubeconfig; or move " +
  "every namespace that uses the pool";

function one(use: GlobalPoolUse, target: TargetGlobalPools): GlobalPoolFinding {
  const base = { kind: GLOBAL_INCLUSTER_IPPOOL.kind, name: use.name };
  const kept = `the ${use.moving.length} IPAddress(es) of this namespace's claims on it are copied and also stay here, reserved`;
  const targetSpec = target?.get(use.name);
  const shared = use.elsewhere.length > 0;
  if (targetSpec) {
    const both = contested(use, targetSpec);
    if (shared && both.length > 0)
      return {
        ...base,
        severity: "blocker",
        problem: `is shared with ${namespacesOf(use)} that stay, and the target's pool of that name (which clusterctl keeps) can hand out ${formatRanges(both)}, which the source's can hand out or holds: addresses would be given twice`,
        fix: SPLIT_FIX,
      };
    return {
      ...base,
      severity: "warning",
      problem: `exists on the target, which clusterctl keeps as it is; ${kept}`,
      fix: "nothing before the move",
    };
  }
  const copied =
    target === undefined
      ? "is cluster-scoped: clusterctl copies it to the target unless the target has one of that name (the target was not checked: pass --to-kubeconfig), and leaves it here"
      : "is missing on the target: clusterctl copies it there, and leaves it here";
  if (shared)
    return {
      ...base,
      severity: "blocker",
      problem: `${copied}; it is shared with ${namespacesOf(use)} that stay, so both management clusters would hand out its addresses: some would be given twice`,
      fix: `create it on the target before the move, and ${SPLIT_FIX}`,
    };
  return { ...base, severity: "warning", problem: `${copied}; ${kept}`, fix: "nothing before the move" };
}

/** One finding per GlobalInClusterIPPool the moved namespace uses, by name. */
export function globalPoolFindings(uses: readonly GlobalPoolUse[], target: TargetGlobalPools): GlobalPoolFinding[] {
  return [...uses].sort((a, b) => a.name.localeCompare(b.name)).map((u) => one(u, target));
}
