/**
 * The claim kinds a scenario can drive. A scenario only needs to create a claim, recognise a bound one in a watch
 * event, and read back which address each claim got; the Cluster API kind (IPAddressClaim on an IPPool) plugs in by
 * implementing {@link ClaimKind} the same way as {@link METAL3_IPCLAIM}.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import {
  CAPI_IPADDRESS_KIND,
  CAPI_IPADDRESS_PLURAL,
  CAPI_IPAM_GROUP,
  IPADDRESSCLAIM_KIND,
  IPADDRESSCLAIM_PLURAL,
  type CapiIPAddress,
  type IPAddressClaim,
} from "../../api/capi/types.js";
import {
  GROUP,
  IPPOOL_KIND,
  IPCLAIM_KIND,
  IPCLAIM_PLURAL,
  READY_CONDITION,
  VERSION,
  type IPClaim,
} from "../../api/v1alpha1/types.js";
import { clients, claim } from "../../e2e/support/ipam.js";
import { ResourceClient, type ResourceType } from "../../src/kube/resource.js";

/** What a scenario needs to know about one kind of claim. */
export interface ClaimKind {
  /** Short label for the report, e.g. "IPClaim". */
  readonly label: string;
  /** The claim resource, for the watch that observes binding. */
  readonly claimType: ResourceType;
  /** Creates claim `name` in `namespace` asking IPPool `poolName` (same namespace) for an address. */
  create(kc: KubeConfig, namespace: string, name: string, poolName: string): Promise<void>;
  /** Whether a claim object, as a watch delivers it, is bound: address reference set and Ready=True. */
  isBound(obj: unknown): boolean;
  /**
   * Claim name → address text, for every claim of `namespace` whose address reference resolves to an existing
   * address object (the chain a consumer follows), so a scenario can check that the addresses are distinct.
   */
  boundAddresses(kc: KubeConfig, namespace: string): Promise<Map<string, string>>;
}

function readyTrue(conditions: unknown): boolean {
  if (!Array.isArray(conditions)) return false;
  return conditions.some((c: unknown) => {
    const cond = c as { type?: unknown; status?: unknown } | null;
    return cond?.type === READY_CONDITION && cond.status === "True";
  });
}

/** Metal3's IPClaim (`ipam.metal3.io/v1alpha1`): bound when `status.address.name` is set and Ready=True. */
export const METAL3_IPCLAIM: ClaimKind = {
  label: "IPClaim",
  claimType: { group: GROUP, version: VERSION, plural: IPCLAIM_PLURAL, kind: IPCLAIM_KIND, namespaced: true },
  async create(kc, namespace, name, poolName) {
    await clients(kc).claims.create(namespace, claim(namespace, name, poolName));
  },
  isBound(obj) {
    const status = (obj as Partial<IPClaim> | null)?.status;
    return Boolean(status?.address?.name) && readyTrue(status?.conditions);
  },
  async boundAddresses(kc, namespace) {
    const c = clients(kc);
    const [claims, addresses] = await Promise.all([c.claims.list(namespace), c.addresses.list(namespace)]);
    const byName = new Map(addresses.items.map((a) => [a.metadata.name ?? "", a]));
    const result = new Map<string, string>();
    for (const cl of claims.items) {
      const ref = cl.status?.address?.name;
      const address = ref ? byName.get(ref) : undefined;
      if (address && address.spec.claim.name === cl.metadata.name) result.set(cl.metadata.name ?? "", address.spec.address);
    }
    return result;
  },
};

const capiClaims = (kc: KubeConfig): ResourceClient<IPAddressClaim> => new ResourceClient<IPAddressClaim>(kc, CAPI_CLAIM_TYPE);
const capiAddresses = (kc: KubeConfig): ResourceClient<CapiIPAddress> =>
  new ResourceClient<CapiIPAddress>(kc, { group: CAPI_IPAM_GROUP, version: "v1beta2", plural: CAPI_IPADDRESS_PLURAL, kind: CAPI_IPADDRESS_KIND, namespaced: true });
const CAPI_CLAIM_TYPE: ResourceType = { group: CAPI_IPAM_GROUP, version: "v1beta2", plural: IPADDRESSCLAIM_PLURAL, kind: IPADDRESSCLAIM_KIND, namespaced: true };

/**
 * Cluster API's IPAddressClaim (`ipam.cluster.x-k8s.io/v1beta2`) on one of our pools: bound when `status.addressRef`
 * is set and Ready=True; the address is read from the Cluster API IPAddress it names. The claim is served by the same
 * pool pass as IPClaims (translated in memory, one Cluster API IPAddress as its record), so the two kinds should cost
 * about the same.
 */
export const CAPI_IPADDRESSCLAIM: ClaimKind = {
  label: "IPAddressClaim",
  claimType: CAPI_CLAIM_TYPE,
  async create(kc, namespace, name, poolName) {
    await capiClaims(kc).create(namespace, { metadata: { name, namespace }, spec: { poolRef: { apiGroup: GROUP, kind: IPPOOL_KIND, name: poolName } } });
  },
  isBound(obj) {
    const status = (obj as Partial<IPAddressClaim> | null)?.status;
    return Boolean(status?.addressRef?.name) && readyTrue(status?.conditions);
  },
  async boundAddresses(kc, namespace) {
    const [claims, addresses] = await Promise.all([capiClaims(kc).list(namespace), capiAddresses(kc).list(namespace)]);
    const byName = new Map(addresses.items.map((a) => [a.metadata.name ?? "", a]));
    const result = new Map<string, string>();
    for (const cl of claims.items) {
      const address = byName.get(cl.status?.addressRef?.name ?? "");
      if (address && address.spec.claimRef.name === cl.metadata.name) result.set(cl.metadata.name ?? "", address.spec.address);
    }
    return result;
  },
};
