/**
 * The lifecycle of control-plane endpoint claims (the `IPAddressClaim`s the endpoint webhook makes, labelled
 * {@link ENDPOINT_CLAIM_LABEL}) beside the ordinary claim lifecycle, which allocates and releases them like any other:
 *
 * - Once its Cluster exists, the claim gets an owner reference to it, so `clusterctl move` carries the claim with
 *   the Cluster and the garbage collector deletes it (and the pool pass releases its address) when the Cluster goes.
 *   The same patch removes {@link ENDPOINT_PENDING_LABEL} (also from a claim that came owned, e.g. moved), so the
 *   webhook's count of claims waiting for their Cluster finds the waiting ones alone.
 * - Nothing is written while the Cluster is paused or the claim is leaving (deleting, moved by clusterctl).
 * - A claim whose Cluster does not exist {@link EndpointClaimOptions.graceMs} after the claim's creation (the create
 *   that made it was refused by a later webhook, or never retried) is deleted: no address is held beyond the grace.
 *   A claim already owned by a Cluster is left to the garbage collector.
 *
 * The decision is pure ({@link planEndpointClaim}); {@link EndpointClaims} is the thin loop that applies it.
 */
import type { IPAddressClaim } from "../../../api/capi/types.js";
import { CAPI_IPADDRESSCLAIM } from "../../../api/registry.js";
import { CLUSTER_KIND } from "../../../api/capi/types.js";
import { CLUSTER_NAME_LABEL, type OwnerReference } from "../../../api/v1alpha1/types.js";
import { ENDPOINT_CLAIM_LABEL, ENDPOINT_PENDING_LABEL, endpointClaimName } from "../../ipam/endpoint.js";
import { isNotFound } from "../../kube/errors.js";
import { keyOf, type Informer } from "../../kube/informer.js";
import type { Logger } from "../../runtime/logger.js";
import { WorkQueue } from "../../runtime/workqueue.js";
import { clusterPaused, type Cluster, type PauseState } from "../clusters.js";
import { isDeletedForMove, isDeleting } from "../meta.js";
import type { Store } from "../store.js";

/**
 * Pause as the allocation of `claim` sees it: an endpoint claim is made while its Cluster is being admitted, before
 * the Cluster exists, so a missing Cluster does not hold its allocation (a paused one still does).
 */
export function endpointAllocationPause(claim: IPAddressClaim, pause: PauseState): PauseState {
  if (pause.paused || !pause.clusterMissing || claim.metadata.labels?.[ENDPOINT_CLAIM_LABEL] === undefined)
    return pause;
  return { paused: false };
}

/** RBAC of the loop: a claim whose Cluster never came is deleted (owner references are patches, in BRIDGE_RULES). */
export const ENDPOINT_CLAIM_RULES = [
  { apiGroups: [CAPI_IPADDRESSCLAIM.group], resources: [CAPI_IPADDRESSCLAIM.plural], verbs: ["delete"] },
];

export type EndpointClaimAction =
  | { kind: "none"; why: string }
  /** Owned by its Cluster: `owner` added when not there yet, {@link ENDPOINT_PENDING_LABEL} removed. */
  | { kind: "own"; owner?: OwnerReference }
  | { kind: "delete" }
  /** Look again in `ms`: the grace of a claim without its Cluster runs. */
  | { kind: "wait"; ms: number };

export interface EndpointClaimInput {
  claim: IPAddressClaim;
  /** The Cluster the claim's label names, if it exists. */
  cluster: Cluster | undefined;
  /** `apiVersion` of Clusters as served (the owner reference's). */
  clusterApiVersion: string;
  now: Date;
  graceMs: number;
}

/** What to do with one claim (pure). */
export function planEndpointClaim(input: EndpointClaimInput): EndpointClaimAction {
  const { claim, cluster } = input;
  const meta = claim.metadata;
  if (meta.labels?.[ENDPOINT_CLAIM_LABEL] === undefined) return { kind: "none", why: "not an endpoint claim" };
  if (isDeleting(meta) || isDeletedForMove(meta)) return { kind: "none", why: "leaving" };
  const clusterName = meta.labels[CLUSTER_NAME_LABEL];
  if (!clusterName) return { kind: "none", why: "names no Cluster" };
  if (cluster) {
    if (clusterPaused(cluster)) return { kind: "none", why: "Cluster paused" };
    if (isDeleting(cluster.metadata)) return { kind: "none", why: "Cluster deleting" };
    const uid = cluster.metadata.uid ?? "";
    const pendingLabel = meta.labels[ENDPOINT_PENDING_LABEL] !== undefined;
    if ((meta.ownerReferences ?? []).some((o) => o.uid === uid))
      return pendingLabel ? { kind: "own" } : { kind: "none", why: "owned" };
    return {
      kind: "own",
      owner: { apiVersion: input.clusterApiVersion, kind: CLUSTER_KIND, name: clusterName, uid },
    };
  }
  // Owned by a Cluster that is gone: the garbage collector deletes the claim, as it does every dependent.
  if ((meta.ownerReferences ?? []).some((o) => o.kind === CLUSTER_KIND)) return { kind: "none", why: "owner gone" };
  const created = Date.parse(meta.creationTimestamp ?? "");
  if (Number.isNaN(created)) return { kind: "none", why: "no creationTimestamp" };
  const left = created + input.graceMs - input.now.getTime();
  return left > 0 ? { kind: "wait", ms: left } : { kind: "delete" };
}

export interface EndpointClaimOptions {
  store: Store;
  claims: Informer<IPAddressClaim>;
  logger: Logger;
  /** How long a claim waits for its Cluster, from its creation. */
  graceMs: number;
}

/** Applies {@link planEndpointClaim} to every endpoint claim, on claim and Cluster events and when a grace ends. */
export class EndpointClaims {
  private readonly queue: WorkQueue;

  constructor(private readonly options: EndpointClaimOptions) {
    this.queue = new WorkQueue((key) => this.reconcile(key), {
      concurrency: 2,
      onError: (key, err) =>
        options.logger.warn("Endpoint claim reconcile failed; retrying", {
          ipAddressClaim: key,
          error: err instanceof Error ? err.message : String(err),
        }),
    });
    options.claims.on((_type, claim) => {
      if (claim.metadata.labels?.[ENDPOINT_CLAIM_LABEL] !== undefined) this.queue.add(keyOf(claim));
    });
    options.store.clusters.on((_type, cluster) => {
      const namespace = cluster.metadata.namespace ?? "";
      this.queue.add(`${namespace}/${endpointClaimName(cluster.metadata.name ?? "")}`);
    });
  }

  start(): void {
    for (const claim of this.options.claims.list())
      if (claim.metadata.labels?.[ENDPOINT_CLAIM_LABEL] !== undefined) this.queue.add(keyOf(claim));
    this.queue.start();
  }

  async stop(): Promise<void> {
    await this.queue.shutdown();
  }

  private async reconcile(key: string): Promise<{ requeueAfterMs?: number } | void> {
    const { store, claims, logger } = this.options;
    const [namespace = "", name = ""] = key.split("/");
    const claim = claims.get(namespace, name);
    if (!claim) return;
    const clusterName = claim.metadata.labels?.[CLUSTER_NAME_LABEL] ?? "";
    const plan = (cluster: Cluster | undefined) =>
      planEndpointClaim({
        claim,
        cluster,
        clusterApiVersion: store.clusters.client.apiVersion(),
        now: new Date(),
        graceMs: this.options.graceMs,
      });
    let action = plan(store.lookupCluster(namespace, clusterName));
    // The cache may lag behind a Cluster created a moment ago: a deletion is decided on a live read only.
    if (action.kind === "delete" && clusterName)
      action = plan(await store.fetch(store.clusters, namespace, clusterName));
    switch (action.kind) {
      case "none":
        return;
      case "wait":
        return { requeueAfterMs: action.ms };
      case "own":
        try {
          await store.patchMetadata(claims, claim, {
            ...(action.owner ? { ownerReferences: [...(claim.metadata.ownerReferences ?? []), action.owner] } : {}),
            // A merge patch's null removes the label.
            labels: { [ENDPOINT_PENDING_LABEL]: null } as unknown as Record<string, string>,
          });
        } catch (err) {
          // A conflict is retried by the queue, decided again on the claim the watch brings.
          if (isNotFound(err)) return;
          throw err;
        }
        logger.info("Endpoint claim owned by its Cluster", { namespace, ipAddressClaim: name, cluster: clusterName });
        return;
      case "delete":
        logger.info("Deleting an endpoint claim whose Cluster never came", {
          namespace,
          ipAddressClaim: name,
          cluster: clusterName,
          graceMs: this.options.graceMs,
        });
        await store.delete(claims, claim);
        return;
    }
  }
}
