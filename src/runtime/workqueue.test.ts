import { expect } from "chai";
import { setImmediate as nextMacrotask } from "node:timers/promises";
import { exponentialBackoffMs } from "./backoff.js";
import type { Cancel, Clock, ReconcileResult } from "./workqueue.js";
import { WAITING_STREAK, WorkQueue } from "./workqueue.js";

/** A clock whose timers fire only when the test advances time, in due order. */
class FakeClock implements Clock {
  #now = 0;
  #seq = 0;
  #timers: Array<{ dueAt: number; seq: number; callback: () => void }> = [];

  now(): number {
    return this.#now;
  }

  schedule(callback: () => void, delayMs: number): Cancel {
    const timer = { dueAt: this.#now + delayMs, seq: this.#seq++, callback };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  pending(): number {
    return this.#timers.length;
  }

  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.dueAt <= until).sort((a, b) => a.dueAt - b.dueAt || a.seq - b.seq)[0];
      if (due === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.dueAt;
      due.callback();
    }
    this.#now = until;
  }
}

/** Lets every pending microtask and promise chain run. */
async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await nextMacrotask();
}

/** A handler whose runs block until the test releases them, recording starts in order. */
class GatedHandler {
  readonly started: string[] = [];
  readonly #gates: Array<{ key: string; release: (result: ReconcileResult | Error) => void }> = [];

  readonly handle = (key: string): Promise<ReconcileResult> => {
    this.started.push(key);
    return new Promise((resolve, reject) => {
      this.#gates.push({ key, release: (r) => (r instanceof Error ? reject(r) : resolve(r)) });
    });
  };

  /** Releases the oldest blocked run of `key` (or the oldest overall) with a result or an error. */
  release(key?: string, result: ReconcileResult | Error = undefined): void {
    const index = this.#gates.findIndex((g) => key === undefined || g.key === key);
    const gate = this.#gates.splice(index, 1)[0];
    if (index < 0 || gate === undefined) throw new Error(`no blocked run for ${key ?? "any key"}`);
    gate.release(result);
  }

  blocked(): number {
    return this.#gates.length;
  }
}

/** Deterministic PRNG (mulberry32) so a failing stress run can be replayed. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A short, randomly chosen kind of async pause: a microtask, a macrotask or a 1 ms timer. */
async function randomPause(random: () => number): Promise<void> {
  const r = random();
  if (r < 0.4) await Promise.resolve();
  else if (r < 0.8) await nextMacrotask();
  else await new Promise((resolve) => setTimeout(resolve, 1));
}

describe("exponentialBackoffMs", () => {
  const table: Array<[failures: number, base: number, max: number, expected: number]> = [
    [0, 50, 30_000, 50],
    [1, 50, 30_000, 100],
    [3, 50, 30_000, 400],
    [10, 50, 30_000, 30_000],
    [5000, 50, 30_000, 30_000],
    [5000, 0, 0, 0],
    [2, 7, 20, 20],
  ];
  for (const [failures, base, max, expected] of table) {
    it(`failures=${failures} base=${base} max=${max} → ${expected}`, () => {
      expect(exponentialBackoffMs(failures, base, max)).to.equal(expected);
    });
  }

  it("rejects invalid input", () => {
    expect(() => exponentialBackoffMs(-1, 1, 2)).to.throw(RangeError);
    expect(() => exponentialBackoffMs(1.5, 1, 2)).to.throw(RangeError);
    expect(() => exponentialBackoffMs(0, -1, 2)).to.throw(RangeError);
    expect(() => exponentialBackoffMs(0, 10, 5)).to.throw(RangeError);
    expect(() => exponentialBackoffMs(0, 1, Number.POSITIVE_INFINITY)).to.throw(RangeError);
  });
});

describe("WorkQueue", () => {
  const queues: WorkQueue[] = [];
  function newQueue(...args: ConstructorParameters<typeof WorkQueue>): WorkQueue {
    const queue = new WorkQueue(...args);
    queues.push(queue);
    return queue;
  }
  afterEach(async () => {
    // Stop leftover queues without waiting on handlers a failed test may have left blocked.
    for (const queue of queues.splice(0)) void queue.shutdown();
    await flush();
  });

  /**
   * Runs a concurrency-1 queue over `adds` (key, waiting) until idle; returns the start order and how many keys were
   * queued before it started.
   */
  async function order(adds: Array<[string, boolean]>): Promise<{ started: string[]; queued: number }> {
    const started: string[] = [];
    const queue = newQueue(
      (key) => {
        started.push(key);
        return Promise.resolve();
      },
      { concurrency: 1 },
    );
    for (const [key, waiting] of adds) queue.add(key, waiting);
    const queued = queue.len();
    queue.start();
    await queue.onIdle();
    return { started, queued };
  }

  /**
   * Starts "a" on a concurrency-1 queue, makes `adds` (key, waiting) while it runs, then releases every run in turn;
   * returns the start order.
   */
  async function rerunOrder(adds: Array<[string, boolean]>): Promise<string[]> {
    const handler = new GatedHandler();
    const queue = newQueue(handler.handle, { concurrency: 1 });
    queue.start();
    queue.add("a");
    await flush();
    for (const [key, waiting] of adds) queue.add(key, waiting);
    while (handler.blocked() > 0) {
      handler.release();
      await flush();
    }
    return handler.started;
  }

  describe("options", () => {
    it("rejects a concurrency that is not a positive integer", () => {
      const handler = () => Promise.resolve();
      expect(() => new WorkQueue(handler, { concurrency: 0 })).to.throw(RangeError);
      expect(() => new WorkQueue(handler, { concurrency: 1.5 })).to.throw(RangeError);
      expect(() => new WorkQueue(handler, { concurrency: Number.NaN })).to.throw(RangeError);
    });

    it("rejects invalid backoff bounds", () => {
      const handler = () => Promise.resolve();
      expect(() => new WorkQueue(handler, { concurrency: 1, baseBackoffMs: -1 })).to.throw(RangeError);
      expect(() => new WorkQueue(handler, { concurrency: 1, baseBackoffMs: 10, maxBackoffMs: 5 })).to.throw(RangeError);
    });

    it("rejects a non-finite addAfter delay", () => {
      const queue = newQueue(() => Promise.resolve(), { concurrency: 1 });
      expect(() => queue.addAfter("a", Number.NaN)).to.throw(RangeError);
      expect(() => queue.addAfter("a", Number.POSITIVE_INFINITY)).to.throw(RangeError);
    });
  });

  describe("stress: random adds against async handlers", () => {
    for (const seed of [1, 2, 3]) {
      it(`never runs a key twice at once, respects concurrency and loses no add (seed ${seed})`, async () => {
        const random = seededRandom(seed);
        const keys = ["a", "b", "c", "d", "e", "f"];
        const active = new Map<string, number>();
        let maxPerKey = 0;
        let total = 0;
        let maxTotal = 0;
        let tick = 0;
        const lastAdd = new Map<string, number>();
        const lastStart = new Map<string, number>();

        const queue = newQueue(
          async (key) => {
            lastStart.set(key, ++tick);
            active.set(key, (active.get(key) ?? 0) + 1);
            total++;
            maxPerKey = Math.max(maxPerKey, active.get(key) ?? 0);
            maxTotal = Math.max(maxTotal, total);
            await randomPause(random);
            if (random() < 0.5) {
              const other = keys[Math.floor(random() * keys.length)]!;
              lastAdd.set(other, ++tick);
              queue.add(other, random() < 0.3);
            }
            await randomPause(random);
            active.set(key, (active.get(key) ?? 0) - 1);
            total--;
          },
          { concurrency: 3 },
        );
        queue.start();

        for (let round = 0; round < 60; round++) {
          const burst = 1 + Math.floor(random() * 8);
          for (let i = 0; i < burst; i++) {
            const key = keys[Math.floor(random() * keys.length)]!;
            lastAdd.set(key, ++tick);
            queue.add(key, random() < 0.3);
          }
          await randomPause(random);
        }
        await queue.onIdle();

        expect(maxPerKey, "max concurrent runs of one key").to.equal(1);
        expect(maxTotal, "max concurrent runs overall").to.be.at.most(3).and.at.least(2);
        for (const [key, addedAt] of lastAdd) {
          // Level-triggered guarantee: every add is followed by a run that started after it.
          expect(lastStart.get(key), `last run of ${key}`).to.be.greaterThan(addedAt);
        }
      });
    }
  });

  describe("de-duplication and re-runs", () => {
    it("keeps one entry per queued key and runs them in FIFO order", async () => {
      const { started, queued } = await order(["a", "b", "a", "c", "b", "a"].map((key) => [key, false]));
      expect(queued).to.equal(3);
      expect(started).to.deep.equal(["a", "b", "c"]);
    });

    it("runs a key added while in flight exactly once more, after the current run", async () => {
      const handler = new GatedHandler();
      const queue = newQueue(handler.handle, { concurrency: 4 });
      queue.start();
      queue.add("a");
      await flush();
      expect(handler.started).to.deep.equal(["a"]);

      for (let i = 0; i < 5; i++) queue.add("a");
      await flush();
      expect(handler.started, "no second concurrent run").to.deep.equal(["a"]);
      expect(queue.len(), "a dirty key is not queued while in flight").to.equal(0);
      expect(queue.inFlight()).to.equal(1);

      handler.release("a");
      await flush();
      expect(handler.started).to.deep.equal(["a", "a"]);

      handler.release("a");
      await queue.onIdle();
      expect(handler.started, "no third run without a new add").to.deep.equal(["a", "a"]);
    });

    it("puts a re-run behind keys that waited meanwhile", async () => {
      const started = await rerunOrder([
        ["b", false],
        ["c", false],
        ["a", false],
      ]);
      expect(started).to.deep.equal(["a", "b", "c", "a"]);
    });

    it("re-runs a dirty key even when its run failed", async () => {
      const clock = new FakeClock();
      const handler = new GatedHandler();
      const queue = newQueue(handler.handle, { concurrency: 1, clock });
      queue.start();
      queue.add("a");
      await flush();
      queue.add("a");
      handler.release("a", new Error("boom"));
      await flush();
      expect(handler.started).to.deep.equal(["a", "a"]);
    });
  });

  describe("keys someone waits on", () => {
    it("start before keys queued earlier, in their own add order", async () => {
      const { started } = await order([
        ["a", false],
        ["b", false],
        ["w1", true],
        ["c", false],
        ["w2", true],
      ]);
      expect(started).to.deep.equal(["w1", "w2", "a", "b", "c"]);
    });

    it("move a key already queued ahead of the others, once", async () => {
      const { started } = await order([
        ["a", false],
        ["b", false],
        ["c", false],
        ["c", true],
        ["c", false],
        ["b", true],
      ]);
      expect(started).to.deep.equal(["c", "b", "a"]);
    });

    it(`let one other key start after every ${WAITING_STREAK} of theirs in a row`, async () => {
      const waited = Array.from({ length: 2 * WAITING_STREAK + 3 }, (_, i) => `w${i}`);
      const { started } = await order([
        ["o1", false],
        ["o2", false],
        ["o3", false],
        ...waited.map((key): [string, boolean] => [key, true]),
      ]);
      expect(started).to.deep.equal([
        ...waited.slice(0, WAITING_STREAK),
        "o1",
        ...waited.slice(WAITING_STREAK, 2 * WAITING_STREAK),
        "o2",
        ...waited.slice(2 * WAITING_STREAK),
        "o3",
      ]);
    });

    it("re-run a key marked while in flight ahead of the others", async () => {
      const started = await rerunOrder([
        ["b", false],
        ["a", true],
        ["a", false],
      ]);
      expect(started).to.deep.equal(["a", "a", "b"]);
    });

    it("count in len() and the depth metric", () => {
      const depths: number[] = [];
      const queue = newQueue(() => Promise.resolve(), {
        concurrency: 1,
        onMetrics: { queued: (depth) => depths.push(depth), processed: () => undefined },
      });
      queue.add("a");
      queue.add("w", true);
      queue.add("a", true);
      expect(queue.len()).to.equal(2);
      // Nothing drains a queue before its start: the depth is reported from then on.
      expect(depths).to.deep.equal([]);
      queue.start();
      expect(depths[0]).to.equal(2);
    });
  });

  describe("concurrency", () => {
    it("runs at most `concurrency` keys at once and starts them in add order", async () => {
      const handler = new GatedHandler();
      const queue = newQueue(handler.handle, { concurrency: 3 });
      const keys = ["k0", "k1", "k2", "k3", "k4", "k5", "k6"];
      for (const key of keys) queue.add(key);
      queue.start();
      await flush();
      expect(handler.started).to.deep.equal(["k0", "k1", "k2"]);
      expect(queue.inFlight()).to.equal(3);
      expect(queue.len()).to.equal(4);

      handler.release("k1");
      await flush();
      expect(handler.started).to.deep.equal(["k0", "k1", "k2", "k3"]);
      expect(queue.inFlight()).to.equal(3);

      while (handler.blocked() > 0) {
        handler.release();
        await flush();
        expect(queue.inFlight()).to.be.at.most(3);
      }
      expect(handler.started).to.deep.equal(keys);
    });

    it("does not run anything before start()", async () => {
      const handler = new GatedHandler();
      const queue = newQueue(handler.handle, { concurrency: 2 });
      queue.add("a");
      await flush();
      expect(handler.started).to.deep.equal([]);
      queue.start();
      queue.start();
      await flush();
      expect(handler.started).to.deep.equal(["a"]);
    });
  });

  describe("failures and backoff", () => {
    it("retries with growing, capped backoff and resets after success", async () => {
      const clock = new FakeClock();
      const retries: Array<number | undefined> = [];
      let runs = 0;
      let failUntilRun = 5;
      const queue = newQueue(
        () => {
          runs++;
          return runs <= failUntilRun ? Promise.reject(new Error(`fail ${runs}`)) : Promise.resolve();
        },
        {
          concurrency: 1,
          clock,
          baseBackoffMs: 10,
          maxBackoffMs: 80,
          onError: (_k, _e, retryIn) => retries.push(retryIn),
        },
      );
      queue.start();
      queue.add("a");
      await flush();
      expect(runs).to.equal(1);

      for (const delay of [10, 20, 40, 80, 80]) {
        const before = runs;
        clock.advance(delay - 1);
        await flush();
        expect(runs, "no retry before the backoff elapses").to.equal(before);
        clock.advance(1);
        await flush();
        expect(runs, "retried once the backoff elapsed").to.equal(before + 1);
      }
      expect(retries).to.deep.equal([10, 20, 40, 80, 80]);
      expect(queue.numRequeues("a")).to.equal(0);
      expect(clock.pending(), "no retry after success").to.equal(0);

      failUntilRun = runs + 1;
      queue.add("a");
      await flush();
      expect(retries.at(-1), "backoff restarts from the base").to.equal(10);
      expect(queue.numRequeues("a")).to.equal(1);
    });

    it("counts failures per key", async () => {
      const clock = new FakeClock();
      const queue = newQueue((key) => (key === "bad" ? Promise.reject(new Error("no")) : Promise.resolve()), {
        concurrency: 2,
        clock,
      });
      queue.start();
      queue.add("bad");
      queue.add("good");
      await flush();
      clock.advance(50);
      await flush();
      expect(queue.numRequeues("bad")).to.equal(2);
      expect(queue.numRequeues("good")).to.equal(0);
    });

    it("treats a synchronous throw like a rejection", async () => {
      const clock = new FakeClock();
      const errors: unknown[] = [];
      const queue = newQueue(
        () => {
          throw new Error("sync");
        },
        { concurrency: 1, clock, onError: (_key, error) => errors.push(error) },
      );
      queue.start();
      queue.add("a");
      await queue.onIdle();
      expect(errors).to.have.length(1);
      expect(clock.pending()).to.equal(1);
    });

    it("treats a non-finite requeueAfterMs as a failure", async () => {
      const clock = new FakeClock();
      const errors: unknown[] = [];
      const queue = newQueue(() => Promise.resolve({ requeueAfterMs: Number.NaN }), {
        concurrency: 1,
        clock,
        onError: (_key, error) => errors.push(error),
      });
      queue.start();
      queue.add("a");
      await queue.onIdle();
      expect(errors[0]).to.be.instanceOf(RangeError);
      expect(queue.numRequeues("a")).to.equal(1);
    });

    it("survives hooks that throw", async () => {
      const clock = new FakeClock();
      let runs = 0;
      const queue = newQueue(
        () => {
          runs++;
          return runs === 1 ? Promise.reject(new Error("first")) : Promise.resolve();
        },
        {
          concurrency: 1,
          clock,
          onError: () => {
            throw new Error("bad onError");
          },
          onMetrics: {
            queued: () => {
              throw new Error("bad queued");
            },
            processed: () => {
              throw new Error("bad processed");
            },
          },
        },
      );
      queue.start();
      queue.add("a");
      await queue.onIdle();
      clock.advance(50);
      await queue.onIdle();
      expect(runs).to.equal(2);
      expect(queue.inFlight()).to.equal(0);
    });
  });

  describe("delayed adds", () => {
    it("coalesces delayed adds of one key to the earliest", async () => {
      const clock = new FakeClock();
      let runs = 0;
      const queue = newQueue(
        () => {
          runs++;
          return Promise.resolve();
        },
        { concurrency: 1, clock },
      );
      queue.start();
      queue.addAfter("a", 100);
      queue.addAfter("a", 50);
      queue.addAfter("a", 200);
      expect(clock.pending()).to.equal(1);
      clock.advance(49);
      await flush();
      expect(runs).to.equal(0);
      clock.advance(1);
      await flush();
      expect(runs).to.equal(1);
      clock.advance(1000);
      await flush();
      expect(runs).to.equal(1);
    });

    it("adds immediately for a zero or negative delay", () => {
      const clock = new FakeClock();
      const queue = newQueue(() => Promise.resolve(), { concurrency: 1, clock });
      queue.addAfter("a", 0);
      queue.addAfter("b", -5);
      expect(queue.len()).to.equal(2);
      expect(clock.pending()).to.equal(0);
    });

    it("honours requeueAfterMs and forgets failures on success", async () => {
      const clock = new FakeClock();
      let runs = 0;
      const queue = newQueue(
        () => {
          runs++;
          if (runs === 1) return Promise.reject(new Error("transient"));
          return Promise.resolve(runs === 2 ? { requeueAfterMs: 500 } : undefined);
        },
        { concurrency: 1, clock },
      );
      queue.start();
      queue.add("a");
      await flush();
      expect(queue.numRequeues("a")).to.equal(1);
      clock.advance(50);
      await flush();
      expect(runs).to.equal(2);
      expect(queue.numRequeues("a")).to.equal(0);
      clock.advance(499);
      await flush();
      expect(runs).to.equal(2);
      clock.advance(1);
      await flush();
      expect(runs).to.equal(3);
      expect(clock.pending()).to.equal(0);
    });
  });

  describe("shutdown", () => {
    it("waits for in-flight handlers, drops queued, dirty, delayed and later adds", async () => {
      const clock = new FakeClock();
      const handler = new GatedHandler();
      const signals: AbortSignal[] = [];
      const queue = newQueue(
        (key, signal) => {
          signals.push(signal);
          return handler.handle(key);
        },
        { concurrency: 1, clock },
      );
      queue.start();
      queue.add("a");
      queue.add("b");
      queue.addAfter("c", 10);
      await flush();
      queue.add("a");

      let done = false;
      const drained = queue.shutdown().then(() => {
        done = true;
      });
      expect(queue.shutdown(), "idempotent").to.equal(queue.shutdown());
      expect(signals[0]?.aborted, "handlers are told to stop").to.equal(true);
      expect(queue.len()).to.equal(0);
      expect(clock.pending()).to.equal(0);

      queue.add("d");
      queue.addAfter("e", 5);
      await flush();
      expect(done, "waits for the in-flight run").to.equal(false);
      expect(queue.len()).to.equal(0);

      handler.release("a");
      await drained;
      clock.advance(1000);
      await flush();
      expect(handler.started).to.deep.equal(["a"]);
      expect(queue.inFlight()).to.equal(0);
      expect(() => queue.start()).to.throw(Error);
    });

    it("reports failures during shutdown without scheduling a retry", async () => {
      const clock = new FakeClock();
      const handler = new GatedHandler();
      const retries: Array<number | undefined> = [];
      const queue = newQueue(handler.handle, {
        concurrency: 1,
        clock,
        onError: (_key, _error, retryIn) => retries.push(retryIn),
      });
      queue.start();
      queue.add("a");
      await flush();
      const drained = queue.shutdown();
      handler.release("a", new Error("interrupted"));
      await drained;
      expect(retries).to.deep.equal([undefined]);
      expect(clock.pending()).to.equal(0);
    });

    it("resolves at once when nothing is in flight", async () => {
      const queue = newQueue(() => Promise.resolve(), { concurrency: 1 });
      queue.add("never-started");
      await queue.shutdown();
      expect(queue.len()).to.equal(0);
    });
  });

  describe("onIdle", () => {
    it("resolves at once on an empty queue", async () => {
      const queue = newQueue(() => Promise.resolve(), { concurrency: 1 });
      await queue.onIdle();
    });

    it("waits for queued work and re-runs, but not for delayed adds", async () => {
      const clock = new FakeClock();
      const handler = new GatedHandler();
      const queue = newQueue(handler.handle, { concurrency: 2, clock });
      queue.start();
      queue.add("a");
      queue.add("b");
      queue.add("c");
      let idle = false;
      const waiting = queue.onIdle().then(() => {
        idle = true;
      });
      await flush();
      queue.add("a");
      handler.release("a", { requeueAfterMs: 1000 });
      handler.release("b");
      await flush();
      expect(idle).to.equal(false);
      handler.release("c");
      await flush();
      expect(idle, "the dirty re-run of a is still in flight").to.equal(false);
      handler.release("a");
      await waiting;
      expect(clock.pending(), "delayed add still pending while idle").to.equal(1);
      expect(handler.started).to.deep.equal(["a", "b", "c", "a"]);
    });
  });

  describe("metrics", () => {
    it("reports queue depth and every processed run", async () => {
      const clock = new FakeClock();
      const depths: number[] = [];
      const processed: Array<[string, number, boolean]> = [];
      const handler = new GatedHandler();
      const queue = newQueue(handler.handle, {
        concurrency: 1,
        clock,
        onMetrics: {
          queued: (depth) => depths.push(depth),
          processed: (key, waitMs, _workMs, ok) => processed.push([key, waitMs, ok]),
        },
      });
      queue.add("a");
      queue.add("b");
      // A key queued before the start waits from the start (a standby's queue fills long before it leads).
      clock.advance(7);
      queue.start();
      await flush();
      clock.advance(3);
      queue.add("c");
      clock.advance(2);
      handler.release("a", new Error("x"));
      await flush();
      handler.release("b");
      await flush();
      handler.release("c");
      await flush();
      expect(depths).to.deep.equal([2, 1, 2, 1, 0]);
      expect(processed).to.deep.equal([
        ["a", 0, false],
        ["b", 5, true],
        ["c", 2, true],
      ]);
    });
  });
});
