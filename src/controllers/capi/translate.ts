/**
 * Pure translation between Cluster API's IPAM contract and our IPClaim / IPAddress (spec §5). No I/O.
 */
import {
  CAPI_IPADDRESS_FINALIZER,
  CAPI_IPADDRESS_KIND,
  CAPI_IPAM_GROUP,
  IPADDRESSCLAIM_KIND,
  type CapiIPAddress,
  type IPAddressClaim,
  type V1Beta1Condition,
} from "../../../api/capi/types.js";
import {
  API_VERSION,
  CLUSTER_NAME_LABEL,
  GROUP,
  IP_ADDRESS_ANNOTATION,
  IPCLAIM_KIND,
  IPPOOL_KIND,
  READY_CONDITION,
  Reasons,
  type Condition,
  type IPAddress,
  type IPClaim,
  type IPPool,
} from "../../../api/v1alpha1/types.js";
import { setCondition } from "../conditions.js";

/** Spec §5.1: only claims for our pool kind (Metal3's Go controller compares the name only; we do not). */
export function servesClaim(claim: IPAddressClaim): boolean {
  return claim.spec?.poolRef?.apiGroup === GROUP && claim.spec.poolRef.kind === IPPOOL_KIND && Boolean(claim.spec.poolRef.name);
}

/** Spec §4: `spec.clusterName`, else the cluster-name label, else the pool's. */
export function capiClaimClusterName(claim: IPAddressClaim, pool: IPPool | undefined): string | undefined {
  return claim.spec?.clusterName || claim.metadata.labels?.[CLUSTER_NAME_LABEL] || pool?.spec?.clusterName || undefined;
}

/** The IPClaim that carries a Cluster API claim through our allocator: same name and namespace, owned by it. */
export function desiredIPClaim(claim: IPAddressClaim): IPClaim {
  const requested = claim.metadata.annotations?.[IP_ADDRESS_ANNOTATION];
  return {
    apiVersion: API_VERSION,
    kind: IPCLAIM_KIND,
    metadata: {
      name: claim.metadata.name ?? "",
      namespace: claim.metadata.namespace ?? "",
      labels: { ...(claim.metadata.labels ?? {}) },
      ...(requested !== undefined ? { annotations: { [IP_ADDRESS_ANNOTATION]: requested } } : {}),
      ownerReferences: [
        {
          apiVersion: claim.apiVersion ?? `${CAPI_IPAM_GROUP}/v1beta2`,
          kind: IPADDRESSCLAIM_KIND,
          name: claim.metadata.name ?? "",
          uid: claim.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { pool: { name: claim.spec.poolRef.name } },
  };
}

/** Whether `ipClaim` is controlled by this incarnation of `claim`. */
export function ownedBy(ipClaim: IPClaim, claim: IPAddressClaim): boolean {
  return (ipClaim.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.kind === IPADDRESSCLAIM_KIND && o.uid === claim.metadata.uid);
}

/** Spec §5.4: the Cluster API IPAddress for a claim whose IPClaim holds `address`. */
export function desiredCapiAddress(claim: IPAddressClaim, address: IPAddress, pool: IPPool, apiVersion: string): CapiIPAddress {
  const cluster = claim.metadata.labels?.[CLUSTER_NAME_LABEL];
  return {
    apiVersion,
    kind: CAPI_IPADDRESS_KIND,
    metadata: {
      name: claim.metadata.name ?? "",
      namespace: claim.metadata.namespace ?? "",
      ...(cluster ? { labels: { [CLUSTER_NAME_LABEL]: cluster } } : {}),
      finalizers: [CAPI_IPADDRESS_FINALIZER],
      ownerReferences: [
        { apiVersion: claim.apiVersion ?? apiVersion, kind: IPADDRESSCLAIM_KIND, name: claim.metadata.name ?? "", uid: claim.metadata.uid ?? "", controller: true, blockOwnerDeletion: true },
        { apiVersion: API_VERSION, kind: IPPOOL_KIND, name: pool.metadata.name ?? "", uid: pool.metadata.uid ?? "", blockOwnerDeletion: true },
      ],
    },
    spec: {
      claimRef: { name: claim.metadata.name ?? "" },
      poolRef: { ...claim.spec.poolRef },
      address: address.spec.address,
      prefix: address.spec.prefix ?? 0,
      ...(address.spec.gateway ? { gateway: address.spec.gateway } : {}),
    },
  };
}

export interface ReadyInput {
  status: "True" | "False";
  reason: string;
  message: string;
}

/** IPClaim reasons → the contract's reasons (PoolExhausted, PoolNotReady, AllocationFailed; spec §5.5). */
const CAPI_REASON: Record<string, string> = {
  [Reasons.PoolExhausted]: Reasons.PoolExhausted,
  [Reasons.PoolNotFound]: Reasons.PoolNotReady,
  [Reasons.PoolNotReady]: Reasons.PoolNotReady,
  [Reasons.ClusterNotFound]: Reasons.PoolNotReady,
  [Reasons.InvalidSpec]: Reasons.PoolNotReady,
};

/** The Cluster API claim's Ready condition, mirrored from its IPClaim. */
export function readyFromIPClaim(ipClaim: IPClaim | undefined): ReadyInput {
  if (!ipClaim) return { status: "False", reason: "WaitingForIPClaim", message: "Waiting for the IPClaim to be created" };
  const ready = ipClaim.status?.conditions?.find((c) => c.type === READY_CONDITION);
  if (!ready) return { status: "False", reason: "WaitingForAddress", message: "Waiting for an address" };
  if (ipClaim.status?.address?.name && ready.status === "True") return { status: "True", reason: Reasons.Allocated, message: ready.message || "Allocated" };
  const message = ipClaim.status?.errorMessage ?? (ready.message || "Waiting for an address");
  return { status: "False", reason: CAPI_REASON[ready.reason] ?? Reasons.AllocationFailed, message };
}

/**
 * The claim's status for its served version: v1beta2 carries metav1 conditions in `conditions`; v1beta1 carries
 * Cluster API v1beta1 conditions there and the metav1 ones under `v1beta2.conditions`.
 */
export function claimStatus(claim: IPAddressClaim, version: string, addressName: string | undefined, ready: ReadyInput, now: Date): NonNullable<IPAddressClaim["status"]> {
  const status = claim.status ?? {};
  const addressRef = addressName ? { name: addressName } : status.addressRef;
  if (version === "v1beta2") {
    return { ...status, ...(addressRef ? { addressRef } : {}), conditions: setCondition(status.conditions as Condition[] | undefined, { type: READY_CONDITION, ...ready }, now) };
  }
  const v1beta2 = setCondition(status.v1beta2?.conditions, { type: READY_CONDITION, ...ready }, now);
  const legacy = (status.conditions ?? []) as V1Beta1Condition[];
  const previous = legacy.find((c) => c.type === READY_CONDITION);
  const readyV1: V1Beta1Condition = {
    type: READY_CONDITION,
    status: ready.status,
    ...(ready.status === "False" ? { severity: "Warning" as const, reason: ready.reason, message: ready.message } : {}),
    lastTransitionTime: previous && previous.status === ready.status ? previous.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
  return { ...status, ...(addressRef ? { addressRef } : {}), conditions: [...legacy.filter((c) => c.type !== READY_CONDITION), readyV1], v1beta2: { conditions: v1beta2 } };
}

/** Pool key (`ns/name`) of a Cluster API IPAddress, when it points at one of our pools. */
export function capiAddressToPool(a: CapiIPAddress): string[] {
  const ref = a.spec?.poolRef;
  return ref?.apiGroup === GROUP && ref.kind === IPPOOL_KIND ? [`${a.metadata.namespace ?? ""}/${ref.name}`] : [];
}

/** Claim key of a Cluster API IPAddress. */
export const capiAddressToClaim = (a: CapiIPAddress): string => `${a.metadata.namespace ?? ""}/${a.spec?.claimRef?.name ?? ""}`;
