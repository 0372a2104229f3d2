/**
 * The controller's activity read from its /metrics at a fixed step during a burst: when its passes ended and how
 * many NetBox calls it had made by then, so a report can say whether the wall time went to NetBox, to the passes'
 * Kubernetes writes, or to waiting. Readings that fail (the controller busy past the step) are skipped.
 */
import { activityDelta, readActivity, totalCalls, type ControllerActivity } from "./netboxcalls.js";
import { nowMs } from "./stats.js";

/** Readings are this far apart. */
export const TIMELINE_STEP_MS = 250;

/** One reading, counted from the window's start. */
export interface TimelinePoint {
  ms: number;
  /** NetBox calls so far, and the seconds the controller spent waiting for them. */
  netboxCalls: number;
  netboxSeconds: number;
  /** Pool passes (every controller's work-queue keys) finished so far, and their seconds. */
  passes: number;
  passSeconds: number;
}

export class ActivityTimeline {
  readonly points: TimelinePoint[] = [];
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;

  constructor(private readonly port: number) {}

  /** Starts reading; `origin` is the window's first reading. */
  start(origin: ControllerActivity): void {
    const start = nowMs();
    this.timer = setInterval(() => {
      if (this.reading) return;
      this.reading = readActivity(this.port)
        .then((now) => void this.points.push(pointOf(nowMs() - start, activityDelta(origin, now))))
        .catch(() => undefined)
        .finally(() => (this.reading = undefined));
    }, TIMELINE_STEP_MS);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.reading;
  }
}

/** A reading of what changed since the window opened. */
export function pointOf(ms: number, delta: ControllerActivity): TimelinePoint {
  const calls = totalCalls(delta.netbox);
  const passes = Object.values(delta.passes);
  return {
    ms,
    netboxCalls: calls.count,
    netboxSeconds: calls.seconds,
    passes: passes.reduce((n, p) => n + p.count, 0),
    passSeconds: passes.reduce((s, p) => s + p.seconds, 0),
  };
}
