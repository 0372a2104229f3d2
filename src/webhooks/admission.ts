/**
 * `admission.k8s.io/v1` AdmissionReview: the subset we read and write, a tolerant parser for untrusted bodies, and
 * response builders. Denials carry a `metav1.Status` shaped exactly like the API server's own `Invalid` errors, so
 * kubectl prints `IPPool.ipam.metal3.io "x" is invalid: spec.pools[1].end: Invalid value: "…": …`.
 */
import { formatFieldError } from "../ipam/fielderror.js";
import type { FieldError, FieldErrorType } from "../ipam/fielderror.js";

export const ADMISSION_API_VERSION = "admission.k8s.io/v1";
export const ADMISSION_REVIEW_KIND = "AdmissionReview";

/** What an admission request is about. */
export type Operation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

/** Group, version and kind of the object under review. */
export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** Group, version and plural of the resource under review. */
export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/** The request part of an AdmissionReview (fields we do not use are omitted). */
export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  /** The resource addressed (`plural` in `resource`): what a webhook serving several kinds tells them apart by. */
  resource?: GroupVersionResource;
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: Operation;
  /** The object as it would be stored; absent for DELETE. Untrusted shape. */
  object?: unknown;
  /** The stored object, for UPDATE and DELETE. Untrusted shape. */
  oldObject?: unknown;
  dryRun?: boolean;
}

/** `metav1.StatusCause`. */
export interface StatusCause {
  type?: string;
  message?: string;
  field?: string;
}

/** `metav1.Status`, as carried in a denial or answered for a bad HTTP request. */
export interface Status {
  apiVersion?: "v1";
  kind?: "Status";
  status: "Failure";
  code: number;
  reason: string;
  message: string;
  details?: { name?: string; group?: string; kind?: string; causes?: StatusCause[] };
}

/** The response part of an AdmissionReview. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: Status;
  patchType?: "JSONPatch";
  /** Base64 of a JSON Patch (RFC 6902) document. */
  patch?: string;
  warnings?: string[];
}

/** A whole AdmissionReview envelope as we answer it. */
export interface AdmissionReview {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: typeof ADMISSION_REVIEW_KIND;
  response: AdmissionResponse;
}

/** One JSON Patch operation of the kinds our defaulting writes. */
export interface JsonPatchOp {
  op: "add" | "replace";
  path: string;
  value: unknown;
}

const OPERATIONS: readonly string[] = ["CREATE", "UPDATE", "DELETE", "CONNECT"];

/** A plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An object whose `group`, `version` and `last` fields are strings (a GroupVersionKind or GroupVersionResource). */
function isGroupVersion<K extends "kind" | "resource">(
  value: unknown,
  last: K,
): value is { group: string; version: string } & Record<K, string> {
  return isRecord(value) && [value.group, value.version, value[last]].every((v) => typeof v === "string");
}

/**
 * Reads an AdmissionReview v1 request from a parsed JSON body. Never throws.
 * @returns the request, or a message saying what is wrong with the envelope.
 */
export function parseAdmissionReview(
  body: unknown,
): { ok: true; request: AdmissionRequest } | { ok: false; message: string } {
  if (!isRecord(body)) return { ok: false, message: "the body is not a JSON object" };
  if (body.apiVersion !== ADMISSION_API_VERSION || body.kind !== ADMISSION_REVIEW_KIND) {
    return {
      ok: false,
      message: `expected apiVersion ${ADMISSION_API_VERSION} and kind ${ADMISSION_REVIEW_KIND}, got ${JSON.stringify(body.apiVersion)} ${JSON.stringify(body.kind)}`,
    };
  }
  const req = body.request;
  if (!isRecord(req)) return { ok: false, message: "request is missing" };
  if (typeof req.uid !== "string" || req.uid === "") return { ok: false, message: "request.uid is missing" };
  if (!isGroupVersion(req.kind, "kind")) return { ok: false, message: "request.kind is missing or malformed" };
  if (typeof req.operation !== "string" || !OPERATIONS.includes(req.operation)) {
    return {
      ok: false,
      message: `request.operation ${JSON.stringify(req.operation)} is not one of ${OPERATIONS.join(", ")}`,
    };
  }
  const request: AdmissionRequest = {
    uid: req.uid,
    kind: { group: req.kind.group, version: req.kind.version, kind: req.kind.kind },
    operation: req.operation as Operation,
    object: req.object ?? undefined,
    oldObject: req.oldObject ?? undefined,
  };
  if (isGroupVersion(req.resource, "resource"))
    request.resource = { group: req.resource.group, version: req.resource.version, resource: req.resource.resource };
  if (typeof req.subResource === "string") request.subResource = req.subResource;
  if (typeof req.name === "string") request.name = req.name;
  if (typeof req.namespace === "string") request.namespace = req.namespace;
  if (typeof req.dryRun === "boolean") request.dryRun = req.dryRun;
  return { ok: true, request };
}

/** Wraps a response in its envelope. */
export function review(response: AdmissionResponse): AdmissionReview {
  return { apiVersion: ADMISSION_API_VERSION, kind: ADMISSION_REVIEW_KIND, response };
}

function withWarnings(response: AdmissionResponse, warnings: readonly string[]): AdmissionResponse {
  return warnings.length > 0 ? { ...response, warnings: [...warnings] } : response;
}

/** Allows the request, optionally with admission warnings and a JSON patch (empty patches are left out). */
export function allow(
  uid: string,
  warnings: readonly string[] = [],
  patch: readonly JsonPatchOp[] = [],
): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (patch.length > 0) {
    response.patchType = "JSONPatch";
    response.patch = Buffer.from(JSON.stringify(patch)).toString("base64");
  }
  return withWarnings(response, warnings);
}

/** Denies the request with `status` (and warnings, which kubectl prints even on failure). */
export function deny(uid: string, status: Status, warnings: readonly string[] = []): AdmissionResponse {
  return withWarnings({ uid, allowed: false, status }, warnings);
}

/** A refusal the caller may retry (500): a read failed or the answer could not come in time. */
export function retryLater(uid: string, why: string): AdmissionResponse {
  return deny(uid, failure(500, "InternalError", `${why}; retry later`));
}

/** A plain failure Status, e.g. `failure(400, "BadRequest", "…")`. */
export function failure(code: number, reason: string, message: string): Status {
  return { apiVersion: "v1", kind: "Status", status: "Failure", code, reason, message };
}

const CAUSE_TYPE: Record<FieldErrorType, string> = {
  Invalid: "FieldValueInvalid",
  Required: "FieldValueRequired",
  Forbidden: "FieldValueForbidden",
  Duplicate: "FieldValueDuplicate",
  TooMany: "FieldValueTooMany",
};

/**
 * Most distinct errors a denial lists, in its message and as causes: a hostile spec can have one per item, and
 * rendering and sending a hundred thousand of them would hold the request's thread for seconds. The rest are counted.
 */
export const MAX_DENIAL_ERRORS = 100;

/**
 * The `Invalid` (422) Status of the API server for `errors` of object `name` of `group`/`kind`: the message is
 * `<Kind>.<group> "<name>" is invalid: <error>` for one error and `… is invalid: [<e1>, <e2>]` for several (repeats
 * dropped), and every error is also a cause with its field path. Past {@link MAX_DENIAL_ERRORS} distinct errors the
 * list ends with `and N more errors` and the causes stop at the same error.
 */
export function invalid(group: string, kind: string, name: string, errors: readonly FieldError[]): Status {
  const listed: FieldError[] = [];
  const messages = new Set<string>();
  let more = 0;
  for (const e of errors) {
    const text = formatFieldError(e);
    if (messages.has(text)) continue;
    if (messages.size >= MAX_DENIAL_ERRORS) {
      // Counting the rest stays linear: only distinct errors beyond the cap are counted, via the same set.
      messages.add(text);
      more++;
      continue;
    }
    messages.add(text);
    listed.push(e);
  }
  const texts = listed.map(formatFieldError);
  if (more > 0) texts.push(`and ${more} more errors`);
  const list = texts.length === 1 ? (texts[0] ?? "") : `[${texts.join(", ")}]`;
  const qualified = group ? `${kind}.${group}` : kind;
  const causes = listed.map((e) => ({
    type: CAUSE_TYPE[e.type],
    message: formatFieldError(e).slice(e.field.length + 2),
    field: e.field,
  }));
  return {
    ...failure(422, "Invalid", `${qualified} ${JSON.stringify(name)} is invalid${texts.length > 0 ? `: ${list}` : ""}`),
    details: { name, group, kind, causes },
  };
}

/** JSON Pointer (RFC 6901) escaping of one path segment. */
export function pointerSegment(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}
