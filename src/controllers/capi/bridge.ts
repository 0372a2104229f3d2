/**
 * Starts the Cluster API bridge once `ipam.cluster.x-k8s.io` is served (v1beta2 preferred, v1beta1 otherwise).
 *
 * Without Cluster API's CRDs the controller runs normally and the bridge stays off, saying so in the log; discovery
 * is retried every 30 s, so CRDs installed later are picked up without a restart. Readiness does not depend on the
 * bridge.
 */
import type { CapiIPAddress, IPAddressClaim } from "../../../api/capi/types.js";
import {
  CAPI_IPADDRESS,
  CAPI_IPADDRESSCLAIM,
  IPPOOL,
  resourceType,
  type ClusterApiVersion,
} from "../../../api/registry.js";
import { servedVersion } from "../../kube/discovery.js";
import type { Informer } from "../../kube/informer.js";
import type { Logger } from "../../runtime/logger.js";
import { BY_CLAIM, BY_CLUSTER, BY_POOL, BY_POOL_ADDRESS, poolAddressKey } from "../pools/indexes.js";
import type { PoolKinds } from "../pools/registry.js";
import type { CapiInformers, Store } from "../store.js";
import {
  capiAddressToClaim,
  capiAddressToPool,
  capiClaimToCluster,
  capiClaimToPool,
  capiClaimWaits,
} from "./translate.js";

/** RBAC of the Cluster API side: claims (and their status) and the IPAddresses made for them. */
export const BRIDGE_RULES = [
  {
    apiGroups: [CAPI_IPADDRESSCLAIM.group],
    resources: [CAPI_IPADDRESSCLAIM.plural],
    verbs: ["get", "list", "watch", "patch"],
  },
  { apiGroups: [CAPI_IPADDRESSCLAIM.group], resources: [`${CAPI_IPADDRESSCLAIM.plural}/status`], verbs: ["patch"] },
  {
    apiGroups: [CAPI_IPADDRESS.group],
    resources: [CAPI_IPADDRESS.plural],
    verbs: ["get", "list", "watch", "create", "patch", "delete"],
  },
  // blockOwnerDeletion on the owner references we set needs update on the owners' finalizers subresource where the
  // OwnerReferencesPermissionEnforcement admission plugin runs.
  {
    apiGroups: [CAPI_IPADDRESSCLAIM.group],
    resources: [`${CAPI_IPADDRESSCLAIM.plural}/finalizers`],
    verbs: ["update"],
  },
  { apiGroups: [IPPOOL.group], resources: [`${IPPOOL.plural}/finalizers`], verbs: ["update"] },
];

/**
 * The newest IPAM version served, or undefined when Cluster API's IPAM CRDs are not installed or discovery failed
 * (the bridge then retries). Claims decide: IPAddresses are spoken at the same version, which Cluster API serves
 * together with it.
 */
const discoverCapiIpamVersion = (store: Store): Promise<ClusterApiVersion | undefined> =>
  servedVersion(store.kubeConfig, CAPI_IPADDRESSCLAIM).catch(() => undefined);

export interface BridgeOptions {
  logger: Logger;
  /**
   * Enqueues a pool of the pool controller. Cluster API claims are served in their pool's pass, by the same queue
   * slot and allocator as IPClaims (spec §3.4), so every event of the bridge's kinds becomes a pool key.
   */
  /** Queues a pool's pass; `waiting`: a claim of it waits on that pass (see src/runtime/workqueue.ts). */
  enqueuePool: (key: string, waiting?: boolean) => void;
  /** The pool kinds served: a claim or record is mapped onto its pool's key through them. */
  kinds: PoolKinds;
  /** How often discovery is retried while Cluster API's IPAM is not served. Default 30 s. */
  discoveryRetryMs?: number;
  /** Told once the informers exist, before they start (so a handler added then sees every object). */
  onInformers?: (capi: CapiInformers) => void;
  /** Told once the claims' informer has synced (the endpoint claims' loop starts on it). */
  onSynced?: (claims: Informer<IPAddressClaim>) => void;
}

/**
 * Finds Cluster API's IPAM API, starts its informers and maps their events onto pool keys. It decides nothing and
 * writes nothing itself: the pool reconciler plans and applies Cluster API claims (capi/plan.ts, capi/claims.ts).
 */
export class CapiBridge {
  private retry?: NodeJS.Timeout;
  private stopped = false;
  private started = false;
  version?: ClusterApiVersion;

  constructor(
    private readonly store: Store,
    private readonly options: BridgeOptions,
  ) {}

  /** Starts now if Cluster API's IPAM is served, else keeps looking (every 30 s by default). Never rejects for a missing API. */
  async start(): Promise<void> {
    const version = await discoverCapiIpamVersion(this.store);
    // Known in the same tick as the informers are made (startWith runs synchronously up to its first await).
    this.store.capiKnown = true;
    if (version) return await this.startWith(version);
    this.options.logger.info(
      "Cluster API IPAM (ipam.cluster.x-k8s.io) is not served; the IPAddressClaim bridge is off until it is",
    );
    this.retry = setInterval(() => void this.tryLater(), this.options.discoveryRetryMs ?? 30_000);
  }

  private async tryLater(): Promise<void> {
    const version = await discoverCapiIpamVersion(this.store);
    if (!version || this.stopped || this.started) return;
    clearInterval(this.retry);
    await this.startWith(version);
  }

  private async startWith(version: ClusterApiVersion): Promise<void> {
    this.started = true;
    const store = this.store;
    const claims = store.informerFor<IPAddressClaim>(resourceType(CAPI_IPADDRESSCLAIM, version));
    const addresses = store.informerFor<CapiIPAddress>(resourceType(CAPI_IPADDRESS, version));
    const { kinds } = this.options;
    claims.addIndex(BY_POOL, (c) => capiClaimToPool(kinds, c));
    store.journal(claims, BY_POOL);
    claims.addIndex(BY_CLUSTER, capiClaimToCluster);
    addresses.addIndex(BY_POOL, (a) => capiAddressToPool(kinds, a));
    store.journal(addresses, BY_POOL);
    addresses.addIndex(BY_CLAIM, (a) => [capiAddressToClaim(a)]);
    addresses.addIndex(BY_POOL_ADDRESS, (a) =>
      a.spec?.address ? capiAddressToPool(kinds, a).map((pool) => poolAddressKey(pool, a.spec.address)) : [],
    );
    const enqueue = this.options.enqueuePool;
    claims.on((_kind, c) => {
      const waiting = capiClaimWaits(c);
      for (const key of capiClaimToPool(kinds, c)) enqueue(key, waiting);
    });
    claims.on(store.recordMovedAway);
    addresses.on((_kind, a) => capiAddressToPool(kinds, a).forEach((key) => enqueue(key)));
    store.capi = { claims, addresses, version };
    this.options.onInformers?.(store.capi);
    this.version = version;
    await Promise.all([claims.start(), addresses.start()]);
    this.options.logger.info("IPAddressClaim bridge started", { version });
    if (!this.stopped) this.options.onSynced?.(claims);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.retry);
  }
}
