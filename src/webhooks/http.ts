/**
 * The HTTP side of the webhooks: one request listener that reads a bounded JSON body, dispatches the AdmissionReview
 * to the route of its path (or a review of another kind, the ConversionReview, to its handler) and writes the answer. It never throws and never leaves a request unanswered:
 * - unknown path → 404, method other than POST → 405, body larger than the limit → 413 (the connection is then
 *   closed, the rest of the body is not read), body that is not JSON or not an AdmissionReview v1 → 400; each with a
 *   `metav1.Status` JSON body;
 * - a readable review always gets HTTP 200 with an AdmissionReview answer, a handler failure included (denied, 500);
 * - every request has one deadline from its arrival, under the API server's 10 s wait: a body not read by then gets
 *   408 (the connection is closed), and a review not answered by then is refused at once with a 500 denial that says
 *   to retry; what the handler still does is then dropped. Large reviews (bodies over {@link LARGE_BODY_BYTES}) in
 *   progress are bounded too: one more waits for its turn in a short line (slots.ts), and is refused the same way when
 *   the line is full or its deadline comes first.
 * - a large review is answered in the validation worker when the context's validator has one (offload.ts): its body
 *   is moved there unparsed, so this thread never parses, copies or compares it; a refusal then echoes the uid read
 *   from the body's first bytes, where the API server writes `request.uid`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { deny, failure, parseAdmissionReview, retryLater, review } from "./admission.js";
import type { AdmissionRequest, AdmissionResponse, Status } from "./admission.js";
import type { HandlerContext, Route } from "./route.js";
import { conversionFailure } from "./conversion.js";
import type { ReviewAnswer } from "./conversion.js";
import type { WebhookResult } from "../runtime/metrics.js";
import { Slots, type NoSlot } from "./slots.js";

/**
 * Default bound of a request body: 3 MiB, the API server's own request-body limit (Kubernetes' pod-security webhook
 * uses the same). Stored objects stay under etcd's 1.5 MiB, so a review carrying an object and its old version fits.
 */
export const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

/**
 * Time from a request's arrival to its answer: under the API server's 10 s, with room for the network and for a
 * stall of the event loop (the refusal's timer fires only when the thread is free).
 */
export const DEFAULT_DEADLINE_MS = 7_000;

/** A body over this many bytes is a large review: its parse, reads and validation cost tens of milliseconds and up. */
export const LARGE_BODY_BYTES = 256 * 1024;

/** Default most large reviews in progress at once (see {@link ListenerOptions.maxLargeInFlight}). */
export const DEFAULT_MAX_LARGE_IN_FLIGHT = 4;

/** Default most large reviews waiting for one of those (see {@link ListenerOptions.maxLargeWaiting}). */
export const DEFAULT_MAX_LARGE_WAITING = 4;

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
  /** Time from a request's arrival to its answer, in ms; default {@link DEFAULT_DEADLINE_MS}. */
  deadlineMs?: number;
  /** Most large reviews in progress at once; one more waits its turn. Default {@link DEFAULT_MAX_LARGE_IN_FLIGHT}. */
  maxLargeInFlight?: number;
  /**
   * Most large reviews waiting for their turn (slots.ts), until their deadline; one more is refused when read.
   * Default {@link DEFAULT_MAX_LARGE_WAITING}.
   */
  maxLargeWaiting?: number;
  /** Told how each request ended; `webhook` is the route's path, or "unknown" for a path no route serves. */
  onRequest?: (webhook: string, result: WebhookResult, seconds: number) => void;
}

class BodyTooLarge extends Error {}
class BodyTooSlow extends Error {}

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

/**
 * Reads the whole body, rejecting with BodyTooLarge past `limit` bytes and with BodyTooSlow when it is not complete
 * within `ms` (a body trickled byte by byte); either way it then stops reading.
 */
function readBody(req: IncomingMessage, limit: number, ms: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (err: Error): void => {
      clearTimeout(timer);
      req.off("data", onData);
      req.pause();
      reject(err);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        stop(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const timer = setTimeout(() => stop(new BodyTooSlow()), Math.max(0, ms));
    req.on("data", onData);
    req.once("end", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    req.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // A client that goes away mid-body emits neither end nor (always) error: do not wait for it forever.
    req.once("close", () => {
      if (req.complete) return;
      clearTimeout(timer);
      reject(new Error("the client closed the connection before the body was complete"));
    });
  });
}

function tooLarge(limit: number): Status {
  return failure(413, "RequestEntityTooLarge", `the request body is larger than ${limit} bytes`);
}

function tooSlow(ms: number): Status {
  return failure(408, "Timeout", `the request body did not arrive within ${ms / 1000} s`);
}

/** The refusal of a review that cannot be answered in time: the API server retries nothing, the caller may. */
const busy = retryLater;

/** How an answered review ended, for metrics: a 5xx denial is the handler failing, not a policy decision. */
function resultOf(response: AdmissionResponse): WebhookResult {
  if (response.allowed) return "allowed";
  return (response.status?.code ?? 0) >= 500 ? "error" : "denied";
}

/** How one path answers a read body, by the request's deadline (`performance.now()` ms). */
type Answerer = (raw: Buffer, deadline: number) => Promise<ReviewAnswer>;

/** What one listener shares between its requests. */
interface Shared {
  context: HandlerContext;
  deadlineMs: number;
  /** Large reviews in progress, and those waiting for their turn. */
  large: Slots;
}

/** The body as JSON, or the 400 answer for one that is not. */
function parseJson(raw: Buffer): { parsed: unknown } | ReviewAnswer {
  try {
    return { parsed: JSON.parse(raw.toString("utf8")) as unknown };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { code: 400, body: failure(400, "BadRequest", `the body is not JSON: ${why}`), result: "rejected" };
  }
}

/** The request of an AdmissionReview body, or the 400 answer for a body that is none. */
function readReview(raw: Buffer): { request: AdmissionRequest } | ReviewAnswer {
  const json = parseJson(raw);
  if (!("parsed" in json)) return json;
  const envelope = parseAdmissionReview(json.parsed);
  if (!envelope.ok)
    return {
      code: 400,
      body: failure(400, "BadRequest", `not an AdmissionReview: ${envelope.message}`),
      result: "rejected",
    };
  return { request: envelope.request };
}

function answered(response: AdmissionResponse): ReviewAnswer {
  return { code: 200, body: review(response), result: resultOf(response) };
}

/** Parses and dispatches one body; resolves with the HTTP status and JSON body to send, by `deadline`. Never rejects. */
async function dispatch(route: Route, raw: Buffer, deadline: number, shared: Shared): Promise<ReviewAnswer> {
  const read = readReview(raw);
  if (!("request" in read)) return read;
  return answered(await handleByDeadline(route, read.request, raw.length > LARGE_BODY_BYTES, deadline, shared));
}

/**
 * Answers one body in the calling thread with no deadline of its own: what the validation worker does with a large
 * review (offload.ts), whose deadline the request's thread keeps. `reviews` answer the paths of other review kinds.
 * Never rejects.
 */
export async function answerInThread(
  path: string,
  raw: Buffer,
  routes: ReadonlyMap<string, Route>,
  reviews: ReadonlyMap<string, (body: unknown) => ReviewAnswer>,
  ctx: HandlerContext,
): Promise<ReviewAnswer> {
  const route = routes.get(path);
  if (route) {
    const read = readReview(raw);
    return "request" in read ? answered(await handleSafely(route, read.request, ctx)) : read;
  }
  const other = reviews.get(path);
  if (!other)
    return { code: 404, body: failure(404, "NotFound", `no webhook is served at ${path}`), result: "rejected" };
  const json = parseJson(raw);
  return "parsed" in json ? other(json.parsed) : json;
}

/** Bytes at the start of a body searched for its uid. */
const HEAD_BYTES = 4096;
const HEAD_UID = /"request"\s*:\s*\{\s*"uid"\s*:\s*"([^"\\]{1,128})"/;

/** `request.uid` when the body's first bytes hold it (the API server writes it first); else "". */
export function uidFromHead(raw: Buffer): string {
  return HEAD_UID.exec(raw.subarray(0, HEAD_BYTES).toString("latin1"))?.[1] ?? "";
}

/**
 * A large body answered in the validation worker (see the file header), by `deadline`: what it answers, or the
 * refusal `refuse` builds when the worker refuses it or the large reviews in progress are at their bound.
 */
async function inWorker(
  path: string,
  raw: Buffer,
  deadline: number,
  shared: Shared,
  refuse: (uid: string, why: string) => ReviewAnswer,
): Promise<ReviewAnswer> {
  const uid = uidFromHead(raw);
  const validator = shared.context.validator;
  if (!validator?.review) throw new Error("no validation worker");
  if (deadline <= performance.now()) {
    return refuse(uid, `the admission review could not start within ${shared.deadlineMs / 1000} s of its arrival`);
  }
  const slot = await shared.large.take(deadline);
  if ("refused" in slot) return refuse(uid, noSlot(shared, slot.refused));
  try {
    return await validator.review(path, raw, shared.context.lookup, deadline);
  } catch (err) {
    return refuse(uid, err instanceof Error ? err.message : String(err));
  } finally {
    slot.release();
  }
}

/**
 * The handler's answer, or a refusal at `deadline` if it has none by then; a large review waits for its turn among
 * those in progress (refused when the line is full, or at its deadline), and one whose deadline passed before it
 * could start (its body took that long) is refused at once.
 */
async function handleByDeadline(
  route: Route,
  request: AdmissionRequest,
  large: boolean,
  deadline: number,
  shared: Shared,
): Promise<AdmissionResponse> {
  const seconds = shared.deadlineMs / 1000;
  if (deadline <= performance.now())
    return busy(request.uid, `the admission review could not start within ${seconds} s of its arrival`);
  const slot = large ? await shared.large.take(deadline) : { release: () => undefined };
  if ("refused" in slot) return busy(request.uid, noSlot(shared, slot.refused));
  const left = deadline - performance.now();
  if (left <= 0) {
    slot.release();
    return busy(request.uid, noSlot(shared, "deadline"));
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<AdmissionResponse>((resolve) => {
    timer = setTimeout(
      () => resolve(busy(request.uid, `the admission review was not answered within ${seconds} s of its arrival`)),
      left,
    );
  });
  try {
    return await Promise.race([handleSafely(route, request, { ...shared.context, deadline }), late]);
  } finally {
    clearTimeout(timer);
    slot.release();
  }
}

/** Why a large review got no slot, for its refusal. */
function noSlot(shared: Shared, why: NoSlot): string {
  const { max, maxWaiting } = shared.large;
  return why === "line full"
    ? `too many large admission reviews are in progress (${max}) and waiting (${maxWaiting})`
    : `no large admission review finished within ${shared.deadlineMs / 1000} s of its arrival to make room for it`;
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

/** Answers one request due by `deadline` (`deadlineMs` after its arrival); resolves with how it ended. */
async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  answerer: Answerer | undefined,
  limit: number,
  deadline: number,
  deadlineMs: number,
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
    raw = await readBody(req, limit, deadline - performance.now());
  } catch (err) {
    if (err instanceof BodyTooLarge) sendStatus(res, tooLarge(limit), true);
    else if (err instanceof BodyTooSlow) sendStatus(res, tooSlow(deadlineMs), true);
    else throw err;
    return "rejected";
  }
  const { code, body, result } = await answerer(raw, deadline);
  send(res, code, body);
  return result;
}

function answererOf(options: ListenerOptions, shared: Shared, path: string): Answerer | undefined {
  const toWorker = (raw: Buffer): boolean =>
    raw.length > LARGE_BODY_BYTES && shared.context.validator?.review !== undefined;
  const route = options.routes.get(path);
  if (route) {
    const refuse = (uid: string, why: string): ReviewAnswer => answered(busy(uid, why));
    return (raw, deadline) =>
      toWorker(raw) ? inWorker(path, raw, deadline, shared, refuse) : dispatch(route, raw, deadline, shared);
  }
  const review = options.reviews?.get(path);
  if (!review) return undefined;
  const refuse = (uid: string, why: string): ReviewAnswer => conversionFailure(uid, `${why}; retry later`);
  return (raw, deadline) => {
    if (toWorker(raw)) return inWorker(path, raw, deadline, shared, refuse);
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
  const shared: Shared = {
    context: options.context,
    deadlineMs: options.deadlineMs ?? DEFAULT_DEADLINE_MS,
    large: new Slots(
      options.maxLargeInFlight ?? DEFAULT_MAX_LARGE_IN_FLIGHT,
      options.maxLargeWaiting ?? DEFAULT_MAX_LARGE_WAITING,
    ),
  };
  return (req, res) => {
    const started = performance.now();
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const answerer = answererOf(options, shared, path);
    // Only known paths become label values: a scanner probing random URLs must not grow the metric without bound.
    const webhook = answerer ? path : "unknown";
    serve(req, res, answerer, limit, started + shared.deadlineMs, shared.deadlineMs).then(
      (result) => report(webhook, result, (performance.now() - started) / 1000),
      (err: unknown) => {
        options.context.logger.error("Webhook request failed", { path: req.url, error: err });
        sendStatus(res, failure(500, "InternalError", "internal error"), true);
        report(webhook, "error", (performance.now() - started) / 1000);
      },
    );
  };
}
