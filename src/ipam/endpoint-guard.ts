/**
 * The control-plane endpoint guard's decisions (the validating webhook of Clusters and infrastructure clusters): a
 * `spec.controlPlaneEndpoint.host` that one of our pools handed to someone else is refused, naming the holder; a
 * namespace may require endpoints from given pools; the host of a cluster whose endpoint came from a pool does not
 * change while its claim holds it. Pure: the webhook reads what is named here and hands it in.
 */
import { canonicalAddress } from "./address.js";
import { endpointClaimName, parseEndpointPool, ENDPOINT_POOL_ANNOTATION, type EndpointPoolRef } from "./endpoint.js";
import type { FieldError } from "./fielderror.js";

/**
 * On a Namespace: the pools every control-plane endpoint in it must come from, `<Kind>/<name>` separated by commas
 * (e.g. `InClusterIPPool/vips, GlobalInClusterIPPool/dc1-vips`). An annotation, not a label: a label's value cannot
 * hold `/` or `,`.
 */
export const ENDPOINT_POOLS_NAMESPACE_ANNOTATION = "ipam.metal3.io/control-plane-endpoint-pools";

/** Most pools the namespace annotation may list; a longer list is refused as malformed (hostile input is bounded). */
export const MAX_NAMESPACE_POOLS = 64;
/** Longest namespace annotation read. */
const MAX_NAMESPACE_ANNOTATION = 16 * 1024;
/** Most holders a refusal names (the rest are counted). */
export const MAX_HOLDERS_NAMED = 5;

/** Who holds an address: the claim of an IPAddress (Metal3's `IPClaim` or Cluster API's `IPAddressClaim`). */
export interface Holder {
  claimKind: "IPClaim" | "IPAddressClaim";
  namespace: string;
  claimName: string;
  /** The pool the address came from, `<Kind>/<name>`. */
  pool: string;
}

/** The object under review, as far as the guard reads it. */
export interface GuardedObject {
  /** `Cluster`, `Metal3Cluster`, …: for messages. */
  kind: string;
  namespace: string;
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  /** `metadata.ownerReferences` as far as they name a Cluster API Cluster. */
  ownerClusterName?: string;
  /** `spec.controlPlaneEndpoint.host`, "" when unset. */
  host: string;
}

/** The cluster's own endpoint claim as read from the API server. */
export interface OwnClaim {
  /** `metadata.deletionTimestamp` is set: it is being released. */
  deleting: boolean;
  /** `spec.poolRef`, `<Kind>/<name>`. */
  pool: string;
  /** The address it is bound to, canonical; undefined while pending. */
  address?: string;
}

const CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name";

/**
 * The Cluster whose endpoint claim `object` shares: a Cluster's own name; for an infrastructure cluster the
 * `cluster.x-k8s.io/cluster-name` label (Cluster API and the topology controller set it), else its owner Cluster,
 * else its own name (the usual convention of one name for both).
 */
export function clusterNameOf(object: GuardedObject): string {
  if (object.kind === "Cluster") return object.name;
  return object.labels[CLUSTER_NAME_LABEL] || object.ownerClusterName || object.name;
}

/** The claim that holds `object`'s endpoint when it comes from a pool. */
export function ownClaimName(object: GuardedObject): string {
  return endpointClaimName(clusterNameOf(object));
}

/** The host as an address in canonical text, or undefined for a DNS name (or nothing): not the guard's business. */
export function hostAddress(host: string): string | undefined {
  return host.length > 0 && host.length <= 64 ? canonicalAddress(host) : undefined;
}

/** Whether `holder` is `object`'s own endpoint claim. */
export function isOwnClaim(object: GuardedObject, holder: Holder): boolean {
  return (
    holder.claimKind === "IPAddressClaim" &&
    holder.namespace === object.namespace &&
    holder.claimName === ownClaimName(object)
  );
}

const HOST_FIELD = "spec.controlPlaneEndpoint.host";

const describeHolder = (h: Holder): string => `${h.claimKind} ${h.namespace}/${h.claimName} (pool ${h.pool})`;

/**
 * The refusal for a host held by others than `object`'s own endpoint claim: one error naming up to
 * {@link MAX_HOLDERS_NAMED} holders. None when every holder is the object's own claim.
 */
export function heldElsewhere(object: GuardedObject, address: string, holders: readonly Holder[]): FieldError[] {
  const others = holders.filter((h) => !isOwnClaim(object, h));
  if (others.length === 0) return [];
  const named = others.slice(0, MAX_HOLDERS_NAMED).map(describeHolder).join(", ");
  const more = others.length > MAX_HOLDERS_NAMED ? ` and ${others.length - MAX_HOLDERS_NAMED} more` : "";
  return [
    {
      field: HOST_FIELD,
      type: "Invalid",
      value: object.host,
      detail: `address ${address} is already held by ${named}${more}: two clusters on one endpoint fail each other's requests; choose another address or take one from a pool (annotation ${ENDPOINT_POOL_ANNOTATION})`,
    },
  ];
}

/** Parses the namespace annotation; a message when it is malformed (the rule then refuses every endpoint). */
export function parseNamespacePools(value: string): EndpointPoolRef[] | { error: string } {
  if (value.length > MAX_NAMESPACE_ANNOTATION)
    return { error: `is longer than ${MAX_NAMESPACE_ANNOTATION} characters` };
  const items = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (items.length === 0) return { error: "lists no pool" };
  if (items.length > MAX_NAMESPACE_POOLS) return { error: `lists more than ${MAX_NAMESPACE_POOLS} pools` };
  const pools: EndpointPoolRef[] = [];
  for (const item of items) {
    const ref = parseEndpointPool(item);
    if ("error" in ref) return { error: `entry "${item.slice(0, 64)}": ${ref.error}` };
    pools.push(ref);
  }
  return pools;
}

const poolText = (ref: EndpointPoolRef): string => `${ref.kind}/${ref.name}`;

/**
 * The namespace rule (annotation {@link ENDPOINT_POOLS_NAMESPACE_ANNOTATION} on the object's namespace): with no host
 * yet, the object's pool annotation must name a listed pool; with an address as host, the object's own endpoint claim
 * must be bound to that very address from a listed pool. A DNS host is not checked (callers skip it).
 */
export function namespaceRule(
  object: GuardedObject,
  annotationValue: string,
  address: string | undefined,
  own: OwnClaim | undefined,
): FieldError[] {
  const parsed = parseNamespacePools(annotationValue);
  const where = `namespace ${object.namespace} (annotation ${ENDPOINT_POOLS_NAMESPACE_ANNOTATION})`;
  if ("error" in parsed)
    return [
      {
        field: HOST_FIELD,
        type: "Forbidden",
        detail: `the endpoint rule of ${where} ${parsed.error}; no endpoint is admitted there until it is fixed`,
      },
    ];
  const listed = new Set(parsed.map(poolText));
  const allowed = parsed.map(poolText).join(", ");
  if (address === undefined) {
    const asked = object.annotations[ENDPOINT_POOL_ANNOTATION];
    if (asked !== undefined && listed.has(asked.trim())) return [];
    return [
      {
        field: `metadata.annotations[${ENDPOINT_POOL_ANNOTATION}]`,
        type: "Forbidden",
        detail: `${where} takes control-plane endpoints only from ${allowed}: name one of them`,
      },
    ];
  }
  if (own && !own.deleting && own.address === address && listed.has(own.pool)) return [];
  return [
    {
      field: HOST_FIELD,
      type: "Forbidden",
      detail: `${where} takes control-plane endpoints only from ${allowed}; ${address} is not held by IPAddressClaim ${object.namespace}/${ownClaimName(object)} from one of them: set annotation ${ENDPOINT_POOL_ANNOTATION} to one of them and leave the host empty`,
    },
  ];
}

/**
 * UPDATE: a host that changes (or goes) while the endpoint claim is bound to it is refused, with how to move the cluster:
 * the claim keeps the old address, so a changed host would leave it held for nobody and break the endpoint's owner.
 */
export function hostChange(object: GuardedObject, oldHost: string, own: OwnClaim | undefined): FieldError[] {
  if (oldHost === object.host || !own || own.deleting || own.address === undefined) return [];
  if (own.address !== hostAddress(oldHost)) return [];
  const claim = `IPAddressClaim ${object.namespace}/${ownClaimName(object)}`;
  return [
    {
      field: HOST_FIELD,
      type: "Forbidden",
      detail: `the endpoint ${oldHost} came from pool ${own.pool} and ${claim} holds it; to move ${object.kind} ${object.name} to another host, first remove its annotation ${ENDPOINT_POOL_ANNOTATION} and delete ${claim}, then change the host`,
    },
  ];
}
