/**
 * Never two providers on one kind: the in-cluster pool kinds are served only with `--serve-incluster-pools`, and not
 * while the in-cluster provider runs (its leader-election Lease held and renewed: src/controllers/incluster/
 * provider.ts). The provider is stood in for by this test, which holds and renews its Lease as its leader would, in a
 * namespace of its own (`inClusterProviderNamespace`), so suites sharing the plane are not affected. The controller
 * runs as config/rbac's ServiceAccount, proving the Lease rule sufficient.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ResourceType } from "../api/registry.js";
import { INCLUSTER_PROVIDER_LEASE } from "../src/controllers/incluster/provider.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import { PrometheusMetrics } from "../src/runtime/metrics.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { startObservedController } from "../hack/testkit/faults.js";
import { clients, claim, eventReasons, pool } from "../hack/testkit/ipam.js";
import { serviceAccountKubeConfig } from "../hack/testkit/serviceaccount.js";
import { consistently, eventually } from "../hack/testkit/wait.js";
import {
  addressClaim,
  IN,
  inClusterClients,
  inClusterPool,
  recordNames,
  ref,
  untouched,
  waitBound,
  type InClusterClients,
} from "../hack/testkit/incluster.js";

interface Lease extends KubeObject {
  spec: { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
}
const LEASES: ResourceType = {
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  kind: "Lease",
  namespaced: true,
};
const microTime = (): string => new Date().toISOString().replace("Z", "000Z");

/** The stand-in's Lease lasts this long: ours may serve once it has not changed for that long. */
const LEASE_SECONDS = 3;
const REFUSED = "Not serving pool kinds: another provider is running and serves them (its Lease is renewed)";
const SERVING = "Serving pool kinds: the other provider is not running";

/** The in-cluster provider's leader as far as its Lease goes: holds it and renews it every second until stopped. */
async function standInLeader(kc: KubeConfig, namespace: string): Promise<{ stop: () => void }> {
  const leases = new ResourceClient<Lease>(kc, LEASES);
  const lease = await leases.create(namespace, {
    metadata: { name: INCLUSTER_PROVIDER_LEASE, namespace },
    spec: { holderIdentity: "stand-in_0", leaseDurationSeconds: LEASE_SECONDS, renewTime: microTime() },
  });
  let current = lease;
  const timer = setInterval(() => {
    current = { ...current, spec: { ...current.spec, renewTime: microTime() } };
    void leases.replace(namespace, INCLUSTER_PROVIDER_LEASE, current).then(
      (renewed) => (current = renewed),
      () => undefined,
    );
  }, 1_000);
  return { stop: () => clearInterval(timer) };
}

/** The `pool_kind_served` samples of the in-cluster kinds, as `/metrics` shows them. */
async function servedSamples(metrics: PrometheusMetrics): Promise<string[]> {
  const text = await metrics.registry.getSingleMetricAsString("metal3_ipam_pool_kind_served");
  return text.split("\n").filter((line) => line.startsWith("metal3_ipam_pool_kind_served{"));
}

describe("in-cluster pools and the in-cluster provider: never two providers on one kind", function () {
  this.timeout(120_000);
  let admin: KubeConfig;
  let k: InClusterClients;

  before(async () => {
    admin = (await sharedCluster()).kubeConfig;
    k = inClusterClients(admin);
  });

  it("leaves claims to the provider while its Lease is renewed (Event, log line, metric), then serves them once it is stale", async () => {
    const ns = await freshNamespace(admin, "caip-beside");
    const providerNs = await freshNamespace(admin, "caip-system");
    const metrics = new PrometheusMetrics();
    const ctl = await startObservedController(await serviceAccountKubeConfig(admin), ns, {
      inClusterProviderNamespace: providerNs,
      providerPollMs: 300,
      metrics,
    });
    let leader: { stop: () => void } | undefined;
    try {
      await k.pools.create(ns, inClusterPool(ns, "p", { addresses: ["10.61.0.1-10.61.0.9"], prefix: 24 }));
      await k.claims.create(ns, addressClaim(ns, "before", ref(IN, "p")));
      expect((await waitBound(k, ns, "before")).spec.address, "served while the provider is absent").to.equal(
        "10.61.0.1",
      );

      leader = await standInLeader(admin, providerNs);
      await eventually("the refusal logged", () => ctl.logs.matching(REFUSED).length === 1);
      await k.claims.create(ns, addressClaim(ns, "beside", ref(IN, "p")));
      await consistently(
        "the claim made while the provider runs left untouched, no IPAddress made for it",
        async () => untouched(await k.claims.get(ns, "beside")) && (await recordNames(k, ns)).join() === "before",
        3_000,
      );
      const reasons = await eventReasons(clients(admin), ns, "p");
      expect(reasons, "the pool's Event").to.include("ServedByAnotherProvider");
      expect(await servedSamples(metrics)).to.have.members([
        'metal3_ipam_pool_kind_served{pool_kind="InClusterIPPool",reason="ServedByAnotherProvider"} 0',
        'metal3_ipam_pool_kind_served{pool_kind="GlobalInClusterIPPool",reason="ServedByAnotherProvider"} 0',
      ]);

      leader.stop();
      expect((await waitBound(k, ns, "beside", 30_000)).spec.address, "served once the Lease is stale").to.equal(
        "10.61.0.2",
      );
      expect(ctl.logs.matching(REFUSED), "one refusal line for the whole time the provider ran").to.have.length(1);
      expect(ctl.logs.matching(SERVING), "one line at start and one at the resumption").to.have.length(2);
      expect(
        await eventually("the pool's Served Event", async () => {
          const now = await eventReasons(clients(admin), ns, "p");
          return now.includes("Served") ? now : undefined;
        }),
      ).to.include("ServedByAnotherProvider");
      expect(await servedSamples(metrics)).to.have.members([
        'metal3_ipam_pool_kind_served{pool_kind="InClusterIPPool",reason="Serving"} 1',
        'metal3_ipam_pool_kind_served{pool_kind="GlobalInClusterIPPool",reason="Serving"} 1',
      ]);
    } finally {
      leader?.stop();
      await ctl.stop();
    }
  });

  it("serves no in-cluster pool without --serve-incluster-pools, even with no other provider", async () => {
    const ns = await freshNamespace(admin, "caip-off");
    const metrics = new PrometheusMetrics();
    const ctl = await startObservedController(await serviceAccountKubeConfig(admin), ns, {
      serveInClusterPools: false,
      inClusterProviderNamespace: await freshNamespace(admin, "caip-none"),
      metrics,
    });
    try {
      await k.pools.create(ns, inClusterPool(ns, "p", { addresses: ["10.62.0.1-10.62.0.9"], prefix: 24 }));
      await k.claims.create(ns, addressClaim(ns, "c", ref(IN, "p")));
      // The controller is alive: a Metal3 claim is bound meanwhile.
      const c = clients(admin);
      await c.pools.create(ns, pool(ns, "m", { pools: [{ start: "10.62.1.1", end: "10.62.1.9" }] }));
      await c.claims.create(ns, claim(ns, "metal3", "m"));
      await eventually("the Metal3 claim bound", async () => (await c.claims.get(ns, "metal3")).status?.address);
      await consistently(
        "the in-cluster claim untouched, no IPAddress made, the pool without our finalizer",
        async () =>
          untouched(await k.claims.get(ns, "c")) &&
          (await recordNames(k, ns)).length === 0 &&
          (await k.pools.get(ns, "p")).metadata.finalizers === undefined,
        3_000,
      );
      expect(ctl.logs.matching("Not serving pool kinds: --serve-incluster-pools is off")).to.have.length(1);
      expect(await servedSamples(metrics)).to.have.members([
        'metal3_ipam_pool_kind_served{pool_kind="InClusterIPPool",reason="NotEnabled"} 0',
        'metal3_ipam_pool_kind_served{pool_kind="GlobalInClusterIPPool",reason="NotEnabled"} 0',
      ]);
    } finally {
      await ctl.stop();
    }
  });
});
