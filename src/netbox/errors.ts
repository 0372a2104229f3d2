/**
 * NetBox failures as reasons the controller can act on (retry later, report a credential problem, mark a pool
 * exhausted), and the one place the token is scrubbed from anything that leaves the client.
 */
import type { NetBoxErrorReason } from "./types.js";

export type { NetBoxErrorReason };

/**
 * A failed NetBox request. Its message names the method, the templated route, the status and NetBox's own words,
 * never the token or the request's headers; it carries no `cause` (a socket error could hold more than we want to
 * show), only the error code of one.
 */
export class NetBoxError extends Error {
  override name = "NetBoxError";
  constructor(
    message: string,
    readonly reason: NetBoxErrorReason,
    readonly status?: number,
    /** From a `Retry-After` header (429, or a 5xx that sends one). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const isNetBoxError = (err: unknown, reason?: NetBoxErrorReason): err is NetBoxError =>
  err instanceof NetBoxError && (reason === undefined || err.reason === reason);

/**
 * NetBox's words when it rejects the credential itself. NetBox answers these with 403, not 401 (its token
 * authentication sends no WWW-Authenticate challenge, so Django REST framework turns AuthenticationFailed into 403):
 * a missing token, an unknown or malformed one, a disabled or expired one, an inactive user, a source address the
 * token does not allow. A 403 with other words ("You do not have permission to perform this action.") is a valid
 * token without the permission: Forbidden.
 */
const CREDENTIAL_REJECTED =
  /^(Invalid (v\d )?token|Invalid authorization header|Token (disabled|expired)|User inactive|Authentication credentials were not provided|Source IP)/i;

/**
 * The reason of an HTTP error status, given NetBox's words (`detail`). 409 from available-ips is NetBox's
 * "Insufficient resources" (fewer free addresses than asked for); 409 elsewhere is a conflict of the request itself,
 * so a BadRequest.
 */
export function reasonOfStatus(status: number, availableIps: boolean, detail = ""): NetBoxErrorReason {
  if (status === 401) return "Unauthorized";
  if (status === 403) return CREDENTIAL_REJECTED.test(detail.trim()) ? "Unauthorized" : "Forbidden";
  if (status === 404) return "NotFound";
  if (status === 409 && availableIps) return "Exhausted";
  if (status === 429) return "Throttled";
  if (status >= 500) return "ServerError";
  return "BadRequest";
}

/**
 * The reason of a request that got no HTTP answer. ETIMEDOUT (the system gave up connecting) is a Timeout; anything
 * else is Unreachable: a refused, reset or aborted connection (ECONNREFUSED, ECONNRESET, EPIPE), no route or name
 * (EHOSTUNREACH, ENOTFOUND, EAI_AGAIN), or a TLS failure (an unknown CA, a wrong name): the server we trust is not
 * the one that answered.
 */
export function reasonOfSocketError(code: string | undefined): NetBoxErrorReason {
  return code === "ETIMEDOUT" ? "Timeout" : "Unreachable";
}

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

const MAX_MESSAGE = 400;

/**
 * NetBox's words from an error body: `{"detail": "..."}`, field errors (`{"address": ["Duplicate ..."]}`), a list
 * of those for bulk requests, or plain text (an HTML error page of a proxy is cut short).
 */
export function netBoxMessage(body: string): string {
  let text = body.trim();
  try {
    const parsed = JSON.parse(text) as unknown;
    text = flatten(parsed);
  } catch {
    // not JSON: keep the text
  }
  text = text.replace(/\s+/g, " ").trim();
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}

function flatten(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(flatten).filter(Boolean).join("; ");
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    if (typeof record.detail === "string") return record.detail;
    return Object.entries(record)
      .map(([key, v]) => `${key}: ${flatten(v)}`)
      .join("; ");
  }
  return value === undefined || value === null ? "" : JSON.stringify(value);
}

/**
 * `text` with every occurrence of each secret (and, for a v2 token `nbt_<key>.<secret>`, of its secret part alone)
 * replaced by `[redacted]`. Secrets shorter than 8 characters are left alone: they would redact ordinary words.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  const parts = secrets.flatMap((s) => [s, ...(s.includes(".") ? [s.slice(s.indexOf(".") + 1)] : [])]);
  for (const secret of parts.filter((s) => s.length >= 8).sort((a, b) => b.length - a.length))
    out = out.split(secret).join("[redacted]");
  return out;
}
