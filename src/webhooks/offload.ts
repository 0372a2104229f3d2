/**
 * Where the pool webhooks' validation runs (jobs.ts): small jobs in the request's thread, large ones in one worker
 * thread, so the event loop that renews the leader's Lease and runs the reconcilers never waits for a large review
 * (spec §6: anyone who reaches the webhook port can send one). Bounded on every side:
 * - one worker, started on the first large job and stopped after a quiet minute (it costs memory only while used);
 * - at most `maxWaiting` jobs wait for it; more are refused at once;
 * - a job has a deadline: `budgetMs` from its arrival, or its review's deadline when that is sooner. A job that
 *   could not finish by then, going by the time per item of the jobs the worker ran, is refused at once, unless
 *   nothing is before it and at least half its budget is ahead (so the estimate keeps learning); a job still waiting at its deadline is refused then; and a running one is refused and its
 *   worker stopped mid-job (the next job starts a new one), so every review is answered before the API server's
 *   10 s timeout;
 * - the worker's heap is capped; a job that outgrows it is refused.
 * A refused job rejects with a message saying why; the handlers turn a rejection into a 500 denial (fail closed).
 *
 * Besides jobs, the worker answers whole large reviews ({@link WorkerValidator.review}): the raw body is moved to it,
 * not copied, and it parses, decodes and validates there, asking the request's thread only for the cluster reads
 * (`ClusterLookup` calls, answered over the same channel) and handing it its log records. The request's thread then
 * never holds a large body as objects: neither its parse, nor a copy of it, nor a comparison of two specs.
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { Logger } from "../runtime/logger.js";
import type { ReviewAnswer } from "./conversion.js";
import { JOBS, jobSize } from "./jobs.js";
import type { JobName, Jobs } from "./jobs.js";
import type { ClusterLookup } from "./lookup.js";

/** Runs validation jobs. */
export interface Validator {
  /** Runs a job; `deadline` (`performance.now()` ms), when given, is when its review must be answered. */
  run<K extends JobName>(name: K, input: Jobs[K]["input"], deadline?: number): Promise<Jobs[K]["output"]>;
  /**
   * Answers a whole review of `path` from its raw body, away from the caller's thread, reading the cluster through
   * `lookup`; absent where everything runs in the caller's thread. `body` is moved: the caller must not use it after.
   */
  review?(path: string, body: Buffer, lookup: ClusterLookup, deadline: number): Promise<ReviewAnswer>;
}

/** Bytes of a review's body per item it holds, about: what a review's time is estimated from. */
const BYTES_PER_ITEM = 16;

/** The lookups a review in the worker may ask for. */
const LOOKUP_METHODS: readonly string[] = [
  "poolsInNamespace",
  "addressesOfPool",
  "inClusterPoolAddresses",
  "inClusterPoolUid",
] satisfies (keyof ClusterLookup)[];

/** What the worker is sent. */
export type ToWorker =
  | { id: number; name: JobName; input: unknown }
  | { id: number; review: { path: string; body: Uint8Array } }
  | { id: number; call: number; result?: unknown; error?: string };

/** What the worker sends back: an answer, a lookup call of a review, or a log record. */
export type FromWorker =
  | { id: number; output?: unknown; error?: string }
  | { id: number; call: number; method: keyof ClusterLookup; args: unknown[] }
  | { log: { level: "debug" | "info" | "warn" | "error"; message: string; fields: Record<string, unknown> } };

/** Every job in the caller's thread (tests, tools, and small jobs of {@link WorkerValidator}). */
export const inlineValidator: Validator = {
  run: (name, input) => new Promise((resolve) => resolve(JOBS[name](input))),
};

/** Options of {@link WorkerValidator}; every one has a default. */
export interface WorkerValidatorOptions {
  /** Jobs of at most this many items run in the caller's thread: a few milliseconds at most. Default 1,000. */
  inlineItems?: number;
  /** Longest time from a job's arrival to its answer; default 7 s, under the API server's 10 s. */
  budgetMs?: number;
  /** Most jobs waiting while the worker is busy; default 8. */
  maxWaiting?: number;
  /** The worker stops after this long without a job; default 60 s. */
  idleMs?: number;
  /** Cap of the worker's old-generation heap, in MiB; default 512. */
  heapMiB?: number;
}

interface Pending {
  id: number;
  /** What it is called in logs. */
  name: string;
  message: ToWorker;
  /** Moved to the worker with the message (a review's body). */
  transfer: ArrayBuffer[];
  /** The lookups a review's calls go to. */
  lookup?: ClusterLookup;
  /** When it was handed to the validator, and when it must be answered (`performance.now()` ms). */
  arrivedAt: number;
  deadline: number;
  /** Items of the job (jobSize), what its time is estimated from. */
  size: number;
  /** When the worker began it. */
  startedAt?: number;
  /** Whether its worker was started for it: its time then counts the worker's start and says nothing of its items. */
  cold?: boolean;
  resolve: (output: unknown) => void;
  reject: (err: Error) => void;
  timer?: NodeJS.Timeout;
}

/** The worker's file beside this one, with this file's extension (`.js` when built, `.ts` under tsx). */
function workerFile(): URL {
  const ext = extname(fileURLToPath(import.meta.url));
  return new URL(`./validator-worker${ext}`, import.meta.url);
}

/** Small jobs in the caller's thread, large ones in one worker thread: see the top of this file. */
export class WorkerValidator implements Validator {
  private readonly inlineItems: number;
  private readonly budgetMs: number;
  private readonly maxWaiting: number;
  private readonly idleMs: number;
  private readonly heapMiB: number;
  private worker: Worker | undefined;
  private running: Pending | undefined;
  private readonly waiting: Pending[] = [];
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 0;
  private stopped = false;
  /** Time per item of the jobs a running worker finished, a moving average; 0 until one finished. */
  private msPerItem = 0;

  constructor(
    private readonly logger: Logger,
    options: WorkerValidatorOptions = {},
  ) {
    this.inlineItems = options.inlineItems ?? 1_000;
    this.budgetMs = options.budgetMs ?? 7_000;
    this.maxWaiting = options.maxWaiting ?? 8;
    this.idleMs = options.idleMs ?? 60_000;
    this.heapMiB = options.heapMiB ?? 512;
  }

  run<K extends JobName>(name: K, input: Jobs[K]["input"], deadline = Infinity): Promise<Jobs[K]["output"]> {
    const size = jobSize(name, input);
    if (size <= this.inlineItems) return inlineValidator.run(name, input);
    const message = (id: number): ToWorker => ({ id, name, input });
    return this.enqueue(name, size, deadline, message, []) as Promise<Jobs[K]["output"]>;
  }

  review(path: string, body: Buffer, lookup: ClusterLookup, deadline = Infinity): Promise<ReviewAnswer> {
    // A Buffer may share its memory with others (Node's pool of small buffers): only memory of its own is moved.
    const own = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : Buffer.from(body);
    const bytes = new Uint8Array(own.buffer as ArrayBuffer, 0, own.byteLength);
    const size = Math.ceil(bytes.byteLength / BYTES_PER_ITEM);
    const make = (id: number): ToWorker => ({ id, review: { path, body: bytes } });
    const transfer = [bytes.buffer];
    return this.enqueue(`review ${path}`, size, deadline, make, transfer, lookup) as Promise<ReviewAnswer>;
  }

  private enqueue(
    name: string,
    size: number,
    deadline: number,
    message: (id: number) => ToWorker,
    transfer: ArrayBuffer[],
    lookup?: ClusterLookup,
  ): Promise<unknown> {
    if (this.stopped) return Promise.reject(new Error("the webhook server is stopping"));
    if (this.waiting.length >= this.maxWaiting) {
      return Promise.reject(
        new Error(`too many large admission reviews are waiting (${this.maxWaiting}); retry later`),
      );
    }
    const now = performance.now();
    const due = Math.min(now + this.budgetMs, deadline);
    // A job that could not finish by its deadline is refused now: started, it would be stopped mid-job, its work
    // lost, and the worker restarted for the next. Only a job with nothing before it and at least half its budget
    // ahead (one that has not spent its time waiting for a turn) runs whatever the estimate: the estimate learns only
    // from jobs that run, so one slow moment cannot lock every review out.
    const backlog = this.backlogMs(now);
    const fresh = backlog === 0 && due - now >= this.budgetMs / 2;
    if (!fresh && now + backlog + size * this.msPerItem > due) {
      return Promise.reject(new Error("the validation worker cannot finish this review in time; retry later"));
    }
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const job: Pending = {
        id,
        name,
        message: message(id),
        transfer,
        ...(lookup ? { lookup } : {}),
        arrivedAt: now,
        deadline: due,
        size,
        resolve,
        reject,
      };
      // Refused at its deadline if still waiting then (next() takes it off the line first otherwise).
      job.timer = setTimeout(() => {
        const at = this.waiting.indexOf(job);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        job.reject(this.overBudget(job));
      }, due - now);
      this.waiting.push(job);
      this.next();
    });
  }

  /** Estimated time until the worker is free: the rest of the running job and every waiting one. */
  private backlogMs(now: number): number {
    const running = this.running;
    let ms = running ? Math.max(0, (running.startedAt ?? now) + running.size * this.msPerItem - now) : 0;
    for (const job of this.waiting) ms += job.size * this.msPerItem;
    return ms;
  }

  /** Whether a worker thread is running now (tests). */
  hasWorker(): boolean {
    return this.worker !== undefined;
  }

  /** Refuses every job not answered yet and stops the worker. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.idleTimer);
    for (const job of this.waiting.splice(0)) {
      clearTimeout(job.timer);
      job.reject(new Error("the webhook server is stopping"));
    }
    this.finish(this.running, new Error("the webhook server is stopping"));
    await this.kill();
  }

  private next(): void {
    if (this.running) return;
    const job = this.waiting.shift();
    if (!job) {
      this.idleTimer = setTimeout(() => void this.kill(), this.idleMs).unref();
      return;
    }
    clearTimeout(this.idleTimer);
    clearTimeout(job.timer);
    const now = performance.now();
    const left = job.deadline - now;
    if (left <= 0) {
      job.reject(this.overBudget(job));
      this.next();
      return;
    }
    this.running = job;
    job.startedAt = now;
    job.cold = this.worker === undefined;
    job.timer = setTimeout(() => {
      this.logger.warn("Admission validation over its time budget: its worker is stopped", { job: job.name });
      this.finish(job, this.overBudget(job));
      void this.kill().then(() => this.next());
    }, left);
    this.spawn().postMessage(job.message, job.transfer);
  }

  /**
   * The refusal of a job at its deadline. It names the time the job had from its arrival, which is less than the
   * budget when its review's own deadline came first.
   */
  private overBudget(job: Pending): Error {
    const seconds = Number(((job.deadline - job.arrivedAt) / 1000).toPrecision(2));
    return new Error(`the validation did not finish within ${seconds} s of its arrival, the time its review had left`);
  }

  /** Settles `job` if it is the running one; the next job may then start. */
  private finish(job: Pending | undefined, error: Error | undefined, output?: unknown): void {
    if (!job || this.running !== job) return;
    clearTimeout(job.timer);
    this.running = undefined;
    if (error) job.reject(error);
    else job.resolve(output);
  }

  private spawn(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(workerFile(), { resourceLimits: { maxOldGenerationSizeMb: this.heapMiB } });
    worker.unref();
    worker.on("message", (answer: FromWorker) => {
      if ("log" in answer) {
        this.logger[answer.log.level](answer.log.message, answer.log.fields);
        return;
      }
      if ("call" in answer) {
        this.lookupCall(worker, answer);
        return;
      }
      const job = this.running?.id === answer.id ? this.running : undefined;
      if (job?.startedAt !== undefined && !job.cold) {
        const perItem = (performance.now() - job.startedAt) / job.size;
        this.msPerItem = this.msPerItem === 0 ? perItem : (this.msPerItem + perItem) / 2;
      }
      this.finish(job, answer.error === undefined ? undefined : new Error(answer.error), answer.output);
      this.next();
    });
    // A worker stopped on purpose (kill) is no longer `this.worker`, and its job was settled before.
    worker.on("error", (err: Error) => {
      if (this.worker !== worker) return;
      this.logger.warn("Admission validation worker failed", { error: err });
      this.finish(this.running, new Error(`the validation failed: ${err.message}`));
    });
    worker.on("exit", () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.finish(this.running, new Error("the validation worker stopped"));
      if (!this.stopped) this.next();
    });
    this.worker = worker;
    return worker;
  }

  /**
   * Runs a lookup a review in the worker asked for and sends the worker the result. A call of a job that is no longer
   * running, or from a worker that was stopped, is not run.
   */
  private lookupCall(worker: Worker, call: Extract<FromWorker, { call: number }>): void {
    const job = this.running;
    if (this.worker !== worker || job?.id !== call.id || !job.lookup || !LOOKUP_METHODS.includes(call.method)) return;
    const lookup = job.lookup;
    const method = (...args: unknown[]): Promise<unknown> =>
      (lookup[call.method] as (...a: unknown[]) => Promise<unknown>).apply(lookup, args);
    const reply = (answer: { result?: unknown; error?: string }): void => {
      if (this.worker === worker && this.running === job)
        worker.postMessage({ id: call.id, call: call.call, ...answer });
    };
    method(...call.args).then(
      (result) => reply({ result }),
      (err: unknown) => reply({ error: err instanceof Error ? err.message : String(err) }),
    );
  }

  private async kill(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }
}
