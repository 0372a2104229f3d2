/**
 * The Cluster API bridge (spec §5): one call per IPAddressClaim. It never allocates: it ensures an IPClaim of the same
 * name (allocated by the pool controller, so both APIs share one allocator and one queue per pool) and mirrors the
 * result into a Cluster API IPAddress and the claim's status.
 */
import isEqual from "lodash/isEqual.js";
import {
  CAPI_IPADDRESS_FINALIZER,
  IPADDRESSCLAIM_FINALIZER,
  type CapiIPAddress,
  type IPAddressClaim,
} from "../../../api/capi/types.js";
import { Reasons, type IPClaim } from "../../../api/v1alpha1/types.js";
import { isAlreadyExists, isNotFound } from "../../kube/errors.js";
import type { Informer } from "../../kube/informer.js";
import type { Logger } from "../../runtime/logger.js";
import type { ReconcileResult } from "../../runtime/workqueue.js";
import { pauseState } from "../clusters.js";
import type { EventSink } from "../events.js";
import { isDeletedForMove, isDeleting, splitKey } from "../meta.js";
import type { Store } from "../store.js";
import { BY_CLAIM } from "../ippool/indexes.js";
import { capiClaimClusterName, claimStatus, desiredCapiAddress, desiredIPClaim, ownedBy, readyFromIPClaim, servesClaim, type ReadyInput } from "./translate.js";

export class CapiClaimReconciler {
  constructor(
    private readonly store: Store,
    private readonly capiClaims: Informer<IPAddressClaim>,
    private readonly capiAddresses: Informer<CapiIPAddress>,
    private readonly version: string,
    private readonly events: EventSink,
    private readonly logger: Logger,
  ) {}

  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = splitKey(key);
    const claim = this.capiClaims.get(namespace, name);
    if (!claim || !servesClaim(claim)) return;
    // Leaving with `clusterctl move` (deleted for move, or its IPClaim already left): clusterctl strips the finalizers;
    // deleting the IPAddress or IPClaim, or re-creating a missing IPClaim, here would fight the move (spec §7).
    if (isDeletedForMove(claim.metadata) || this.store.movedAway.has(claim.metadata.uid ?? "")) return;
    const log = this.logger.child({ controller: "ipaddressclaim", namespace, name });
    const pool = this.store.pools.get(namespace, claim.spec.poolRef.name);
    const pause = pauseState(claim.metadata, capiClaimClusterName(claim, pool), this.store.lookupCluster);
    if (pause.paused) {
      log.debug("Claim is paused", { why: pause.why });
      return;
    }
    if (isDeleting(claim.metadata)) return await this.reconcileDelete(claim, log);
    const withFinalizer = await this.store.addFinalizer(this.capiClaims, claim, IPADDRESSCLAIM_FINALIZER);
    if (pause.clusterMissing) {
      return await this.writeStatus(withFinalizer, undefined, { status: "False", reason: Reasons.PoolNotReady, message: `Cluster ${pause.clusterMissing} not found` });
    }
    const ipClaim = await this.ensureIPClaim(withFinalizer);
    if (!ipClaim) {
      const message = `IPClaim ${namespace}/${name} already exists and is not owned by this IPAddressClaim`;
      return await this.writeStatus(withFinalizer, undefined, { status: "False", reason: Reasons.AllocationFailed, message });
    }
    const address = ipClaim.status?.address?.name ? this.store.addresses.get(namespace, ipClaim.status.address.name) : undefined;
    if (!address || !pool) return await this.writeStatus(withFinalizer, undefined, readyFromIPClaim(ipClaim));
    const capiAddress = await this.ensureCapiAddress(withFinalizer, desiredCapiAddress(withFinalizer, address, pool, this.capiAddresses.client.apiVersion()));
    await this.writeStatus(withFinalizer, capiAddress.metadata.name, { status: "True", reason: Reasons.Allocated, message: `Allocated ${capiAddress.spec.address}` });
  }

  /** The claim's IPClaim, created when missing; undefined when a same-named IPClaim belongs to someone else. */
  private async ensureIPClaim(claim: IPAddressClaim): Promise<IPClaim | undefined> {
    const namespace = claim.metadata.namespace ?? "";
    let ipClaim = this.store.claims.get(namespace, claim.metadata.name ?? "");
    if (!ipClaim) {
      try {
        ipClaim = await this.store.create(this.store.claims, desiredIPClaim(claim));
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        ipClaim = await this.store.fetch(this.store.claims, namespace, claim.metadata.name ?? "");
      }
    }
    return ipClaim && ownedBy(ipClaim, claim) ? ipClaim : undefined;
  }

  /**
   * The Cluster API IPAddress of the claim: an existing one (adopted, or ours) wins; a missing one is created (again,
   * if a user deleted it: the values come from the IPClaim's address, so they are identical).
   */
  private async ensureCapiAddress(claim: IPAddressClaim, desired: CapiIPAddress): Promise<CapiIPAddress> {
    const existing = this.capiAddresses.byIndex(BY_CLAIM, `${claim.metadata.namespace ?? ""}/${claim.metadata.name ?? ""}`)[0];
    if (existing) return await this.store.addFinalizer(this.capiAddresses, existing, CAPI_IPADDRESS_FINALIZER);
    try {
      return await this.store.create(this.capiAddresses, desired);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const found = await this.store.fetch(this.capiAddresses, desired.metadata.namespace ?? "", desired.metadata.name ?? "");
      if (!found) throw err;
      return found;
    }
  }

  /** Spec §5.7 order: the Cluster API IPAddress goes first, then the IPClaim (released by the pool controller), the claim's finalizer last. */
  private async reconcileDelete(claim: IPAddressClaim, log: Logger): Promise<ReconcileResult> {
    const namespace = claim.metadata.namespace ?? "";
    for (const address of this.capiAddresses.byIndex(BY_CLAIM, `${namespace}/${claim.metadata.name ?? ""}`)) {
      const unlocked = await this.store.removeFinalizer(this.capiAddresses, address, CAPI_IPADDRESS_FINALIZER);
      if (unlocked) await this.store.delete(this.capiAddresses, unlocked);
    }
    const ipClaim = this.store.claims.get(namespace, claim.metadata.name ?? "");
    if (ipClaim && ownedBy(ipClaim, claim)) {
      if (!isDeleting(ipClaim.metadata)) await this.store.delete(this.store.claims, ipClaim);
      log.debug("Waiting for the IPClaim to be released");
      return; // the IPClaim's deletion event brings us back
    }
    await this.store.removeFinalizer(this.capiClaims, claim, IPADDRESSCLAIM_FINALIZER);
    log.info("Released IPAddressClaim");
  }

  private async writeStatus(claim: IPAddressClaim, addressName: string | undefined, ready: ReadyInput): Promise<void> {
    const status = claimStatus(claim, this.version, addressName, ready, new Date());
    if (isEqual(status, claim.status ?? {})) return;
    const before = readyOf(claim);
    try {
      await this.store.patchStatus(this.capiClaims, claim, status);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    if (ready.status === "False" && (before?.reason !== ready.reason || before.message !== ready.message)) {
      this.events.record(claim, "Warning", ready.reason, ready.message);
    }
  }
}

function readyOf(claim: IPAddressClaim): { reason?: string; message?: string } | undefined {
  const conditions = claim.status?.v1beta2?.conditions ?? claim.status?.conditions;
  return conditions?.find((c) => c.type === "Ready");
}
