/**
 * Service LoadBalancer addresses from our pools: which Services we serve, and what to do for one of them. Pure: no
 * Kubernetes imports.
 *
 * A Service is ours when it is `type: LoadBalancer` with `spec.loadBalancerClass` {@link LOAD_BALANCER_CLASS}; the
 * annotation {@link LOAD_BALANCER_POOL_ANNOTATION} names the pool, `<Kind>/<name>` as `parseEndpointPool` reads it.
 * The class keeps every other load-balancer implementation (cloud providers, kube-vip's cloud provider, MetalLB) off
 * the Service, and keeps us off every Service of theirs. Its address is a Cluster API `IPAddressClaim` in the
 * Service's namespace, named by {@link loadBalancerClaimName}, labelled {@link LOAD_BALANCER_CLAIM_LABEL} and owned by
 * the Service; once bound, the address goes into {@link KUBE_VIP_ADDRESS_ANNOTATION}, where kube-vip reads it.
 * `status.loadBalancer.ingress` is left to the implementation that announces the address (kube-vip writes it once it
 * serves the VIP): an allocated address is not yet a reachable one.
 *
 * A Service we do not serve is touched only when we hold a claim for it (it was ours and changed type, class or
 * annotation): then the annotation we wrote is removed, and the claim deleted.
 */
import type { PoolRef } from "../../../api/capi/types.js";
import { poolDescriptor } from "../../../api/registry.js";
import { parseEndpointPool } from "../../ipam/endpoint.js";

/** `spec.loadBalancerClass` of the Services we serve. */
export const LOAD_BALANCER_CLASS = "ipam.metal3.io/pool";
/** On a Service of our class: the pool its address comes from, `<Kind>/<name>`. */
export const LOAD_BALANCER_POOL_ANNOTATION = "ipam.metal3.io/load-balancer-pool";
/** On the `IPAddressClaim` of a Service: the Service's name (same namespace). */
export const LOAD_BALANCER_CLAIM_LABEL = "ipam.metal3.io/load-balancer-service";
/** Where kube-vip reads the address of a LoadBalancer Service. */
export const KUBE_VIP_ADDRESS_ANNOTATION = "kube-vip.io/loadbalancerIPs";

const CLAIM_SUFFIX = "-load-balancer";

/** The claim of Service `serviceName`. Service names are at most 63 characters, so the name always fits. */
export const loadBalancerClaimName = (serviceName: string): string => serviceName + CLAIM_SUFFIX;

/** What decisions read of a Service. */
export interface ServiceView {
  uid: string;
  type?: string;
  loadBalancerClass?: string;
  annotations: Readonly<Record<string, string>>;
  deleting: boolean;
}

/** What decisions read of the claim named {@link loadBalancerClaimName} in the Service's namespace. */
export interface ClaimView {
  /**
   * Carries {@link LOAD_BALANCER_CLAIM_LABEL} naming the Service this claim name is of: we made it. Any other claim of
   * that name is someone else's, never touched.
   */
  ours: boolean;
  /** uid of the Service its owner reference names (a previous Service of the same name may have left it). */
  ownerUid?: string;
  /** The claim's `poolRef`, an absent `apiGroup` read as "" so two refs compare field by field. */
  poolRef: Required<PoolRef>;
  deleting: boolean;
  /** The bound address, once its IPAddress exists. */
  address?: string;
}

export type Action =
  | { kind: "create-claim"; poolRef: Required<PoolRef> }
  | { kind: "delete-claim" }
  | { kind: "set-annotation"; address: string }
  | { kind: "remove-annotation" }
  | { kind: "event"; reason: string; message: string };

/**
 * Whether a Service is ours: undefined when not (other type or class), the pool when it is, or a message for its
 * author when its class is ours but the annotation names no pool.
 */
export function selectPool(service: ServiceView): Required<PoolRef> | { error: string } | undefined {
  if (service.type !== "LoadBalancer" || service.loadBalancerClass !== LOAD_BALANCER_CLASS) return undefined;
  const value = service.annotations[LOAD_BALANCER_POOL_ANNOTATION];
  if (value === undefined) return { error: `annotation ${LOAD_BALANCER_POOL_ANNOTATION} is missing` };
  const ref = parseEndpointPool(value);
  if ("error" in ref) return { error: `annotation ${LOAD_BALANCER_POOL_ANNOTATION}: ${ref.error}` };
  return { apiGroup: poolDescriptor(ref.kind).group, kind: ref.kind, name: ref.name };
}

const samePool = (a: Required<PoolRef>, b: Required<PoolRef>): boolean =>
  a.apiGroup === b.apiGroup && a.kind === b.kind && a.name === b.name;

/**
 * The actions for one Service (undefined: gone) and its claim (undefined: none), applied in order: the annotation is
 * removed before the claim is deleted, so a failure between the two leaves the claim to find on the retry.
 */
export function decide(service: ServiceView | undefined, claim: ClaimView | undefined): Action[] {
  const wanted = service && !service.deleting ? selectPool(service) : undefined;
  if (claim && !claim.ours) {
    if (wanted && !("error" in wanted))
      return [
        { kind: "event", reason: "ClaimNameTaken", message: "the IPAddressClaim of this Service's name is not ours" },
      ];
    return [];
  }
  const events: Action[] =
    wanted && "error" in wanted ? [{ kind: "event", reason: "InvalidPoolAnnotation", message: wanted.error }] : [];
  if (!wanted || "error" in wanted) return [...events, ...release(service, claim)];
  if (!claim) return [{ kind: "create-claim", poolRef: wanted }];
  if (claim.deleting) return [];
  // A claim left by a previous Service of this name, or from another pool than the annotation now names.
  if (claim.ownerUid !== service?.uid || !samePool(claim.poolRef, wanted)) return release(service, claim);
  if (claim.address === undefined || service?.annotations[KUBE_VIP_ADDRESS_ANNOTATION] === claim.address) return [];
  return [{ kind: "set-annotation", address: claim.address }];
}

/** Gives our claim back; removes the annotation first when it holds the claim's address and the Service stays. */
function release(service: ServiceView | undefined, claim: ClaimView | undefined): Action[] {
  if (!claim || claim.deleting) return [];
  const wrote =
    service !== undefined &&
    !service.deleting &&
    claim.ownerUid === service.uid &&
    claim.address !== undefined &&
    service.annotations[KUBE_VIP_ADDRESS_ANNOTATION] === claim.address;
  return [...(wrote ? [{ kind: "remove-annotation" } as const] : []), { kind: "delete-claim" }];
}
