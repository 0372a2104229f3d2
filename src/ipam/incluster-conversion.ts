/**
 * Conversion of the in-cluster provider's pools (`InClusterIPPool`, `GlobalInClusterIPPool`) between the deprecated
 * `v1alpha1` and the storage version `v1alpha2` (the hub), as the provider's conversion converts them, plus the
 * round-trip data of Cluster API's convention. Pure: plain JSON objects in, plain JSON objects out; never throws.
 *
 * v1alpha1 → v1alpha2 (as the provider):
 * - With a `subnet` (Go's `netip.ParsePrefix` grammar; else the conversion fails with a `spec.subnet` field error):
 *   a missing `start` is its second address, a missing `end` its second-to-last (the masked network's), and a
 *   `prefix` of 0 (or absent) its length. These defaults are written back into the v1alpha1 data kept for the way
 *   back, so a pool applied as `{subnet}` reads back at v1alpha1 as `{subnet, start, end, prefix}`.
 * - `addresses` are kept and, when both `start` and `end` are set, `start-end` is appended; `prefix` and `gateway`
 *   copied.
 * v1alpha2 → v1alpha1: `addresses`, `prefix` and `gateway` copied (Go's omitempty: an empty list, 0 and "" are left
 * out); `excludedAddresses`, `allocateReservedIPAddresses` and `addressReuseGracePeriodSeconds` have no v1alpha1 field.
 *
 * Round trips (annotation `cluster.x-k8s.io/conversion-data`, {@link CONVERSION_DATA_ANNOTATION}): the conversion
 * that cannot carry something stores it there, the conversion back restores it and removes the annotation, so it
 * never stays on the version it was not written for.
 * - Up: the v1alpha1 spec (defaults filled in) is stored on the v1alpha2 object when plain down-conversion would not
 *   give it back (subnet, start, end, or a form Go's omitempty drops); the provider stores it always. A
 *   `conversion-data` annotation on the v1alpha1 object (v1alpha2 data, see below) is consumed: its v1alpha2-only
 *   fields are restored, exactly as stored (present or absent).
 * - Down: a stored v1alpha1 spec replaces the plain conversion when converting it up again gives the object's
 *   `addresses`, `prefix` and `gateway` (so an edit made at v1alpha2 wins over a stale annotation). The provider
 *   checks this for InClusterIPPool only and restores unconditionally for GlobalInClusterIPPool; we check for both.
 *   When the object has any v1alpha2-only field, the v1alpha2 object (apiVersion, kind, spec) is stored on the
 *   v1alpha1 one (Cluster API's convention; the provider drops these fields on a v1alpha1 update, we keep them).
 * Status is the same at both versions and is copied; so are metadata (the annotation aside) and unknown fields.
 */
import type { InClusterIPPoolSpec, InClusterIPPoolV1Alpha1Spec } from "../../api/incluster/types.js";
import {
  CONVERSION_DATA_ANNOTATION,
  GLOBAL_INCLUSTER_IPPOOL_KIND,
  INCLUSTER_DEPRECATED_VERSION,
  INCLUSTER_GROUP,
  INCLUSTER_IPPOOL_KIND,
  INCLUSTER_VERSION,
} from "../../api/incluster/types.js";
import { familyBits, formatAddress, maxValue, parseAddress } from "./address.js";
import type { Family } from "./address.js";
import { gatewayParseError } from "./incluster-validation.js";

/** `apiVersion` of the deprecated version. */
export const V1ALPHA1 = `${INCLUSTER_GROUP}/${INCLUSTER_DEPRECATED_VERSION}`;
/** `apiVersion` of the hub (storage) version. */
export const V1ALPHA2 = `${INCLUSTER_GROUP}/${INCLUSTER_VERSION}`;
/** The kinds this conversion serves. */
export const CONVERTIBLE_KINDS: readonly string[] = [INCLUSTER_IPPOOL_KIND, GLOBAL_INCLUSTER_IPPOOL_KIND];

/** The v1alpha2 fields v1alpha1 has no place for. */
const HUB_ONLY_FIELDS = ["excludedAddresses", "allocateReservedIPAddresses", "addressReuseGracePeriodSeconds"] as const;

type Json = Record<string, unknown>;

/** The converted object, or why it cannot be converted (a message for the ConversionReview's `result`). */
export type ConversionOutcome = { ok: true; object: Json } | { ok: false; message: string };

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

class ConversionError extends Error {}

/** Go's `netip.Addr.String()`: IPv4-mapped IPv6 as `::ffff:a.b.c.d`; the invalid (zero) Addr as `invalid IP`. */
function goAddress(family: Family, value: bigint): string {
  if (value < 0n || value > maxValue(family)) return "invalid IP";
  if (family === 6 && value >> 32n === 0xffffn)
    return `::ffff:${formatAddress({ family: 4, value: value & 0xffffffffn })}`;
  return formatAddress({ family, value });
}

const BITS_RE = /^(0|[1-9][0-9]{0,2})$/;

/** `netip.ParsePrefix(text)` as the subnet's masked bounds and length, or Go's error text. */
function parsePrefix(text: string): { family: Family; first: bigint; last: bigint; bits: number } | string {
  const quoted = `netip.ParsePrefix(${JSON.stringify(text)})`;
  const slash = text.lastIndexOf("/");
  if (slash < 0) return `${quoted}: no '/'`;
  const addressText = text.slice(0, slash);
  const base = parseAddress(addressText);
  if (!base) return `${quoted}: ${gatewayParseError(addressText)}`;
  const bitsText = text.slice(slash + 1);
  if (!BITS_RE.test(bitsText)) return `${quoted}: bad bits after slash: ${JSON.stringify(bitsText)}`;
  const bits = Number(bitsText);
  if (bits > familyBits(base.family)) return `${quoted}: prefix length out of range`;
  const hostMask = (1n << BigInt(familyBits(base.family) - bits)) - 1n;
  const first = base.value & (maxValue(base.family) ^ hostMask);
  return { family: base.family, first, last: first | hostMask, bits };
}

function optionalString(spec: Json, field: string): string | undefined {
  const value = spec[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new ConversionError(`spec.${field} must be a string`);
  return value;
}

function optionalNumber(spec: Json, field: string): number | undefined {
  const value = spec[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value))
    throw new ConversionError(`spec.${field} must be an integer`);
  return value;
}

function optionalStrings(spec: Json, field: string): string[] | undefined {
  const value = spec[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw new ConversionError(`spec.${field} must be a list of strings`);
  }
  return [...value] as string[];
}

function specOf(object: Json): Json {
  if (object.spec === undefined || object.spec === null) return {};
  if (!isRecord(object.spec)) throw new ConversionError("spec must be an object");
  return object.spec;
}

/**
 * The v1alpha1 spec with the provider's defaults filled in (start, end and prefix from the subnet), keeping every
 * field as written otherwise (an explicit `prefix: 0` or empty list stays, so round trips are exact).
 * @throws ConversionError for a subnet Go cannot parse, or fields of the wrong type.
 */
export function defaultedV1Alpha1Spec(spec: Json): InClusterIPPoolV1Alpha1Spec & Json {
  const out: Json = { ...spec };
  for (const field of ["subnet", "start", "end", "gateway"]) optionalString(spec, field);
  optionalNumber(spec, "prefix");
  optionalStrings(spec, "addresses");
  const subnet = optionalString(spec, "subnet") ?? "";
  if (subnet === "") return out;
  const parsed = parsePrefix(subnet);
  if (typeof parsed === "string") {
    throw new ConversionError(`spec.subnet: Invalid value: ${JSON.stringify(subnet)}: ${parsed}`);
  }
  if (!optionalString(spec, "start")) out.start = goAddress(parsed.family, parsed.first + 1n);
  if (!optionalString(spec, "end")) out.end = goAddress(parsed.family, parsed.last - 1n);
  // Go's omitempty: a /0 subnet leaves the prefix 0, which is not written.
  if (!optionalNumber(spec, "prefix") && parsed.bits !== 0) out.prefix = parsed.bits;
  return out;
}

/** The v1alpha2 spec of a defaulted v1alpha1 spec (no v1alpha2-only field). */
function upSpec(defaulted: Json): InClusterIPPoolSpec {
  const start = optionalString(defaulted, "start") ?? "";
  const end = optionalString(defaulted, "end") ?? "";
  const gateway = optionalString(defaulted, "gateway") ?? "";
  const addresses = [...(optionalStrings(defaulted, "addresses") ?? []), ...(start && end ? [`${start}-${end}`] : [])];
  return { addresses, prefix: optionalNumber(defaulted, "prefix") ?? 0, ...(gateway ? { gateway } : {}) };
}

/** The v1alpha1 spec of a v1alpha2 spec, Go's omitempty applied. */
function downSpec(hub: Json): Json {
  const addresses = optionalStrings(hub, "addresses") ?? [];
  const prefix = optionalNumber(hub, "prefix") ?? 0;
  const gateway = optionalString(hub, "gateway") ?? "";
  return {
    ...(addresses.length > 0 ? { addresses } : {}),
    ...(prefix !== 0 ? { prefix } : {}),
    ...(gateway !== "" ? { gateway } : {}),
  };
}

/** JSON with object keys sorted, as Go's encoding/json writes maps: the annotation's text is deterministic. */
function sortedJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (!isRecord(v)) return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sort(v[k])]),
    );
  };
  return JSON.stringify(sort(value));
}

/** Deep equality of JSON values (key order aside). */
function sameJson(a: unknown, b: unknown): boolean {
  return sortedJson(a) === sortedJson(b);
}

/** The annotations of `object` without the conversion data, and the data's spec (undefined when there is none). */
function takeConversionData(object: Json): { annotations: Record<string, string>; dataSpec: Json | undefined } {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const annotations = isRecord(metadata.annotations) ? { ...(metadata.annotations as Record<string, string>) } : {};
  const text = annotations[CONVERSION_DATA_ANNOTATION];
  if (text === undefined) return { annotations, dataSpec: undefined };
  delete annotations[CONVERSION_DATA_ANNOTATION];
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new ConversionError(`annotation ${CONVERSION_DATA_ANNOTATION} is not JSON`);
  }
  if (!isRecord(data) || (data.spec !== undefined && !isRecord(data.spec))) {
    throw new ConversionError(`annotation ${CONVERSION_DATA_ANNOTATION} is not an object with a spec`);
  }
  return { annotations, dataSpec: isRecord(data.spec) ? data.spec : {} };
}

/** `object` at `apiVersion` with `spec` and `annotations` (metadata.annotations left out when empty). */
function rebuilt(object: Json, apiVersion: string, spec: Json, annotations: Record<string, string>): Json {
  const metadata: Json = { ...(isRecord(object.metadata) ? object.metadata : {}) };
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  else delete metadata.annotations;
  return { ...object, apiVersion, metadata, spec };
}

function dataAnnotation(apiVersion: string, kind: unknown, spec: Json): string {
  return sortedJson({ apiVersion, kind, spec });
}

/** v1alpha1 → v1alpha2; see the file header. */
function convertUp(object: Json): Json {
  const spoke = specOf(object);
  const { annotations, dataSpec } = takeConversionData(object);
  const defaulted = defaultedV1Alpha1Spec(spoke);
  const hub: Json = { ...upSpec(defaulted) };
  for (const field of HUB_ONLY_FIELDS) {
    if (dataSpec && Object.hasOwn(dataSpec, field)) hub[field] = dataSpec[field];
  }
  if (!sameJson(downSpec(hub), defaulted)) {
    annotations[CONVERSION_DATA_ANNOTATION] = dataAnnotation(V1ALPHA1, object.kind, defaulted);
  }
  return rebuilt(object, V1ALPHA2, hub, annotations);
}

/** Whether the stored v1alpha1 spec still describes `hub` (converting it up gives its addresses, prefix, gateway). */
function stillDescribes(stored: Json, hub: Json): boolean {
  const again = upSpec(defaultedV1Alpha1Spec(stored));
  return (
    sameJson(again.addresses, optionalStrings(hub, "addresses") ?? []) &&
    again.prefix === (optionalNumber(hub, "prefix") ?? 0) &&
    (again.gateway ?? "") === (optionalString(hub, "gateway") ?? "")
  );
}

/** v1alpha2 → v1alpha1; see the file header. */
function convertDown(object: Json): Json {
  const hub = specOf(object);
  const { annotations, dataSpec } = takeConversionData(object);
  const spoke = dataSpec !== undefined && stillDescribes(dataSpec, hub) ? dataSpec : downSpec(hub);
  if (HUB_ONLY_FIELDS.some((field) => Object.hasOwn(hub, field))) {
    annotations[CONVERSION_DATA_ANNOTATION] = dataAnnotation(V1ALPHA2, object.kind, hub);
  }
  return rebuilt(object, V1ALPHA1, spoke, annotations);
}

/**
 * One object of a ConversionReview converted to `desiredAPIVersion`. Objects already at it come back unchanged.
 * Fails (never throws) for a kind or version other than the in-cluster pools' v1alpha1 and v1alpha2, a subnet that
 * does not parse, fields of the wrong type and an unreadable conversion-data annotation.
 */
export function convertInClusterPool(object: unknown, desiredAPIVersion: string): ConversionOutcome {
  if (!isRecord(object)) return { ok: false, message: "the object is not a JSON object" };
  const { apiVersion, kind } = object;
  if (typeof kind !== "string" || !CONVERTIBLE_KINDS.includes(kind)) {
    return { ok: false, message: `cannot convert kind ${JSON.stringify(kind)}: only ${CONVERTIBLE_KINDS.join(", ")}` };
  }
  const versions = [V1ALPHA1, V1ALPHA2];
  for (const [what, version] of [
    ["apiVersion", apiVersion],
    ["desiredAPIVersion", desiredAPIVersion],
  ] as const) {
    if (typeof version !== "string" || !versions.includes(version)) {
      return {
        ok: false,
        message: `cannot convert ${kind}: ${what} ${JSON.stringify(version)} is not one of ${versions.join(", ")}`,
      };
    }
  }
  if (apiVersion === desiredAPIVersion) return { ok: true, object };
  try {
    return { ok: true, object: desiredAPIVersion === V1ALPHA2 ? convertUp(object) : convertDown(object) };
  } catch (err) {
    const why = err instanceof ConversionError ? err.message : `internal error: ${String(err)}`;
    const name = isRecord(object.metadata) && typeof object.metadata.name === "string" ? object.metadata.name : "";
    return { ok: false, message: `cannot convert ${kind} "${name}" from ${String(apiVersion)}: ${why}` };
  }
}
