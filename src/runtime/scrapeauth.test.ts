import { expect } from "chai";
import { bearerToken, MAX_TOKEN_LENGTH, ScrapeGate, type AccessReviewer, type ReviewedUser } from "./scrapeauth.js";

/** A reviewer that knows `tokens` (token → user) and lets `readers` get /metrics; it counts the reviews asked. */
class FakeReviewer implements AccessReviewer {
  calls = { authenticate: 0, authorize: 0 };
  failing = false;
  /** When set, authenticate waits for it: concurrent requests pile up on one review. */
  gate: Promise<void> | undefined;

  constructor(
    private readonly tokens: Record<string, string>,
    private readonly readers: string[],
  ) {}

  async authenticate(token: string): Promise<ReviewedUser | undefined> {
    this.calls.authenticate++;
    await this.gate;
    if (this.failing) throw new Error("connection refused");
    const username = this.tokens[token];
    return username === undefined ? undefined : { username, groups: ["system:authenticated"] };
  }

  authorize(user: ReviewedUser, path: string, verb: string): Promise<boolean> {
    this.calls.authorize++;
    return Promise.resolve(path === "/metrics" && verb === "get" && this.readers.includes(user.username));
  }
}

describe("ScrapeGate (who may read /metrics)", () => {
  let clock: number;
  let reviewer: FakeReviewer;
  const gate = (options = {}): ScrapeGate => new ScrapeGate(reviewer, { now: () => clock, ...options });

  beforeEach(() => {
    clock = 1_000_000;
    reviewer = new FakeReviewer({ reader: "prometheus", other: "someone" }, ["prometheus"]);
  });

  it("reads the bearer token of an Authorization header, and nothing else", () => {
    expect(bearerToken("Bearer abc.DEF-_~+/==")).to.equal("abc.DEF-_~+/==");
    expect(bearerToken("bearer  xyz ")).to.equal("xyz");
    for (const bad of [undefined, "", "Bearer", "Bearer ", "Basic dXNlcjpwdw==", "Bearer a b", "Bearer a\u0000b"])
      expect(bearerToken(bad), String(bad)).to.equal(undefined);
    expect(bearerToken(`Bearer ${"a".repeat(MAX_TOKEN_LENGTH)}`)).to.have.length(MAX_TOKEN_LENGTH);
    expect(bearerToken(`Bearer ${"a".repeat(MAX_TOKEN_LENGTH + 1)}`)).to.equal(undefined);
  });

  it("401 without a token or with one that authenticates nobody, 403 without the right, 200 with it", async () => {
    const g = gate();
    expect(await g.decide(undefined, "/metrics", "get")).to.deep.include({ status: 401 });
    expect(reviewer.calls.authenticate, "no token, no review").to.equal(0);
    expect(await g.decide("Bearer forged", "/metrics", "get")).to.deep.include({ status: 401 });
    expect(await g.decide("Bearer other", "/metrics", "get")).to.deep.equal({
      status: 403,
      reason: "someone may not get /metrics",
    });
    expect(await g.decide("Bearer reader", "/metrics", "get")).to.deep.equal({ status: 200 });
    expect(await g.decide("Bearer reader", "/other", "get")).to.deep.include({ status: 403 });
  });

  it("remembers an allowed token for allowedTtlMs and a refused one for refusedTtlMs, then asks again", async () => {
    const g = gate({ allowedTtlMs: 60_000, refusedTtlMs: 10_000 });
    await g.decide("Bearer reader", "/metrics", "get");
    await g.decide("Bearer other", "/metrics", "get");
    expect(reviewer.calls).to.deep.equal({ authenticate: 2, authorize: 2 });
    clock += 9_999;
    await g.decide("Bearer reader", "/metrics", "get");
    await g.decide("Bearer other", "/metrics", "get");
    expect(reviewer.calls, "both remembered").to.deep.equal({ authenticate: 2, authorize: 2 });
    clock += 1;
    expect(await g.decide("Bearer other", "/metrics", "get")).to.deep.include({ status: 403 });
    await g.decide("Bearer reader", "/metrics", "get");
    expect(reviewer.calls, "the refusal asked again, the allowance not").to.deep.equal({
      authenticate: 3,
      authorize: 3,
    });
    clock += 50_000;
    await g.decide("Bearer reader", "/metrics", "get");
    expect(reviewer.calls.authenticate).to.equal(4);
  });

  it("keeps at most maxEntries answers, forgetting the oldest", async () => {
    reviewer = new FakeReviewer({}, []);
    const g = gate({ maxEntries: 3, reviewBurst: 100 });
    for (const t of ["a", "b", "c", "d"]) await g.decide(`Bearer ${t}`, "/metrics", "get");
    expect(g.size).to.equal(3);
    await g.decide("Bearer b", "/metrics", "get");
    expect(reviewer.calls.authenticate, "b still remembered").to.equal(4);
    await g.decide("Bearer a", "/metrics", "get");
    expect(reviewer.calls.authenticate, "a was forgotten").to.equal(5);
  });

  it("reviews at most reviewBurst new tokens at once, then reviewsPerSecond; remembered ones still pass", async () => {
    const g = gate({ reviewsPerSecond: 2, reviewBurst: 3 });
    expect((await g.decide("Bearer reader", "/metrics", "get")).status).to.equal(200);
    const flood = [];
    for (let i = 0; i < 50; i++) flood.push((await g.decide(`Bearer forged${i}`, "/metrics", "get")).status);
    expect(flood.slice(0, 2)).to.deep.equal([401, 401]);
    expect(new Set(flood.slice(2))).to.deep.equal(new Set([429]));
    expect(reviewer.calls.authenticate, "the flood cost two reviews").to.equal(3);
    expect((await g.decide("Bearer reader", "/metrics", "get")).status, "a known scraper is unaffected").to.equal(200);
    clock += 500;
    expect((await g.decide("Bearer forged-late", "/metrics", "get")).status, "a token back after 1/qps").to.equal(401);
  });

  it("shares one review among concurrent requests with one token", async () => {
    let open = (): void => undefined;
    reviewer.gate = new Promise((r) => (open = r));
    const g = gate({ reviewBurst: 1 });
    const all = Promise.all([1, 2, 3].map(() => g.decide("Bearer reader", "/metrics", "get")));
    open();
    expect((await all).map((v) => v.status)).to.deep.equal([200, 200, 200]);
    expect(reviewer.calls.authenticate).to.equal(1);
  });

  it("503 when the API server cannot review, not remembered: the next request asks again", async () => {
    const g = gate();
    reviewer.failing = true;
    expect(await g.decide("Bearer reader", "/metrics", "get")).to.deep.equal({
      status: 503,
      reason: "could not review the token: connection refused",
    });
    reviewer.failing = false;
    expect(await g.decide("Bearer reader", "/metrics", "get")).to.deep.equal({ status: 200 });
  });
});
