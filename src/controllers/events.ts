/**
 * Kubernetes Events on our objects: where users look first (`kubectl describe`). Failures to record are logged only.
 *
 * Repeated Events aggregate as client-go's recorder does: the same object, type, reason and message within
 * {@link EventRecorderOptions.aggregateWindowMs} bump `count` and `lastTimestamp` of the Event already written (a
 * merge patch) instead of adding one Event per occurrence, so `kubectl describe` shows "x5 over 3m" and a claim
 * waiting on an exhausted pool does not flood the namespace. The recorder remembers the Events it wrote in a bounded
 * map; an Event that is gone (its TTL expired, someone deleted it) is simply written anew.
 */
import type { Kube } from "../kube/access.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import { describeError, isNotFound } from "../kube/errors.js";
import type { Logger } from "../runtime/logger.js";

/** RBAC for recording Events. */
export const EVENT_RULES = [{ apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] }];

export const COMPONENT = "metal3-ipam-controller";

export interface EventSink {
  record(obj: KubeObject, type: "Normal" | "Warning", reason: string, message: string): void;
}

/** Options of {@link EventRecorder}. */
export interface EventRecorderOptions {
  /** A repeat this long after the previous occurrence starts a new Event. Default 10 minutes (client-go's). */
  aggregateWindowMs?: number;
  /** Most distinct Events remembered for aggregation; the least recently seen is forgotten first. Default 4096. */
  maxTracked?: number;
  clock?: () => Date;
}

/** An Event this recorder wrote, as far as aggregation needs to know it. */
interface Tracked {
  namespace: string;
  name: string;
  count: number;
  lastSeenMs: number;
}

const MAX_MESSAGE = 1024;

/** The core/v1 Event fields we write. */
interface CoreEvent extends KubeObject {
  involvedObject: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
  };
  reason: string;
  message: string;
  type: string;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string };
  reportingComponent: string;
}

const EVENT_TYPE = { group: "", version: "v1", plural: "events", kind: "Event", namespaced: true };

/** RFC 3339 in whole seconds, as Kubernetes writes times. */
const timestamp = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, "Z");

/** What makes two occurrences "the same Event": the object (this incarnation of it), type, reason and message. */
export function aggregationKey(obj: KubeObject, type: string, reason: string, message: string): string {
  const m = obj.metadata;
  return JSON.stringify([
    obj.apiVersion,
    obj.kind,
    m.namespace ?? "",
    m.name ?? "",
    m.uid ?? "",
    type,
    reason,
    message.slice(0, MAX_MESSAGE),
  ]);
}

export class EventRecorder implements EventSink {
  private readonly events: ResourceClient<CoreEvent>;
  private readonly tracked = new Map<string, Tracked>();
  /** Per key, the write in flight: occurrences of one Event are written one after the other, never raced. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly windowMs: number;
  private readonly maxTracked: number;
  private readonly clock: () => Date;

  constructor(
    kube: Kube,
    private readonly logger: Logger,
    options: EventRecorderOptions = {},
  ) {
    this.events = new ResourceClient<CoreEvent>(kube, EVENT_TYPE);
    this.windowMs = options.aggregateWindowMs ?? 600_000;
    this.maxTracked = options.maxTracked ?? 4096;
    this.clock = options.clock ?? (() => new Date());
  }

  /** Fire-and-forget: an Event that cannot be written must never fail a reconcile. */
  record(obj: KubeObject, type: "Normal" | "Warning", reason: string, message: string): void {
    void this.recorded(obj, type, reason, message);
  }

  /** Like {@link record}, but resolves once this occurrence is written (or its failure logged). Never rejects. */
  recorded(obj: KubeObject, type: "Normal" | "Warning", reason: string, message: string): Promise<void> {
    const key = aggregationKey(obj, type, reason, message);
    const now = this.clock();
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => this.write(key, obj, type, reason, message, now))
      .catch((err: unknown) => {
        this.logger.warn("Could not record Event", { reason, error: describeError(err) });
      })
      .finally(() => {
        if (this.chains.get(key) === next) this.chains.delete(key);
      });
    this.chains.set(key, next);
    return next;
  }

  private async write(
    key: string,
    obj: KubeObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
    now: Date,
  ): Promise<void> {
    const seen = this.tracked.get(key);
    if (seen && now.getTime() - seen.lastSeenMs <= this.windowMs && (await this.bump(seen, now))) {
      this.remember(key, { ...seen, count: seen.count + 1, lastSeenMs: now.getTime() });
      return;
    }
    const created = await this.events.create(namespaceOf(obj), newEvent(obj, type, reason, message, now));
    this.remember(key, {
      namespace: namespaceOf(obj),
      name: created.metadata?.name ?? "",
      count: 1,
      lastSeenMs: now.getTime(),
    });
  }

  /** Adds one occurrence to an Event already written; false when it no longer exists. */
  private async bump(seen: Tracked, now: Date): Promise<boolean> {
    try {
      await this.events.patch(seen.namespace, seen.name, { count: seen.count + 1, lastTimestamp: timestamp(now) });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Stores `entry` as the most recent one, forgetting the least recently seen beyond the bound. */
  private remember(key: string, entry: Tracked): void {
    this.tracked.delete(key);
    this.tracked.set(key, entry);
    while (this.tracked.size > this.maxTracked) {
      const oldest = this.tracked.keys().next().value;
      if (oldest === undefined) break;
      this.tracked.delete(oldest);
    }
  }
}

function namespaceOf(obj: KubeObject): string {
  return obj.metadata.namespace ?? "default";
}

function newEvent(obj: KubeObject, type: string, reason: string, message: string, now: Date): CoreEvent {
  const namespace = namespaceOf(obj);
  return {
    metadata: { generateName: `${obj.metadata.name ?? "object"}.` },
    involvedObject: {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      name: obj.metadata.name,
      namespace,
      uid: obj.metadata.uid,
      resourceVersion: obj.metadata.resourceVersion,
    },
    reason,
    message: message.slice(0, MAX_MESSAGE),
    type,
    count: 1,
    firstTimestamp: timestamp(now),
    lastTimestamp: timestamp(now),
    source: { component: COMPONENT },
    reportingComponent: COMPONENT,
  };
}
