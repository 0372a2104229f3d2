/**
 * One admission handler per webhook (spec §6), all built on the shared validation module `src/ipam/validation.ts`
 * (the in-cluster provider's pools: incluster.ts, on `src/ipam/incluster-validation.ts`). Handlers answer every
 * request they are given: for Metal3's kinds DELETE and CONNECT are allowed (deleting is never blocked by a webhook),
 * a request for the wrong kind or with an unreadable object is denied with 400. They may reject (a failed lookup);
 * the HTTP layer turns that into a 500 denial.
 */
import isEqual from "lodash/isEqual.js";
import { GROUP, IPADDRESS_KIND, IPCLAIM_KIND, IPPOOL_KIND } from "../../api/v1alpha1/types.js";
import type { IPAddress, IPClaim, IPPool, ObjectMeta } from "../../api/v1alpha1/types.js";
import { formatFieldError } from "../ipam/fielderror.js";
import type { FieldError } from "../ipam/fielderror.js";
import { defaultIPPool, ipClaimWarnings, validateIPAddress, validateIPClaim } from "../ipam/validation.js";
import { allow, deny, failure, invalid, isRecord, pointerSegment } from "./admission.js";
import type { AdmissionRequest, AdmissionResponse, JsonPatchOp } from "./admission.js";
import { ENDPOINT_GUARD_ROUTES } from "./endpointguard.js";
import { validateGlobalInClusterIPPoolRoute, validateInClusterIPPoolRoute } from "./incluster.js";
import { ipPoolLimitErrors } from "./limits.js";
import { inlineValidator } from "./offload.js";
import type { HandlerContext, Route } from "./route.js";

/** URL paths of the webhooks (kubebuilder naming); config/webhook/manifests.yaml uses the same. */
export const WEBHOOK_PATHS = {
  mutateIPPool: "/mutate-ipam-metal3-io-v1alpha1-ippool",
  validateIPPool: "/validate-ipam-metal3-io-v1alpha1-ippool",
  validateIPClaim: "/validate-ipam-metal3-io-v1alpha1-ipclaim",
  validateIPAddress: "/validate-ipam-metal3-io-v1alpha1-ipaddress",
  /** The in-cluster provider's own paths, so its configurations' paths keep working here (incluster.ts). */
  validateInClusterIPPool: "/validate-ipam-cluster-x-k8s-io-v1alpha2-inclusterippool",
  validateGlobalInClusterIPPool: "/validate-ipam-cluster-x-k8s-io-v1alpha2-globalinclusterippool",
  /** Control-plane endpoints of Clusters and infrastructure clusters (endpoint.ts; built by server.ts). */
  mutateControlPlaneEndpoint: "/mutate-ipam-metal3-io-control-plane-endpoint",
} as const;

interface Decoded<T> {
  object: T;
  old: T | undefined;
}

/** Reads object (and oldObject on UPDATE) as objects of `kind`; undefined when their shape is unusable. */
function decode<T extends { metadata: ObjectMeta }>(req: AdmissionRequest): Decoded<T> | undefined {
  const usable = (v: unknown): v is T =>
    isRecord(v) && (v.metadata === undefined || isRecord(v.metadata)) && (v.spec === undefined || isRecord(v.spec));
  if (!usable(req.object)) return undefined;
  const object = { ...req.object, metadata: { ...req.object.metadata } };
  // On CREATE the namespace may only be in the request (the object says nothing, it is defaulted later).
  if (!object.metadata.namespace && req.namespace) object.metadata.namespace = req.namespace;
  if (req.operation !== "UPDATE") return { object, old: undefined };
  return usable(req.oldObject) ? { object, old: req.oldObject } : undefined;
}

function badRequest(req: AdmissionRequest, message: string): AdmissionResponse {
  return deny(req.uid, failure(400, "BadRequest", message));
}

function objectName(req: AdmissionRequest, meta: ObjectMeta | undefined): string {
  return req.name || meta?.name || "";
}

/** Shared prelude: operation filter, kind check, decoding. Returns a response to send, or the decoded objects. */
function prelude<T extends { metadata: ObjectMeta }>(
  req: AdmissionRequest,
  kind: string,
): AdmissionResponse | Decoded<T> {
  if (req.operation !== "CREATE" && req.operation !== "UPDATE") return allow(req.uid);
  if (req.kind.group !== GROUP || req.kind.kind !== kind) {
    return badRequest(req, `this webhook serves ${kind}.${GROUP}, not ${req.kind.kind}.${req.kind.group || "core"}`);
  }
  return (
    decode<T>(req) ??
    badRequest(
      req,
      `request.object${req.operation === "UPDATE" ? " or request.oldObject" : ""} is not a readable ${kind}`,
    )
  );
}

function isResponse<T>(value: AdmissionResponse | Decoded<T>): value is AdmissionResponse {
  return "allowed" in value;
}

/**
 * Errors of the new object that the old one did not already have (compared as rendered text). Validation ratchets
 * on UPDATE: an object stored before the webhook existed keeps working (finalizer and metadata writes of the
 * controller never bounce), while anything the update newly breaks, immutability included, is still refused.
 */
function newErrors(errors: readonly FieldError[], before: readonly FieldError[]): FieldError[] {
  const known = new Set(before.map(formatFieldError));
  return errors.filter((e) => !known.has(formatFieldError(e)));
}

function answer(
  req: AdmissionRequest,
  kind: string,
  name: string,
  errors: readonly FieldError[],
  warnings: string[] = [],
): AdmissionResponse {
  return errors.length > 0 ? deny(req.uid, invalid(GROUP, kind, name, errors), warnings) : allow(req.uid, warnings);
}

/**
 * The spec's fields that hold no list or map, which is all the defaulting reads: a copy of them costs nothing
 * whatever the size of the spec's lists, where copying and comparing a whole spec of a hundred thousand entries
 * would hold the request's thread.
 */
function scalarFields(spec: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(spec).filter(([, v]) => v === null || typeof v !== "object"));
}

/**
 * Defaulting of IPPool (spec §6): `allocationStrategy` absent or `""` becomes `sequential`, as a JSON patch. The
 * defaults apply to the spec's scalar fields only (see scalarFields); a list or map present in the spec is kept.
 */
export const mutateIPPool: Route = {
  kind: IPPOOL_KIND,
  handle(req) {
    const decoded = prelude<IPPool>(req, IPPOOL_KIND);
    if (isResponse(decoded)) return Promise.resolve(decoded);
    const { object } = decoded;
    if (!isRecord(object.spec)) return Promise.resolve(allow(req.uid));
    const spec = object.spec as unknown as Record<string, unknown>;
    const scalars = scalarFields(spec);
    const defaulted = defaultIPPool({ metadata: {}, spec: scalars as unknown as IPPool["spec"] });
    const ops: JsonPatchOp[] = [];
    for (const [key, value] of Object.entries(defaulted.spec)) {
      const before = spec[key];
      if (isRecord(before) || Array.isArray(before) || isEqual(before, value)) continue;
      ops.push({ op: before === undefined ? "add" : "replace", path: `/spec/${pointerSegment(key)}`, value });
    }
    return Promise.resolve(allow(req.uid, [], ops));
  },
};

/**
 * The other pools of the namespace, for warnings; none when they cannot be read. The pool's stored version is left
 * out (warnings are about other pools), so a large pool under review is never read and copied a second time.
 */
async function poolsAround(pool: IPPool, name: string, ctx: HandlerContext): Promise<IPPool[]> {
  const namespace = pool.metadata.namespace ?? "";
  try {
    if (!namespace) return [];
    return (await ctx.lookup.poolsInNamespace(namespace, name || undefined)).filter((p) => p.metadata?.name !== name);
  } catch (err) {
    // Warnings are advice: a failed list must not block the write.
    ctx.logger.warn("Cannot list IPPools for admission warnings", { namespace, error: err });
    return [];
  }
}

/**
 * Validation of IPPool (spec §6). On UPDATE an unchanged spec is allowed at once (metadata writes never bounce);
 * a changed one is validated in full, and when `spec.pools` changed the addresses in use in the pool are read so
 * that ranges dropping one of them are refused (outside Metal3's bounds) or warned about (inside them). Warnings:
 * overlaps and namePrefix shared with other pools of the namespace, entries that yield nothing or mix families,
 * entries of both families in one pool, preallocations no entry yields. Lists longer than limits.ts allows are
 * refused before anything is read; the validation itself runs where `ctx.validator` puts it (offload.ts).
 */
export const validateIPPoolRoute: Route = {
  kind: IPPOOL_KIND,
  async handle(req, ctx) {
    const decoded = prelude<IPPool>(req, IPPOOL_KIND);
    if (isResponse(decoded)) return decoded;
    const { object, old } = decoded;
    if (old && isEqual(old.spec, object.spec)) return allow(req.uid);
    const namespace = object.metadata.namespace ?? "";
    const name = objectName(req, object.metadata);
    const limits = ipPoolLimitErrors(object);
    if (limits.length > 0) return answer(req, IPPOOL_KIND, name, limits);
    // The list of pools never fails (see poolsAround), so it runs while the addresses in use are read.
    const others = poolsAround(object, name, ctx);
    let inUse: string[] = [];
    if (old && !isEqual(old.spec?.pools, object.spec?.pools)) {
      try {
        inUse = await ctx.lookup.addressesOfPool(namespace, name);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        return deny(
          req.uid,
          failure(
            500,
            "InternalError",
            `cannot read the IPAddresses of IPPool "${name}" to check the addresses in use: ${why}`,
          ),
        );
      }
    }
    const validator = ctx.validator ?? inlineValidator;
    const verdict = await validator.run("ipPool", { object, old, inUse, others: await others }, ctx.deadline);
    return answer(req, IPPOOL_KIND, name, verdict.errors, verdict.warnings);
  },
};

/**
 * Validation of IPClaim (spec §6): pool name required, `ipAddress` annotation an address unless absent or `""`
 * (accepted with a warning), `spec.pool` immutable.
 */
export const validateIPClaimRoute: Route = {
  kind: IPCLAIM_KIND,
  handle(req) {
    const decoded = prelude<IPClaim>(req, IPCLAIM_KIND);
    if (isResponse(decoded)) return Promise.resolve(decoded);
    const { object, old } = decoded;
    let errors = validateIPClaim(object, old);
    if (old) errors = newErrors(errors, validateIPClaim(old));
    const warnings = ipClaimWarnings(object, old);
    return Promise.resolve(answer(req, IPCLAIM_KIND, objectName(req, object.metadata), errors, warnings));
  },
};

/**
 * Validation of IPAddress (spec §6): pool, claim and address required, the address an IP; `address`, `pool` and
 * `claim` immutable as in Metal3, `prefix`, `gateway` and `dnsServers` free to change.
 */
export const validateIPAddressRoute: Route = {
  kind: IPADDRESS_KIND,
  handle(req) {
    const decoded = prelude<IPAddress>(req, IPADDRESS_KIND);
    if (isResponse(decoded)) return Promise.resolve(decoded);
    const { object, old } = decoded;
    let errors = validateIPAddress(object, old);
    if (old) errors = newErrors(errors, validateIPAddress(old));
    return Promise.resolve(answer(req, IPADDRESS_KIND, objectName(req, object.metadata), errors));
  },
};

/** Every webhook by URL path. */
export const ROUTES: ReadonlyMap<string, Route> = new Map<string, Route>([
  [WEBHOOK_PATHS.mutateIPPool, mutateIPPool],
  [WEBHOOK_PATHS.validateIPPool, validateIPPoolRoute],
  [WEBHOOK_PATHS.validateIPClaim, validateIPClaimRoute],
  [WEBHOOK_PATHS.validateIPAddress, validateIPAddressRoute],
  [WEBHOOK_PATHS.validateInClusterIPPool, validateInClusterIPPoolRoute],
  [WEBHOOK_PATHS.validateGlobalInClusterIPPool, validateGlobalInClusterIPPoolRoute],
  ...ENDPOINT_GUARD_ROUTES,
]);
