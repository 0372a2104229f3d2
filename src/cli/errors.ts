/**
 * Exit codes and the errors a person reads. Every failure of an API read is turned into one sentence that says what
 * was refused or missing and what to do, instead of a stack trace or a raw HTTP status.
 */

/** Exit codes of `kubectl ipam` (documented in the README). */
export const ExitCode = {
  ok: 0,
  /** preflight-move: something would be left behind or the move would be refused. */
  findings: 1,
  /** Bad flags or arguments. */
  usage: 2,
  /** The cluster could not answer: unreachable, forbidden, CRDs missing, unknown pool or address. */
  failure: 3,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** An error whose message is meant for the user, with the exit code it ends the process with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCodeValue = ExitCode.failure,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** What kubernetes-fluent-client throws for a failed request: the response, not an Error. */
export interface ApiFailure {
  ok: false;
  status: number;
  statusText: string;
  data?: unknown;
  /** Present when the request never got an answer (connection refused, TLS, DNS). */
  e?: unknown;
}

/** Whether `err` is a failed fluent-client response. */
export function isApiFailure(err: unknown): err is ApiFailure {
  return (
    typeof err === "object" &&
    err !== null &&
    "ok" in err &&
    err.ok === false &&
    "status" in err &&
    typeof err.status === "number"
  );
}

/** HTTP status of a fluent-client failure, or undefined for anything else. */
export function statusOf(err: unknown): number | undefined {
  return isApiFailure(err) && err.e === undefined ? err.status : undefined;
}

/** The request that failed, in RBAC terms. */
export interface Attempt {
  verb: "get" | "list" | "watch" | "create" | "delete";
  /** `plural.group` (or just `plural` for the core group), as RBAC and kubectl name it. */
  resource: string;
  /** Undefined for all namespaces or cluster-scoped resources. */
  namespace?: string;
  /** Set for a get of one object. */
  name?: string;
}

function serverMessage(failure: ApiFailure): string | undefined {
  const data = failure.data;
  if (typeof data === "object" && data !== null && "message" in data && typeof data.message === "string")
    return data.message;
  return undefined;
}

function causeOf(failure: ApiFailure): string {
  const e = failure.e;
  if (e instanceof Error) {
    const cause = e.cause;
    if (cause instanceof Error) return cause.message;
    return e.message;
  }
  return failure.statusText;
}

function where(a: Attempt): string {
  return a.namespace ? ` in namespace "${a.namespace}"` : a.verb === "get" ? "" : " across all namespaces";
}

/**
 * Turns whatever a read threw into a {@link CliError} a person understands: unreachable server, RBAC refusal naming
 * the verb and resource, a CRD that is not installed. Errors that are already CliErrors pass through.
 */
export function explainReadError(err: unknown, attempt: Attempt, server?: string): CliError {
  if (err instanceof CliError) return err;
  if (!isApiFailure(err)) return new CliError(err instanceof Error ? err.message : String(err));
  if (err.e !== undefined)
    return new CliError(`cannot reach the API server${server ? ` at ${server}` : ""}: ${causeOf(err)}`);
  const what = attempt.name ? `${attempt.resource} "${attempt.name}"` : attempt.resource;
  switch (err.status) {
    case 401:
      return new CliError(
        "the API server rejected your credentials (401 Unauthorized): check the user of your kubeconfig context",
      );
    case 403:
      return new CliError(
        `forbidden: your user may not ${attempt.verb} ${what}${where(attempt)}; ` +
          `ask for an RBAC rule granting "${attempt.verb}" on ${attempt.resource}` +
          (serverMessage(err) ? ` (server said: ${serverMessage(err)})` : ""),
      );
    case 404:
      return new CliError(`${what} not found${where(attempt)}`);
    default:
      return new CliError(
        `${attempt.verb} ${what}${where(attempt)} failed: ${err.status} ${serverMessage(err) ?? err.statusText}`,
      );
  }
}
