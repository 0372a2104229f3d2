/**
 * The validation worker thread (offload.ts): answers each `{ id, name, input }` with `{ id, output }`, or
 * `{ id, error }` when the job throws. Runs the pure jobs of jobs.ts and nothing else.
 */
import { parentPort } from "node:worker_threads";
import { JOBS } from "./jobs.js";
import type { JobName } from "./jobs.js";

parentPort?.on("message", ({ id, name, input }: { id: number; name: JobName; input: never }) => {
  try {
    parentPort?.postMessage({ id, output: JOBS[name](input) });
  } catch (err) {
    parentPort?.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
