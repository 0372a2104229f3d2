/**
 * Pure translation between Cluster API's IPAM contract and the allocator's claims (spec §5). No I/O.
 */
import isEqual from "lodash/isEqual.js";
import {
  CAPI_IPADDRESS_KIND,
  IPADDRESSCLAIM_KIND,
  type CapiIPAddress,
  type IPAddressClaim,
  type PoolRef,
  type V1Beta1Condition,
} from "../../../api/capi/types.js";
import { apiVersionOf, type ClusterApiVersion } from "../../../api/registry.js";
import {
  CLUSTER_NAME_LABEL,
  READY_CONDITION,
  Reasons,
  type Condition,
  type ObjectMeta,
} from "../../../api/v1alpha1/types.js";
import { setCondition } from "../conditions.js";
import type { PoolKind, PoolObject } from "../pools/kind.js";
import { poolKeyOf } from "../pools/indexes.js";
import type { PoolKinds, PoolReference } from "../pools/registry.js";

/**
 * The label naming the pool of each Cluster API IPAddress we make, so the freshness barrier can ask the API server
 * for one pool's records (Cluster API's CRDs declare no selectable field for the pool: the barrier otherwise reads
 * every record of the namespace). Records made without it (by Metal3's controller, the in-cluster provider, a
 * person, or for a pool whose name is no label value) are read as the barrier's unlabelled ones. A record labelled
 * with another pool than the one it names, or relabelled between the barrier's two lists, may be among neither: it
 * reaches the cache by its watch event alone.
 */
export const RECORD_POOL_LABEL = "ipam.metal3.io/pool-name";

/** A label value is at most 63 characters, alphanumeric at both ends, with `-`, `_` and `.` between. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;

/** The {@link RECORD_POOL_LABEL} value of the records of pool `name`; undefined when the name is no label value. */
function recordPoolLabelValue(name: string): string | undefined {
  return LABEL_VALUE.test(name) ? name : undefined;
}

/**
 * Up to this many Cluster API IPAddresses in the namespace the barrier reads (every namespace, for a cluster-scoped
 * pool), one printed list of them all costs the API server and us less than the two labelled lists of
 * {@link recordPoolSelectors}: each list has a fixed cost, and the rows of a small namespace cost little.
 */
export const ONE_LIST_UP_TO = 150;

/**
 * The label selectors whose lists hold together every record of pool `name` made with {@link RECORD_POOL_LABEL}
 * right, and every record made without it: the pool's label, and no label at all. `undefined` selects every record:
 * the one list chosen while `recordsThere` (the cached records where the barrier reads) is at most
 * {@link ONE_LIST_UP_TO}.
 */
export function recordPoolSelectors(name: string, recordsThere: number): (string | undefined)[] {
  if (recordsThere <= ONE_LIST_UP_TO) return [undefined];
  const value = recordPoolLabelValue(name);
  const unlabelled = `!${RECORD_POOL_LABEL}`;
  return value === undefined ? [unlabelled] : [`${RECORD_POOL_LABEL}=${value}`, unlabelled];
}

/** Spec §4: `spec.clusterName`, else the cluster-name label, else the pool's (pools of kinds that name one). */
export function capiClaimClusterName(
  claim: IPAddressClaim,
  kind: PoolKind,
  pool: PoolObject | undefined,
): string | undefined {
  return (
    claim.spec?.clusterName ||
    claim.metadata.labels?.[CLUSTER_NAME_LABEL] ||
    (pool ? kind.clusterName(pool) : undefined) ||
    undefined
  );
}

/**
 * Spec §5.4: the Cluster API IPAddress that records `claim`'s allocation, named as the pool's kind names it (Metal3:
 * `<namePrefix>-<address>`, so Metal3's controller finds it after a rollback; the in-cluster kinds: the claim's name).
 * `poolRef` is copied from the claim; labels are the claim's cluster name and the pool's name
 * ({@link RECORD_POOL_LABEL}); owners are the claim (controller) and the pool; the kind's record finalizer
 * holds it until the claim releases it. `annotations` are an external engine's (NetBox names its record there).
 */
export function desiredCapiAddress(
  claim: IPAddressClaim,
  kind: PoolKind,
  pool: PoolObject,
  name: string,
  allocation: AllocatedAddress,
  apiVersion: string,
  annotations?: Readonly<Record<string, string>>,
): CapiIPAddress {
  const cluster = claim.metadata.labels?.[CLUSTER_NAME_LABEL];
  const poolLabel = recordPoolLabelValue(pool.metadata.name ?? "");
  const labels = {
    ...(cluster ? { [CLUSTER_NAME_LABEL]: cluster } : {}),
    ...(poolLabel !== undefined ? { [RECORD_POOL_LABEL]: poolLabel } : {}),
  };
  return {
    apiVersion,
    kind: CAPI_IPADDRESS_KIND,
    metadata: {
      name,
      namespace: claim.metadata.namespace ?? "",
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      ...(annotations ? { annotations: { ...annotations } } : {}),
      finalizers: [kind.finalizers.record],
      ownerReferences: [
        {
          apiVersion: claim.apiVersion ?? apiVersion,
          kind: IPADDRESSCLAIM_KIND,
          name: claim.metadata.name ?? "",
          uid: claim.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
        {
          apiVersion: apiVersionOf(kind.descriptor),
          kind: kind.descriptor.kind,
          name: pool.metadata.name ?? "",
          uid: pool.metadata.uid ?? "",
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      claimRef: { name: claim.metadata.name ?? "" },
      poolRef: { ...claim.spec.poolRef },
      address: allocation.address,
      // The contract's prefix is required (0..128); 0 is a real value here, unlike Metal3's optional one.
      prefix: allocation.prefix,
      ...(allocation.gateway ? { gateway: allocation.gateway } : {}),
    },
  };
}

/**
 * The metadata patch an adopted record of `claim` needs, or undefined: the kind's record finalizer, and for kinds that
 * repair owners (the in-cluster provider's) the owner references to the claim (controller, unless the record has
 * another controller) and the pool it lacks, matched by uid.
 */
export function recordRepair(
  kind: PoolKind,
  pool: PoolObject | undefined,
  claim: IPAddressClaim,
  address: CapiIPAddress,
): Partial<ObjectMeta> | undefined {
  const finalizers = address.metadata.finalizers ?? [];
  const owners = [...(address.metadata.ownerReferences ?? [])];
  if (kind.style.repairsRecordOwners) {
    const has = (uid: string | undefined): boolean => !uid || owners.some((o) => o.uid === uid);
    if (!has(claim.metadata.uid)) {
      owners.push({
        apiVersion: claim.apiVersion ?? "",
        kind: IPADDRESSCLAIM_KIND,
        name: claim.metadata.name ?? "",
        uid: claim.metadata.uid ?? "",
        blockOwnerDeletion: true,
        ...(owners.some((o) => o.controller) ? {} : { controller: true }),
      });
    }
    if (pool && !has(pool.metadata.uid)) {
      owners.push({
        apiVersion: apiVersionOf(kind.descriptor),
        kind: kind.descriptor.kind,
        name: pool.metadata.name ?? "",
        uid: pool.metadata.uid ?? "",
        blockOwnerDeletion: true,
      });
    }
  }
  const patch: Partial<ObjectMeta> = {
    ...(finalizers.includes(kind.finalizers.record) ? {} : { finalizers: [...finalizers, kind.finalizers.record] }),
    ...(owners.length === (address.metadata.ownerReferences ?? []).length ? {} : { ownerReferences: owners }),
  };
  return Object.keys(patch).length === 0 ? undefined : patch;
}

/** The part of an allocation a Cluster API IPAddress carries (it has no DNS field). */
export interface AllocatedAddress {
  address: string;
  prefix: number;
  gateway?: string;
}

/**
 * Whether `address` records this incarnation of `claim`: the same pool (group, kind and name), and owned by it when it
 * names an owner claim.
 */
export function belongsToCapiClaim(address: CapiIPAddress, claim: IPAddressClaim): boolean {
  if (!samePool(address.spec?.poolRef, claim.spec?.poolRef)) return false;
  const owner = (address.metadata.ownerReferences ?? []).find((o) => o.kind === IPADDRESSCLAIM_KIND);
  return !owner || !claim.metadata.uid || owner.uid === claim.metadata.uid;
}

/** Whether two pool references name the same pool (group, kind and name). */
export function samePool(a: PoolRef | undefined, b: PoolRef | undefined): boolean {
  return a?.name === b?.name && a?.kind === b?.kind && (a?.apiGroup ?? "") === (b?.apiGroup ?? "");
}

/**
 * The claim name a Cluster API claim holds addresses under in its pool's allocator: its name for a namespaced kind,
 * `<namespace>/<name>` for a cluster-scoped one (two claims of one name in two namespaces are two claims there).
 */
export function capiHolderName(kind: PoolKind, namespace: string, name: string): string {
  return kind.descriptor.namespaced ? name : `${namespace}/${name}`;
}

/** Whether this controller made `address` for this incarnation of `claim` (its controller owner reference says so). */
export function madeForCapiClaim(address: CapiIPAddress, claim: IPAddressClaim): boolean {
  const uid = claim.metadata.uid;
  return (
    uid !== undefined &&
    (address.metadata.ownerReferences ?? []).some((o) => o.kind === IPADDRESSCLAIM_KIND && o.uid === uid)
  );
}

export interface ReadyInput {
  status: "True" | "False";
  reason: string;
  message: string;
}

/** Our reasons → the contract's (PoolExhausted, PoolNotReady, AllocationFailed; spec §5.5). */
const CAPI_REASON: Record<string, string> = {
  [Reasons.PoolExhausted]: Reasons.PoolExhausted,
  [Reasons.PoolNotFound]: Reasons.PoolNotReady,
  [Reasons.PoolNotReady]: Reasons.PoolNotReady,
  [Reasons.ClusterNotFound]: Reasons.PoolNotReady,
  [Reasons.InvalidSpec]: Reasons.PoolNotReady,
};

/** The contract's reason for one of ours; anything else is AllocationFailed. */
export function capiReason(reason: string): string {
  return CAPI_REASON[reason] ?? Reasons.AllocationFailed;
}

/**
 * The claim's status for its served version: v1beta2 carries metav1 conditions in `conditions`; v1beta1 carries
 * Cluster API v1beta1 conditions there and the metav1 ones under `v1beta2.conditions`. The switch is exhaustive over
 * api/registry.ts's versions, so a new contract version does not compile until its status shape is chosen here.
 */
export function claimStatus(
  claim: IPAddressClaim,
  version: ClusterApiVersion,
  addressName: string | undefined,
  ready: ReadyInput,
  now: Date,
): NonNullable<IPAddressClaim["status"]> {
  const status = claim.status ?? {};
  const addressRef = addressName ? { name: addressName } : status.addressRef;
  switch (version) {
    case "v1beta2":
      return {
        ...status,
        ...(addressRef ? { addressRef } : {}),
        conditions: setCondition(
          status.conditions as Condition[] | undefined,
          { type: READY_CONDITION, ...ready },
          now,
        ),
      };
    case "v1beta1":
      return { ...status, ...(addressRef ? { addressRef } : {}), ...v1beta1Conditions(status, ready, now) };
  }
}

/** A status write for an IPAddressClaim: the status, and whether it reports a failure the claim did not report yet. */
export interface ClaimStatusWrite {
  status: NonNullable<IPAddressClaim["status"]>;
  /** Ready turns False, or stays False with another reason or message: a Warning Event and a metric follow the write. */
  newFailure: boolean;
}

/** The status write that makes `claim` say `ready` (and name `addressName`), or undefined when it already does. */
export function claimStatusWrite(
  claim: IPAddressClaim,
  version: ClusterApiVersion,
  addressName: string | undefined,
  ready: ReadyInput,
  now: Date,
): ClaimStatusWrite | undefined {
  const status = claimStatus(claim, version, addressName, ready, now);
  if (isEqual(status, claim.status ?? {})) return undefined;
  const before = readyOf(claim);
  return {
    status,
    newFailure: ready.status === "False" && (before?.reason !== ready.reason || before.message !== ready.message),
  };
}

/**
 * A claim bound the way Metal3's controller leaves one (`addressRef` naming `address`, no Ready condition) is adopted
 * as it is, like IPClaims: its Ready condition appears with its next real change.
 */
export function capiBoundByMetal3(claim: IPAddressClaim, address: CapiIPAddress): boolean {
  return claim.status?.addressRef?.name === address.metadata.name && readyOf(claim) === undefined;
}

/** The claim's Ready condition, in either version's place for metav1 conditions. */
function readyOf(claim: IPAddressClaim): { reason?: string; message?: string } | undefined {
  const conditions = claim.status?.v1beta2?.conditions ?? claim.status?.conditions;
  return conditions?.find((c) => c.type === READY_CONDITION);
}

/** v1beta1's two condition lists: Cluster API v1beta1 conditions in `conditions`, metav1 ones in `v1beta2.conditions`. */
function v1beta1Conditions(
  status: NonNullable<IPAddressClaim["status"]>,
  ready: ReadyInput,
  now: Date,
): Pick<NonNullable<IPAddressClaim["status"]>, "conditions" | "v1beta2"> {
  const v1beta2 = setCondition(status.v1beta2?.conditions, { type: READY_CONDITION, ...ready }, now);
  const legacy = (status.conditions ?? []) as V1Beta1Condition[];
  const previous = legacy.find((c) => c.type === READY_CONDITION);
  const readyV1: V1Beta1Condition = {
    type: READY_CONDITION,
    status: ready.status,
    ...(ready.status === "False" ? { severity: "Warning" as const, reason: ready.reason, message: ready.message } : {}),
    lastTransitionTime:
      previous && previous.status === ready.status
        ? previous.lastTransitionTime
        : now.toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
  return {
    conditions: [...legacy.filter((c) => c.type !== READY_CONDITION), readyV1],
    v1beta2: { conditions: v1beta2 },
  };
}

/** Pool key of a Cluster API IPAddress, when it points at a pool of a kind we serve. */
export function capiAddressToPool(kinds: PoolKinds, a: CapiIPAddress): string[] {
  const key = kinds.keyOfRef(a.spec?.poolRef, a.metadata.namespace ?? "");
  return key === undefined ? [] : [key];
}

/**
 * Where a Cluster API claim belongs: the key of its pool, or none for another provider's claim. A claim meant for a
 * kind of ours whose `poolRef` names no pool (an empty name, group or kind, which Cluster API's v1beta1 schema
 * admits) is keyed under that kind's pool with the empty name, in its namespace: the pass over that key names no
 * pool, asks the API server nothing about one, and fails each such claim with `problem`.
 */
export function capiClaimTarget(
  kinds: PoolKinds,
  claim: IPAddressClaim,
): { key: string; problem?: string } | undefined {
  const ref = claim.spec?.poolRef;
  const namespace = claim.metadata.namespace ?? "";
  const key = kinds.keyOfRef(ref, namespace);
  if (key !== undefined) return { key };
  const kind = kinds.intendedKind(ref);
  if (!kind) return undefined;
  const { group, kind: kindName, namespaced } = kind.descriptor;
  return {
    key: poolKeyOf({ group, kind: kindName, namespace: namespaced ? namespace : "", name: "" }),
    problem: poolRefProblem(ref ?? {}, kind),
  };
}

/** What is wrong with a reference meant for `kind` that names no pool of it. */
function poolRefProblem(ref: PoolReference, kind: PoolKind): string {
  const { group, kind: kindName } = kind.descriptor;
  if (!ref.apiGroup) return `spec.poolRef.apiGroup is empty: ${kindName} pools are in group ${group}`;
  if (!ref.kind) return `spec.poolRef.kind is empty: set the kind of pool in group ${group} to allocate from`;
  return `spec.poolRef.name is empty: the claim names no ${kindName}`;
}

/** Pool key of a Cluster API claim we serve (none for another provider's pool kind); see {@link capiClaimTarget}. */
export function capiClaimToPool(kinds: PoolKinds, c: IPAddressClaim): string[] {
  const target = capiClaimTarget(kinds, c);
  return target === undefined ? [] : [target.key];
}

/** Like Metal3's `claimWaits` (ippool/indexes.ts): the claim has no address yet, or its deletion waits for its release. */
export const capiClaimWaits = (c: IPAddressClaim): boolean =>
  !c.status?.addressRef?.name || !!c.metadata.deletionTimestamp;

/** `<namespace>/<cluster>` of a Cluster API claim's own Cluster (spec.clusterName, else the label). */
export function capiClaimToCluster(c: IPAddressClaim): string[] {
  const name = c.spec?.clusterName || c.metadata.labels?.[CLUSTER_NAME_LABEL];
  return name ? [`${c.metadata.namespace ?? ""}/${name}`] : [];
}

/** Claim key of a Cluster API IPAddress. */
export const capiAddressToClaim = (a: CapiIPAddress): string =>
  `${a.metadata.namespace ?? ""}/${a.spec?.claimRef?.name ?? ""}`;
