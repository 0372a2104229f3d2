/**
 * `spec.customFields` of a NetBox pool: NetBox custom fields set on each record it creates. Pure.
 *
 * The CRD schema bounds the count only (the API server compiles no CEL rule over a map of values of several types);
 * the rest is checked here, before NetBox is called, so a bad field fails the pool's claims with the field named
 * rather than NetBox's 400 for every batch. The bounds keep what a pool makes NetBox store per record small.
 */

/** The most custom fields a pool may set. */
export const MAX_CUSTOM_FIELDS = 16;
/** The longest string value (NetBox's text fields take more; a pool's records need no essays). */
export const MAX_CUSTOM_FIELD_VALUE = 256;
/** NetBox's rule for a custom field's name: letters, digits and underscores (no double one), at most 50. */
export const CUSTOM_FIELD_NAME = /^(?!.*__)[A-Za-z0-9_]{1,50}$/;

export type CustomFieldValue = string | number | boolean;

/** Why `fields` cannot be sent to NetBox, or undefined when they can. */
export function customFieldsProblem(fields: Readonly<Record<string, unknown>> | undefined): string | undefined {
  if (fields === undefined) return undefined;
  if (typeof fields !== "object" || fields === null || Array.isArray(fields))
    return "customFields must map names to values";
  const entries = Object.entries(fields);
  if (entries.length > MAX_CUSTOM_FIELDS)
    return `customFields has ${entries.length} fields; at most ${MAX_CUSTOM_FIELDS} are allowed`;
  for (const [name, value] of entries) {
    const shown = JSON.stringify(name.slice(0, 60));
    if (!CUSTOM_FIELD_NAME.test(name))
      return `customFields name ${shown} is not a NetBox custom field name (letters, digits, single underscores, at most 50)`;
    if (typeof value === "string" && value.length > MAX_CUSTOM_FIELD_VALUE)
      return `customFields ${shown} is longer than ${MAX_CUSTOM_FIELD_VALUE} characters`;
    if (typeof value === "number" && !Number.isFinite(value)) return `customFields ${shown} is not a finite number`;
    if (!["string", "number", "boolean"].includes(typeof value))
      return `customFields ${shown} must be a string, a number or a boolean`;
  }
  return undefined;
}
