/**
 * The IPClaim lifecycle (Metal3's claim API, spec §3) as the pool pass drives it. IPClaims name a pool by name alone,
 * so only kinds that say `style.servesIPClaims` (Metal3's IPPool) take them; their records are ipam.metal3.io IPAddresses.
 */
import {
  CLUSTER_NAME_LABEL,
  IPCLAIM_FINALIZER,
  IPCLAIM_KIND,
  type IPAddress,
  type IPClaim,
  type IPPool,
} from "../../../api/v1alpha1/types.js";
import type { Holder } from "../../ipam/allocator.js";
import { keyOf } from "../../kube/informer.js";
import type { KubeObject } from "../../kube/resource.js";
import { pauseState } from "../clusters.js";
import { hasFinalizer } from "../meta.js";
import type { PoolKind, PoolRecord } from "../pools/kind.js";
import type { ClaimApi, ClaimWork, Pass } from "../pools/pass.js";
import type { Store } from "../store.js";
import { applyClaimAction, holderOf, releaseAddress } from "./claims.js";
import { ClaimIndex } from "../pools/claimindex.js";
import { planClaim } from "./plan.js";
import { addressToPool, claimToPool } from "./indexes.js";
import type { Metal3Caches } from "./caches.js";

/** The selectable field naming the pool of an IPAddress (field selector, and how to read it where unsupported). */
const ADDRESS_POOL_FIELD = { path: "spec.pool.name", read: (a: IPAddress): string | undefined => a.spec?.pool?.name };

/** The Cluster a claim belongs to (spec §4): its own label, else its pool's. */
export function claimClusterName(claim: IPClaim, pool: IPPool | undefined): string | undefined {
  return claim.metadata.labels?.[CLUSTER_NAME_LABEL] ?? pool?.spec?.clusterName ?? undefined;
}

export class IPClaimApi implements ClaimApi {
  readonly claimKind = IPCLAIM_KIND;
  readonly recordKind = "IPAddress";
  readonly index: ClaimIndex<IPClaim, IPAddress>;

  constructor(
    private readonly store: Store,
    private readonly caches: Pick<Metal3Caches, "claims" | "addresses">,
  ) {
    this.index = new ClaimIndex<IPClaim, IPAddress>({
      claimCache: () => caches.claims,
      recordCache: () => caches.addresses,
      claimBelongsTo: (claim, key) => claimToPool(claim) === key,
      recordBelongsTo: (address, key) => addressToPool(address) === key,
      claimNameOf: (address) => address.spec?.claim?.name,
    });
  }

  serves(kind: PoolKind): boolean {
    return kind.style.servesIPClaims;
  }

  interrupted(claim: KubeObject): boolean {
    return hasFinalizer(claim.metadata, IPCLAIM_FINALIZER);
  }

  holderOf(record: PoolRecord): Holder {
    return holderOf(record as IPAddress);
  }

  async listRecords(pass: Pick<Pass, "ref">, notOlderThan: string | undefined): Promise<void> {
    const { addresses } = this.caches;
    await this.store.refreshWhere(addresses, pass.ref.namespace, ADDRESS_POOL_FIELD, pass.ref.name, notOlderThan);
  }

  work(pass: Pass, object: KubeObject): ClaimWork {
    const claim = object as IPClaim;
    const pool = pass.pool as IPPool | undefined;
    const { ctx } = pass;
    return {
      claim,
      decide: () => {
        const action = planClaim({
          claim,
          pool,
          claimAddresses: this.index.claimRecords(keyOf(claim)),
          pause: pauseState(claim.metadata, claimClusterName(claim, pool), this.store.lookupCluster),
          allocator: ctx.allocator,
          ...(pass.allocationBlocked ? { allocationBlocked: pass.allocationBlocked } : {}),
          addressNamed: (name) => this.caches.addresses.get(claim.metadata.namespace ?? "", name),
          onCollision: pass.onCollision,
          heldByAnother: pass.heldByAnother,
        });
        return { write: () => applyClaimAction(ctx, action), settled: action.kind === "bind" };
      },
    };
  }

  /**
   * IPAddresses made for a claim that no longer exists (Metal3 leaks them, its issue 694). Only addresses owned by an
   * IPClaim qualify, so person-made reservations stay; the claim's absence is confirmed with the API server.
   */
  async cleanupOrphans(pass: Pass, candidates?: readonly PoolRecord[]): Promise<void> {
    for (const candidate of (candidates ?? this.index.recordsOf(pass.key)) as IPAddress[]) {
      // Candidates may be snapshots from a change log: act on the cached record, if it is still there.
      const address = this.caches.addresses.get(candidate.metadata.namespace ?? "", candidate.metadata.name ?? "");
      if (!address || address.metadata.uid !== candidate.metadata.uid) continue;
      const owner = (address.metadata.ownerReferences ?? []).find((o) => o.kind === IPCLAIM_KIND);
      const claimName = address.spec?.claim?.name;
      if (!owner || !claimName) continue;
      // Its claim left with `clusterctl move` and this address stayed with its pool: still in use there (spec §7).
      if (this.store.movedAway.has(owner.uid)) continue;
      const cached = this.caches.claims.get(address.metadata.namespace ?? "", claimName);
      if (cached && cached.metadata.uid === owner.uid) continue;
      const live = await this.store.fetch(this.caches.claims, address.metadata.namespace ?? "", claimName);
      if (live && live.metadata.uid === owner.uid) continue;
      pass.ctx.log.info("Releasing IPAddress of a claim that is gone", {
        ipAddress: address.metadata.name,
        claim: claimName,
      });
      await releaseAddress(pass.ctx, address);
    }
  }
}
