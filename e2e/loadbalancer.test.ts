/**
 * `--serve-load-balancers` on the local plane: Services of type LoadBalancer and class ipam.metal3.io/pool get an
 * address from the pool their annotation names, written to kube-vip's annotation; it is given back when the Service
 * goes or leaves the type; Services of another class are never written. The controller runs as its ServiceAccount
 * with config/rbac and config/components/load-balancers' ClusterRole.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { IPAddressClaim } from "../api/capi/types.js";
import { CAPI_IPADDRESSCLAIM, resourceType } from "../api/registry.js";
import {
  KUBE_VIP_ADDRESS_ANNOTATION,
  LOAD_BALANCER_CLAIM_LABEL,
  LOAD_BALANCER_CLASS,
  LOAD_BALANCER_POOL_ANNOTATION,
  loadBalancerClaimName,
} from "../src/controllers/loadbalancer/decide.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { clients, eventReasons, gone, pool, startController, type Clients } from "../hack/testkit/ipam.js";
import { bindLoadBalancerRole } from "../hack/testkit/serviceaccount.js";
import { consistently, eventually } from "../hack/testkit/wait.js";

const SERVICES = 20;

/** The Service fields this suite writes. */
interface Service extends KubeObject {
  spec: { type?: string; loadBalancerClass?: string; ports?: { port: number }[] };
}

function service(
  ns: string,
  name: string,
  spec: Partial<Service["spec"]> = {},
  poolAnnotation = "IPPool/vips",
): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: ns, annotations: { [LOAD_BALANCER_POOL_ANNOTATION]: poolAnnotation } },
    spec: { type: "LoadBalancer", loadBalancerClass: LOAD_BALANCER_CLASS, ports: [{ port: 80 }], ...spec },
  };
}

describe("Service LoadBalancer addresses (--serve-load-balancers)", function () {
  this.timeout(300_000);
  let kc: KubeConfig;
  let c: Clients;
  let services: ResourceClient<Service>;
  let claims: ResourceClient<IPAddressClaim>;
  let ns: string;
  let unbind: () => Promise<void>;
  let stop: () => Promise<void>;

  const annotation = async (name: string): Promise<string | undefined> =>
    (await services.get(ns, name)).metadata.annotations?.[KUBE_VIP_ADDRESS_ANNOTATION];

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    c = clients(kc);
    services = new ResourceClient<Service>(kc, {
      group: "",
      version: "v1",
      plural: "services",
      kind: "Service",
      namespaced: true,
    });
    claims = new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM, "v1beta2"));
    unbind = await bindLoadBalancerRole(kc);
    ns = await freshNamespace(kc, "lb");
    // Exactly as many addresses as Services: a Service made after one is released can only get the freed address.
    await c.pools.create(ns, pool(ns, "vips", { pools: [{ start: "10.50.0.1", end: "10.50.0.20" }], prefix: 24 }));
    ({ stop } = await startController(kc, ns, 4, true, { serveLoadBalancers: true }));
  });

  after(async () => {
    await stop?.();
    await unbind?.();
  });

  it("gives 20 Services distinct addresses of the pool in kube-vip's annotation, each through a claim the Service owns", async () => {
    await Promise.all(Array.from({ length: SERVICES }, (_, i) => services.create(ns, service(ns, `web-${i}`))));
    const addresses = await eventually(
      "every Service annotated",
      async () => {
        const all = await Promise.all(Array.from({ length: SERVICES }, (_, i) => annotation(`web-${i}`)));
        return all.every((a) => a !== undefined) ? all : undefined;
      },
      120_000,
    );
    expect(new Set(addresses).size).to.equal(SERVICES);
    for (const a of addresses) expect(a).to.match(/^10\.50\.0\.([1-9]|1[0-9]|20)$/);
    const svc = await services.get(ns, "web-3");
    const claim = await claims.get(ns, loadBalancerClaimName("web-3"));
    expect(claim.metadata.labels?.[LOAD_BALANCER_CLAIM_LABEL]).to.equal("web-3");
    expect(claim.metadata.ownerReferences).to.deep.equal([
      { apiVersion: "v1", kind: "Service", name: "web-3", uid: svc.metadata.uid, controller: true },
    ]);
    expect(claim.spec.poolRef).to.deep.equal({ apiGroup: "ipam.metal3.io", kind: "IPPool", name: "vips" });
  });

  it("releases the address of a deleted Service: its claim goes, and a new Service gets that address", async () => {
    const freed = await annotation("web-0");
    await services.delete(ns, "web-0");
    await eventually(
      "claim of web-0 gone",
      async () => (await gone(claims, ns, loadBalancerClaimName("web-0"))) || undefined,
    );
    await services.create(ns, service(ns, "web-new"));
    expect(await eventually("web-new annotated", () => annotation("web-new"), 60_000)).to.equal(freed);
  });

  it("releases the address of a Service retyped to ClusterIP and removes the annotation", async () => {
    expect(await eventually("web-1 annotated", () => annotation("web-1"))).to.match(/^10\.50\.0\./);
    await eventually("claim of web-1 made", () => claims.get(ns, loadBalancerClaimName("web-1")));
    await services.patch(ns, "web-1", { spec: { type: "ClusterIP", loadBalancerClass: null } });
    await eventually(
      "claim of web-1 gone",
      async () => (await gone(claims, ns, loadBalancerClaimName("web-1"))) || undefined,
    );
    await eventually("annotation of web-1 removed", async () =>
      (await annotation("web-1")) === undefined ? true : undefined,
    );
    const retyped = await services.get(ns, "web-1");
    expect(retyped.metadata.annotations?.[LOAD_BALANCER_POOL_ANNOTATION]).to.equal("IPPool/vips");
  });

  it("never writes a LoadBalancer Service of another class or of none, even one naming our pool", async () => {
    const others = [
      await services.create(ns, service(ns, "default-class", { loadBalancerClass: undefined })),
      await services.create(ns, service(ns, "other-class", { loadBalancerClass: "example.com/lb" })),
    ];
    // One of ours made with them is served (it gets the address web-1 gave back) while the others stay untouched.
    await services.create(ns, service(ns, "ours-late"));
    expect(await eventually("ours-late annotated", () => annotation("ours-late"), 60_000)).to.match(/^10\.50\.0\./);
    await consistently(
      "Services of other classes unchanged, no claim for them",
      async () => {
        for (const s of others) {
          const now = await services.get(ns, s.metadata.name ?? "");
          if (now.metadata.resourceVersion !== s.metadata.resourceVersion) return false;
          if (!(await gone(claims, ns, loadBalancerClaimName(s.metadata.name ?? "")))) return false;
        }
        return true;
      },
      3_000,
    );
  });

  it("tells the author of a Service of our class whose annotation names no pool of ours, with an Event", async () => {
    await services.create(ns, service(ns, "bad", {}, "Secret/vips"));
    await eventually("Event on bad", async () =>
      (await eventReasons(c, ns, "bad")).includes("InvalidPoolAnnotation") ? true : undefined,
    );
    expect(await gone(claims, ns, loadBalancerClaimName("bad"))).to.equal(true);
  });
});
