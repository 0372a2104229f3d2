/**
 * `kubectl ipam reserve NAME --pool POOL [--owner KIND/NAME] [--address A]` and `kubectl ipam release NAME`: the reads
 * and the two writes around the pure parts in reserve.ts. `reserve` creates the claim, waits until the controller binds
 * it and prints the address; `release` deletes a claim `reserve` made (and nothing else).
 */
import { CAPI_IPADDRESS, CAPI_IPADDRESSCLAIM, type PoolKindName } from "../../api/registry.js";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { Invocation } from "./args.js";
import { CliError, ExitCode } from "./errors.js";
import { create, crdMissing, get, raw, remove, resourceName, type Obj, type ResourceKind } from "./kube.js";
import { machine, type Io } from "./output.js";
import { parsePoolArgument } from "./poolkind.js";
import { capiKind } from "./read.js";
import {
  honoursRequestedAddress,
  parseOwnerArgument,
  renderReservation,
  reservationClaim,
  reservationDocument,
  RESERVATION_LABEL,
  type Owner,
} from "./reserve.js";

/** How long `reserve` waits for the claim to be bound. */
const BIND_TIMEOUT_MS = 60_000;
const POLL_MS = 250;

interface DiscoveredResource {
  name: string;
  singularName?: string;
  shortNames?: string[];
  kind: string;
  namespaced: boolean;
}

/** The resource `word` names (plural, singular, kind or short name, optionally `.group`), by discovery; core first. */
async function discover(word: string): Promise<ResourceKind | undefined> {
  const dot = word.indexOf(".");
  const wanted = (dot < 0 ? word : word.slice(0, dot)).toLowerCase();
  const group = dot < 0 ? undefined : word.slice(dot + 1).toLowerCase();
  const matches = (r: DiscoveredResource): boolean =>
    !r.name.includes("/") &&
    (r.name === wanted ||
      r.singularName === wanted ||
      r.kind.toLowerCase() === wanted ||
      (r.shortNames ?? []).includes(wanted));
  const versions: string[] = [];
  if (group === undefined || group === "") versions.push("v1");
  const groups = await raw<{ groups: { name: string; preferredVersion: { groupVersion: string } }[] }>("/apis");
  for (const g of groups?.groups ?? [])
    if (group === undefined || g.name === group) versions.push(g.preferredVersion.groupVersion);
  for (const gv of versions) {
    const list = await raw<{ resources: DiscoveredResource[] }>(gv === "v1" ? "/api/v1" : `/apis/${gv}`);
    const r = list?.resources.find(matches);
    if (!r) continue;
    const [g, v] = gv.includes("/") ? (gv.split("/") as [string, string]) : ["", gv];
    return { group: g, version: v, kind: r.kind, plural: r.name, namespaced: r.namespaced };
  }
  return undefined;
}

async function resolveOwner(arg: string, namespace: string): Promise<Owner> {
  const parsed = parseOwnerArgument(arg);
  if (!parsed) throw new CliError(`--owner must be KIND/NAME, got "${arg}"`, ExitCode.usage);
  const k = await discover(parsed.resource);
  if (!k) throw new CliError(`the cluster serves no resource named "${parsed.resource}" (--owner)`);
  const obj = await get<Obj>(k, namespace, parsed.name);
  if (!obj?.metadata.uid)
    throw new CliError(
      `${k.kind} "${parsed.name}" not found${k.namespaced ? ` in namespace "${namespace}"` : ""} (--owner)`,
    );
  return {
    apiVersion: k.group ? `${k.group}/${k.version}` : k.version,
    kind: k.kind,
    name: parsed.name,
    uid: obj.metadata.uid,
  };
}

async function ipamKinds(): Promise<{ claims: ResourceKind; addresses: ResourceKind }> {
  const claims = await capiKind(CAPI_IPADDRESSCLAIM);
  const addresses = await capiKind(CAPI_IPADDRESS);
  if (!claims || !addresses) throw new CliError(crdMissing({ ...CAPI_IPADDRESSCLAIM, version: "v1beta2" }));
  return { claims, addresses };
}

/** The Ready condition's message of a claim that is not bound, for a timeout's explanation. */
function pendingReason(claim: IPAddressClaim | undefined): string {
  const ready = claim?.status?.conditions?.find((c) => c.type === "Ready");
  return ready?.message ? `: ${ready.message}` : "";
}

async function waitBound(
  kinds: { claims: ResourceKind; addresses: ResourceKind },
  namespace: string,
  name: string,
): Promise<string> {
  const until = Date.now() + BIND_TIMEOUT_MS;
  let claim: IPAddressClaim | undefined;
  while (Date.now() < until) {
    claim = await get<IPAddressClaim & Obj>(kinds.claims, namespace, name);
    if (!claim) throw new CliError(`IPAddressClaim "${name}" was deleted in namespace "${namespace}" while waiting`);
    const ref = claim.status?.addressRef?.name;
    if (ref) {
      const address = await get<CapiIPAddress & Obj>(kinds.addresses, namespace, ref);
      if (address?.spec.address) return address.spec.address;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new CliError(
    `IPAddressClaim ${namespace}/${name} is not bound after ${BIND_TIMEOUT_MS / 1000} s${pendingReason(claim)}; it is kept: release it with "kubectl ipam release ${name} -n ${namespace}"`,
  );
}

export async function reserve(inv: Invocation, namespace: string, io: Io): Promise<number> {
  const name = inv.args[0] ?? "";
  // parseInvocation checked --pool already.
  const pool = parsePoolArgument(inv.pool ?? "") as { kind: PoolKindName; name: string };
  if (inv.address && !honoursRequestedAddress(pool.kind))
    throw new CliError(
      `--address is honoured by IPPool pools only; ${pool.kind} pools choose the address`,
      ExitCode.usage,
    );
  const kinds = await ipamKinds();
  const owner = inv.owner ? await resolveOwner(inv.owner, namespace) : undefined;
  const apiVersion = `${kinds.claims.group}/${kinds.claims.version}`;
  await create(kinds.claims, reservationClaim(apiVersion, namespace, name, pool, owner, inv.address));
  const address = await waitBound(kinds, namespace, name);
  const r = { namespace, name, pool, address, ...(owner ? { owner } : {}) };
  io.out(inv.output === "text" ? `${renderReservation(r)}\n` : machine(inv.output, reservationDocument(r)));
  return ExitCode.ok;
}

export async function release(inv: Invocation, namespace: string, io: Io): Promise<number> {
  const name = inv.args[0] ?? "";
  const { claims } = await ipamKinds();
  const claim = await get<Obj>(claims, namespace, name);
  if (!claim) throw new CliError(`IPAddressClaim "${name}" not found in namespace "${namespace}"`);
  if (claim.metadata.labels?.[RESERVATION_LABEL] === undefined)
    throw new CliError(
      `IPAddressClaim ${namespace}/${name} is not a reservation (no label ${RESERVATION_LABEL}): release only deletes what reserve made; use "kubectl delete ${resourceName(claims)} ${name} -n ${namespace}" if you mean it`,
    );
  await remove(claims, namespace, name);
  io.out(`released IPAddressClaim ${namespace}/${name}\n`);
  return ExitCode.ok;
}
