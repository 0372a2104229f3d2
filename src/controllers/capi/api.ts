/**
 * The IPAddressClaim lifecycle (Cluster API's IPAM contract, spec §5) for pools of every kind, as the pool pass drives
 * it: written once here and in plan.ts/claims.ts; what differs per kind (finalizers, record names, owners, requests)
 * comes from the pool's {@link PoolKind}.
 */
import { IPADDRESSCLAIM_KIND, type CapiIPAddress, type IPAddressClaim } from "../../../api/capi/types.js";
import { CLUSTER_NAME_LABEL } from "../../../api/v1alpha1/types.js";
import { keyOf } from "../../kube/informer.js";
import type { KubeObject } from "../../kube/resource.js";
import { pauseState } from "../clusters.js";
import { hasFinalizer, isDeletedForMove, isDeleting } from "../meta.js";
import { ClaimIndex } from "../pools/claimindex.js";
import type { PoolKinds } from "../pools/registry.js";
import type { ExternalClaim, ExternalHolding, PoolKind, PoolRecord } from "../pools/kind.js";
import type { CachedRecord } from "../pools/printed.js";
import type { ClaimApi, ClaimWork, Pass } from "../pools/pass.js";
import type { CapiInformers, Store } from "../store.js";
import { applyCapiClaimAction, capiRecordHolder, releaseCapiAddress } from "./claims.js";
import { endpointAllocationPause } from "./endpoint.js";
import { planCapiClaim } from "./plan.js";
import {
  capiAddressToPool,
  capiClaimClusterName,
  capiClaimTarget,
  capiClaimToPool,
  capiHolderName,
  recordPoolSelectors,
} from "./translate.js";

/** Cluster API's printer columns of an IPAddress (its CRDs), for the barrier's printed list (Store.refreshPrinted). */
const CAPI_ADDRESS_COLUMNS = { name: "Name", address: "Address", pool: "Pool Name" };
const cachedAs = (a: CapiIPAddress): CachedRecord => ({ address: a.spec?.address, pool: a.spec?.poolRef?.name });

/** The selectable field naming the pool of a Cluster API IPAddress (not selectable in Cluster API's CRDs: read here). */
const CAPI_ADDRESS_POOL_FIELD = {
  path: "spec.poolRef.name",
  read: (a: CapiIPAddress): string | undefined => a.spec?.poolRef?.name,
};

export class IPAddressClaimApi implements ClaimApi {
  readonly claimKind = IPADDRESSCLAIM_KIND;
  readonly recordKind = "CapiIPAddress";
  readonly index: ClaimIndex<IPAddressClaim, CapiIPAddress>;

  constructor(
    private readonly store: Store,
    private readonly kinds: PoolKinds,
  ) {
    this.index = new ClaimIndex<IPAddressClaim, CapiIPAddress>({
      claimCache: () => store.capi?.claims,
      recordCache: () => store.capi?.addresses,
      claimBelongsTo: (claim, key) => capiClaimToPool(kinds, claim).includes(key),
      recordBelongsTo: (address, key) => capiAddressToPool(kinds, address).includes(key),
      claimNameOf: (address) => address.spec?.claimRef?.name,
    });
  }

  private get capi(): CapiInformers | undefined {
    return this.store.capi;
  }

  serves(): boolean {
    return true;
  }

  interrupted(claim: KubeObject, kind: PoolKind): boolean {
    return hasFinalizer(claim.metadata, kind.finalizers.claim);
  }

  holderOf(record: PoolRecord, pass: Pick<Pass, "kind">): ReturnType<typeof capiRecordHolder> {
    return capiRecordHolder(pass.kind, record as CapiIPAddress);
  }

  async listRecords(pass: Pick<Pass, "kind" | "ref" | "key">, notOlderThan: string | undefined): Promise<void> {
    const capi = this.capi;
    if (!capi) return;
    const { namespace, name } = pass.ref;
    // The API server cannot filter these by the pool's field: the rows of the pool's label and of no label (a record
    // someone else made), or of every record where few are, say which records the cache lacks. A cluster-scoped
    // pool's records live in every namespace: "" reads them all.
    const poolRecords = (): CapiIPAddress[] => this.index.recordsOf(pass.key);
    if (
      await this.store.refreshPrinted(
        capi.addresses,
        namespace,
        CAPI_ADDRESS_COLUMNS,
        CAPI_ADDRESS_POOL_FIELD.path,
        name,
        recordPoolSelectors(name, capi.addresses.countIn(namespace || undefined)),
        notOlderThan,
        cachedAs,
        poolRecords,
      )
    )
      return;
    await this.store.refreshWhere(
      capi.addresses,
      pass.ref.namespace,
      CAPI_ADDRESS_POOL_FIELD,
      pass.ref.name,
      notOlderThan,
    );
  }

  work(pass: Pass, object: KubeObject): ClaimWork {
    const claim = object as IPAddressClaim;
    const capi = this.capi as CapiInformers;
    const { kind, pool, ctx } = pass;
    const refProblem = capiClaimTarget(this.kinds, claim)?.problem;
    return {
      claim,
      decide: () => {
        const action = planCapiClaim({
          claim,
          kind,
          pool,
          claimAddresses: this.index.claimRecords(keyOf(claim)),
          pause: endpointAllocationPause(
            claim,
            pauseState(claim.metadata, capiClaimClusterName(claim, kind, pool), this.store.lookupCluster),
          ),
          allocator: ctx.allocator,
          ...(pass.allocationBlocked ? { allocationBlocked: pass.allocationBlocked } : {}),
          movedAway: this.store.movedAway.has(claim.metadata.uid ?? ""),
          addressNamed: (name) => capi.addresses.get(claim.metadata.namespace ?? "", name),
          onCollision: pass.onCollision,
          addressApiVersion: capi.addresses.client.apiVersion(),
          heldByAnother: pass.heldByAnother,
          now: ctx.now,
          ...(pass.external ? { external: pass.external } : {}),
          ...(refProblem !== undefined ? { refProblem } : {}),
        });
        return { write: () => applyCapiClaimAction(pass, capi, action), settled: action.kind === "bind" };
      },
    };
  }

  /**
   * Cluster API IPAddresses of the pool that we made (the kind's record finalizer) for an IPAddressClaim that is gone:
   * the claim's finalizer was removed by someone else, so its release never ran. Released like IPAddress orphans;
   * those of a claim that left with `clusterctl move` are in use on the other side and stay.
   */
  async cleanupOrphans(pass: Pass, candidates?: readonly PoolRecord[]): Promise<void> {
    const capi = this.capi;
    if (!capi) return;
    for (const candidate of (candidates ?? this.index.recordsOf(pass.key)) as CapiIPAddress[]) {
      // Candidates may be snapshots from a change log: act on the cached record, if it is still there.
      const address = capi.addresses.get(candidate.metadata.namespace ?? "", candidate.metadata.name ?? "");
      if (!address || address.metadata.uid !== candidate.metadata.uid) continue;
      if (!hasFinalizer(address.metadata, pass.kind.finalizers.record)) continue;
      const owner = (address.metadata.ownerReferences ?? []).find((o) => o.kind === IPADDRESSCLAIM_KIND);
      if (!owner || this.store.movedAway.has(owner.uid) || isDeletedForMove(address.metadata)) continue;
      const namespace = address.metadata.namespace ?? "";
      if (capi.claims.get(namespace, address.spec.claimRef.name)?.metadata.uid === owner.uid) continue;
      const live = await this.store.fetch(capi.claims, namespace, address.spec.claimRef.name);
      if (live && live.metadata.uid === owner.uid) continue;
      pass.ctx.log.info("Releasing IPAddress of an IPAddressClaim that is gone", {
        ipAddress: address.metadata.name,
        claim: address.spec.claimRef.name,
      });
      this.leaveOrphanExternally(pass, address);
      await releaseCapiAddress(pass.ctx, pass.kind, capi, address);
    }
  }

  externalClaim(pass: Pass, object: KubeObject): ExternalClaim | undefined {
    const claim = object as IPAddressClaim;
    if (!pass.pool || !this.index.needsAllocation(claim) || this.store.movedAway.has(claim.metadata.uid ?? ""))
      return undefined;
    const clusterName = capiClaimClusterName(claim, pass.kind, pass.pool);
    const pause = endpointAllocationPause(claim, pauseState(claim.metadata, clusterName, this.store.lookupCluster));
    if (pause.paused || pause.clusterMissing) return undefined;
    const namespace = claim.metadata.namespace ?? "";
    return { holder: capiHolderName(pass.kind, namespace, claim.metadata.name ?? ""), claim, cluster: clusterName };
  }

  externalHoldings(pass: Pass): ExternalHolding[] {
    return this.index
      .claimsOf(pass.key)
      .filter((c) => !isDeleting(c.metadata))
      .map((claim) => {
        const record = this.index.recordsOfClaim(keyOf(claim), pass.key)[0];
        return {
          namespace: claim.metadata.namespace ?? "",
          name: claim.metadata.name ?? "",
          cluster: capiClaimClusterName(claim, pass.kind, pass.pool),
          address: record?.spec.address,
          annotations: record?.metadata.annotations,
        };
      });
  }

  /**
   * An orphan's record in an external engine (NetBox) is left there, and said so. An orphan is an IPAddress whose claim
   * is gone without its release: its finalizer removed by hand, or the claim moved away by `clusterctl move` while
   * this process did not see it go (a restart, a lost watch event: `movedAway` lives in memory). In the second case
   * the record is the moved claim's, in use by the other management cluster; deleting it would let NetBox hand its
   * address out again. Leaving a record costs an address until someone deletes it; deleting a live one could give an
   * address to two machines.
   */
  private leaveOrphanExternally(pass: Pass, address: CapiIPAddress): void {
    if (!pass.kind.external) return;
    pass.ctx.log.warn("Left the engine's record of a claim that is gone; delete it there if no cluster uses it", {
      pool: pass.key,
      claim: `${address.metadata.namespace ?? ""}/${address.spec.claimRef.name}`,
      address: address.spec.address,
      cluster: address.metadata.labels?.[CLUSTER_NAME_LABEL],
    });
  }
}
