/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics: the holder renews every
 * `retryPeriod`; a candidate takes over a lease whose renewals it has not seen change for `leaseDuration` (measured
 * on its own clock, so clock skew between replicas does not matter); a leader that cannot renew within
 * `renewDeadline` stops leading at once; a clean shutdown releases the lease (empty holder) so a successor takes over
 * without waiting for expiry.
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Kube } from "../kube/access.js";
import { describeError, isConflict, isNotFound } from "../kube/errors.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import type { Logger } from "./logger.js";

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  logger: Logger;
  onStartedLeading: () => void;
  /** Called once when leadership is lost (not on release). The caller must stop reconciling at once. */
  onStoppedLeading: () => void;
}

/** RBAC this module needs (see src/rbac.ts). */
export const LEADER_ELECTION_RULES = [
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "patch"] },
];

const microTime = (d: Date): string => d.toISOString().replace("Z", "000Z");

export class LeaderElector {
  readonly identity: string;
  private readonly client: ResourceClient<Lease>;
  private leading = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private lastRenew = 0;
  /** The last lease record we saw and when we saw it change (local clock). */
  private observed?: { record: string; at: number };

  constructor(
    kc: Kube,
    private readonly options: LeaderElectionOptions,
  ) {
    this.identity = options.identity ?? `${hostname()}_${randomBytes(4).toString("hex")}`;
    this.client = new ResourceClient<Lease>(kc, {
      group: "coordination.k8s.io",
      version: "v1",
      plural: "leases",
      kind: "Lease",
      namespaced: true,
    });
  }

  /** The acquire-or-renew round in flight, if any. */
  private round: Promise<void> | undefined;

  get isLeader(): boolean {
    return this.leading;
  }

  private get durationMs(): number {
    return this.options.leaseDurationMs ?? 15_000;
  }

  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.round = this.tryAcquireOrRenew().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.options.retryPeriodMs ?? 2_000);
      });
      void this.round;
    };
    tick();
  }

  /** Stops campaigning; a leader releases the lease so a successor can take over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    // A renewal in flight would move the lease's resourceVersion under the release (a Conflict, and the successor
    // waiting out the whole lease): let it land first.
    await this.round;
    if (!this.leading) return;
    this.leading = false;
    for (let attempt = 0; ; attempt++) {
      try {
        const lease = await this.client.get(this.options.namespace, this.options.name);
        if (lease.spec?.holderIdentity !== this.identity) return;
        await this.client.patch(this.options.namespace, this.options.name, {
          metadata: { resourceVersion: lease.metadata.resourceVersion },
          spec: { holderIdentity: null, leaseDurationSeconds: 1, renewTime: microTime(new Date()) },
        });
        this.options.logger.info("Released leader lease", { lease: this.options.name });
        return;
      } catch (err) {
        if (isConflict(err) && attempt < 2) continue;
        this.options.logger.warn("Could not release leader lease", { error: describeError(err) });
        return;
      }
    }
  }

  private async tryAcquireOrRenew(): Promise<void> {
    try {
      const ok = await this.acquireOrRenew();
      if (ok) this.lastRenew = Date.now();
      if (ok && !this.leading) {
        this.leading = true;
        this.options.logger.info("Became leader", { identity: this.identity, lease: this.options.name });
        this.options.onStartedLeading();
      }
    } catch (err) {
      this.options.logger.warn("Leader election round failed", { error: describeError(err) });
    }
    if (this.leading && Date.now() - this.lastRenew > (this.options.renewDeadlineMs ?? 10_000)) this.lose();
  }

  private lose(): void {
    this.leading = false;
    this.stopped = true;
    clearTimeout(this.timer);
    this.options.logger.error("Lost leader lease; stopping reconciliation", { identity: this.identity });
    this.options.onStoppedLeading();
  }

  /** One round: true when we hold the lease afterwards. */
  private async acquireOrRenew(): Promise<boolean> {
    const { namespace, name } = this.options;
    const now = new Date();
    const mine = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.durationMs / 1000),
      renewTime: microTime(now),
    };
    let lease: Lease;
    try {
      lease = await this.client.get(namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return await this.write(() =>
        this.client.create(namespace, {
          metadata: { name, namespace },
          spec: { ...mine, acquireTime: microTime(now), leaseTransitions: 0 },
        }),
      );
    }
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime]);
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const holder = spec.holderIdentity ?? "";
    const heldByOther = holder !== "" && holder !== this.identity;
    const expired = Date.now() - this.observed.at > (spec.leaseDurationSeconds ?? 15) * 1000;
    if (heldByOther && !expired) return false;
    const transition = holder !== this.identity;
    return await this.write(() =>
      this.client.patch(namespace, name, {
        metadata: { resourceVersion: lease.metadata.resourceVersion },
        spec: {
          ...mine,
          ...(transition ? { acquireTime: microTime(now), leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
        },
      }),
    );
  }

  /** A write that lost a race (someone else renewed or took over first) is a "no", not an error. */
  private async write(fn: () => Promise<Lease>): Promise<boolean> {
    try {
      await fn();
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }
}
