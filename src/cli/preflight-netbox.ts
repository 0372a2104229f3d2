/**
 * preflight-move's findings for NetBox pools (NetBoxIPPool, GlobalNetBoxIPPool) the moved namespace's claims use
 * (spec §7). Pure. What the move does with them (both CRDs labelled move-hierarchy, as the in-cluster pools):
 * - a NetBoxIPPool moves with its namespace, with its IPAddresses; a GlobalNetBoxIPPool is copied to the target
 *   unless one of that name is there (kept as it is), and it and the moved claims' IPAddresses on it also stay here;
 * - NetBox keeps every record as it is: records name claims by namespace and name, which the move keeps, so the
 *   target's claims adopt them and nothing is released or allocated (e2e/pivot/netbox.test.ts);
 * - the token Secret is in the controller's namespace, which clusterctl does not move: it must be made on the target.
 * Unlike a shared GlobalInClusterIPPool, a shared GlobalNetBoxIPPool is no blocker: NetBox hands out every address
 * under its own lock, whichever management cluster asks, so no address is given twice. It is a blocker only when the
 * target's pool of that name points elsewhere in NetBox: the moved claims' records would not be found there.
 */
import {
  ALLOWED_NAMESPACES_ANNOTATION,
  NETBOX_ADDRESS_FINALIZER,
  type NetBoxIPPoolSpec,
} from "../../api/netbox/types.js";
import { DEFAULT_CONTROLLER_NAMESPACE } from "../../api/install.js";
import { isGlobalKind, isNetBoxKind, poolKindOfRef, type NetBoxKindName } from "../../api/registry.js";

/** How the moved namespace uses one NetBox pool. */
export interface NetBoxPoolUse {
  kind: NetBoxKindName;
  name: string;
  spec: NetBoxIPPoolSpec;
  /** Addresses of the moved namespace's IPAddresses on it. */
  moving: string[];
  /** For a global pool: claims of other namespaces on it (they stay). */
  elsewhere: number;
}

/**
 * The target's GlobalNetBoxIPPools of those names, when preflight could look: the spec, or null when the target has
 * none. Undefined: the target was not looked at.
 */
export type TargetNetBoxPools = ReadonlyMap<string, NetBoxIPPoolSpec | null> | undefined;

/** A finding (the shape of preflight.ts's Finding). */
export interface NetBoxPoolFinding {
  severity: "blocker" | "warning";
  kind: NetBoxKindName;
  name: string;
  problem: string;
  fix: string;
}

/** The NetBox pool kind a poolRef names, if any. */
export function netBoxKindOfRef(
  ref: { apiGroup?: string; kind: string } | undefined,
): NetBoxPoolUse["kind"] | undefined {
  const kind = poolKindOfRef(ref);
  return kind !== undefined && isNetBoxKind(kind) ? kind : undefined;
}

/** A pool's own URL (deprecated: the token Secret names the NetBox), without userinfo and trailing slashes. */
const urlOf = (spec: NetBoxIPPoolSpec): string | undefined =>
  spec.netbox.url?.replace(/\/+$/, "").replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, "$1");

/** A pool's prefixes and ranges in order (its own, then its fallbacks), as comparable text. */
const placesOf = (spec: NetBoxIPPoolSpec): string[] =>
  [spec, ...(spec.fallbacks ?? [])].map((p) => JSON.stringify([p.prefix ?? null, p.range ?? null]));

/**
 * Whether the target's spec points at the same places in NetBox as the source's: the same NetBox (both pools' urls
 * when both still carry one, else the token Secret, which names the NetBox), the same prefix or range, and the
 * source's fallbacks in the same places (the target may have appended more): every moved record is in one of them.
 */
function samePlace(target: NetBoxIPPoolSpec, source: NetBoxIPPoolSpec): boolean {
  const [ua, ub] = [urlOf(target), urlOf(source)];
  const sameNetBox =
    ua !== undefined && ub !== undefined
      ? ua === ub
      : target.netbox.credentialsRef.name === source.netbox.credentialsRef.name;
  const [there, here] = [placesOf(target), placesOf(source)];
  return sameNetBox && here.every((place, i) => there[i] === place);
}

function describePlace(spec: NetBoxIPPoolSpec): string {
  const where = [spec, ...(spec.fallbacks ?? [])]
    .map((p) =>
      p.prefix
        ? `prefix ${p.prefix.cidr ?? `#${String(p.prefix.id)}`}`
        : `range ${p.range?.start ?? `#${String(p.range?.id)}`}`,
    )
    .join(", then ");
  return `${where} of ${urlOf(spec) ?? `the NetBox of Secret ${spec.netbox.credentialsRef.name}`}`;
}

/** The token Secret, and the one command that makes it on the target. */
function secretFix(use: NetBoxPoolUse, namespace: string): string {
  const { name, key } = use.spec.netbox.credentialsRef;
  const create = `kubectl --kubeconfig <target> -n ${DEFAULT_CONTROLLER_NAMESPACE} create secret generic ${name} --from-literal=${key ?? "token"}=<NetBox token> --from-literal=url=${urlOf(use.spec) ?? "<NetBox URL>"} (and --from-file=ca.crt=<CA> when the source's Secret has one)`;
  return !isGlobalKind(use.kind)
    ? `${create}, then kubectl --kubeconfig <target> -n ${DEFAULT_CONTROLLER_NAMESPACE} annotate secret ${name} ${ALLOWED_NAMESPACES_ANNOTATION}=${namespace}`
    : create;
}

function one(use: NetBoxPoolUse, namespace: string, target: TargetNetBoxPools): NetBoxPoolFinding {
  const base = { kind: use.kind, name: use.name };
  const secret = `Secret ${use.spec.netbox.credentialsRef.name}`;
  const token =
    `takes its NetBox token from ${secret} in the controller's namespace (${DEFAULT_CONTROLLER_NAMESPACE} by default), which ` +
    "clusterctl does not move: without it on the target the moved claims keep their addresses, but new claims and " +
    "releases wait. NetBox's records stay as they are and the target adopts them";
  const fix = `before the move, create ${secret} on the target: ${secretFix(use, namespace)}`;
  if (!isGlobalKind(use.kind))
    return { ...base, severity: "warning", problem: `moves with the namespace and ${token}`, fix };
  const targetSpec = target?.get(use.name);
  if (targetSpec && !samePlace(targetSpec, use.spec))
    return {
      ...base,
      severity: "blocker",
      problem: `exists on the target, which clusterctl keeps, but it points at ${describePlace(targetSpec)}, and the ${use.moving.length} moved address(es) are records of ${describePlace(use.spec)}: the target would not find them (RecordsInNetBox=False) and would not give them back`,
      fix: `make the target's pool name the same NetBox and ${use.spec.prefix ? "prefix" : "range"} (and fallbacks) as the source's, or delete it there so that clusterctl copies the source's`,
    };
  const copied =
    target === undefined
      ? "is cluster-scoped: clusterctl copies it to the target unless one of that name is there (the target was not checked: pass --to-kubeconfig)"
      : targetSpec
        ? "exists on the target, naming the same place in NetBox (clusterctl keeps it)"
        : "is missing on the target: clusterctl copies it there";
  const shared =
    use.elsewhere > 0
      ? `; it is shared with ${use.elsewhere} claim(s) of namespaces that stay, which is safe: NetBox hands out every address, whichever cluster asks`
      : "";
  return {
    ...base,
    severity: "warning",
    problem: `${copied}, and leaves it here with the ${use.moving.length} IPAddress(es) of this namespace's claims (nothing is released in NetBox)${shared}; it ${token}`,
    fix: `${fix}; after the move, delete the IPAddresses left here and drop their ${NETBOX_ADDRESS_FINALIZER} finalizer (they are copies; the target's hold the addresses)`,
  };
}

/** One finding per NetBox pool the moved namespace uses, by kind and name. */
export function netBoxPoolFindings(
  uses: readonly NetBoxPoolUse[],
  namespace: string,
  target: TargetNetBoxPools,
): NetBoxPoolFinding[] {
  return [...uses]
    .sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name))
    .map((u) => one(u, namespace, target));
}
