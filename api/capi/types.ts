/**
 * The parts of Cluster API's `ipam.cluster.x-k8s.io` (v1beta2, and v1beta1 for management clusters on CAPI 1.10 and
 * older) that the bridge reads and writes (spec §5), and the names of `cluster.x-k8s.io` we refer to. Types only; the
 * versions we speak are in api/registry.ts.
 */
import type { Condition, ObjectMeta } from "../v1alpha1/types.js";

/** Cluster API's IPAM group. Its kinds, plurals and versions are in api/registry.ts. */
export const CAPI_IPAM_GROUP = "ipam.cluster.x-k8s.io";
export const IPADDRESSCLAIM_KIND = "IPAddressClaim";
export const CAPI_IPADDRESS_KIND = "IPAddress";

/** Cluster API's core group (Cluster, Machine). */
export const CLUSTER_GROUP = "cluster.x-k8s.io";
export const CLUSTER_KIND = "Cluster";
export const MACHINE_KIND = "Machine";

/** On IPAddressClaims we serve, until the address is released (spec §5.3). */
export const IPADDRESSCLAIM_FINALIZER = "ipam.metal3.io/ipaddressclaim";
/** On the Cluster API IPAddresses we create, until their claim is deleted (spec §5.4). */
export const CAPI_IPADDRESS_FINALIZER = "ipam.metal3.io/ipaddress";

/** `TypedLocalObjectReference` as the contract uses it for pools. */
export interface PoolRef {
  apiGroup?: string;
  kind: string;
  name: string;
}

/** Cluster API v1beta1 condition (severity is only set when status is False). */
export interface V1Beta1Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  severity?: "Error" | "Warning" | "Info" | "";
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

export interface IPAddressClaim {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { poolRef: PoolRef; clusterName?: string };
  status?: {
    addressRef?: { name?: string };
    /** v1beta2: metav1.Condition; v1beta1: V1Beta1Condition. */
    conditions?: (Condition | V1Beta1Condition)[];
    /** v1beta1 only: the v1beta2-style conditions. */
    v1beta2?: { conditions?: Condition[] };
  };
}

export interface CapiIPAddress {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { claimRef: { name: string }; poolRef: PoolRef; address: string; prefix: number; gateway?: string };
}
