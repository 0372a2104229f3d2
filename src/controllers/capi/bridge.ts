/**
 * Starts the Cluster API bridge once `ipam.cluster.x-k8s.io` is served (v1beta2 preferred, v1beta1 otherwise).
 *
 * Choice (issue 5): without Cluster API's CRDs the controller runs normally and the bridge stays off, saying so in
 * the log; discovery is retried every 30 s, so CRDs installed later are picked up without a restart. Readiness does
 * not depend on the bridge.
 */
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import {
  CAPI_IPADDRESS_KIND,
  CAPI_IPADDRESS_PLURAL,
  CAPI_IPAM_GROUP,
  CAPI_IPAM_VERSIONS,
  IPADDRESSCLAIM_KIND,
  IPADDRESSCLAIM_PLURAL,
  type CapiIPAddress,
  type IPAddressClaim,
} from "../../../api/capi/types.js";
import { CLUSTER_NAME_LABEL, type IPAddress, type IPClaim } from "../../../api/v1alpha1/types.js";
import { isNotFound } from "../../kube/errors.js";
import { keyOf } from "../../kube/informer.js";
import type { ResourceType } from "../../kube/resource.js";
import type { Logger } from "../../runtime/logger.js";
import { WorkQueue } from "../../runtime/workqueue.js";
import type { EventSink } from "../events.js";
import { BY_CLAIM, BY_CLUSTER, BY_POOL } from "../ippool/indexes.js";
import type { Store } from "../store.js";
import { CapiClaimReconciler } from "./reconciler.js";
import { capiAddressToClaim, capiAddressToPool, ownedBy, servesClaim } from "./translate.js";

/** RBAC of the bridge: Cluster API claims (and their status) and the IPAddresses it creates. */
export const BRIDGE_RULES = [
  { apiGroups: [CAPI_IPAM_GROUP], resources: ["ipaddressclaims"], verbs: ["get", "list", "watch", "patch"] },
  { apiGroups: [CAPI_IPAM_GROUP], resources: ["ipaddressclaims/status"], verbs: ["patch"] },
  { apiGroups: [CAPI_IPAM_GROUP], resources: ["ipaddresses"], verbs: ["get", "list", "watch", "create", "patch", "delete"] },
  // blockOwnerDeletion on the owner references we set needs update on the owners' finalizers subresource where the
  // OwnerReferencesPermissionEnforcement admission plugin runs.
  { apiGroups: [CAPI_IPAM_GROUP], resources: ["ipaddressclaims/finalizers"], verbs: ["update"] },
  { apiGroups: ["ipam.metal3.io"], resources: ["ippools/finalizers"], verbs: ["update"] },
];

/** The newest IPAM version served, or undefined when Cluster API's IPAM CRDs are not installed. */
export async function discoverCapiIpamVersion(kc: KubeConfig): Promise<string | undefined> {
  const api = kc.makeApiClient(CustomObjectsApi);
  for (const version of CAPI_IPAM_VERSIONS) {
    try {
      await api.listClusterCustomObject({ group: CAPI_IPAM_GROUP, version, plural: IPADDRESSCLAIM_PLURAL, limit: 1 });
      return version;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return undefined;
}

const type = (version: string, kind: string, plural: string): ResourceType => ({ group: CAPI_IPAM_GROUP, version, kind, plural, namespaced: true });

export interface BridgeOptions {
  concurrency: number;
  logger: Logger;
  events: EventSink;
  /** Enqueues a pool of the pool controller (Cluster API IPAddresses hold addresses of our pools). */
  enqueuePool: (key: string) => void;
  /** How often discovery is retried while Cluster API's IPAM is not served. Default 30 s. */
  discoveryRetryMs?: number;
}

export class CapiBridge {
  private queue?: WorkQueue;
  private retry?: NodeJS.Timeout;
  private stopped = false;
  version?: string;

  constructor(
    private readonly store: Store,
    private readonly options: BridgeOptions,
  ) {}

  /** Starts now if Cluster API's IPAM is served, else keeps looking (every 30 s by default). Never rejects for a missing API. */
  async start(): Promise<void> {
    const version = await discoverCapiIpamVersion(this.store.kubeConfig).catch(() => undefined);
    if (version) return await this.startWith(version);
    this.options.logger.info("Cluster API IPAM (ipam.cluster.x-k8s.io) is not served; the IPAddressClaim bridge is off until it is");
    this.retry = setInterval(() => void this.tryLater(), this.options.discoveryRetryMs ?? 30_000);
  }

  private async tryLater(): Promise<void> {
    const version = await discoverCapiIpamVersion(this.store.kubeConfig).catch(() => undefined);
    if (!version || this.stopped || this.queue) return;
    clearInterval(this.retry);
    await this.startWith(version);
  }

  private async startWith(version: string): Promise<void> {
    const store = this.store;
    const claims = store.informerFor<IPAddressClaim>(type(version, IPADDRESSCLAIM_KIND, IPADDRESSCLAIM_PLURAL));
    const addresses = store.informerFor<CapiIPAddress>(type(version, CAPI_IPADDRESS_KIND, CAPI_IPADDRESS_PLURAL));
    claims.addIndex(BY_POOL, (c) => (servesClaim(c) ? [`${c.metadata.namespace ?? ""}/${c.spec.poolRef.name}`] : []));
    claims.addIndex(BY_CLUSTER, (c) => {
      const name = c.spec?.clusterName || c.metadata.labels?.[CLUSTER_NAME_LABEL];
      return name ? [`${c.metadata.namespace ?? ""}/${name}`] : [];
    });
    addresses.addIndex(BY_POOL, capiAddressToPool);
    addresses.addIndex(BY_CLAIM, (a) => [capiAddressToClaim(a)]);
    store.capiClaims = claims;
    store.capiAddresses = addresses;
    const reconciler = new CapiClaimReconciler(store, claims, addresses, version, this.options.events, this.options.logger);
    const queue = new WorkQueue((key) => reconciler.reconcile(key), {
      concurrency: this.options.concurrency,
      onError: (key, err) => this.options.logger.error("IPAddressClaim reconcile failed; retrying with backoff", { claim: key, error: err instanceof Error ? err.message : String(err) }),
    });
    this.queue = queue;
    this.version = version;
    this.wire(queue, claims, addresses);
    await Promise.all([claims.start(), addresses.start()]);
    queue.start();
    this.options.logger.info("IPAddressClaim bridge started", { version });
  }

  /** Watch mappers: everything that can change a claim's outcome enqueues the claim. */
  private wire(queue: WorkQueue, claims: Store["capiClaims"] & object, addresses: Store["capiAddresses"] & object): void {
    const store = this.store;
    const ifClaimExists = (key: string): void => {
      const [ns, name] = [key.slice(0, key.indexOf("/")), key.slice(key.indexOf("/") + 1)];
      if (claims.get(ns, name)) queue.add(key);
    };
    claims.on((_k, c: IPAddressClaim) => queue.add(keyOf(c)));
    addresses.on((_k, a: CapiIPAddress) => {
      ifClaimExists(capiAddressToClaim(a));
      capiAddressToPool(a).forEach(this.options.enqueuePool);
    });
    store.claims.on((_k, c: IPClaim) => {
      const owner = claims.get(c.metadata.namespace ?? "", c.metadata.name ?? "");
      if (owner && ownedBy(c, owner)) queue.add(keyOf(c));
    });
    store.addresses.on((_k, a: IPAddress) => {
      if (a.spec?.claim?.name) ifClaimExists(`${a.metadata.namespace ?? ""}/${a.spec.claim.name}`);
    });
    store.pools.on((_k, p) => claims.byIndex(BY_POOL, keyOf(p)).forEach((c) => queue.add(keyOf(c))));
    store.clusters.on((_k, cl) => {
      // A claim's Cluster is its own (spec.clusterName or label) or, failing that, its pool's.
      const viaPools = store.pools.byIndex(BY_CLUSTER, keyOf(cl)).flatMap((p) => claims.byIndex(BY_POOL, keyOf(p)));
      [...claims.byIndex(BY_CLUSTER, keyOf(cl)), ...viaPools].forEach((c) => queue.add(keyOf(c)));
    });
  }

  async idle(): Promise<void> {
    await this.queue?.onIdle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.retry);
    await this.queue?.shutdown();
  }
}
