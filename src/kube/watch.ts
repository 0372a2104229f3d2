/**
 * One watch request, streamed line by line. Our own instead of client-node's `Watch` (1.4.0), which cannot be
 * aborted before the response headers arrive (its AbortController is returned only then, and the 30 s timeout it
 * builds is overwritten before use), so a connect to a hung API server hangs forever; and which reports an HTTP
 * error status as `statusCode`, not as the `code` that ./errors.ts classifies.
 */
import type { IncomingMessage } from "node:http";
import { StringDecoder } from "node:string_decoder";
import { accessOf, type Kube } from "./access.js";
import { clientStats } from "./ratelimit.js";
import { AnswerTooLargeError, MAX_ANSWER_BYTES, sendRequest, urlOf, watchRequestOptions } from "./transport.js";

/** One line of a watch stream: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, with its object. */
export interface WatchEvent {
  type: string;
  object: unknown;
}

/** What to watch and whom to tell. */
export interface WatchRequest {
  /** Collection path, e.g. `/apis/ipam.metal3.io/v1alpha1/namespaces/ns/ipclaims`. */
  path: string;
  /** Query parameters besides `watch=true`; undefined values are left out. */
  query: Record<string, string | number | boolean | undefined>;
  /** Aborting rejects the pending promise with an AbortError, at any stage (connect, headers, stream). */
  signal: AbortSignal;
  /** Called once when the server answered 200 and the stream begins. */
  onConnected?: () => void;
  /** Called for every complete line; lines that are not JSON are skipped. */
  onEvent: (event: WatchEvent) => void;
}

/** Longest error body read from a non-200 answer. */
const MAX_ERROR_BODY = 64 * 1024;

/**
 * Streams one watch. Resolves when the server ends the stream cleanly (its timeout); rejects on network errors, on
 * abort, on a stream cut short, on a line longer than the transport's answer bound (AnswerTooLargeError: one event
 * is one object, which the API server bounds far below it), and on a non-200 answer with an Error whose `code` is
 * the HTTP status and whose message is the Status message the server sent.
 */
export async function streamWatch(kube: Kube, req: WatchRequest): Promise<void> {
  const access = accessOf(kube);
  const url = urlOf(access, req.path, { ...req.query, watch: true });
  // The credentials of every other request, on a connection of its own: the watch holds it until it ends.
  const options = await watchRequestOptions(access, url, req.signal);
  return await new Promise<void>((resolve, reject) => {
    const request = sendRequest(url, options, (res) => {
      if (res.statusCode !== 200) {
        readErrorBody(res).then(reject, reject);
        return;
      }
      req.onConnected?.();
      consume(res, req.onEvent, resolve, reject);
    });
    request.on("error", reject);
    request.end();
  });
}

/** Splits the body into lines and hands each parsed line on; settles when the body ends or breaks. */
function consume(
  res: IncomingMessage,
  onEvent: (event: WatchEvent) => void,
  resolve: () => void,
  reject: (err: Error) => void,
): void {
  // The text after the last newline, in pieces: an event larger than a chunk (a pool status of 10,000 claims comes in
  // about twenty) is joined once when its newline arrives, and each chunk is searched once. Appending to one string
  // and searching it whole on every chunk cost the square of the event's size.
  let partial: string[] = [];
  let partialLength = 0;
  let ended = false;
  // Bytes as they arrive (counted), text through a decoder that keeps a character split between chunks whole.
  const decoder = new StringDecoder("utf8");
  const take = (text: string): void => {
    let start = 0;
    for (let newline = text.indexOf("\n"); newline >= 0; newline = text.indexOf("\n", start)) {
      partial.push(text.slice(start, newline));
      const line = partial.join("").trim();
      partial = [];
      partialLength = 0;
      start = newline + 1;
      if (line) deliver(line, onEvent);
    }
    if (start < text.length) {
      partial.push(text.slice(start));
      partialLength += text.length - start;
    }
  };
  res.on("data", (chunk: Buffer) => {
    clientStats.watchBytesReceived += chunk.length;
    take(decoder.write(chunk));
    if (partialLength > MAX_ANSWER_BYTES) {
      partial = [];
      res.destroy(new AnswerTooLargeError("watch event", MAX_ANSWER_BYTES));
    }
  });
  res.on("end", () => {
    ended = true;
    take(decoder.end());
    const rest = partial.join("").trim();
    if (rest) deliver(rest, onEvent);
    resolve();
  });
  res.on("error", reject);
  // A connection reset mid-stream may close the response without 'end' (and without 'error' on some versions).
  res.on("close", () => {
    if (!ended) reject(new Error("watch connection closed before the stream ended"));
  });
}

function deliver(line: string, onEvent: (event: WatchEvent) => void): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return;
  }
  if (typeof parsed !== "object" || parsed === null) return;
  const { type, object } = parsed as { type?: unknown; object?: unknown };
  if (typeof type === "string") onEvent({ type, object });
}

/** The Error for a non-200 answer: the Status message when the body is one, `code` set to the HTTP status. */
async function readErrorBody(res: IncomingMessage): Promise<Error> {
  let body = "";
  res.setEncoding("utf8");
  for await (const chunk of res) {
    if (body.length < MAX_ERROR_BODY) body += String(chunk);
  }
  let message = `watch answered HTTP ${res.statusCode ?? 0}`;
  try {
    const status = JSON.parse(body) as { message?: unknown };
    if (typeof status.message === "string") message = status.message;
  } catch {
    // not a Status: keep the generic message
  }
  return Object.assign(new Error(message), { code: res.statusCode ?? 0 });
}
