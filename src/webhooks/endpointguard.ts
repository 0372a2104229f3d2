/**
 * The control-plane endpoint guard: validation of Cluster API Clusters and of Metal3Clusters on CREATE and UPDATE
 * (decisions in src/ipam/endpoint-guard.ts, reads in endpointreads.ts). Refused, with the API server's `Invalid`
 * shape: a host that an IPAddress of either kind holds for any claim but the cluster's own endpoint claim (the holder
 * named); under a namespace's endpoint rule, a host not from the listed pools; on UPDATE, a changed host while the
 * endpoint claim is bound to the old one. A DNS host is allowed; an UPDATE that leaves the host alone is allowed at
 * once (metadata and finalizer writes of Cluster API never bounce). A failed read refuses with 500 (fail closed).
 */
import { ENDPOINT_POOL_ANNOTATION } from "../ipam/endpoint.js";
import {
  heldElsewhere,
  hostAddress,
  hostChange,
  namespaceRule,
  ownClaimName,
  type GuardedObject,
  type OwnClaim,
} from "../ipam/endpoint-guard.js";
import type { FieldError } from "../ipam/fielderror.js";
import { allow, deny, failure, invalid, isRecord, retryLater } from "./admission.js";
import type { AdmissionRequest, AdmissionResponse } from "./admission.js";
import type { Route } from "./route.js";

/** URL paths of the guard (config/webhook/manifests.yaml uses the same). */
export const ENDPOINT_GUARD_PATHS = {
  validateClusterEndpoint: "/validate-cluster-x-k8s-io-cluster-endpoint",
  validateMetal3ClusterEndpoint: "/validate-infrastructure-cluster-x-k8s-io-metal3cluster-endpoint",
} as const;

const strings = (value: unknown): Record<string, string> =>
  isRecord(value)
    ? Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"))
    : {};

/** `spec.controlPlaneEndpoint.host` of an untrusted object; "" when absent or not a string. */
function hostOf(object: unknown): string {
  const spec = isRecord(object) ? object.spec : undefined;
  const endpoint = isRecord(spec) ? spec.controlPlaneEndpoint : undefined;
  return isRecord(endpoint) && typeof endpoint.host === "string" ? endpoint.host : "";
}

/** What the guard reads of the object under review; undefined when it is not an object with readable metadata. */
function guarded(req: AdmissionRequest): GuardedObject | undefined {
  const object = req.object;
  if (!isRecord(object) || (object.metadata !== undefined && !isRecord(object.metadata))) return undefined;
  const meta: Record<string, unknown> = isRecord(object.metadata) ? object.metadata : {};
  const owners: unknown[] = Array.isArray(meta.ownerReferences) ? meta.ownerReferences : [];
  const cluster = owners.find((o) => isRecord(o) && o.kind === "Cluster" && typeof o.name === "string");
  return {
    kind: req.kind.kind,
    namespace: (typeof meta.namespace === "string" && meta.namespace) || req.namespace || "",
    name: req.name || (typeof meta.name === "string" ? meta.name : ""),
    labels: strings(meta.labels),
    annotations: strings(meta.annotations),
    ...(isRecord(cluster) && typeof cluster.name === "string" ? { ownerClusterName: cluster.name } : {}),
    host: hostOf(object),
  };
}

async function decide(req: AdmissionRequest, object: GuardedObject, ctx: Parameters<Route["handle"]>[1]) {
  const reads = ctx.endpoints;
  if (!reads) throw new Error("the endpoint guard has no reads configured");
  const address = hostAddress(object.host);
  let own: OwnClaim | undefined;
  const ownClaim = async () => (own ??= await reads.endpointClaim(object.namespace, ownClaimName(object)));
  if (req.operation === "UPDATE") {
    const oldHost = hostOf(req.oldObject);
    if (oldHost === object.host) return [];
    const moved = hostChange(object, oldHost, await ownClaim());
    if (moved.length > 0) return moved;
  }
  if (object.host !== "" && address === undefined) return [];
  const errors: FieldError[] = address
    ? heldElsewhere(object, address, await reads.holders(address, ctx.deadline))
    : [];
  if (errors.length > 0) return errors;
  const rule = await reads.namespaceRule(object.namespace);
  if (rule === undefined) return [];
  if (address === undefined && object.annotations[ENDPOINT_POOL_ANNOTATION] === undefined) return [];
  return namespaceRule(object, rule, address, address ? await ownClaim() : undefined);
}

function guardRoute(kind: string, group: string): Route {
  return {
    kind,
    async handle(req, ctx): Promise<AdmissionResponse> {
      if (req.operation !== "CREATE" && req.operation !== "UPDATE") return allow(req.uid);
      if (req.kind.kind !== kind || req.kind.group !== group)
        return deny(
          req.uid,
          failure(400, "BadRequest", `this webhook serves ${kind}.${group}, not ${req.kind.kind}.${req.kind.group}`),
        );
      const object = guarded(req);
      if (!object) return deny(req.uid, failure(400, "BadRequest", `request.object is not a readable ${kind}`));
      let errors: FieldError[];
      try {
        errors = await decide(req, object, ctx);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        return retryLater(req.uid, `cannot check ${kind} "${object.name}"'s control-plane endpoint: ${why}`);
      }
      return errors.length > 0 ? deny(req.uid, invalid(group, kind, object.name, errors)) : allow(req.uid);
    },
  };
}

/** The guard's routes by path. */
export const ENDPOINT_GUARD_ROUTES: ReadonlyMap<string, Route> = new Map([
  [ENDPOINT_GUARD_PATHS.validateClusterEndpoint, guardRoute("Cluster", "cluster.x-k8s.io")],
  [ENDPOINT_GUARD_PATHS.validateMetal3ClusterEndpoint, guardRoute("Metal3Cluster", "infrastructure.cluster.x-k8s.io")],
]);
