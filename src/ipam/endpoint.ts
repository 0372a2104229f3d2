/**
 * Control-plane endpoints from a pool: the names every part agrees on (the mutating webhook that fills
 * `spec.controlPlaneEndpoint.host`, the controller that binds and releases the claim, the guard that refuses a host
 * held by someone else, and `kubectl ipam`). Pure: no Kubernetes imports.
 *
 * A Cluster (or an infrastructure cluster such as a Metal3Cluster) asks for its endpoint with the annotation
 * {@link ENDPOINT_POOL_ANNOTATION}, `<Kind>/<name>` of one of our pools. The address is an ordinary Cluster API
 * `IPAddressClaim` in the object's namespace, named by {@link endpointClaimName} from the Cluster's name, so the
 * Cluster and its infrastructure cluster share one claim and a repeated admission finds the claim it made.
 */
import { POOL_DESCRIPTORS, type PoolKindName } from "../../api/registry.js";

/** On a Cluster or an infrastructure cluster: which pool hands out its control-plane endpoint, `<Kind>/<name>`. */
export const ENDPOINT_POOL_ANNOTATION = "ipam.metal3.io/control-plane-endpoint-pool";

/** On an `IPAddressClaim`: it holds the control-plane endpoint of the Cluster its `cluster.x-k8s.io/cluster-name` label names. */
export const ENDPOINT_CLAIM_LABEL = "ipam.metal3.io/control-plane-endpoint";

/**
 * On an endpoint `IPAddressClaim` that no Cluster owns yet: the pool it draws from, as {@link endpointPoolKey}. The
 * webhook counts the claims carrying it before it makes another ({@link pendingClaimsRefusal}); the controller removes
 * it in the patch that makes the Cluster the claim's owner, so a selector on it finds the pending claims alone.
 */
export const ENDPOINT_PENDING_LABEL = "ipam.metal3.io/control-plane-endpoint-pending";

/**
 * Default of `--endpoint-pending-claims`: the most endpoint claims of one pool that wait for their Cluster at once.
 * Every create asking for an endpoint holds one such claim from its admission until the controller sees its Cluster
 * (about a second), so the default sits well above bursts of Clusters created at once from one pool (a GitOps sync of
 * a fleet); it is also the most addresses of a pool that reviews of Clusters never created can hold.
 */
export const DEFAULT_ENDPOINT_PENDING_CLAIMS = 64;

/** Default of `--endpoint-claim-grace`: how long an endpoint claim waits for its Cluster before it is deleted. */
export const DEFAULT_ENDPOINT_CLAIM_GRACE_MS = 10 * 60_000;

/**
 * Default of `--endpoint-kinds`: the infrastructure cluster resources, as `plural.group`, whose endpoint the webhook
 * fills (Clusters always).
 */
export const DEFAULT_ENDPOINT_KINDS = ["metal3clusters.infrastructure.cluster.x-k8s.io"] as const;

/** The port written when the object gives none: the API server's usual one. */
export const DEFAULT_ENDPOINT_PORT = 6443;

/** Pool kinds an endpoint may come from, as the annotation spells them: every pool kind of the registry. */
export const ENDPOINT_POOL_KINDS: readonly PoolKindName[] = POOL_DESCRIPTORS.map((d) => d.kind);

/** The pool an annotation names. */
export interface EndpointPoolRef {
  kind: PoolKindName;
  name: string;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_NAME = 253;

/**
 * Reads the annotation's value: `<Kind>/<name>`, the kind one of {@link ENDPOINT_POOL_KINDS} and the name a DNS-1123
 * subdomain. Returns the reference or a message for the object's author.
 */
export function parseEndpointPool(value: string): EndpointPoolRef | { error: string } {
  const slash = value.indexOf("/");
  const kinds = ENDPOINT_POOL_KINDS.join(", ");
  if (slash < 0) return { error: `must be <Kind>/<name> with Kind one of ${kinds}` };
  const kindText = value.slice(0, slash);
  const name = value.slice(slash + 1);
  const kind = ENDPOINT_POOL_KINDS.find((k) => k === kindText);
  if (kind === undefined) return { error: `pool kind must be one of ${kinds}, got "${kindText.slice(0, 64)}"` };
  if (name.length === 0 || name.length > MAX_NAME || !DNS1123_SUBDOMAIN.test(name))
    return { error: `pool name must be a DNS-1123 subdomain, got "${name.slice(0, 64)}"` };
  return { kind, name };
}

const MAX_LABEL_VALUE = 63;

/**
 * The value of {@link ENDPOINT_PENDING_LABEL} for `pool`: `<Kind>.<name>` when it fits a label value, else
 * `<Kind>_<digest of the name>` (a pool name has no `_`, so the two forms never meet).
 */
export function endpointPoolKey(pool: EndpointPoolRef): string {
  const plain = `${pool.kind}.${pool.name}`;
  if (plain.length <= MAX_LABEL_VALUE) return plain;
  const digest = [fnv1a(pool.name), fnv1a(pool.name, 0xcbf29ce4)].map((h) => h.toString(16).padStart(8, "0")).join("");
  return `${pool.kind}_${digest}`;
}

/** What {@link pendingClaimsRefusal} decides on. */
export interface PendingClaims {
  pool: EndpointPoolRef;
  /** Endpoint claims of that pool no Cluster owns yet (counted up to `limit`). */
  pending: number;
  /** `--endpoint-pending-claims`. */
  limit: number;
  /** `--endpoint-claim-grace`, in ms. */
  graceMs: number;
}

/**
 * The message refusing another endpoint claim from the pool when `limit` of its claims already wait for their Cluster;
 * undefined when one more may be made. Reviews for Clusters that are never created (a later webhook refused them, or
 * anyone who reaches the webhook's port sent them) hold addresses until the grace deletes their claims: this bound
 * keeps them from taking more than `limit` of a pool's addresses.
 */
export function pendingClaimsRefusal(input: PendingClaims): string | undefined {
  if (input.pending < input.limit) return undefined;
  const { pool } = input;
  return (
    `${input.pending} control-plane endpoint claims of pool ${pool.kind}/${pool.name} are waiting for their Cluster ` +
    `(labelled ${ENDPOINT_PENDING_LABEL}), the most allowed (--endpoint-pending-claims=${input.limit}): retry the ` +
    `create once their Clusters exist, or once claims whose Cluster never comes are deleted, ` +
    `${formatGrace(input.graceMs)} after their creation (--endpoint-claim-grace)`
  );
}

/** `ms` as `--endpoint-claim-grace` spells it: `10m`, `8s` or `500ms`. */
export function formatGrace(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}

const SUFFIX = "-control-plane-endpoint";

/**
 * The `IPAddressClaim` holding the endpoint of Cluster `clusterName` (in the Cluster's namespace). Deterministic, so
 * the webhook called twice, the Cluster and its infrastructure cluster, and every replica name the same claim. A
 * name too long for the suffix is cut and given a short digest of the whole, so two long names never collide.
 */
export function endpointClaimName(clusterName: string): string {
  if (clusterName.length + SUFFIX.length <= MAX_NAME) return clusterName + SUFFIX;
  const digest = fnv1a(clusterName).toString(16).padStart(8, "0");
  const keep = MAX_NAME - SUFFIX.length - digest.length - 1;
  return `${clusterName.slice(0, keep).replace(/[-.]+$/, "")}-${digest}${SUFFIX}`;
}

function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
