import { expect } from "chai";
import {
  decide,
  KUBE_VIP_ADDRESS_ANNOTATION,
  LOAD_BALANCER_CLASS,
  LOAD_BALANCER_POOL_ANNOTATION,
  loadBalancerClaimName,
  selectPool,
  type Action,
  type ClaimView,
  type ServiceView,
} from "./decide.js";

const UID = "svc-uid";
const POOL = { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "vips" };

function service(over: Partial<ServiceView> = {}, annotations: Record<string, string> = {}): ServiceView {
  return {
    uid: UID,
    type: "LoadBalancer",
    loadBalancerClass: LOAD_BALANCER_CLASS,
    annotations: { [LOAD_BALANCER_POOL_ANNOTATION]: "IPPool/vips", ...annotations },
    deleting: false,
    ...over,
  };
}

function claim(over: Partial<ClaimView> = {}): ClaimView {
  return { ours: true, ownerUid: UID, poolRef: POOL, deleting: false, ...over };
}

const ADDRESS = { [KUBE_VIP_ADDRESS_ANNOTATION]: "10.0.0.5" };
const release: Action[] = [{ kind: "remove-annotation" }, { kind: "delete-claim" }];

describe("load balancer decisions (pure)", () => {
  const rows: [string, ServiceView | undefined, ClaimView | undefined, Action[]][] = [
    ["ours, no claim: claim from the annotated pool", service(), undefined, [{ kind: "create-claim", poolRef: POOL }]],
    ["ours, claim pending: wait", service(), claim(), []],
    [
      "ours, bound: write the address",
      service(),
      claim({ address: "10.0.0.5" }),
      [{ kind: "set-annotation", address: "10.0.0.5" }],
    ],
    ["ours, bound, annotation current: nothing", service({}, ADDRESS), claim({ address: "10.0.0.5" }), []],
    [
      "ours, annotation edited by hand: written back",
      service({}, { [KUBE_VIP_ADDRESS_ANNOTATION]: "10.0.0.9" }),
      claim({ address: "10.0.0.5" }),
      [{ kind: "set-annotation", address: "10.0.0.5" }],
    ],
    ["ours, claim being deleted: wait for it to go", service(), claim({ deleting: true }), []],
    ["Service gone: delete its claim", undefined, claim({ address: "10.0.0.5" }), [{ kind: "delete-claim" }]],
    [
      "Service deleting: delete its claim, leave it",
      service({ deleting: true }, ADDRESS),
      claim({ address: "10.0.0.5" }),
      [{ kind: "delete-claim" }],
    ],
    [
      "retyped to ClusterIP: annotation removed, claim deleted",
      service({ type: "ClusterIP", loadBalancerClass: undefined }, ADDRESS),
      claim({ address: "10.0.0.5" }),
      release,
    ],
    [
      "class changed: annotation removed, claim deleted",
      service({ loadBalancerClass: "other" }, ADDRESS),
      claim({ address: "10.0.0.5" }),
      release,
    ],
    [
      "annotation removed: event, annotation removed, claim deleted",
      service({ annotations: ADDRESS }),
      claim({ address: "10.0.0.5" }),
      [
        {
          kind: "event",
          reason: "InvalidPoolAnnotation",
          message: `annotation ${LOAD_BALANCER_POOL_ANNOTATION} is missing`,
        },
        ...release,
      ],
    ],
    [
      "annotation now names another pool: release (a new claim follows)",
      service({}, { ...ADDRESS, [LOAD_BALANCER_POOL_ANNOTATION]: "InClusterIPPool/other" }),
      claim({ address: "10.0.0.5" }),
      release,
    ],
    [
      "a claim of a previous Service of this name: deleted, this Service's annotation left alone",
      service({}, ADDRESS),
      claim({ ownerUid: "old", address: "10.0.0.5" }),
      [{ kind: "delete-claim" }],
    ],
    [
      "not ours, annotation written by someone else, no claim: nothing",
      service({ loadBalancerClass: undefined }, ADDRESS),
      undefined,
      [],
    ],
    ["not ours and no claim (Service gone): nothing", undefined, undefined, []],
    [
      "a claim of that name not made by us: an event, never touched",
      service(),
      claim({ ours: false }),
      [{ kind: "event", reason: "ClaimNameTaken", message: "the IPAddressClaim of this Service's name is not ours" }],
    ],
    [
      "someone else's claim and a Service not ours: nothing",
      service({ type: "NodePort", loadBalancerClass: undefined }),
      claim({ ours: false }),
      [],
    ],
    [
      "retyped while pending: claim deleted, no annotation to remove",
      service({ type: "ClusterIP", loadBalancerClass: undefined }),
      claim(),
      [{ kind: "delete-claim" }],
    ],
  ];
  for (const [name, svc, c, want] of rows) it(name, () => expect(decide(svc, c)).to.deep.equal(want));

  it("selects only type LoadBalancer with our class, and reads the pool as <Kind>/<name>", () => {
    expect(selectPool(service({ type: "ClusterIP" }))).to.equal(undefined);
    expect(selectPool(service({ loadBalancerClass: undefined }))).to.equal(undefined);
    expect(selectPool(service({ loadBalancerClass: "kube-vip.io/kube-vip-class" }))).to.equal(undefined);
    const ref = (value: string) => selectPool(service({}, { [LOAD_BALANCER_POOL_ANNOTATION]: value }));
    expect(ref("GlobalInClusterIPPool/vips")).to.deep.equal({
      apiGroup: "ipam.cluster.x-k8s.io",
      kind: "GlobalInClusterIPPool",
      name: "vips",
    });
    expect(ref("NetBoxIPPool/lb")).to.deep.equal({
      apiGroup: "netbox.ipam.cluster.x-k8s.io",
      kind: "NetBoxIPPool",
      name: "lb",
    });
    expect(ref("Secret/x"))
      .to.have.property("error")
      .that.matches(/pool kind must be one of/);
    expect(ref("vips"))
      .to.have.property("error")
      .that.matches(/<Kind>\/<name>/);
    expect(ref(`IPPool/${"a".repeat(300)}`))
      .to.have.property("error")
      .that.matches(/DNS-1123/);
  });

  it("names the claim after the Service, within the name limit for the longest Service name", () => {
    expect(loadBalancerClaimName("web")).to.equal("web-load-balancer");
    expect(loadBalancerClaimName("a".repeat(63)).length).to.be.at.most(253);
  });
});
