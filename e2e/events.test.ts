/**
 * Event aggregation against a real API server: repeats of one Event bump its count and lastTimestamp, as
 * `kubectl describe` readers expect, written as the controller's ServiceAccount (create and patch are all it has).
 */
import { expect } from "chai";
import type { CoreV1Api, CoreV1Event, KubeConfig } from "@kubernetes/client-node";
import type { IPClaim } from "../api/v1alpha1/types.js";
import { EventRecorder } from "../src/controllers/events.js";
import { silentLogger } from "../src/runtime/logger.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { claim, clients, type Clients } from "../hack/testkit/ipam.js";
import { serviceAccountKubeConfig } from "../hack/testkit/serviceaccount.js";

describe("Event aggregation (real API server)", function () {
  this.timeout(120_000);
  let admin: KubeConfig;
  let controllerKc: KubeConfig;
  let c: Clients;
  let ns: string;
  let subject: IPClaim;

  before(async () => {
    admin = (await sharedCluster()).kubeConfig;
    controllerKc = await serviceAccountKubeConfig(admin);
    c = clients(admin);
    ns = await freshNamespace(admin, "events");
    subject = await c.claims.create(ns, claim(ns, "subject", "no-such-pool"));
  });

  const eventsOf = async (core: CoreV1Api, name: string): Promise<CoreV1Event[]> =>
    (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` })).items;

  it("turns repeats of one Event into one Event with a count and the last time, concurrent repeats included", async () => {
    let now = new Date("2030-01-01T00:00:00Z");
    const recorder = new EventRecorder(controllerKc, silentLogger(), { clock: () => now });
    await recorder.recorded(subject, "Warning", "PoolNotFound", "IPPool no-such-pool not found");
    now = new Date("2030-01-01T00:01:00Z");
    // Not awaited one by one: the recorder must not race its own patches (each would read count 1 and write 2).
    await Promise.all(
      [1, 2, 3, 4].map(() => recorder.recorded(subject, "Warning", "PoolNotFound", "IPPool no-such-pool not found")),
    );
    const events = await eventsOf(c.core, "subject");
    expect(events).to.have.length(1);
    const [event] = events;
    expect(event?.count).to.equal(5);
    expect(event?.firstTimestamp?.toISOString()).to.equal("2030-01-01T00:00:00.000Z");
    expect(event?.lastTimestamp?.toISOString()).to.equal("2030-01-01T00:01:00.000Z");
    expect(event?.involvedObject.uid).to.equal(subject.metadata.uid);
  });

  it("keeps different messages apart, and starts a new Event after the window or when the old one is gone", async () => {
    let now = new Date("2030-02-01T00:00:00Z");
    const recorder = new EventRecorder(controllerKc, silentLogger(), { clock: () => now, aggregateWindowMs: 60_000 });
    const other = await c.claims.create(ns, claim(ns, "other", "no-such-pool"));
    await recorder.recorded(other, "Warning", "PoolExhausted", "no free address in IPPool a");
    await recorder.recorded(other, "Warning", "PoolExhausted", "no free address in IPPool b");
    expect((await eventsOf(c.core, "other")).map((e) => e.count)).to.deep.equal([1, 1]);

    now = new Date("2030-02-01T00:05:00Z");
    await recorder.recorded(other, "Warning", "PoolExhausted", "no free address in IPPool a");
    expect((await eventsOf(c.core, "other")).map((e) => e.count).sort()).to.deep.equal([1, 1, 1]);

    for (const e of await eventsOf(c.core, "other"))
      await c.core.deleteNamespacedEvent({ namespace: ns, name: e.metadata?.name ?? "" });
    await recorder.recorded(other, "Warning", "PoolExhausted", "no free address in IPPool a");
    const after = await eventsOf(c.core, "other");
    expect(after.map((e) => [e.message, e.count])).to.deep.equal([["no free address in IPPool a", 1]]);
  });
});
