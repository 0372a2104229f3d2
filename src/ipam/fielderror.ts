/** Field-path errors rendered the way the API server and kubectl show them (spec §6). */

/** The error kinds we produce, named after Kubernetes `field.ErrorType`. */
export type FieldErrorType = "Invalid" | "Required" | "Forbidden" | "Duplicate";

/** One problem with one field. `field` is a path such as `spec.pools[1].end` or `spec.preAllocations[claim-a]`. */
export interface FieldError {
  field: string;
  type: FieldErrorType;
  /** The offending value, shown quoted for Invalid and Duplicate. */
  value?: string;
  detail: string;
}

const TYPE_TEXT: Record<FieldErrorType, string> = {
  Invalid: "Invalid value",
  Required: "Required value",
  Forbidden: "Forbidden",
  Duplicate: "Duplicate value",
};

/**
 * Renders like Kubernetes' `field.Error`: `spec.pools[1].end: Invalid value: "10.0.0.1": end is before start`.
 * Required and Forbidden never show the value; Invalid and Duplicate show it JSON-quoted when present.
 */
export function formatFieldError(e: FieldError): string {
  let body = TYPE_TEXT[e.type];
  if ((e.type === "Invalid" || e.type === "Duplicate") && e.value !== undefined) body += `: ${JSON.stringify(e.value)}`;
  if (e.detail) body += `: ${e.detail}`;
  return `${e.field}: ${body}`;
}
