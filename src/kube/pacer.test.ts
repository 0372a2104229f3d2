import { expect } from "chai";
import { BUDGET_MS, isAhead, ListPacer, namespacePrefixOf, STALL_MS } from "./pacer.js";

/** Timers a test moves by hand. */
class ManualTimers {
  private clock = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  private next = 0;
  now = (): number => this.clock;
  setTimeout = (fn: () => void, ms: number): unknown => {
    const id = this.next++;
    this.due.set(id, { at: this.clock + ms, fn });
    return id;
  };
  clearTimeout = (timer: unknown): void => {
    this.due.delete(timer as number);
  };
  /** Moves the clock by `ms`, firing what came due. */
  async advance(ms: number): Promise<void> {
    this.clock += ms;
    for (const [id, t] of [...this.due]) {
      if (t.at > this.clock) continue;
      this.due.delete(id);
      t.fn();
    }
    await settle();
  }
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** Whether `p` has settled by now. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await settle();
  return done;
}

describe("ListPacer", () => {
  it("compares namespaces in the order the API server lists keys", () => {
    // "a-b/x" sorts before "a/x" ('-' before '/'), although the namespace "a" sorts before "a-b".
    expect(namespacePrefixOf("a-b/x")).to.equal("a-b/");
    expect(isAhead(namespacePrefixOf("a/x"), [namespacePrefixOf("a-b/y")], ["a-b/"])).to.equal(true);
    expect(isAhead(namespacePrefixOf("a-b/y"), [namespacePrefixOf("a/x")], ["a/"])).to.equal(false);
  });

  it("holds a list only past a waited-on namespace another list has not gone past", () => {
    expect(isAhead("ns2/", ["ns1/"], ["ns1/"]), "past it, another in it").to.equal(true);
    expect(isAhead("ns3/", [""], ["ns2/"]), "past it, another not started").to.equal(true);
    expect(isAhead("ns2/", ["ns1/"], []), "nobody waits").to.equal(false);
    expect(isAhead("ns2/", ["ns1/"], ["ns3/"]), "short of the waited one itself").to.equal(false);
    expect(isAhead("ns2/", ["ns1/"], ["ns2/"]), "in the waited one, not past it").to.equal(false);
    expect(isAhead("ns3/", ["ns2/", "ns4/"], ["ns1/"]), "every other list past it too").to.equal(false);
    expect(isAhead("ns1/", [], ["ns0/"]), "alone").to.equal(false);
  });

  it("holds a list past a waited-on namespace until the others went past it", async () => {
    const timers = new ManualTimers();
    const pacer = new ListPacer(timers);
    const [fast, slow] = [{}, {}];
    pacer.join(fast);
    pacer.join(slow);
    pacer.waitOn("ns2");
    pacer.reached(fast, "ns3/a");
    pacer.reached(slow, "ns1/a");
    const turn = pacer.turn(fast);
    expect(await settled(turn)).to.equal(false);
    pacer.reached(slow, "ns2/a");
    expect(await settled(turn), "in it, not past it").to.equal(false);
    await timers.advance(1_000);
    pacer.reached(slow, "ns3/b");
    expect(await settled(turn)).to.equal(true);
    // The list behind is never held.
    pacer.reached(fast, "ns5/a");
    expect(await settled(pacer.turn(slow))).to.equal(true);
  });

  it("lets lists run apart while nobody waits, and holds them once a claim waits", async () => {
    const pacer = new ListPacer(new ManualTimers());
    const [fast, slow] = [{}, {}];
    pacer.join(fast);
    pacer.join(slow);
    pacer.reached(fast, "ns5/a");
    expect(await settled(pacer.turn(fast))).to.equal(true);
    pacer.waitOn("ns3");
    const turn = pacer.turn(fast);
    expect(await settled(turn)).to.equal(false);
    pacer.reached(slow, "ns4/a");
    expect(await settled(turn)).to.equal(true);
  });

  it("holds a list past a waited-on namespace while a list that joined has no page yet", async () => {
    const pacer = new ListPacer(new ManualTimers());
    const [early, late] = [{}, {}];
    pacer.join(early);
    pacer.waitOn("ns1");
    pacer.reached(early, "ns2/a");
    expect(await settled(pacer.turn(early))).to.equal(true);
    pacer.join(late);
    const turn = pacer.turn(early);
    expect(await settled(turn)).to.equal(false);
    pacer.reached(late, "ns2/z");
    expect(await settled(turn)).to.equal(true);
  });

  it("lets a list go when the one behind it leaves (done or failed)", async () => {
    const pacer = new ListPacer(new ManualTimers());
    const [fast, slow] = [{}, {}];
    pacer.join(fast);
    pacer.join(slow);
    pacer.waitOn("ns1");
    pacer.reached(fast, "ns2/a");
    const turn = pacer.turn(fast);
    expect(await settled(turn)).to.equal(false);
    pacer.leave(slow);
    expect(await settled(turn)).to.equal(true);
  });

  it("runs a list free once no list moved for the stall time", async () => {
    const timers = new ManualTimers();
    const pacer = new ListPacer(timers);
    const [fast, stuck] = [{}, {}];
    pacer.join(fast);
    pacer.join(stuck);
    pacer.waitOn("ns1");
    pacer.reached(fast, "ns2/a");
    const turn = pacer.turn(fast);
    await timers.advance(STALL_MS - 1);
    expect(await settled(turn)).to.equal(false);
    await timers.advance(1);
    expect(await settled(turn)).to.equal(true);
    // Free for the rest of its pages: it no longer waits, though it is still ahead.
    pacer.waitOn("ns2");
    pacer.reached(fast, "ns3/a");
    expect(await settled(pacer.turn(fast))).to.equal(true);
  });

  it("runs a list free once it waited its budget in total, however the others move", async () => {
    const timers = new ManualTimers();
    const pacer = new ListPacer(timers);
    const [fast, slow] = [{}, {}];
    pacer.join(fast);
    pacer.join(slow);
    pacer.waitOn("ns999999");
    pacer.reached(fast, "zz/a");
    const turn = pacer.turn(fast);
    // The list behind moves every second but never goes past the waited-on namespace.
    for (let waited = 0; waited < BUDGET_MS; waited += 1_000) {
      expect(await settled(turn), `free after ${waited} ms`).to.equal(false);
      await timers.advance(1_000);
      pacer.reached(slow, `ns${String(waited).padStart(6, "0")}/a`);
    }
    expect(await settled(turn)).to.equal(true);
    // Free for the rest of its pages.
    expect(await settled(pacer.turn(fast))).to.equal(true);
  });

  it("never holds a list that did not join, nor for a cluster-scoped pool", async () => {
    const pacer = new ListPacer(new ManualTimers());
    const [slow, other] = [{}, {}];
    pacer.join(slow);
    pacer.join(other);
    pacer.waitOn("");
    pacer.reached(other, "ns1/a");
    expect(await settled(pacer.turn({}))).to.equal(true);
    expect(await settled(pacer.turn(other))).to.equal(true);
  });
});
