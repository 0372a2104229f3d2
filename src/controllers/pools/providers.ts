/**
 * Pool kinds another provider may serve too (the Cluster API in-cluster provider's, for one), and the pure decision
 * of whether this controller serves them: never two providers on one kind, or both would hand out addresses from one
 * pool. A kind is served only when the operator enabled it (a flag) and the other provider is known not to be
 * running. "Running" is read from the other provider's leader-election Lease with client-go's rule: a Lease whose
 * holder and renew time have not changed for its duration, measured on our own clock (so clock skew between the two
 * controllers does not matter), is stale. No Kubernetes imports: pools/gate.ts reads the Lease and applies this.
 */

/** Another provider of some pool kinds and its leader-election Lease. */
export interface OtherProvider {
  /** Its name in logs, Events and metrics (clusterctl's provider name, e.g. `in-cluster`). */
  name: string;
  /** Where its leader-election Lease lives: its controller holds and renews it while it runs. */
  lease: { namespace: string; name: string };
}

/** A group of pool kinds another provider serves too, and the switch that lets this controller serve them. */
export interface SharedKinds<K> {
  kinds: readonly K[];
  provider: OtherProvider;
  /** Whether the operator asked this controller to serve them (a flag). */
  enabled: boolean;
  /** The flag that enables them, named in the log line when they are not enabled. */
  flag: string;
}

/** The fields of a `coordination.k8s.io/v1` Lease this decision reads. */
export interface LeaseRecord {
  holderIdentity?: string | null;
  renewTime?: string | null;
  leaseDurationSeconds?: number | null;
}

/** What was last seen of a held Lease: its record and when (our clock) it last changed. */
export interface LeaseSighting {
  holder: string;
  renewTime: string;
  changedAtMs: number;
  durationMs: number;
}

/** client-go's default lease duration, for a Lease that states none. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/** A Lease claiming a longer duration is taken as this long, so a hostile or broken Lease cannot hold us forever. */
export const MAX_LEASE_DURATION_MS = 3_600_000;

/**
 * The next sighting after reading `lease` (undefined: not found) at `nowMs`, and whether its holder runs. An absent
 * Lease or one without a holder (released) means not running at once; a held one runs until its record has not
 * changed for its duration. A Lease first seen counts as just renewed: one left behind by a provider that is gone
 * delays serving by its duration once.
 */
export function observeLease(
  previous: LeaseSighting | undefined,
  lease: LeaseRecord | undefined,
  nowMs: number,
): { sighting?: LeaseSighting; running: boolean } {
  const holder = lease?.holderIdentity ?? "";
  if (!lease || holder === "") return { running: false };
  const renewTime = lease.renewTime ?? "";
  const seconds = lease.leaseDurationSeconds;
  const durationMs =
    typeof seconds === "number" && Number.isFinite(seconds) && seconds > 0
      ? Math.min(seconds * 1000, MAX_LEASE_DURATION_MS)
      : DEFAULT_LEASE_DURATION_MS;
  const unchanged = previous?.holder === holder && previous.renewTime === renewTime;
  const changedAtMs = unchanged ? previous.changedAtMs : nowMs;
  return { sighting: { holder, renewTime, changedAtMs, durationMs }, running: nowMs - changedAtMs < durationMs };
}

/** What is known of the other provider: running, not running, or not yet known (its Lease could not be read). */
export type ProviderState = "running" | "stopped" | "unknown";

/** Why a shared kind is served or not: the `reason` of its metric, log line and Events. */
export type ServingReason = "Serving" | "NotEnabled" | "ServedByAnotherProvider" | "ProviderStateUnknown";

/**
 * Whether to serve a shared kind. Not enabled: never. Enabled: only while the other provider is known to be stopped;
 * running or unknown (its Lease unreadable since we started) refuses, as two providers on one pool is the harm.
 */
export function decideServing(enabled: boolean, provider: ProviderState): { serve: boolean; reason: ServingReason } {
  if (!enabled) return { serve: false, reason: "NotEnabled" };
  if (provider === "running") return { serve: false, reason: "ServedByAnotherProvider" };
  if (provider === "unknown") return { serve: false, reason: "ProviderStateUnknown" };
  return { serve: true, reason: "Serving" };
}
