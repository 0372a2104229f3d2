/** Field-path errors rendered the way the API server and kubectl show them (spec §6). */

/** The error kinds we produce, named after Kubernetes `field.ErrorType`. */
export type FieldErrorType = "Invalid" | "Required" | "Forbidden" | "Duplicate" | "TooMany";

/** One problem with one field. `field` is a path such as `spec.pools[1].end` or `spec.preAllocations[claim-a]`. */
export interface FieldError {
  field: string;
  type: FieldErrorType;
  /** The offending value, shown quoted for Invalid and Duplicate. */
  value?: string;
  /**
   * The offending value already written out, shown as is (unquoted) in place of `value`: for values that are not
   * strings, written as Kubernetes' Go code prints them (`[]string{"10.0.0.1"}`, `-1`).
   */
  rendered?: string;
  detail: string;
}

const TYPE_TEXT: Record<FieldErrorType, string> = {
  Invalid: "Invalid value",
  Required: "Required value",
  Forbidden: "Forbidden",
  Duplicate: "Duplicate value",
  TooMany: "Too many",
};

/**
 * Renders like Kubernetes' `field.Error`: `spec.pools[1].end: Invalid value: "10.0.0.1": end is before start`.
 * Required and Forbidden never show the value; Invalid and Duplicate show `rendered` as is, else `value` JSON-quoted;
 * TooMany shows `rendered` (the count: `spec.pools: Too many: 100001: must have at most 100000 items`).
 */
export function formatFieldError(e: FieldError): string {
  let body = TYPE_TEXT[e.type];
  if (e.type === "TooMany" && e.rendered !== undefined) body += `: ${e.rendered}`;
  if (e.type === "Invalid" || e.type === "Duplicate") {
    if (e.rendered !== undefined) body += `: ${e.rendered}`;
    else if (e.value !== undefined) body += `: ${JSON.stringify(e.value)}`;
  }
  if (e.detail) body += `: ${e.detail}`;
  return `${e.field}: ${body}`;
}
