import { expect } from "chai";
import { TokenBucket } from "./ratelimit.js";

describe("TokenBucket (client-side rate limit)", () => {
  it("lets a burst through at once, then spaces requests at qps", () => {
    const bucket = new TokenBucket(10, 3, 0);
    expect([0, 0, 0].map(() => bucket.reserve(0))).to.deep.equal([0, 0, 0]);
    // The fourth, fifth and sixth wait 100, 200 and 300 ms: reservations queue behind each other.
    expect([bucket.reserve(0), bucket.reserve(0), bucket.reserve(0)]).to.deep.equal([100, 200, 300]);
  });

  it("refills at qps up to the burst, never beyond", () => {
    const bucket = new TokenBucket(10, 2, 0);
    bucket.reserve(0);
    bucket.reserve(0);
    expect(bucket.reserve(50), "half a token back after 50 ms").to.equal(50);
    const idle = new TokenBucket(10, 2, 0);
    // An hour idle saves up `burst` tokens, not 36,000.
    expect([idle.reserve(3_600_000), idle.reserve(3_600_000), idle.reserve(3_600_000)]).to.deep.equal([0, 0, 100]);
  });

  it("tryTake: takes free tokens only, and a refused flood leaves no debt behind", () => {
    const bucket = new TokenBucket(10, 2, 0);
    expect([bucket.tryTake(0), bucket.tryTake(0), bucket.tryTake(0)]).to.deep.equal([true, true, false]);
    for (let i = 0; i < 1000; i++) expect(bucket.tryTake(50)).to.equal(false);
    // 100 ms after the burst was spent one token is back, however many were refused meanwhile.
    expect([bucket.tryTake(100), bucket.tryTake(100)]).to.deep.equal([true, false]);
  });

  it("refuses a rate of zero or a burst below one", () => {
    expect(() => new TokenBucket(0, 1, 0)).to.throw("qps > 0");
    expect(() => new TokenBucket(5, 0, 0)).to.throw("burst >= 1");
  });
});
