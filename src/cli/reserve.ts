/**
 * `kubectl ipam reserve|release`: addresses outside machines (ingress VIPs, DNS servers) held by an ordinary Cluster
 * API `IPAddressClaim` from a pool of any kind, labelled {@link RESERVATION_LABEL} so `who` shows it as a reservation.
 * Pure: the claim to create, the owner reference, the answer's text and document; the reads and writes are in
 * commands-reserve.ts.
 */
import type { IPAddressClaim, PoolRef } from "../../api/capi/types.js";
import { isGlobalKind, poolDescriptor, type PoolKindName } from "../../api/registry.js";
import { ENDPOINT_CLAIM_LABEL } from "../ipam/endpoint.js";
import { isMetal3Kind } from "./poolkind.js";

/** On an `IPAddressClaim` made by `kubectl ipam reserve`: a reservation of an address outside machines. */
export const RESERVATION_LABEL = "ipam.metal3.io/reservation";

/** The owner a reservation is bound to (`--owner kind/name`), as resolved on the server. */
export interface Owner {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** Parses `--owner KIND/NAME` (kubectl's spelling: a kind, plural or short name, optionally `.group`). */
export function parseOwnerArgument(arg: string): { resource: string; name: string } | undefined {
  const slash = arg.indexOf("/");
  if (slash <= 0 || slash === arg.length - 1 || arg.indexOf("/", slash + 1) >= 0) return undefined;
  return { resource: arg.slice(0, slash), name: arg.slice(slash + 1) };
}

/** The `poolRef` of a pool of `kind` (every kind we serve is named by its API group). */
export function poolRefOf(kind: PoolKindName, name: string): PoolRef {
  return { apiGroup: poolDescriptor(kind).group, kind, name };
}

/** Whether a pool of `kind` hands out the address a claim asks for (Metal3's `ipAddress` annotation). */
export const honoursRequestedAddress = (kind: PoolKindName): boolean => isMetal3Kind(kind);

/** The claim `reserve` creates; `apiVersion` is the served version's. */
export function reservationClaim(
  apiVersion: string,
  namespace: string,
  name: string,
  pool: { kind: PoolKindName; name: string },
  owner: Owner | undefined,
  address: string | undefined,
): IPAddressClaim {
  return {
    apiVersion,
    kind: "IPAddressClaim",
    metadata: {
      name,
      namespace,
      labels: { [RESERVATION_LABEL]: "" },
      ...(address ? { annotations: { ipAddress: address } } : {}),
      // Not a controller reference: the owner's own controller may want that slot.
      ...(owner ? { ownerReferences: [{ ...owner, blockOwnerDeletion: false }] } : {}),
    },
    spec: { poolRef: poolRefOf(pool.kind, pool.name) },
  };
}

/** What `reserve` reports. */
export interface Reservation {
  namespace: string;
  name: string;
  pool: { kind: PoolKindName; name: string };
  address: string;
  owner?: Owner;
}

/** The text form: the address, then where it is held and how it is released. */
export function renderReservation(r: Reservation): string {
  const pool = isGlobalKind(r.pool.kind)
    ? `${r.pool.kind} ${r.pool.name}`
    : `${r.pool.kind} ${r.namespace}/${r.pool.name}`;
  const lines = [r.address, `held by IPAddressClaim ${r.namespace}/${r.name} from ${pool}`];
  lines.push(
    r.owner
      ? `owned by ${r.owner.kind} ${r.owner.name}: released when it is deleted, or by "kubectl ipam release ${r.name} -n ${r.namespace}"`
      : `no owner: it stays held until "kubectl ipam release ${r.name} -n ${r.namespace}" (give --owner to tie it to an object)`,
  );
  return lines.join("\n");
}

/** The machine form. */
export function reservationDocument(r: Reservation): object {
  return {
    address: r.address,
    claim: { namespace: r.namespace, name: r.name },
    pool: { kind: r.pool.kind, name: r.pool.name },
    owner: r.owner ? { apiVersion: r.owner.apiVersion, kind: r.owner.kind, name: r.owner.name } : null,
  };
}

/** What a claim is for, by its labels: a reservation, a control-plane endpoint, or nothing special. */
export type ClaimRole = "reservation" | "control-plane-endpoint";

export function claimRole(labels: Readonly<Record<string, string>> | undefined): ClaimRole | undefined {
  if (labels?.[RESERVATION_LABEL] !== undefined) return "reservation";
  if (labels?.[ENDPOINT_CLAIM_LABEL] !== undefined) return "control-plane-endpoint";
  return undefined;
}
