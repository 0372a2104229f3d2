/**
 * `kubectl ipam reserve|release` against a real API server with the controller serving the namespace: a reservation is
 * an ordinary IPAddressClaim the controller binds, owned by the object `--owner` names (so the garbage collector frees
 * it), shown by `who` as a reservation, deleted by `release`, which touches nothing else.
 */
import { expect } from "chai";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { IPAddressClaim } from "../../api/capi/types.js";
import { CAPI_IPADDRESSCLAIM, resourceType } from "../../api/registry.js";
import { ResourceClient } from "../../src/kube/resource.js";
import { RESERVATION_LABEL } from "../../src/cli/reserve.js";
import { freshNamespace, sharedCluster } from "../../hack/testkit/cluster.js";
import { addressClaim, clients, gone, pool, startController } from "../../hack/testkit/ipam.js";
import { runCli, type CliRun } from "../../hack/testkit/cli.js";
import { eventually } from "../../hack/testkit/wait.js";

describe("kubectl ipam reserve and release (real API server)", function () {
  this.timeout(120_000);
  let kc: KubeConfig;
  let kubeconfigPath: string;
  let ns: string;
  let stop: () => Promise<void>;
  let claims: ResourceClient<IPAddressClaim>;
  const cli = (...args: string[]): Promise<CliRun> => runCli(args, { KUBECONFIG: kubeconfigPath });

  before(async () => {
    ({ kubeConfig: kc, kubeconfigPath } = await sharedCluster());
    ns = await freshNamespace(kc, "cli-reserve");
    ({ stop } = await startController(kc, ns));
    claims = new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM));
    await clients(kc).pools.create(
      ns,
      pool(ns, "vips", { pools: [{ start: "10.88.0.10", end: "10.88.0.20" }], prefix: 24 }),
    );
    await kc
      .makeApiClient(CoreV1Api)
      .createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "ingress" } } });
  });

  after(async () => {
    await stop?.();
  });

  it("reserves an owned address, prints it, shows it in who, and releases it", async () => {
    const run = await cli("reserve", "ingress-vip", "--pool", "vips", "--owner", "configmap/ingress", "-n", ns);
    expect(run.stderr).to.equal("");
    expect(run.code).to.equal(0);
    const [address, held, owned] = run.stdout.trim().split("\n");
    expect(address).to.match(/^10\.88\.0\.(1\d|20)$/);
    expect(held).to.equal(`held by IPAddressClaim ${ns}/ingress-vip from IPPool ${ns}/vips`);
    expect(owned).to.contain("owned by ConfigMap ingress: released when it is deleted");
    const stored = await claims.get(ns, "ingress-vip");
    const cm = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns, name: "ingress" });
    expect(stored.metadata.ownerReferences).to.deep.equal([
      { apiVersion: "v1", kind: "ConfigMap", name: "ingress", uid: cm.metadata?.uid, blockOwnerDeletion: false },
    ]);
    expect(stored.metadata.labels).to.have.property(RESERVATION_LABEL);

    const who = await cli("who", address!, "-n", ns);
    expect(who.code).to.equal(0);
    expect(who.stdout).to.match(/^role\s+reservation \(kubectl ipam reserve/m);

    const released = await cli("release", "ingress-vip", "-n", ns);
    expect(released.code).to.equal(0);
    expect(released.stdout).to.equal(`released IPAddressClaim ${ns}/ingress-vip\n`);
    await eventually("the reservation deleted", () => gone(claims, ns, "ingress-vip"));
  });

  it("says when a reservation has no owner, honours --address on an IPPool, and refuses a taken name", async () => {
    const run = await cli("reserve", "dns", "--pool", "vips", "--address", "10.88.0.15", "-n", ns, "-o", "json");
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout)).to.deep.include({ address: "10.88.0.15", owner: null });
    const text = await cli("reserve", "dns-2", "--pool", "vips", "-n", ns);
    expect(text.stdout).to.contain('no owner: it stays held until "kubectl ipam release dns-2');
    const again = await cli("reserve", "dns", "--pool", "vips", "-n", ns);
    expect(again.code).to.equal(3);
    expect(again.stderr).to.contain('IPAddressClaim "dns" already exists');
  });

  it("release deletes only reservations, and says when there is none", async () => {
    await claims.create(
      ns,
      addressClaim(ns, "machine-nic", { apiGroup: "ipam.metal3.io", kind: "IPPool", name: "vips" }),
    );
    const refused = await cli("release", "machine-nic", "-n", ns);
    expect(refused.code).to.equal(3);
    expect(refused.stderr).to.contain("is not a reservation");
    expect((await claims.get(ns, "machine-nic")).metadata.deletionTimestamp).to.equal(undefined);
    const missing = await cli("release", "nothing-here", "-n", ns);
    expect(missing.code).to.equal(3);
    expect(missing.stderr).to.contain('IPAddressClaim "nothing-here" not found');
  });
});
