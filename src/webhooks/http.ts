/**
 * The HTTP side of the webhooks: one request listener that reads a bounded JSON body, dispatches the AdmissionReview
 * to the route of its path (or a review of another kind, the ConversionReview, to its handler) and writes the answer. It never throws and never leaves a request unanswered:
 * - unknown path → 404, method other than POST → 405, body larger than the limit → 413 (the connection is then
 *   closed, the rest of the body is not read), body that is not JSON or not an AdmissionReview v1 → 400; each with a
 *   `metav1.Status` JSON body;
 * - a readable review always gets HTTP 200 with an AdmissionReview answer, a handler failure included (denied, 500).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { deny, failure, parseAdmissionReview, review } from "./admission.js";
import type { AdmissionRequest, AdmissionResponse, Status } from "./admission.js";
import type { HandlerContext, Route } from "./route.js";
import type { ReviewAnswer } from "./conversion.js";
import type { WebhookResult } from "../runtime/metrics.js";

/**
 * Default bound of a request body: 3 MiB, the API server's own request-body limit (Kubernetes' pod-security webhook
 * uses the same). Stored objects stay under etcd's 1.5 MiB, so a review carrying an object and its old version fits.
 */
export const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Options of {@link admissionListener}. */
export interface ListenerOptions {
  routes: ReadonlyMap<string, Route>;
  context: HandlerContext;
  /**
   * Paths answering a review other than AdmissionReview (the CRD conversion webhook): the handler gets the parsed
   * JSON body and returns the whole answer. It must not throw (a throw is still answered: 500).
   */
  reviews?: ReadonlyMap<string, (body: unknown) => ReviewAnswer>;
  /** Largest accepted body in bytes; default {@link DEFAULT_MAX_BODY_BYTES}. */
  maxBodyBytes?: number;
  /** Told how each request ended; `webhook` is the route's path, or "unknown" for a path no route serves. */
  onRequest?: (webhook: string, result: WebhookResult, seconds: number) => void;
}

class BodyTooLarge extends Error {}

function send(res: ServerResponse, code: number, body: unknown, close = false): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(code, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    ...(close ? { Connection: "close" } : {}),
  });
  res.end(text);
}

function sendStatus(res: ServerResponse, status: Status, close = false): void {
  send(res, status.code, status, close);
}

/** Reads the whole body, rejecting with BodyTooLarge past `limit` bytes (and then stops reading). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.off("data", onData);
        req.pause();
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
    // A client that goes away mid-body emits neither end nor (always) error: do not wait for it forever.
    req.once("close", () => {
      if (!req.complete) reject(new Error("the client closed the connection before the body was complete"));
    });
  });
}

function tooLarge(limit: number): Status {
  return failure(413, "RequestEntityTooLarge", `the request body is larger than ${limit} bytes`);
}

/** How an answered review ended, for metrics: a 5xx denial is the handler failing, not a policy decision. */
function resultOf(response: AdmissionResponse): WebhookResult {
  if (response.allowed) return "allowed";
  return (response.status?.code ?? 0) >= 500 ? "error" : "denied";
}

/** How one path answers a read body. */
type Answerer = (raw: Buffer) => Promise<ReviewAnswer>;

/** The body as JSON, or the 400 answer for one that is not. */
function parseJson(raw: Buffer): { parsed: unknown } | ReviewAnswer {
  try {
    return { parsed: JSON.parse(raw.toString("utf8")) as unknown };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { code: 400, body: failure(400, "BadRequest", `the body is not JSON: ${why}`), result: "rejected" };
  }
}

/** Parses and dispatches one body; resolves with the HTTP status and JSON body to send. Never rejects. */
async function dispatch(route: Route, raw: Buffer, ctx: HandlerContext): Promise<ReviewAnswer> {
  const json = parseJson(raw);
  if (!("parsed" in json)) return json;
  const { parsed } = json;
  const envelope = parseAdmissionReview(parsed);
  if (!envelope.ok)
    return {
      code: 400,
      body: failure(400, "BadRequest", `not an AdmissionReview: ${envelope.message}`),
      result: "rejected",
    };
  const response = await handleSafely(route, envelope.request, ctx);
  return { code: 200, body: review(response), result: resultOf(response) };
}

async function handleSafely(route: Route, request: AdmissionRequest, ctx: HandlerContext): Promise<AdmissionResponse> {
  try {
    const response = await route.handle(request, ctx);
    ctx.logger.debug("Admission review", {
      kind: request.kind.kind,
      operation: request.operation,
      namespace: request.namespace,
      name: request.name,
      allowed: response.allowed,
      ...(response.status ? { message: response.status.message } : {}),
    });
    return response;
  } catch (err) {
    ctx.logger.error("Admission handler failed", { kind: request.kind.kind, name: request.name, error: err });
    const why = err instanceof Error ? err.message : String(err);
    return deny(request.uid, failure(500, "InternalError", `internal error in the admission webhook: ${why}`));
  }
}

/** Answers one request; resolves with how it ended. */
async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  answerer: Answerer | undefined,
  limit: number,
): Promise<WebhookResult> {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  if (!answerer) {
    sendStatus(res, failure(404, "NotFound", `no webhook is served at ${path}`));
    return "rejected";
  }
  if (req.method !== "POST") {
    res.setHeader("Allow", "POST");
    sendStatus(res, failure(405, "MethodNotAllowed", `${req.method ?? "?"} is not allowed; webhooks take POST`));
    return "rejected";
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    sendStatus(res, tooLarge(limit), true);
    return "rejected";
  }
  let raw: Buffer;
  try {
    raw = await readBody(req, limit);
  } catch (err) {
    if (!(err instanceof BodyTooLarge)) throw err;
    sendStatus(res, tooLarge(limit), true);
    return "rejected";
  }
  const { code, body, result } = await answerer(raw);
  send(res, code, body);
  return result;
}

function answererOf(options: ListenerOptions, path: string): Answerer | undefined {
  const route = options.routes.get(path);
  if (route) return (raw) => dispatch(route, raw, options.context);
  const review = options.reviews?.get(path);
  if (!review) return undefined;
  return (raw) => {
    const json = parseJson(raw);
    return Promise.resolve("parsed" in json ? review(json.parsed) : json);
  };
}

/**
 * The request listener of the webhook server. Every request is answered (see the file header); an unexpected
 * failure while answering is logged and answered with 500, or the connection is dropped when the answer had begun.
 */
export function admissionListener(options: ListenerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const report = options.onRequest ?? (() => undefined);
  return (req, res) => {
    const started = performance.now();
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const answerer = answererOf(options, path);
    // Only known paths become label values: a scanner probing random URLs must not grow the metric without bound.
    const webhook = answerer ? path : "unknown";
    serve(req, res, answerer, limit).then(
      (result) => report(webhook, result, (performance.now() - started) / 1000),
      (err: unknown) => {
        options.context.logger.error("Webhook request failed", { path: req.url, error: err });
        sendStatus(res, failure(500, "InternalError", "internal error"), true);
        report(webhook, "error", (performance.now() - started) / 1000);
      },
    );
  };
}
