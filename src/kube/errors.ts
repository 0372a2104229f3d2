/** Typed view of API errors. Every API failure is classified here and nowhere else. */

/** HTTP status of an error thrown by @kubernetes/client-node (ApiException.code), if any. */
export function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null || !("code" in err)) return undefined;
  const code = Number(err.code);
  return Number.isInteger(code) && code >= 100 && code < 600 ? code : undefined;
}

export const isNotFound = (err: unknown): boolean => statusCodeOf(err) === 404;
/** 409 covers both AlreadyExists (create) and Conflict (stale resourceVersion); see isAlreadyExists. */
export const isConflict = (err: unknown): boolean => statusCodeOf(err) === 409;
/** 403: RBAC denies the request. */
export const isForbidden = (err: unknown): boolean => statusCodeOf(err) === 403;
export const isGone = (err: unknown): boolean => statusCodeOf(err) === 410;
export const isInvalid = (err: unknown): boolean => statusCodeOf(err) === 422;

/** The Kubernetes Status `reason` carried in an ApiException body, if any. */
export function statusReasonOf(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null || !("body" in err)) return undefined;
  const body = err.body;
  try {
    const parsed = (typeof body === "string" ? JSON.parse(body) : body) as { reason?: unknown } | null;
    return typeof parsed?.reason === "string" ? parsed.reason : undefined;
  } catch {
    return undefined;
  }
}

export const isAlreadyExists = (err: unknown): boolean => isConflict(err) && statusReasonOf(err) === "AlreadyExists";

/** A write another writer got to first: the object changed since it was read (409), or it is gone (404). */
export const isLostRace = (err: unknown): boolean => isConflict(err) || isNotFound(err);

/** A short, one-line description of an API error for logs, conditions and Events. */
export function describeError(err: unknown): string {
  if (typeof err === "object" && err !== null && "body" in err) {
    const body = err.body;
    try {
      const parsed = (typeof body === "string" ? JSON.parse(body) : body) as { message?: unknown } | null;
      if (typeof parsed?.message === "string") return parsed.message;
    } catch {
      // fall through to the generic message
    }
  }
  return err instanceof Error ? (err.message.split("\n")[0] ?? err.message) : String(err);
}

/** Thrown when a request got no answer within its deadline, or its connection died. Whether a write took effect is then unknown. */
export class RequestTimeoutError extends Error {
  override name = "RequestTimeoutError";
}

/**
 * An answer larger than its request allows (transport.ts's `MAX_ANSWER_BYTES` by default): the request was cancelled
 * and what arrived dropped. The API server bounds each object it stores, not a list page of them, so a list answers
 * this when its page is of many large objects; a list shrinks its page and asks again (resource.ts).
 */
export class AnswerTooLargeError extends Error {
  override name = "AnswerTooLargeError";
  constructor(
    what: string,
    readonly limitBytes: number,
  ) {
    super(`${what}: the answer exceeded ${limitBytes} bytes and was dropped`);
  }
}

/**
 * A non-2xx answer. `code` is the HTTP status and `body` the parsed Kubernetes Status (or the raw text), the shape
 * this file classifies.
 */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    message: string,
    readonly code: number,
    readonly body: unknown,
  ) {
    super(message);
  }
}
