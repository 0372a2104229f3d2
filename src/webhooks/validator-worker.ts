/**
 * The validation worker thread (offload.ts). Answers each job `{ id, name, input }` with `{ id, output }`, or
 * `{ id, error }` when the job throws, running the pure jobs of jobs.ts. Answers each review `{ id, review }` (a raw
 * body and its path) with `{ id, output }`, the review's answer, as the request's thread would answer it: the same
 * routes, with every job run here and every cluster read asked of the request's thread (`{ id, call, method, args }`,
 * answered by `{ id, call, result }` or `{ id, call, error }`); log records go there too (`{ log }`).
 */
import { parentPort } from "node:worker_threads";
import type { Logger } from "../runtime/logger.js";
import { REVIEWS } from "./conversion.js";
import { ROUTES } from "./handlers.js";
import { answerInThread } from "./http.js";
import { JOBS } from "./jobs.js";
import type { ClusterLookup } from "./lookup.js";
import { inlineValidator } from "./offload.js";
import type { FromWorker, ToWorker } from "./offload.js";

const port = parentPort;
/** Lookup calls waiting for the request's thread, by call number. */
const calls = new Map<number, { resolve: (result: unknown) => void; reject: (err: Error) => void }>();
let nextCall = 0;

function send(message: FromWorker): void {
  port?.postMessage(message);
}

/** The cluster reads of review `id`, each asked of the request's thread. */
function lookupOf(id: number): ClusterLookup {
  const ask =
    (method: keyof ClusterLookup) =>
    (...args: unknown[]): Promise<never> =>
      new Promise((resolve, reject) => {
        const call = nextCall++;
        calls.set(call, { resolve: resolve as (result: unknown) => void, reject });
        send({ id, call, method, args });
      });
  return {
    poolsInNamespace: ask("poolsInNamespace"),
    addressesOfPool: ask("addressesOfPool"),
    inClusterPoolAddresses: ask("inClusterPoolAddresses"),
    inClusterPoolUid: ask("inClusterPoolUid"),
  };
}

/** What the handlers log, written by the request thread's logger. */
const logger = Object.fromEntries(
  (["debug", "info", "warn", "error"] as const).map((level) => [
    level,
    (message: string, fields: Record<string, unknown> = {}) => {
      try {
        send({ log: { level, message, fields } });
      } catch {
        // A field that cannot cross threads: the record without its fields.
        send({ log: { level, message, fields: {} } });
      }
    },
  ]),
) as unknown as Logger;

async function answerReview(id: number, path: string, body: Uint8Array): Promise<void> {
  const raw = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const ctx = { lookup: lookupOf(id), logger, validator: inlineValidator };
  send({ id, output: await answerInThread(path, raw, ROUTES, REVIEWS, ctx) });
}

port?.on("message", (message: ToWorker) => {
  if ("call" in message) {
    const waiting = calls.get(message.call);
    calls.delete(message.call);
    if (message.error === undefined) waiting?.resolve(message.result);
    else waiting?.reject(new Error(message.error));
    return;
  }
  const { id } = message;
  try {
    if ("review" in message) {
      answerReview(id, message.review.path, message.review.body).catch((err: unknown) =>
        send({ id, error: err instanceof Error ? err.message : String(err) }),
      );
      return;
    }
    send({ id, output: JOBS[message.name](message.input as never) });
  } catch (err) {
    send({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
