/**
 * What the control-plane endpoint guard (endpointguard.ts) reads, on every replica (the webhook runs on all; the
 * leader's caches are not there):
 * - who holds an address: a per-replica index of every IPAddress of both kinds (Metal3's `ipam.metal3.io` and Cluster
 *   API's `ipam.cluster.x-k8s.io`), fed by list+watch (src/kube/informer.ts) and keeping of each object only its name,
 *   namespace, resourceVersion and one `address holder` string, indexed by address. A review costs one map lookup
 *   whatever the number of addresses; memory is one small object and one index entry per IPAddress. It starts with
 *   the first review (a replica in a cluster without Cluster API never spends it), and a review waits for its first
 *   list until its deadline;
 * - the cluster's own endpoint claim and the address it is bound to (two GETs, quorum reads: the claim may have been
 *   bound an instant ago by the mutating webhook's request);
 * - the namespace's endpoint rule annotation (one GET).
 * Every read rejects on failure and when the index is not in sync: the guard then refuses with 500 (fail closed).
 */
import type { Kube } from "../kube/access.js";
import { servedVersion } from "../kube/discovery.js";
import { isNotFound } from "../kube/errors.js";
import { Informer } from "../kube/informer.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import { CAPI_IPADDRESS, CAPI_IPADDRESSCLAIM, IPADDRESS, resourceType } from "../../api/registry.js";
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { IPAddress } from "../../api/v1alpha1/types.js";
import { canonicalAddress } from "../ipam/address.js";
import { ENDPOINT_POOLS_NAMESPACE_ANNOTATION, type Holder, type OwnClaim } from "../ipam/endpoint-guard.js";
import type { Logger } from "../runtime/logger.js";

/** The guard's reads. */
export interface EndpointReads {
  /** Holders of `address` (canonical text). Rejects when the index is not in sync by `deadline`. */
  holders(address: string, deadline?: number): Promise<Holder[]>;
  /** The IPAddressClaim `name` of `namespace` and the address it is bound to; undefined when there is none. */
  endpointClaim(namespace: string, name: string): Promise<OwnClaim | undefined>;
  /** The value of the namespace's endpoint rule annotation; undefined when unset. */
  namespaceRule(namespace: string): Promise<string | undefined>;
}

/** RBAC of the guard's reads, cluster-wide: the index's list and watch, the claim, the namespace. */
export const ENDPOINT_GUARD_RULES = [
  { apiGroups: [IPADDRESS.group], resources: [IPADDRESS.plural], verbs: ["list", "watch"] },
  { apiGroups: [CAPI_IPADDRESS.group], resources: [CAPI_IPADDRESS.plural], verbs: ["list", "watch"] },
  {
    apiGroups: [CAPI_IPADDRESSCLAIM.group],
    resources: [CAPI_IPADDRESSCLAIM.plural, CAPI_IPADDRESS.plural],
    verbs: ["get"],
  },
  { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
];

const NAMESPACES = { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false };

/** What the index keeps of one IPAddress. */
interface Held extends KubeObject {
  /** The canonical address; "" when the object holds none. */
  address: string;
  holder: Holder;
}

function held(received: KubeObject, holder: Holder, address: unknown): Held {
  const { name, namespace, resourceVersion } = received.metadata;
  return {
    metadata: { name, namespace, resourceVersion },
    address: (typeof address === "string" && canonicalAddress(address)) || "",
    holder,
  };
}

/** An IPAddress of Metal3's kind, as the index keeps it: its IPClaim holds it. */
function keepMetal3(received: KubeObject): KubeObject {
  const spec = (received as Partial<IPAddress>).spec;
  const namespace = received.metadata.namespace ?? "";
  return held(
    received,
    {
      claimKind: "IPClaim",
      namespace: spec?.claim?.namespace || namespace,
      claimName: spec?.claim?.name ?? "",
      pool: `IPPool/${spec?.pool?.name ?? ""}`,
    },
    spec?.address,
  );
}

/** A Cluster API IPAddress, as the index keeps it: its IPAddressClaim holds it. */
function keepCapi(received: KubeObject): KubeObject {
  const spec = (received as Partial<CapiIPAddress>).spec;
  return held(
    received,
    {
      claimKind: "IPAddressClaim",
      namespace: received.metadata.namespace ?? "",
      claimName: spec?.claimRef?.name ?? "",
      pool: `${spec?.poolRef?.kind ?? ""}/${spec?.poolRef?.name ?? ""}`,
    },
    spec?.address,
  );
}

const ADDRESS_INDEX = "address";

/** The index: its informers and the promise of their first lists. */
interface Index {
  informers: Informer<Held>[];
  listed: Promise<unknown>;
}

/** Resolves once every informer reflects a list; rejects shortly before `deadline` (default 5 s from now) otherwise. */
function waitSynced(informers: readonly Informer<Held>[], listed: Promise<unknown>, deadline?: number): Promise<void> {
  if (informers.every((i) => i.synced)) return Promise.resolve();
  const left = deadline === undefined ? 5_000 : Math.max(0, deadline - performance.now() - 250);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the index of held addresses is not in sync yet")), left);
    listed.then(
      () => {
        clearTimeout(timer);
        if (informers.every((i) => i.synced)) resolve();
        else reject(new Error("the index of held addresses is not in sync"));
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** The reads through the API server; the index starts with the first call of `holders`. */
export function kubeEndpointReads(kube: Kube, logger: Logger): EndpointReads & { stop(): void } {
  let index: Promise<Index> | undefined;
  let opened: Index | undefined;
  let claimVersion: Promise<(typeof CAPI_IPADDRESSCLAIM.versions)[number] | undefined> | undefined;
  const namespaces = new ResourceClient<KubeObject>(kube, NAMESPACES);
  const open = async (): Promise<Index> => {
    const version = await servedVersion(kube, CAPI_IPADDRESS);
    const kinds: [ResourceClient<Held>, (o: KubeObject) => KubeObject][] = [
      [new ResourceClient<Held>(kube, resourceType(IPADDRESS)), keepMetal3],
    ];
    if (version) kinds.push([new ResourceClient<Held>(kube, resourceType(CAPI_IPADDRESS, version)), keepCapi]);
    const child = logger.child({ component: "endpoint-index" });
    const informers = kinds.map(([client, keep]) => new Informer<Held>(kube, client, { logger: child, keep }));
    for (const informer of informers) informer.addIndex(ADDRESS_INDEX, (o) => (o.address ? [o.address] : []));
    opened = { informers, listed: Promise.all(informers.map((i) => i.start())) };
    return opened;
  };
  const capiVersion = () => (claimVersion ??= servedVersion(kube, CAPI_IPADDRESSCLAIM));
  return {
    async holders(address, deadline) {
      index ??= open().catch((err: unknown) => {
        index = undefined;
        throw err;
      });
      const { informers, listed } = await index;
      await waitSynced(informers, listed, deadline);
      return informers.flatMap((i) => i.byIndex(ADDRESS_INDEX, address).map((o) => o.holder));
    },
    async endpointClaim(namespace, name) {
      const version = await capiVersion();
      if (!version) return undefined;
      let claim: IPAddressClaim;
      try {
        claim = await new ResourceClient<IPAddressClaim>(kube, resourceType(CAPI_IPADDRESSCLAIM, version)).get(
          namespace,
          name,
        );
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
      const own: OwnClaim = {
        deleting: Boolean(claim.metadata.deletionTimestamp),
        pool: `${claim.spec?.poolRef?.kind ?? ""}/${claim.spec?.poolRef?.name ?? ""}`,
      };
      const addressName = claim.status?.addressRef?.name;
      if (!addressName) return own;
      try {
        const address = await new ResourceClient<CapiIPAddress>(kube, resourceType(CAPI_IPADDRESS, version)).get(
          namespace,
          addressName,
        );
        const text = canonicalAddress(address.spec?.address ?? "");
        return text ? { ...own, address: text } : own;
      } catch (err) {
        if (isNotFound(err)) return own;
        throw err;
      }
    },
    async namespaceRule(namespace) {
      const ns = await namespaces.get("", namespace);
      return ns.metadata.annotations?.[ENDPOINT_POOLS_NAMESPACE_ANNOTATION];
    },
    stop() {
      for (const informer of opened?.informers ?? []) informer.stop();
    },
  };
}
