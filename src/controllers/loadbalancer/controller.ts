/**
 * `--serve-load-balancers`: addresses for Services of type LoadBalancer and our class (decide.ts says which and what
 * to do). Thin: reads the Service, its claim and the claim's IPAddress from caches, asks `decide`, writes. The claim is
 * an ordinary Cluster API `IPAddressClaim`, served by the pool controller like any other; this controller only makes,
 * reads and deletes it.
 *
 * Keys are `<namespace>/<Service name>`. Every event of a Service of our class, of a claim carrying our label and of
 * the IPAddress of such a claim becomes its Service's key; a Service of another class is queued only while we hold a
 * claim for it (so the claim is released when the Service leaves our class or type).
 */
import type { CapiIPAddress, IPAddressClaim, PoolRef } from "../../../api/capi/types.js";
import { apiVersionOf, CAPI_IPADDRESSCLAIM } from "../../../api/registry.js";
import type { ObjectMeta } from "../../../api/v1alpha1/types.js";
import { isAlreadyExists } from "../../kube/errors.js";
import { keyOf, type Informer } from "../../kube/informer.js";
import type { ResourceType } from "../../kube/resource.js";
import type { Logger } from "../../runtime/logger.js";
import type { ControllerMetrics } from "../../runtime/metrics.js";
import { WorkQueue } from "../../runtime/workqueue.js";
import type { EventSink } from "../events.js";
import type { CapiInformers, Store } from "../store.js";
import {
  decide,
  KUBE_VIP_ADDRESS_ANNOTATION,
  LOAD_BALANCER_CLAIM_LABEL,
  LOAD_BALANCER_CLASS,
  loadBalancerClaimName,
  type Action,
  type ClaimView,
  type ServiceView,
} from "./decide.js";

/** What we read of a Service. */
export interface Service {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: { type?: string; loadBalancerClass?: string };
}

const SERVICES: ResourceType = { group: "", version: "v1", plural: "services", kind: "Service", namespaced: true };

/**
 * RBAC of `--serve-load-balancers`, rendered into config/components/load-balancers (not the default install, which
 * never reads Services). Events come from the default role (events.ts).
 */
export const LOAD_BALANCER_RULES = [
  // Watched for type, class and annotations; patched for the kube-vip annotation. Never read one by one.
  { apiGroups: [SERVICES.group], resources: [SERVICES.plural], verbs: ["list", "watch", "patch"] },
  // The pool controller's role already reads and patches claims; making and giving them back is this one's.
  { apiGroups: [CAPI_IPADDRESSCLAIM.group], resources: [CAPI_IPADDRESSCLAIM.plural], verbs: ["create", "delete"] },
];

export interface LoadBalancerOptions {
  logger: Logger;
  events: EventSink;
  metrics: ControllerMetrics;
}

export class LoadBalancerController {
  private readonly services: Informer<Service>;
  private readonly queue: WorkQueue;
  private capi?: CapiInformers;

  constructor(
    private readonly store: Store,
    private readonly options: LoadBalancerOptions,
  ) {
    this.services = store.informerFor<Service>(SERVICES);
    this.queue = new WorkQueue((key) => this.reconcile(key), {
      concurrency: 2,
      onMetrics: options.metrics.queue("loadbalancer"),
      onError: (key, err) => {
        options.metrics.reconcileError("loadbalancer");
        options.logger.error("Load balancer reconcile failed; retrying with backoff", {
          service: key,
          error: err instanceof Error ? err.message : String(err),
        });
      },
    });
    this.services.on((_kind, s) => {
      if (s.spec?.loadBalancerClass === LOAD_BALANCER_CLASS || this.claimOf(keyOf(s))) this.queue.add(keyOf(s));
    });
  }

  /** Cluster API's IPAM is served (the bridge found it): claims can be made. Call before its informers start. */
  attach(capi: CapiInformers): void {
    this.capi = capi;
    const toService = (c: IPAddressClaim | undefined): void => {
      const service = c?.metadata.labels?.[LOAD_BALANCER_CLAIM_LABEL];
      if (service) this.queue.add(`${c.metadata.namespace ?? ""}/${service}`);
    };
    capi.claims.on((_kind, c) => toService(c));
    capi.addresses.on((_kind, a) =>
      toService(capi.claims.get(a.metadata.namespace ?? "", a.spec?.claimRef?.name ?? "")),
    );
    for (const s of this.services.list())
      if (s.spec?.loadBalancerClass === LOAD_BALANCER_CLASS) this.queue.add(keyOf(s));
  }

  async start(): Promise<void> {
    await this.services.start();
    this.queue.start();
    this.options.logger.info("Serving Services of type LoadBalancer", { loadBalancerClass: LOAD_BALANCER_CLASS });
  }

  async stop(): Promise<void> {
    this.services.stop();
    await this.queue.shutdown();
  }

  async idle(): Promise<void> {
    await this.queue.onIdle();
  }

  private claimOf(key: string): IPAddressClaim | undefined {
    const [namespace = "", name = ""] = key.split("/");
    return this.capi?.claims.get(namespace, loadBalancerClaimName(name));
  }

  private async reconcile(key: string): Promise<void> {
    const capi = this.capi;
    // Until Cluster API's IPAM is served no claim can be made; attach() queues every Service of ours then.
    if (!capi) return;
    const [namespace = "", name = ""] = key.split("/");
    const service = this.services.get(namespace, name);
    const claim = capi.claims.get(namespace, loadBalancerClaimName(name));
    const actions = decide(service && serviceView(service), claim && claimView(claim, capi.addresses));
    for (const action of actions) await this.apply(action, capi, service, claim);
  }

  private async apply(
    action: Action,
    capi: CapiInformers,
    service: Service | undefined,
    claim: IPAddressClaim | undefined,
  ): Promise<void> {
    switch (action.kind) {
      case "create-claim":
        if (service) await this.createClaim(capi, service, action.poolRef);
        return;
      case "delete-claim":
        if (claim) await this.store.delete(capi.claims, claim);
        return;
      case "set-annotation":
        if (service) await this.annotate(service, action.address);
        return;
      case "remove-annotation":
        if (service) await this.annotate(service, null);
        return;
      case "event":
        if (service) this.options.events.record(service, "Warning", action.reason, action.message);
        return;
    }
  }

  private async createClaim(capi: CapiInformers, service: Service, poolRef: Required<PoolRef>): Promise<void> {
    const name = service.metadata.name ?? "";
    const claim: IPAddressClaim = {
      apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM, capi.version),
      kind: CAPI_IPADDRESSCLAIM.kind,
      metadata: {
        name: loadBalancerClaimName(name),
        namespace: service.metadata.namespace,
        labels: { [LOAD_BALANCER_CLAIM_LABEL]: name },
        // The garbage collector deletes the claim with its Service even while this controller is not running.
        ownerReferences: [
          { apiVersion: "v1", kind: "Service", name, uid: service.metadata.uid ?? "", controller: true },
        ],
      },
      spec: { poolRef },
    };
    try {
      await this.store.create(capi.claims, claim);
    } catch (err) {
      // Made by an earlier pass whose watch event has not arrived: its event queues this Service again.
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** Sets (or with null removes) the kube-vip annotation, on the resourceVersion decided on. */
  private async annotate(service: Service, address: string | null): Promise<void> {
    const patched = await this.services.client.patch(service.metadata.namespace ?? "", service.metadata.name ?? "", {
      metadata: {
        annotations: { [KUBE_VIP_ADDRESS_ANNOTATION]: address },
        resourceVersion: service.metadata.resourceVersion,
      },
    });
    this.services.upsert(patched);
  }
}

function serviceView(s: Service): ServiceView {
  return {
    uid: s.metadata.uid ?? "",
    type: s.spec?.type,
    loadBalancerClass: s.spec?.loadBalancerClass,
    annotations: s.metadata.annotations ?? {},
    deleting: s.metadata.deletionTimestamp !== undefined,
  };
}

function claimView(c: IPAddressClaim, addresses: Informer<CapiIPAddress>): ClaimView {
  // Ours when our label names the Service whose claim name this is.
  const service = c.metadata.labels?.[LOAD_BALANCER_CLAIM_LABEL];
  const ref = c.status?.addressRef?.name;
  const record = ref ? addresses.get(c.metadata.namespace ?? "", ref) : undefined;
  const address = record?.spec.claimRef.name === c.metadata.name ? record?.spec.address : undefined;
  return {
    ours: service !== undefined && loadBalancerClaimName(service) === c.metadata.name,
    ownerUid: c.metadata.ownerReferences?.find((o) => o.kind === "Service" && o.apiVersion === "v1")?.uid,
    poolRef: { apiGroup: c.spec.poolRef.apiGroup ?? "", kind: c.spec.poolRef.kind, name: c.spec.poolRef.name },
    deleting: c.metadata.deletionTimestamp !== undefined,
    ...(address ? { address } : {}),
  };
}
