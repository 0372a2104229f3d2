import { expect } from "chai";
import type { CapiIPAddress, IPAddressClaim } from "../../../api/capi/types.js";
import type { InClusterIPPool } from "../../../api/incluster/types.js";
import type { KubeObject } from "../../kube/resource.js";
import { planCapiClaim } from "../capi/plan.js";
import { INCLUSTER_POOL_KIND } from "../incluster/kind.js";
import { decideWithEngine, ENGINE_SEGMENT, segmentsOf, type ClaimStep } from "./external.js";
import type { ExternalAnswer, ExternalClaim, ExternalEngine, KindContext, PoolObject } from "./kind.js";
import { NONE, type PassOutcome } from "./outcome.js";
import type { ClaimApi, Pass } from "./pass.js";
import { DecisionSlicer } from "./slices.js";

/** Claims named `asks-*` want an address; the others (bound, say) do not. Pure: nothing is decided or written. */
const api = {
  externalClaim: (_pass: Pass, claim: KubeObject) => {
    const name = claim.metadata.name ?? "";
    return name.startsWith("asks-") ? { holder: name, claim, cluster: undefined } : undefined;
  },
} as unknown as ClaimApi;
const step = (name: string): ClaimStep => ({
  api,
  claim: { metadata: { name } },
  decide: () => () => Promise.resolve(NONE),
});
const names = (segment: { steps: ClaimStep[] }): string[] => segment.steps.map((s) => s.claim.metadata.name ?? "");

describe("a pass with an external engine (pure)", () => {
  it("cuts the claims in decision order into segments of at most `size` claims to ask for, others riding along", () => {
    const steps = ["bound-0", "asks-1", "asks-2", "bound-3", "asks-3", "asks-4", "bound-5"].map(step);
    const segments = segmentsOf({} as Pass, steps, 2);
    expect(segments.map(names)).to.deep.equal([
      ["bound-0", "asks-1", "asks-2", "bound-3"],
      ["asks-3", "asks-4", "bound-5"],
    ]);
    expect(segments.map((s) => s.asked.map((a) => a.holder))).to.deep.equal([
      ["asks-1", "asks-2"],
      ["asks-3", "asks-4"],
    ]);
    expect(segmentsOf({} as Pass, [], 2)).to.deep.equal([]);
    expect(segmentsOf({} as Pass, ["bound-0"].map(step), 2).map(names)).to.deep.equal([["bound-0"]]);
  });
});

/**
 * A pool served by an engine outside Kubernetes, in memory: the Cluster API claim lifecycle's real decisions
 * (planCapiClaim, so chooseAddress with the engine's answers) over claims and records kept in maps, driven through
 * decideWithEngine as the reconciler drives it. The engine is a fake whose answers each test scripts.
 */
const POOL: InClusterIPPool = {
  metadata: { name: "q", namespace: "ns", uid: "uid-q" },
  spec: { addresses: ["10.0.1.1-10.0.1.250"], prefix: 24 },
};
const KIND = INCLUSTER_POOL_KIND;

const capiClaim = (name: string): IPAddressClaim => ({
  metadata: { name, namespace: "ns", uid: `uid-${name}` },
  spec: { poolRef: { apiGroup: KIND.descriptor.group, kind: KIND.descriptor.kind, name: "q" } },
});

type Answers = Map<string, ExternalAnswer>;
const ok = (address: string): ExternalAnswer => ({ ok: true, address });
const DOWN: ExternalAnswer = { ok: false, reason: "AllocationFailed", message: "engine down" };

/** An engine whose calls are answered by `answer` (holders asked, call number); `retryMs` is its backoff. */
class FakeEngine implements ExternalEngine {
  readonly calls: string[][] = [];
  retryMs: number | undefined;
  constructor(private readonly answer: (holders: string[], call: number) => Promise<Answers> | Answers) {}
  async obtain(_pool: PoolObject, claims: readonly ExternalClaim[]): Promise<Answers> {
    const holders = claims.map((c) => c.holder);
    this.calls.push(holders);
    return await this.answer(holders, this.calls.length);
  }
  release = (): Promise<void> => Promise.resolve();
  retryAfterMs = (): number | undefined => this.retryMs;
  forget = (): void => undefined;
}

/** Every holder answered from `addresses` in order (an engine keeping its own count). */
const inOrder =
  (addresses: (n: number) => string) =>
  (holders: string[]): Answers =>
    new Map(holders.map((h, i) => [h, ok(addresses(i))]));

class World {
  readonly claims: IPAddressClaim[];
  /** Records by claim name (a claim may end up with two only if the pass is wrong). */
  readonly records = new Map<string, CapiIPAddress[]>();
  /** The claim's Ready condition as the last write left it. */
  readonly conditions = new Map<string, string>();
  decisions = 0;
  /** Writes wait for this (a slow API server). */
  gate: Promise<void> = Promise.resolve();

  constructor(count: number) {
    this.claims = Array.from({ length: count }, (_, i) => capiClaim(`c${String(i).padStart(3, "0")}`));
  }

  /** The claim API of this world: the pass asks the engine for claims with no record yet. */
  readonly api = {
    externalClaim: (_pass: Pass, claim: KubeObject): ExternalClaim | undefined =>
      this.recordsOf(claim).length > 0 ? undefined : { holder: claim.metadata.name ?? "", claim, cluster: undefined },
  } as unknown as ClaimApi;

  recordsOf(claim: KubeObject): CapiIPAddress[] {
    return this.records.get(claim.metadata.name ?? "") ?? [];
  }

  /** Each claim's addresses, for the invariants. */
  addresses(): Record<string, string[]> {
    return Object.fromEntries([...this.records].map(([name, list]) => [name, list.map((r) => r.spec.address)]));
  }

  /** One pass over the pool, as the reconciler runs it with an engine: resolves when every write is done. */
  async pass(engine: ExternalEngine): Promise<void> {
    const allocator = await KIND.openAllocator(POOL, {} as KindContext);
    for (const [name, list] of this.records)
      for (const r of list)
        allocator.reserve(r.spec.address, { kind: "claim", claimName: name, claimKind: "IPAddressClaim" });
    const all = [...this.records.values()].flat();
    const pass = {
      ctx: { allocator, now: new Date(0) },
      kind: KIND,
      pool: POOL,
      onCollision: () => undefined,
      heldByAnother: (r: CapiIPAddress) => all.some((o) => o !== r && o.spec.address === r.spec.address),
    } as unknown as Pass;
    const steps = this.claims.map((claim): ClaimStep => ({
      api: this.api,
      claim,
      decide: () => this.decide(pass, claim),
    }));
    // A clock that never moves: decisions never pause, so nothing here depends on the machine's speed.
    await decideWithEngine(pass, POOL, engine, steps, {} as KindContext, 4, new DecisionSlicer(10, () => 0));
  }

  private decide(pass: Pass, claim: IPAddressClaim): () => Promise<PassOutcome> {
    this.decisions++;
    const action = planCapiClaim({
      claim,
      kind: KIND,
      pool: POOL,
      claimAddresses: this.recordsOf(claim),
      pause: { paused: false },
      allocator: pass.ctx.allocator,
      movedAway: false,
      addressNamed: () => undefined,
      onCollision: () => undefined,
      addressApiVersion: "ipam.cluster.x-k8s.io/v1beta2",
      heldByAnother: pass.heldByAnother,
      now: pass.ctx.now,
      ...(pass.external ? { external: pass.external } : {}),
    });
    const name = claim.metadata.name ?? "";
    return async () => {
      await this.gate;
      if (action.kind === "create") this.records.set(name, [...this.recordsOf(claim), action.address]);
      if (action.kind === "fail") this.conditions.set(name, `${action.reason}: ${action.message}`);
      if (action.kind === "create" || action.kind === "bind") this.conditions.set(name, "Ready");
      return NONE;
    };
  }

  /** No address is held by two claims, and no claim holds two records. */
  assertSound(): void {
    const held = Object.values(this.addresses()).flat();
    expect(new Set(held).size, "an address bound to two claims").to.equal(held.length);
    for (const [name, list] of this.records) expect(list, `records of ${name}`).to.have.length(1);
  }
}

const address = (i: number): string => `10.0.1.${i + 1}`;

/** One turn of the event loop. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Turns the event loop until `done` (a bounded number of turns: a pass that never gets there fails the test). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !done(); i++) await turn();
  expect(done(), "the pass did not get there").to.equal(true);
}

describe("a pass with an external engine (in memory, fake engine)", () => {
  it("decides nothing until the engine answers, then binds every claim to the engine's address", async () => {
    const world = new World(3);
    let answer!: (a: Answers) => void;
    const engine = new FakeEngine(() => new Promise<Answers>((resolve) => (answer = resolve)));
    const pass = world.pass(engine);
    await until(() => engine.calls.length === 1);
    for (let i = 0; i < 3; i++) await turn();
    expect([world.decisions, world.records.size]).to.deep.equal([0, 0]);
    answer(new Map(["c000", "c001", "c002"].map((h, i) => [h, ok(address(10 + i))])));
    await pass;
    expect(world.addresses()).to.deep.equal({ c000: ["10.0.1.11"], c001: ["10.0.1.12"], c002: ["10.0.1.13"] });
    world.assertSound();
  });

  it("asks the engine for the next segment while the first segment's writes still run", async () => {
    const world = new World(ENGINE_SEGMENT + 1);
    let open!: () => void;
    world.gate = new Promise<void>((resolve) => (open = resolve));
    let second!: (a: Answers) => void;
    const engine = new FakeEngine((holders, call) =>
      call === 1 ? inOrder(address)(holders) : new Promise<Answers>((resolve) => (second = resolve)),
    );
    const pass = world.pass(engine);
    await until(() => engine.calls.length === 2);
    expect([engine.calls.map((c) => c.length), world.decisions, world.records.size]).to.deep.equal([
      [ENGINE_SEGMENT, 1],
      ENGINE_SEGMENT,
      0,
    ]);
    open();
    await until(() => world.records.size === ENGINE_SEGMENT);
    expect(world.decisions).to.equal(ENGINE_SEGMENT);
    second(new Map([["c050", ok("10.0.1.200")]]));
    await pass;
    expect(world.addresses()["c050"]).to.deep.equal(["10.0.1.200"]);
    world.assertSound();
  });

  it("a pass whose claims are all bound asks the engine nothing and still decides (binds) each claim", async () => {
    const world = new World(2);
    await world.pass(new FakeEngine(inOrder(address)));
    world.decisions = 0;
    world.conditions.clear();
    const idle = new FakeEngine(inOrder(address));
    await world.pass(idle);
    expect([idle.calls, world.decisions, [...world.conditions.values()]]).to.deep.equal([[], 2, ["Ready", "Ready"]]);
  });

  it("a claim the engine has not answered yet waits (a condition, no record) and is bound when a later pass asks", async () => {
    const world = new World(2);
    await world.pass(new FakeEngine(() => new Map([["c000", ok("10.0.1.5")]])));
    expect(world.addresses()).to.deep.equal({ c000: ["10.0.1.5"] });
    expect(world.conditions.get("c001")).to.equal(
      "AllocationFailed: Waiting for the address engine to be asked for this claim",
    );
    const late = new FakeEngine(() => new Map([["c001", ok("10.0.1.6")]]));
    await world.pass(late);
    expect(late.calls).to.deep.equal([["c001"]]);
    expect([world.addresses(), world.conditions.get("c001")]).to.deep.equal([
      { c000: ["10.0.1.5"], c001: ["10.0.1.6"] },
      "Ready",
    ]);
    world.assertSound();
  });

  it("an engine that cannot be asked fails the pass: nothing of that segment is decided, bound claims keep theirs", async () => {
    const world = new World(ENGINE_SEGMENT + 2);
    const engine = new FakeEngine((holders, call) =>
      call === 1 ? inOrder(address)(holders) : Promise.reject(new Error("connection refused")),
    );
    let error: unknown;
    await world.pass(engine).catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal("connection refused");
    expect([world.decisions, world.records.has("c050"), world.records.has("c051")]).to.deep.equal([
      ENGINE_SEGMENT,
      false,
      false,
    ]);
    await until(() => world.records.size === ENGINE_SEGMENT);
    const kept = world.addresses();
    await world.pass(new FakeEngine(inOrder((i) => address(100 + i))));
    const after = world.addresses();
    for (const [name, list] of Object.entries(kept)) expect(after[name], name).to.deep.equal(list);
    expect([after["c050"], after["c051"]]).to.deep.equal([["10.0.1.101"], ["10.0.1.102"]]);
    world.assertSound();
  });

  it("an engine that answers failures and backs off is not asked again in the pass: every claim after gets its failure", async () => {
    const world = new World(ENGINE_SEGMENT + 5);
    const engine = new FakeEngine((holders) => new Map(holders.map((h) => [h, DOWN])));
    engine.retryMs = 5_000;
    await world.pass(engine);
    expect(engine.calls).to.have.length(1);
    expect(world.records.size).to.equal(0);
    expect(new Set(world.conditions.values())).to.deep.equal(new Set(["AllocationFailed: engine down"]));
  });

  it("an engine that fails one claim without backing off is asked again for the next segment", async () => {
    const world = new World(ENGINE_SEGMENT + 1);
    const engine = new FakeEngine((holders, call) =>
      call === 1
        ? new Map(holders.map((h) => [h, h === "c000" ? DOWN : ok(address(Number(h.slice(1))))]))
        : inOrder((i) => address(200 + i))(holders),
    );
    await world.pass(engine);
    expect(engine.calls.map((c) => c.length)).to.deep.equal([ENGINE_SEGMENT, 1]);
    expect([world.records.has("c000"), world.conditions.get("c000"), world.addresses()["c050"]]).to.deep.equal([
      false,
      "AllocationFailed: engine down",
      ["10.0.1.201"],
    ]);
    world.assertSound();
  });

  it("an engine giving two claims one address: the first in claim order gets it, the other waits for a later pass", async () => {
    const world = new World(2);
    await world.pass(new FakeEngine((holders) => new Map(holders.map((h) => [h, ok("10.0.1.9")]))));
    expect(world.addresses()).to.deep.equal({ c000: ["10.0.1.9"] });
    expect(world.conditions.get("c001")).to.equal("AllocationFailed: Requested IP not available");
    world.assertSound();
    await world.pass(new FakeEngine(() => new Map([["c001", ok("10.0.1.10")]])));
    expect(world.addresses()).to.deep.equal({ c000: ["10.0.1.9"], c001: ["10.0.1.10"] });
  });

  it("an engine answering twice for one claim (again in a later segment, or in a later pass) never moves its address", async () => {
    const world = new World(ENGINE_SEGMENT + 1);
    const engine = new FakeEngine((holders, call) =>
      call === 1
        ? inOrder(address)(holders)
        : new Map([...holders.map((h): [string, ExternalAnswer] => [h, ok("10.0.1.240")]), ["c000", ok("10.0.1.241")]]),
    );
    await world.pass(engine);
    expect([world.addresses()["c000"], world.addresses()["c050"]]).to.deep.equal([["10.0.1.1"], ["10.0.1.240"]]);
    // A new claim makes the next pass ask; the engine also answers for the bound claims, one with another's address.
    world.claims.push(capiClaim("c999"));
    const again = new FakeEngine(
      (holders) =>
        new Map([
          ...holders.map((h): [string, ExternalAnswer] => [h, ok("10.0.1.242")]),
          ["c000", ok("10.0.1.243")],
          ["c001", ok("10.0.1.1")],
        ]),
    );
    await world.pass(again);
    expect(again.calls).to.deep.equal([["c999"]]);
    const after = world.addresses();
    expect([after["c000"], after["c001"], after["c999"]]).to.deep.equal([["10.0.1.1"], ["10.0.1.2"], ["10.0.1.242"]]);
    world.assertSound();
  });
});
