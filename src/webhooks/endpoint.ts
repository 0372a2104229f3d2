/**
 * The control-plane endpoint webhook (mutating, CREATE only): a Cluster API Cluster, or an infrastructure cluster of
 * a kind it is told to serve (Metal3Cluster by default), that asks for its endpoint from one of our pools with
 * {@link ENDPOINT_POOL_ANNOTATION} and names no `spec.controlPlaneEndpoint.host` gets the address of an ordinary
 * Cluster API `IPAddressClaim` written there (and port 6443 when none is given), before any validating webhook
 * (CAPM3's requires the host at create) sees the object.
 *
 * Contract:
 * - An explicit host is never touched; an object without the annotation is left alone, except an infrastructure
 *   cluster whose Cluster (its `cluster.x-k8s.io/cluster-name` label) carries it: the ClusterClass case, where the
 *   topology controller creates the infrastructure cluster.
 * - The claim is `endpointClaimName(<Cluster name>)` in the object's namespace (an infrastructure cluster without the
 *   label counts as its own Cluster's namesake), so a repeated call, the Cluster and its infrastructure cluster, and
 *   every replica find the same claim. The leader allocates; this webhook runs on every replica and only waits for
 *   the claim's `status.addressRef` and reads that IPAddress.
 * - Not bound within the wait: refused with 503 and a message to retry; the claim stays and the next try finds it. A
 *   claim whose Cluster never comes is deleted by the controller after its grace (src/controllers/capi/endpoint.ts).
 * - Dry run: nothing is created; an already bound claim's address is used, otherwise the object passes unchanged
 *   with a warning.
 * - A bad annotation is refused with the parse error (422); a claim of that name that is not this endpoint's with
 *   409; a claim being deleted (an earlier Cluster of that name) with 503, retry once it is gone.
 * - The port does not know who sends a review, so reviews for Clusters that never come can make claims: a new claim
 *   is made only while fewer than {@link EndpointRouteOptions.pendingLimit} claims of its pool wait for their Cluster
 *   (counted by {@link ENDPOINT_PENDING_LABEL}, one page of at most that many), else the create is refused with 429
 *   (`pendingClaimsRefusal`). Count and create run one at a time per pool on each replica, so the claims waiting
 *   never exceed the limit plus one per further replica. Finding the claim by name comes first and is never limited.
 */
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  CLUSTER,
  isGlobalKind,
  poolDescriptor,
  resourceType,
} from "../../api/registry.js";
import {
  CLUSTER_GROUP,
  CLUSTER_KIND,
  IPADDRESSCLAIM_KIND,
  type CapiIPAddress,
  type IPAddressClaim,
} from "../../api/capi/types.js";
import { CLUSTER_NAME_LABEL } from "../../api/v1alpha1/types.js";
import {
  DEFAULT_ENDPOINT_CLAIM_GRACE_MS,
  DEFAULT_ENDPOINT_PENDING_CLAIMS,
  ENDPOINT_CLAIM_LABEL,
  ENDPOINT_PENDING_LABEL,
  ENDPOINT_POOL_ANNOTATION,
  DEFAULT_ENDPOINT_PORT,
  endpointClaimName,
  endpointPoolKey,
  parseEndpointPool,
  pendingClaimsRefusal,
  type EndpointPoolRef,
} from "../ipam/endpoint.js";
import type { Kube } from "../kube/access.js";
import { servedVersion } from "../kube/discovery.js";
import { isAlreadyExists, isNotFound } from "../kube/errors.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import { allow, deny, failure, invalid, isRecord } from "./admission.js";
import type { AdmissionRequest, AdmissionResponse, JsonPatchOp } from "./admission.js";
import type { Route } from "./route.js";

/** The Cluster API Cluster as this webhook names it: always served. */
const CLUSTERS = `${CLUSTER.plural}.${CLUSTER.group}`;

/** Reads and writes of the webhook; an interface, so handler tests inject plain data. Rejects on API failures. */
export interface EndpointAccess {
  /** The annotations of Cluster `name`, or undefined when there is no such Cluster. */
  clusterAnnotations(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /** The claim, or undefined when there is none. */
  claim(namespace: string, name: string): Promise<IPAddressClaim | undefined>;
  /**
   * Up to `limit` claims labelled {@link ENDPOINT_PENDING_LABEL} `poolKey` (one page), in `namespace` or, when it is
   * undefined (a global pool), in every namespace.
   */
  pendingClaims(namespace: string | undefined, poolKey: string, limit: number): Promise<IPAddressClaim[]>;
  /** Creates `claim`; the one already there when another call made it first. */
  createClaim(claim: IPAddressClaim): Promise<IPAddressClaim>;
  /** `spec.address` of Cluster API IPAddress `name`, or undefined when there is none. */
  address(namespace: string, name: string): Promise<string | undefined>;
}

/** Options of {@link endpointRoute}. */
export interface EndpointRouteOptions {
  access: EndpointAccess;
  /** Infrastructure cluster resources served, as `plural.group`; the Cluster is always served. */
  kinds: readonly string[];
  /** Longest wait for the leader to bind a new claim, within the request's deadline. Default 5 s. */
  waitMs?: number;
  /** First pause between two reads of the claim; doubled up to 500 ms. Default 100 ms. */
  pollMs?: number;
  /**
   * `--endpoint-pending-claims`: most claims of one pool waiting for their Cluster. Default
   * {@link DEFAULT_ENDPOINT_PENDING_CLAIMS}.
   */
  pendingLimit?: number;
  /** `--endpoint-claim-grace`, for the refusal's message. Default {@link DEFAULT_ENDPOINT_CLAIM_GRACE_MS}. */
  graceMs?: number;
}

/** Time kept back from the request's deadline for the answer itself. */
const ANSWER_MARGIN_MS = 1_000;
const MAX_POLL_MS = 500;

/** What the object asks for, read from the request alone (pure). */
export type EndpointRequest =
  | { kind: "none" }
  | { kind: "bad"; value: string; error: string }
  | { kind: "annotated"; pool: EndpointPoolRef; clusterName: string }
  /** An infrastructure cluster without the annotation: its Cluster's annotation decides. */
  | { kind: "viaCluster"; clusterName: string };

interface Endpoint {
  host?: unknown;
  port?: unknown;
}

/** `spec.controlPlaneEndpoint` of an object, when it is an object. */
function endpointOf(object: Record<string, unknown>): Endpoint | undefined {
  const spec = object.spec;
  if (!isRecord(spec)) return undefined;
  const endpoint = spec.controlPlaneEndpoint;
  return isRecord(endpoint) ? endpoint : undefined;
}

/**
 * Reads the request: whether the object asks for an endpoint, and for which Cluster. `isCluster`: the object is a
 * Cluster API Cluster (else an infrastructure cluster of a served kind).
 */
export function readEndpointRequest(object: unknown, isCluster: boolean, requestName: string): EndpointRequest {
  if (!isRecord(object)) return { kind: "none" };
  const host = endpointOf(object)?.host;
  if (typeof host === "string" && host !== "") return { kind: "none" };
  const meta = isRecord(object.metadata) ? object.metadata : {};
  const annotations = isRecord(meta.annotations) ? meta.annotations : {};
  const labels = isRecord(meta.labels) ? meta.labels : {};
  const ownName = typeof meta.name === "string" && meta.name ? meta.name : requestName;
  const label = typeof labels[CLUSTER_NAME_LABEL] === "string" ? labels[CLUSTER_NAME_LABEL] : "";
  const clusterName = isCluster ? ownName : label || ownName;
  const value = annotations[ENDPOINT_POOL_ANNOTATION];
  if (value === undefined) return !isCluster && label ? { kind: "viaCluster", clusterName: label } : { kind: "none" };
  const text = typeof value === "string" ? value : "";
  const pool = parseEndpointPool(text);
  if ("error" in pool) return { kind: "bad", value: text, error: pool.error };
  if (!clusterName)
    return {
      kind: "bad",
      value: text,
      error: "the object needs a name (not generateName) to name its endpoint's IPAddressClaim",
    };
  return { kind: "annotated", pool, clusterName };
}

/** The JSON patch writing `host` (and the default port when none is set) into `object`'s endpoint (pure). */
export function endpointPatch(object: Record<string, unknown>, host: string): JsonPatchOp[] {
  if (!isRecord(object.spec))
    return [{ op: "add", path: "/spec", value: { controlPlaneEndpoint: { host, port: DEFAULT_ENDPOINT_PORT } } }];
  const endpoint = endpointOf(object);
  if (!endpoint)
    return [{ op: "add", path: "/spec/controlPlaneEndpoint", value: { host, port: DEFAULT_ENDPOINT_PORT } }];
  const ops: JsonPatchOp[] = [
    { op: endpoint.host === undefined ? "add" : "replace", path: "/spec/controlPlaneEndpoint/host", value: host },
  ];
  if (typeof endpoint.port !== "number" || endpoint.port === 0)
    ops.push({
      op: endpoint.port === undefined ? "add" : "replace",
      path: "/spec/controlPlaneEndpoint/port",
      value: DEFAULT_ENDPOINT_PORT,
    });
  return ops;
}

/** The claim the webhook makes for Cluster `clusterName`'s endpoint from `pool` (pure). */
export function endpointClaim(namespace: string, clusterName: string, pool: EndpointPoolRef): IPAddressClaim {
  return {
    kind: IPADDRESSCLAIM_KIND,
    metadata: {
      name: endpointClaimName(clusterName),
      namespace,
      labels: {
        [CLUSTER_NAME_LABEL]: clusterName,
        [ENDPOINT_CLAIM_LABEL]: "",
        [ENDPOINT_PENDING_LABEL]: endpointPoolKey(pool),
      },
    },
    spec: { poolRef: { apiGroup: poolDescriptor(pool.kind).group, kind: pool.kind, name: pool.name } },
  };
}

/** Why an existing claim of that name cannot serve as this endpoint's; undefined when it can (pure). */
export function claimMismatch(claim: IPAddressClaim, pool: EndpointPoolRef): string | undefined {
  const name = claim.metadata.name ?? "";
  if (claim.metadata.labels?.[ENDPOINT_CLAIM_LABEL] === undefined)
    return `IPAddressClaim ${name} exists and is not a control-plane endpoint claim (no label ${ENDPOINT_CLAIM_LABEL})`;
  const ref = claim.spec?.poolRef;
  if (ref?.kind !== pool.kind || ref.name !== pool.name)
    return `IPAddressClaim ${name} holds this cluster's endpoint from ${ref?.kind ?? "?"}/${ref?.name ?? "?"}, not ${pool.kind}/${pool.name}: delete it or name that pool`;
  return undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether `claim` still waits for its Cluster: no owner reference of kind Cluster (pure). */
function waitsForCluster(claim: IPAddressClaim): boolean {
  return !(claim.metadata.ownerReferences ?? []).some((o) => o.kind === CLUSTER_KIND);
}

/**
 * Runs `work` after every earlier call with the same key has settled: one at a time per key. A key's entry is dropped
 * once its last call settles, so the map holds only keys with calls in progress.
 */
function serialQueue(): <T>(key: string, work: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const previous = tails.get(key) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    try {
      return await run;
    } finally {
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
}

/** The mutating route; see the file's comment. */
export function endpointRoute(options: EndpointRouteOptions): Route {
  const kinds = new Set(options.kinds);
  const { access } = options;
  const waitMs = options.waitMs ?? 5_000;
  const firstPollMs = options.pollMs ?? 100;
  const pendingLimit = options.pendingLimit ?? DEFAULT_ENDPOINT_PENDING_CLAIMS;
  const graceMs = options.graceMs ?? DEFAULT_ENDPOINT_CLAIM_GRACE_MS;
  const oneAtATime = serialQueue();

  /** The bound claim's address, or undefined when it is not bound (yet). */
  async function boundAddress(claim: IPAddressClaim): Promise<string | undefined> {
    const ref = claim.status?.addressRef?.name;
    return ref ? await access.address(claim.metadata.namespace ?? "", ref) : undefined;
  }

  /** Reads the claim until it is bound or `until` (performance.now()) passes. */
  async function waitBound(namespace: string, name: string, until: number): Promise<string | undefined> {
    let pause = firstPollMs;
    for (;;) {
      const claim = await access.claim(namespace, name);
      const address = claim ? await boundAddress(claim) : undefined;
      if (address) return address;
      const left = until - performance.now();
      if (left <= 0) return undefined;
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, MAX_POLL_MS);
    }
  }

  /** What the request asks for, the ClusterClass case resolved through the Cluster's annotation. */
  async function resolve(req: AdmissionRequest, object: Record<string, unknown>): Promise<EndpointRequest> {
    const resource = req.resource ? `${req.resource.resource}.${req.resource.group}` : "";
    const isCluster = resource === CLUSTERS || (!req.resource && req.kind.group === CLUSTER_GROUP);
    if (!isCluster && !kinds.has(resource)) return { kind: "none" };
    const asked = readEndpointRequest(object, isCluster, req.name ?? "");
    if (asked.kind !== "viaCluster") return asked;
    const annotations = await access.clusterAnnotations(req.namespace ?? "", asked.clusterName);
    const value = annotations?.[ENDPOINT_POOL_ANNOTATION];
    if (value === undefined) return { kind: "none" };
    const pool = parseEndpointPool(value);
    return "error" in pool
      ? { kind: "bad", value, error: `on Cluster ${asked.clusterName}: ${pool.error}` }
      : { kind: "annotated", pool, clusterName: asked.clusterName };
  }

  /**
   * Makes the endpoint's claim unless the pool already has `pendingLimit` claims waiting for their Cluster; then the
   * refusal's message. Count and create run one at a time per pool (and namespace, for a namespaced pool); a turn
   * that comes after the review's `deadline` (answered already) makes nothing.
   */
  async function createWithinLimit(
    namespace: string,
    asked: { pool: EndpointPoolRef; clusterName: string },
    deadline: number | undefined,
  ): Promise<IPAddressClaim | { refusal: string }> {
    const poolKey = endpointPoolKey(asked.pool);
    // A global pool's claims come from every namespace: its pending claims are counted cluster-wide.
    const scope = isGlobalKind(asked.pool.kind) ? undefined : namespace;
    return await oneAtATime(`${scope ?? ""}/${poolKey}`, async () => {
      if (deadline !== undefined && performance.now() >= deadline)
        throw new Error("the review's deadline passed while it waited to count its pool's pending claims");
      const listed = await access.pendingClaims(scope, poolKey, pendingLimit);
      const pending = listed.filter(waitsForCluster).length;
      const refusal = pendingClaimsRefusal({ pool: asked.pool, pending, limit: pendingLimit, graceMs });
      if (refusal) return { refusal };
      return await access.createClaim(endpointClaim(namespace, asked.clusterName, asked.pool));
    });
  }

  return {
    kind: "control-plane endpoint",
    async handle(req: AdmissionRequest, ctx): Promise<AdmissionResponse> {
      const object = req.object;
      if (req.operation !== "CREATE" || !isRecord(object)) return allow(req.uid);
      const asked = await resolve(req, object);
      if (asked.kind === "none" || asked.kind === "viaCluster") return allow(req.uid);
      if (asked.kind === "bad") return deny(req.uid, badAnnotation(req, asked));
      const claimName = endpointClaimName(asked.clusterName);
      const claim = await access.claim(req.namespace ?? "", claimName);
      const unusable = claim && unusableClaim(claim, asked.pool);
      if (unusable) return deny(req.uid, unusable);
      const pool = `${asked.pool.kind}/${asked.pool.name}`;
      if (req.dryRun) {
        const host = claim ? await boundAddress(claim) : undefined;
        if (host) return allow(req.uid, [], endpointPatch(object, host));
        return allow(req.uid, [
          `dry run: no address is taken for the control-plane endpoint; the real create gets one from ${pool}`,
        ]);
      }
      const until = Math.min(performance.now() + waitMs, (ctx.deadline ?? Infinity) - ANSWER_MARGIN_MS);
      const made = claim ?? (await createWithinLimit(req.namespace ?? "", asked, ctx.deadline));
      if ("refusal" in made) {
        ctx.logger.info("Control-plane endpoint refused: too many claims of its pool wait for their Cluster", {
          namespace: req.namespace,
          ipAddressClaim: claimName,
          pool,
        });
        return deny(req.uid, failure(429, "TooManyRequests", made.refusal));
      }
      const host =
        (await boundAddress(made)) ?? (await waitBound(req.namespace ?? "", made.metadata.name ?? "", until));
      if (host) return allow(req.uid, [], endpointPatch(object, host));
      ctx.logger.info("Control-plane endpoint not bound in time; the create is refused for a retry", {
        namespace: req.namespace,
        ipAddressClaim: claimName,
      });
      return deny(
        req.uid,
        failure(
          503,
          "ServiceUnavailable",
          `IPAddressClaim ${claimName} for the control-plane endpoint is not bound yet (pool ${pool}; see the claim's Ready condition): retry the create, it will use the same claim`,
        ),
      );
    },
  };
}

/** The refusal of a create whose claim exists and cannot serve it: another endpoint's (409), or leaving (503). */
function unusableClaim(claim: IPAddressClaim, pool: EndpointPoolRef): ReturnType<typeof failure> | undefined {
  const mismatch = claimMismatch(claim, pool);
  if (mismatch) return failure(409, "Conflict", mismatch);
  // A claim of an earlier Cluster of that name, on its way out: its address is about to be freed, not reusable.
  if (claim.metadata.deletionTimestamp)
    return failure(
      503,
      "ServiceUnavailable",
      `IPAddressClaim ${claim.metadata.name ?? ""} of an earlier Cluster of that name is being released: retry the create once it is gone`,
    );
  return undefined;
}

/** The 422 of a bad annotation (on the object, or on the Cluster it follows). */
function badAnnotation(req: AdmissionRequest, asked: { value: string; error: string }) {
  return invalid(req.kind.group, req.kind.kind, req.name ?? "", [
    {
      type: "Invalid",
      field: `metadata.annotations[${ENDPOINT_POOL_ANNOTATION}]`,
      value: asked.value.slice(0, 300),
      detail: asked.error,
    },
  ]);
}

/** RBAC of the webhook's reads and writes, cluster-wide (Clusters of every namespace may ask). */
export const ENDPOINT_RULES = [
  // The ClusterClass case: the annotation of the Cluster an infrastructure cluster names.
  { apiGroups: [CLUSTER.group], resources: [CLUSTER.plural], verbs: ["get"] },
  // The endpoint's claim: found, or made on the first admission of its Cluster once the claims of its pool still
  // waiting for their Cluster are counted (a list by label, in every namespace for a global pool).
  {
    apiGroups: [CAPI_IPADDRESSCLAIM.group],
    resources: [CAPI_IPADDRESSCLAIM.plural],
    verbs: ["get", "list", "create"],
  },
  // The bound claim's address.
  { apiGroups: [CAPI_IPADDRESS.group], resources: [CAPI_IPADDRESS.plural], verbs: ["get"] },
];

/**
 * The access through the API server. The served versions of Clusters and of Cluster API IPAM are discovered on first
 * use and kept; until found, a read rejects (the request is refused and retried).
 */
export function kubeEndpointAccess(kube: Kube): EndpointAccess {
  let clients:
    | Promise<{
        clusters: ResourceClient<KubeObject>;
        claims: ResourceClient<IPAddressClaim>;
        addresses: ResourceClient<CapiIPAddress>;
      }>
    | undefined;
  const discover = async () => {
    const [cluster, ipam] = await Promise.all([servedVersion(kube, CLUSTER), servedVersion(kube, CAPI_IPADDRESSCLAIM)]);
    if (!cluster || !ipam) throw new Error("Cluster API's Cluster or IPAddressClaim is not served");
    return {
      clusters: new ResourceClient<KubeObject>(kube, resourceType(CLUSTER, cluster)),
      claims: new ResourceClient<IPAddressClaim>(kube, resourceType(CAPI_IPADDRESSCLAIM, ipam)),
      addresses: new ResourceClient<CapiIPAddress>(kube, resourceType(CAPI_IPADDRESS, ipam)),
    };
  };
  const get = () => {
    clients ??= discover().catch((err: unknown) => {
      clients = undefined;
      throw err;
    });
    return clients;
  };
  const orUndefined = async <T>(read: Promise<T>): Promise<T | undefined> => {
    try {
      return await read;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    clusterAnnotations: async (namespace, name) =>
      (await orUndefined((await get()).clusters.get(namespace, name)))?.metadata.annotations ?? undefined,
    claim: async (namespace, name) => await orUndefined((await get()).claims.get(namespace, name)),
    pendingClaims: async (namespace, poolKey, limit) =>
      (await (await get()).claims.list(namespace, { labelSelector: `${ENDPOINT_PENDING_LABEL}=${poolKey}`, limit }))
        .items,
    createClaim: async (claim) => {
      const { claims } = await get();
      const namespace = claim.metadata.namespace ?? "";
      try {
        return await claims.create(namespace, { ...claim, apiVersion: claims.apiVersion() });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        return await claims.get(namespace, claim.metadata.name ?? "");
      }
    },
    address: async (namespace, name) =>
      (await orUndefined((await get()).addresses.get(namespace, name)))?.spec?.address,
  };
}
