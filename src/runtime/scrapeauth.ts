/**
 * Who may read the diagnostics endpoint, decided as Cluster API's providers decide it (controller-runtime's
 * authentication and authorization filter): the bearer token of the request is reviewed by the API server
 * (TokenReview), and its user must be allowed the request's verb on the non-resource URL (SubjectAccessReview). The
 * reviews themselves are I/O behind {@link AccessReviewer}; everything here is decisions: reading the header, the
 * cache of answers, the limit on reviews of tokens not seen before.
 */
import { createHash } from "node:crypto";
import { TokenBucket } from "../kube/ratelimit.js";

/** A user as the API server's TokenReview names it. */
export interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The API server's two reviews. Both reject when the API server could not be asked or did not answer. */
export interface AccessReviewer {
  /** The user the token authenticates, or undefined when it authenticates nobody (invalid, expired, revoked). */
  authenticate(token: string): Promise<ReviewedUser | undefined>;
  /** Whether `user` may `verb` the non-resource URL `path`. */
  authorize(user: ReviewedUser, path: string, verb: string): Promise<boolean>;
}

/**
 * The answer to one request: served (200), or refused: no valid token (401), a user without the right (403), too many
 * tokens to review at once (429), the API server not answering the reviews (503).
 */
export type Verdict = { status: 200 } | { status: 401 | 403 | 429 | 503; reason: string };

/** The longest bearer token accepted: service-account and OIDC tokens are a few KiB at most. */
export const MAX_TOKEN_LENGTH = 8192;

/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 6750's characters), or
 * undefined for any other header, an empty or an over-long token.
 */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header ?? "");
  const token = m?.[1];
  return token !== undefined && token.length <= MAX_TOKEN_LENGTH ? token : undefined;
}

export interface ScrapeGateOptions {
  /** How long an allowed token stays allowed without asking again. Default 60 s. */
  allowedTtlMs?: number;
  /** How long a refused token (401, 403) stays refused without asking again. Default 10 s. */
  refusedTtlMs?: number;
  /** Tokens remembered at most; the oldest answer is forgotten first. Default 256. */
  maxEntries?: number;
  /** Reviews of unremembered tokens a second (each one or two API requests), and the burst. Default 5 and 10. */
  reviewsPerSecond?: number;
  reviewBurst?: number;
  /** The clock, in milliseconds. Default Date.now. */
  now?: () => number;
}

interface Remembered {
  verdict: Verdict;
  expiresAt: number;
}

/**
 * Decides requests by their Authorization header. Bounded for hostile input: a token is kept only as its SHA-256, at
 * most `maxEntries` answers are kept, at most `reviewsPerSecond` new tokens are reviewed (more get 429 without an API
 * request), and concurrent requests with one token share one review.
 */
export class ScrapeGate {
  private readonly remembered = new Map<string, Remembered>();
  private readonly inFlight = new Map<string, Promise<Verdict>>();
  private readonly budget: TokenBucket;
  private readonly allowedTtlMs: number;
  private readonly refusedTtlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly reviewer: AccessReviewer,
    options: ScrapeGateOptions = {},
  ) {
    this.allowedTtlMs = options.allowedTtlMs ?? 60_000;
    this.refusedTtlMs = options.refusedTtlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 256;
    this.now = options.now ?? Date.now;
    this.budget = new TokenBucket(options.reviewsPerSecond ?? 5, options.reviewBurst ?? 10, this.now());
  }

  /** The verdict on a request for `verb` on `path` carrying `authorization`. Never rejects. */
  async decide(authorization: string | undefined, path: string, verb: string): Promise<Verdict> {
    const token = bearerToken(authorization);
    if (token === undefined) return { status: 401, reason: "no bearer token" };
    const key = `${createHash("sha256").update(token).digest("base64")} ${verb} ${path}`;
    const known = this.remembered.get(key);
    if (known && known.expiresAt > this.now()) return known.verdict;
    if (known) this.remembered.delete(key);
    const pending = this.inFlight.get(key);
    if (pending) return await pending;
    if (!this.budget.tryTake(this.now())) return { status: 429, reason: "too many new tokens to review" };
    const review = this.review(token, path, verb).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, review);
    const verdict = await review;
    if (verdict.status !== 503) this.remember(key, verdict);
    return verdict;
  }

  /** Answers remembered now (expired ones included until looked up or pushed out). */
  get size(): number {
    return this.remembered.size;
  }

  private async review(token: string, path: string, verb: string): Promise<Verdict> {
    try {
      const user = await this.reviewer.authenticate(token);
      if (!user) return { status: 401, reason: "the token authenticates nobody" };
      if (!(await this.reviewer.authorize(user, path, verb)))
        return { status: 403, reason: `${user.username} may not ${verb} ${path}` };
      return { status: 200 };
    } catch (err) {
      return { status: 503, reason: `could not review the token: ${err instanceof Error ? err.message : String(err)}` };
    }
  }

  private remember(key: string, verdict: Verdict): void {
    while (this.remembered.size >= this.maxEntries) {
      const oldest = this.remembered.keys().next().value;
      if (oldest === undefined) break;
      this.remembered.delete(oldest);
    }
    const ttl = verdict.status === 200 ? this.allowedTtlMs : this.refusedTtlMs;
    this.remembered.set(key, { verdict, expiresAt: this.now() + ttl });
  }
}
