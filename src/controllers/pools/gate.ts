/**
 * Applies pools/providers.ts to the pool kinds another provider may serve: reads each such provider's Lease every
 * `pollMs` (one GET by name), and on each change of decision holds or releases its kinds in discovery, logs one line,
 * sets each kind's `pool_kind_served` series, and records one Event on each of its pools (their status schema, the
 * other provider's, has no conditions: an Event is what `kubectl describe` shows). A held kind's pools get their Event
 * as they are seen; released, those told get one saying they are served again.
 */
import type { ResourceType } from "../../../api/registry.js";
import type { Kube } from "../../kube/access.js";
import { describeError, isNotFound } from "../../kube/errors.js";
import { ResourceClient, type KubeObject } from "../../kube/resource.js";
import type { Logger } from "../../runtime/logger.js";
import type { ControllerMetrics } from "../../runtime/metrics.js";
import type { EventSink } from "../events.js";
import { keyOfPool, type PoolKind, type PoolObject } from "./kind.js";
import {
  decideServing,
  observeLease,
  type LeaseRecord,
  type LeaseSighting,
  type ProviderState,
  type ServingReason,
  type SharedKinds,
} from "./providers.js";

/** What the gate holds and releases: pools/discovery.ts. */
export interface GatedDiscovery {
  hold(kind: PoolKind): void;
  release(kind: PoolKind): void;
  pools(kind: PoolKind): PoolObject[];
}

export interface ProviderGateOptions {
  kube: Kube;
  logger: Logger;
  metrics: ControllerMetrics;
  events: EventSink;
  /** How often each provider's Lease is read. Default 5 s (a provider's leader renews every 2 s by default). */
  pollMs?: number;
  clock?: () => number;
}

interface Lease extends KubeObject {
  spec?: LeaseRecord;
}

/** One group of shared kinds and what is known of its provider. */
interface Watched {
  group: SharedKinds<PoolKind>;
  sighting?: LeaseSighting;
  state: ProviderState;
  reason?: ServingReason;
  /** Whether the last read failed (logged once a streak). */
  failing: boolean;
  /** Pools told they are not served during this hold, by key. */
  told: Set<string>;
}

const LEASE_TYPE: ResourceType = {
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  kind: "Lease",
  namespaced: true,
};

const kindName = (kind: PoolKind): string => kind.descriptor.kind;

export class ProviderGate {
  private readonly watched: Watched[];
  private readonly leases: ResourceClient<Lease>;
  private discovery?: GatedDiscovery;
  private timer?: NodeJS.Timeout;
  private busy = false;

  constructor(
    groups: readonly SharedKinds<PoolKind>[],
    private readonly options: ProviderGateOptions,
  ) {
    this.watched = groups.map((group) => ({ group, state: "unknown", failing: false, told: new Set() }));
    this.leases = new ResourceClient<Lease>(options.kube, LEASE_TYPE);
  }

  /** Reads every enabled provider's Lease once and decides; resolves before any shared kind can be served. */
  async start(): Promise<void> {
    await this.poll();
    if (this.watched.some((w) => w.group.enabled))
      this.timer = setInterval(() => void this.poll(), this.options.pollMs ?? 5_000);
  }

  /** Wires the discovery the gate holds and releases kinds in (decisions already taken are applied at once). */
  attach(discovery: GatedDiscovery): void {
    this.discovery = discovery;
  }

  /** Whether `kind` must not be served now (discovery asks when it finds a kind). */
  held(kind: PoolKind): boolean {
    const w = this.watchedOf(kind);
    return w !== undefined && w.reason !== "Serving";
  }

  /** A pool of a held kind was seen: its Event, once a hold. */
  heldPool(kind: PoolKind, pool: PoolObject): void {
    const w = this.watchedOf(kind);
    if (w?.reason && w.reason !== "Serving") this.tell(w, kind, pool);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private watchedOf(kind: PoolKind): Watched | undefined {
    return this.watched.find((w) => w.group.kinds.includes(kind));
  }

  private async poll(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (const w of this.watched) {
        if (w.group.enabled) await this.read(w);
        this.decide(w);
      }
    } finally {
      this.busy = false;
    }
  }

  /** Reads the provider's Lease; a failed read keeps what was known (unknown until a first read succeeds). */
  private async read(w: Watched): Promise<void> {
    const { namespace, name } = w.group.provider.lease;
    let lease: Lease | undefined;
    try {
      lease = await this.leases.get(namespace, name);
    } catch (err) {
      if (!isNotFound(err)) {
        if (!w.failing)
          this.options.logger.warn("Cannot read another provider's Lease; keeping what was last known", {
            provider: w.group.provider.name,
            lease: `${namespace}/${name}`,
            known: w.state,
            error: describeError(err),
          });
        w.failing = true;
        return;
      }
    }
    w.failing = false;
    const seen = observeLease(w.sighting, lease?.spec, (this.options.clock ?? Date.now)());
    w.sighting = seen.sighting;
    w.state = seen.running ? "running" : "stopped";
  }

  /** Takes the decision; on a change, holds or releases the kinds and says so once. */
  private decide(w: Watched): void {
    const { serve, reason } = decideServing(w.group.enabled, w.state);
    if (reason === w.reason) return;
    const first = w.reason === undefined;
    w.reason = reason;
    for (const kind of w.group.kinds) this.options.metrics.poolKindServed(kindName(kind), serve, reason);
    this.log(w, reason);
    if (serve) {
      for (const kind of w.group.kinds) this.discovery?.release(kind);
      if (!first) this.tellServed(w);
      return;
    }
    for (const kind of w.group.kinds) {
      this.discovery?.hold(kind);
      if (w.group.enabled) for (const pool of this.discovery?.pools(kind) ?? []) this.tell(w, kind, pool);
    }
  }

  private log(w: Watched, reason: ServingReason): void {
    const { provider, kinds, flag } = w.group;
    const fields = {
      kinds: kinds.map(kindName).join(","),
      provider: provider.name,
      lease: `${provider.lease.namespace}/${provider.lease.name}`,
      reason,
      ...(w.sighting ? { holder: w.sighting.holder } : {}),
    };
    const log = this.options.logger;
    if (reason === "Serving") log.info("Serving pool kinds: the other provider is not running", fields);
    else if (reason === "NotEnabled") log.info(`Not serving pool kinds: ${flag} is off`, fields);
    else if (reason === "ServedByAnotherProvider")
      log.warn("Not serving pool kinds: another provider is running and serves them (its Lease is renewed)", fields);
    else log.warn("Not serving pool kinds until another provider's Lease can be read", fields);
  }

  private tell(w: Watched, kind: PoolKind, pool: PoolObject): void {
    const key = keyOfPool(kind, pool);
    if (w.told.has(key)) return;
    w.told.add(key);
    const { name, lease } = w.group.provider;
    const why =
      w.reason === "ServedByAnotherProvider"
        ? `the ${name} provider is running (its Lease ${lease.namespace}/${lease.name} is renewed)`
        : `the ${name} provider's Lease ${lease.namespace}/${lease.name} cannot be read`;
    this.options.events.record(
      pool,
      "Warning",
      w.reason ?? "ServedByAnotherProvider",
      `Not served by this controller while ${why}; its claims are left to that provider`,
    );
  }

  private tellServed(w: Watched): void {
    const told = new Set(w.told);
    w.told.clear();
    const { name } = w.group.provider;
    for (const kind of w.group.kinds)
      for (const pool of this.discovery?.pools(kind) ?? [])
        if (told.has(keyOfPool(kind, pool)))
          this.options.events.record(
            pool,
            "Normal",
            "Served",
            `Served by this controller: the ${name} provider is not running`,
          );
  }
}
