/**
 * Validation of the Cluster API in-cluster provider's pools, `InClusterIPPool` and `GlobalInClusterIPPool`
 * (`ipam.cluster.x-k8s.io/v1alpha2`), answering as that provider's webhook does (docs/incluster.md "Webhook
 * messages"); the rules are in `src/ipam/incluster-validation.ts`.
 * - CREATE, and UPDATE with a changed spec: the spec's errors as an `Invalid` (422) Status.
 * - UPDATE with a changed and valid spec: the IPAddresses of the pool are read, and a spec that no longer hands out
 *   one of their addresses is refused with 400 `pool addresses do not contain allocated addresses: …`.
 * - DELETE: refused with 400 while IPAddresses refer to the pool, unless it carries the skip annotation.
 * Lists longer than limits.ts allows (`addresses`, `excludedAddresses`) are refused first with `Too many` (422), and
 * the validation runs where `ctx.validator` puts it (offload.ts): both bound what one review costs, here only.
 * An UPDATE with an unchanged spec is allowed at once (metadata and finalizer writes never bounce), where the
 * provider validates every update in full. A failed read refuses with 500 (fail closed). The provider's defaulting
 * webhook changes nothing, so none is served here.
 *
 * Who may learn what a pool holds. The webhook port is reachable by any pod and the webhook cannot tell the API
 * server from another caller, so a review is a question anyone may ask, about any pool name, with objects of the
 * caller's making. Every answer that depends on the IPAddresses (the addresses the denial names, but also its count,
 * and allowed against denied, which a caller can bisect over ranges of its choosing) is therefore given only for the
 * stored pool: the uid of the object under review (UPDATE: `oldObject`, DELETE: `oldObject`) must be the uid of the
 * stored pool of that kind, name and namespace, which the API server always sends. Anything else (no uid, another
 * uid, no such pool) is refused with 400 before the IPAddresses are read, one message for all three, so the answer
 * says nothing about the pool either. The API server's reviews keep the provider's messages; a caller who forges one
 * must know the pool's uid, that is, be able to read the pool.
 */
import isEqual from "lodash/isEqual.js";
import { GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL } from "../../api/registry.js";
import type { ResourceDescriptor } from "../../api/registry.js";
import { SKIP_VALIDATE_DELETE_ANNOTATION } from "../../api/incluster/types.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import { deleteRefusal } from "../ipam/incluster-validation.js";
import { allow, deny, failure, invalid, isRecord } from "./admission.js";
import type { AdmissionRequest, AdmissionResponse } from "./admission.js";
import { inClusterLimitErrors } from "./limits.js";
import { inlineValidator } from "./offload.js";
import type { HandlerContext, Route } from "./route.js";

/** A pool whose object (and old object) has a usable shape: records where metadata and spec are expected. */
function usable(value: unknown): value is InClusterIPPool {
  return (
    isRecord(value) &&
    (value.metadata === undefined || isRecord(value.metadata)) &&
    (value.spec === undefined || isRecord(value.spec))
  );
}

function badRequest(req: AdmissionRequest, message: string): AdmissionResponse {
  return deny(req.uid, failure(400, "BadRequest", message));
}

/** The pool with `metadata` always present and, for a namespaced kind, the request's namespace when it has none. */
function normalized(pool: InClusterIPPool, req: AdmissionRequest, kind: ResourceDescriptor): InClusterIPPool {
  const metadata = { ...pool.metadata };
  if (kind.namespaced && !metadata.namespace && req.namespace) metadata.namespace = req.namespace;
  if (!metadata.name && req.name) metadata.name = req.name;
  return { ...pool, metadata };
}

/**
 * Whether `pool` (the object under review) is the stored pool: its uid is the stored one's. A namespaced pool that
 * names no namespace anywhere is none.
 */
async function isStoredPool(
  ctx: HandlerContext,
  kind: ResourceDescriptor,
  pool: InClusterIPPool,
  namespace: string | undefined,
): Promise<boolean> {
  const { uid, name } = pool.metadata;
  if (!uid || !name || namespace === "") return false;
  return (await ctx.lookup.inClusterPoolUid(kind.kind, name, namespace)) === uid;
}

/**
 * The addresses of the IPAddresses of `pool` (the stored object, as the request gives it); the 400 denial when it is
 * not the stored pool (see the file header), or the 500 denial when the cluster cannot be read.
 */
async function addressesInUse(
  req: AdmissionRequest,
  ctx: HandlerContext,
  kind: ResourceDescriptor,
  pool: InClusterIPPool,
): Promise<string[] | AdmissionResponse> {
  const name = pool.metadata.name ?? "";
  const namespace = kind.namespaced ? (pool.metadata.namespace ?? "") : undefined;
  try {
    if (!(await isStoredPool(ctx, kind, pool, namespace)))
      return badRequest(
        req,
        `request.oldObject is not the stored ${kind.kind} "${name}" (its metadata.uid differs): the addresses in ` +
          `use are not read`,
      );
    return await ctx.lookup.inClusterPoolAddresses(kind.kind, name, namespace);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    const message = `cannot read ${kind.kind} "${name}" and its IPAddresses to check the addresses in use: ${why}`;
    return deny(req.uid, failure(500, "InternalError", message));
  }
}

async function onCreateOrUpdate(
  req: AdmissionRequest,
  ctx: HandlerContext,
  kind: ResourceDescriptor,
  pool: InClusterIPPool,
  old: InClusterIPPool | undefined,
): Promise<AdmissionResponse> {
  if (old && isEqual(old.spec, pool.spec)) return allow(req.uid);
  const limits = inClusterLimitErrors(pool);
  if (limits.length > 0) return deny(req.uid, invalid(kind.group, kind.kind, pool.metadata.name ?? "", limits));
  const validator = ctx.validator ?? inlineValidator;
  const errors = await validator.run("inClusterSpec", { pool, old }, ctx.deadline);
  if (errors.length > 0) return deny(req.uid, invalid(kind.group, kind.kind, pool.metadata.name ?? "", errors));
  if (!old) return allow(req.uid);
  const inUse = await addressesInUse(req, ctx, kind, old);
  if (!Array.isArray(inUse)) return inUse;
  const dropped = await validator.run("inClusterDropped", { pool, inUse }, ctx.deadline);
  return dropped === undefined ? allow(req.uid) : badRequest(req, dropped);
}

async function onDelete(
  req: AdmissionRequest,
  ctx: HandlerContext,
  kind: ResourceDescriptor,
  pool: InClusterIPPool,
): Promise<AdmissionResponse> {
  // Annotated pools may go whatever they hold: no read, so clusterctl move works even when the read would fail.
  if (Object.hasOwn(pool.metadata.annotations ?? {}, SKIP_VALIDATE_DELETE_ANNOTATION)) return allow(req.uid);
  const inUse = await addressesInUse(req, ctx, kind, pool);
  if (!Array.isArray(inUse)) return inUse;
  const refusal = deleteRefusal(pool, inUse.length);
  return refusal === undefined ? allow(req.uid) : badRequest(req, refusal);
}

const OBJECTS_READ: Record<AdmissionRequest["operation"], string> = {
  CREATE: "request.object",
  UPDATE: "request.object or request.oldObject",
  DELETE: "request.oldObject",
  CONNECT: "request.object",
};

/**
 * The pool under review (DELETE: the stored object, which comes as oldObject) and, on UPDATE, the stored one; or the
 * 400 denial for a request of another kind or with an unreadable object.
 */
function decode(
  req: AdmissionRequest,
  kind: ResourceDescriptor,
): { pool: InClusterIPPool; old: InClusterIPPool | undefined } | AdmissionResponse {
  if (req.kind.group !== kind.group || req.kind.kind !== kind.kind) {
    const got = `${req.kind.kind}.${req.kind.group || "core"}`;
    return badRequest(req, `this webhook serves ${kind.kind}.${kind.group}, not ${got}`);
  }
  const subject = req.operation === "DELETE" ? req.oldObject : req.object;
  const old = req.operation === "UPDATE" ? req.oldObject : undefined;
  if (!usable(subject) || (req.operation === "UPDATE" && !usable(old))) {
    return badRequest(req, `${OBJECTS_READ[req.operation]} is not a readable ${kind.kind}`);
  }
  return { pool: normalized(subject, req, kind), old: usable(old) ? normalized(old, req, kind) : undefined };
}

/** The validating route of one in-cluster pool kind (CREATE, UPDATE, DELETE; CONNECT is allowed). */
function inClusterPoolRoute(kind: typeof INCLUSTER_IPPOOL | typeof GLOBAL_INCLUSTER_IPPOOL): Route {
  return {
    kind: kind.kind,
    async handle(req, ctx) {
      if (req.operation === "CONNECT") return allow(req.uid);
      const decoded = decode(req, kind);
      if ("allowed" in decoded) return decoded;
      if (req.operation === "DELETE") return await onDelete(req, ctx, kind, decoded.pool);
      return await onCreateOrUpdate(req, ctx, kind, decoded.pool, decoded.old);
    },
  };
}

/** Validation of `InClusterIPPool` (namespaced: the IPAddresses of its namespace count). */
export const validateInClusterIPPoolRoute: Route = inClusterPoolRoute(INCLUSTER_IPPOOL);
/** Validation of `GlobalInClusterIPPool` (cluster-scoped: the IPAddresses of every namespace count). */
export const validateGlobalInClusterIPPoolRoute: Route = inClusterPoolRoute(GLOBAL_INCLUSTER_IPPOOL);
