/**
 * The client-side rate limit of every request to the API server (watches aside), as client-go's token bucket:
 * `qps` tokens a second, at most `burst` saved up. A cluster admin sets it with `--kube-api-qps`/`--kube-api-burst`
 * to cap what this controller may ask of a shared API server; the defaults sit above what a 10,000-claim burst needs.
 */

/** Default requests a second, and the burst above it (flags `--kube-api-qps`, `--kube-api-burst`). */
export const DEFAULT_QPS = 1_000;
export const DEFAULT_BURST = 2_000;

/** A token bucket. Pure: time comes from the caller, so it is tested without a clock. */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    now: number,
  ) {
    if (!(qps > 0) || !Number.isInteger(burst) || burst < 1)
      throw new Error(`rate limit needs qps > 0 and an integer burst >= 1, got qps ${qps}, burst ${burst}`);
    this.tokens = burst;
    this.updatedAt = now;
  }

  /**
   * Takes one token; returns how many milliseconds the caller must wait before sending (0 when a token was free).
   * Tokens are reserved in order, so concurrent callers queue up behind each other as client-go's `Wait` does.
   */
  reserve(now: number): number {
    this.refill(now);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.qps);
  }

  /**
   * Takes one token when one is free at `now` and answers whether it did; never borrows, so callers that refuse work
   * instead of waiting (a flood of it) leave no debt behind that would outlast the flood.
   */
  tryTake(now: number): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updatedAt) * this.qps) / 1000);
    this.updatedAt = now;
  }
}

/** What the API door has done, for metrics (src/runtime reads these; src/kube does not import it). */
export const clientStats = {
  /** Requests that waited for the rate limiter, and how long they waited in all. */
  rateLimitedRequests: 0,
  rateLimitedSeconds: 0,
  /** Requests sent again after a 429 (or a 5xx with Retry-After). */
  retriedAfterThrottle: 0,
  /**
   * Body bytes of requests sent (each send of a retried request counts) and of their answers received, as they cross
   * the door (transport.ts, h2.ts): JSON as written and read, without HTTP headers, framing or TLS.
   */
  bytesSent: 0,
  bytesReceived: 0,
  /** Body bytes of watch streams received (watch.ts), the initial lists aside (those are requests). */
  watchBytesReceived: 0,
};

let bucket = new TokenBucket(DEFAULT_QPS, DEFAULT_BURST, Date.now());

/** Sets the process's limit (main.ts, from the flags). */
export function setRateLimit(qps: number, burst: number): void {
  bucket = new TokenBucket(qps, burst, Date.now());
}

/** The process's limit, for logs and tests. */
export function rateLimit(): { qps: number; burst: number } {
  return { qps: bucket.qps, burst: bucket.burst };
}

/**
 * Takes the next request's token: returns how many milliseconds to wait before sending it (0: send now). Synchronous,
 * so a request that need not wait (nearly all) does not wait for a turn of the event loop either.
 */
export function throttleDelay(): number {
  const waitMs = bucket.reserve(Date.now());
  if (waitMs === 0) return 0;
  clientStats.rateLimitedRequests++;
  clientStats.rateLimitedSeconds += waitMs / 1000;
  return waitMs;
}
