/**
 * The decisions of a pass whose pool's kind has an external engine (NetBox), overlapped with the engine's calls.
 *
 * The claims, in decision order, are taken in segments, each closed once it holds {@link ENGINE_SEGMENT} claims to
 * give an address. A segment's claims are asked of the engine in one call, then decided; their writes start, and the
 * next segment is asked while they run. So the engine's calls and the API server's writes (finalizer, record,
 * status) overlap instead of following each other, and the first claims are bound while the engine still works on
 * the last.
 *
 * What does not change: decisions are sequential and in claim order, each made with the engine's answer for its claim
 * (the pass's `external` map, filled before the segment is decided); the writes of the pass still run at most
 * `writeConcurrency` at a time and the pass ends when all are done, failing with the first error (else with their
 * outcomes merged, pools/outcome.ts). Once the engine
 * fails (it then sets a retry time, see ExternalEngine.retryAfterMs), it is not asked again in this pass: the claims
 * after that get the same failure, as they did when the whole pass was one call.
 */
import type { KubeObject } from "../../kube/resource.js";
import type { ExternalAnswer, ExternalClaim, ExternalEngine, PoolObject } from "./kind.js";
import type { PassOutcome } from "./outcome.js";
import type { ClaimApi, Pass } from "./pass.js";
import { DecisionSlicer } from "./slices.js";
import { WriteRunner } from "./writes.js";

/** Claims to give an address per engine call: NetBox's batch (src/controllers/netbox/engine.ts BATCH). */
export const ENGINE_SEGMENT = 50;

/** One claim of the pass, as the pass decides it. */
export interface ClaimStep {
  api: ClaimApi;
  claim: KubeObject;
  /** Decides (see ClaimWork.decide) and records whether the claim is settled; returns its write. */
  decide: () => () => Promise<PassOutcome>;
}

/**
 * Decides `steps` (in decision order) segment by segment, asking `engine` for each segment's claims first; runs the
 * writes `writeConcurrency` at a time as they come, pausing between decisions as `slicer` says (pools/slices.ts).
 * Resolves once every write is done, to their outcomes merged; rejects with the first error.
 */
export async function decideWithEngine(
  pass: Pass,
  pool: PoolObject,
  engine: ExternalEngine,
  steps: readonly ClaimStep[],
  kindContext: Parameters<ExternalEngine["obtain"]>[2],
  writeConcurrency: number,
  slicer: DecisionSlicer = new DecisionSlicer(),
): Promise<PassOutcome> {
  const answers = new Map<string, ExternalAnswer>();
  pass.external = answers;
  const writes = new WriteRunner(writeConcurrency);
  let failure: ExternalAnswer | undefined;
  for (const segment of segmentsOf(pass, steps)) {
    if (segment.asked.length > 0) {
      if (failure) for (const a of segment.asked) answers.set(a.holder, failure);
      else {
        for (const [holder, answer] of await engine.obtain(pool, segment.asked, kindContext))
          answers.set(holder, answer);
        if (engine.retryAfterMs(pool) !== undefined)
          failure = segment.asked.map((a) => answers.get(a.holder)).find(failed);
      }
    }
    slicer.start();
    for (const [i, step] of segment.steps.entries()) {
      const pause = i > 0 ? slicer.pause() : undefined;
      if (pause) await pause;
      writes.add(step.decide());
    }
  }
  return await writes.drain();
}

const failed = (a: ExternalAnswer | undefined): a is ExternalAnswer => a !== undefined && !a.ok;

/** `steps` cut into segments of at most {@link ENGINE_SEGMENT} claims to ask the engine for, in order. */
export function segmentsOf(
  pass: Pass,
  steps: readonly ClaimStep[],
  size = ENGINE_SEGMENT,
): { steps: ClaimStep[]; asked: ExternalClaim[] }[] {
  const segments: { steps: ClaimStep[]; asked: ExternalClaim[] }[] = [];
  let current: { steps: ClaimStep[]; asked: ExternalClaim[] } = { steps: [], asked: [] };
  for (const step of steps) {
    const asked = step.api.externalClaim?.(pass, step.claim);
    if (asked && current.asked.length >= size) {
      segments.push(current);
      current = { steps: [], asked: [] };
    }
    current.steps.push(step);
    if (asked) current.asked.push(asked);
  }
  if (current.steps.length > 0) segments.push(current);
  return segments;
}
