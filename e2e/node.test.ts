/**
 * What users install, run for real: the image built from the unchanged Dockerfile (hack/local-image.sh), config/default
 * applied to a local plane with a real node (kubelet, containerd, kube-proxy, scheduler: hack/testkit/node.ts), as
 * hack/e2e-kind.sh does on kind. Both replicas Ready on a read-only root as UID 65532, one leader, the webhooks called
 * by the API server through their Service, claims of both kinds bound, the leader's pod deleted and the other replica
 * taking over with no claim lost or allocated twice, /metrics read through its Service; then the e2e suites that take
 * an external controller run against the deployment. Needs Linux, root, Debian's containerd, runc,
 * containernetworking-plugins, docker.io and debootstrap (.ci/run installs them); skips in one line without them.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { CoordinationV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { IPAddressClaim } from "../api/capi/types.js";
import { CAPI_IPADDRESS, CAPI_IPADDRESSCLAIM, resourceType } from "../api/registry.js";
import type { CapiIPAddress } from "../api/capi/types.js";
import { describeError } from "../src/kube/errors.js";
import { ResourceClient } from "../src/kube/resource.js";
import { CAPI_CRDS, OUR_CRDS, repoRoot, usingExistingCluster } from "../hack/testkit/cluster.js";
import {
  applyOverlay,
  buildLocalImage,
  caBundles,
  controllerPods,
  deployConfigDefault,
  imageBuildUnsupported,
  LEASE,
  LOCAL_IMAGE,
  METRICS_PORT,
  METRICS_SERVICE,
  metricsReader,
  readyReplicas,
  rolledOut,
  serviceAccepts,
  WEBHOOK_SERVICE,
} from "../hack/testkit/deployed.js";
import { auditAllocations } from "../hack/testkit/faults.js";
import { installCommand, runInstallCommand } from "../hack/testkit/install.js";
import { claim, clients, pool, type Clients } from "../hack/testkit/ipam.js";
import { metricSample, scrapeSecure } from "../hack/testkit/metrics.js";
import { nodeUnsupported } from "../hack/testkit/node.js";
import { LocalPlane } from "../hack/testkit/plane.js";
import { CONTROLLER_NAMESPACE, scraperToken } from "../hack/testkit/serviceaccount.js";
import { eventually } from "../hack/testkit/wait.js";

const POOL_REF = (name: string) => ({ apiGroup: "ipam.metal3.io", kind: "IPPool", name });

/** What the image build (dockerd) could change on the host; the node's own changes are its residue check's. */
function hostFacts(): Record<string, string | boolean> {
  return {
    "net.ipv4.ip_forward": readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim(),
    "/etc/docker/key.json": existsSync("/etc/docker/key.json"),
    "/run/docker": existsSync("/run/docker"),
  };
}

describe("config/default on a local node, with the image built from the Dockerfile", function () {
  this.timeout(1_200_000);
  let plane: LocalPlane | undefined;
  let kc: KubeConfig;
  let c: Clients;
  let capiClaims: ResourceClient<IPAddressClaim>;
  let capiAddresses: ResourceClient<CapiIPAddress>;
  let scratch: string;
  let hostBefore: Record<string, string | boolean>;
  /** /metrics of a pod or Service IP, read with a token bound to metrics-reader ("" when not served). */
  let metricsText: (host: string) => Promise<string>;
  const ns = "node-e2e";

  before(async function () {
    const why = usingExistingCluster() ? "USE_EXISTING_CLUSTER is set" : (nodeUnsupported() ?? imageBuildUnsupported());
    if (why) {
      console.log(`    node suite skipped: ${why}`);
      this.skip();
    }
    hostBefore = hostFacts();
    scratch = mkdtempSync(join(tmpdir(), "node-e2e-"));
    const image = join(scratch, "image.tar");
    await buildLocalImage(image);
    plane = await LocalPlane.start({ node: true, crdDirs: [OUR_CRDS, CAPI_CRDS] });
    expect(plane.node!.importImage(image)).to.include(`docker.io/${LOCAL_IMAGE}`);
    kc = plane.kubeConfig;
    c = clients(kc);
    capiClaims = new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM));
    capiAddresses = new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS));
    await deployConfigDefault(kc, plane.kubeconfigPath);
    // README's NetworkPolicies, as written. The node's CNI (the bridge plugin) does not enforce NetworkPolicy: the
    // tests below show them accepted and the webhooks still reached through their Service, not traffic blocked.
    await runInstallCommand(installCommand("config/network-policy"), plane.kubeconfigPath);
    metricsText = await metricsReader(kc);
  });

  after(async function () {
    if (!plane) return;
    await plane.stop();
    rmSync(scratch, { recursive: true, force: true });
    // The host as it was: nothing of the node running, mounted, linked or changed; no image build left behind.
    expect(plane.nodeResidue, "left on the host by the node").to.deep.equal([]);
    expect(readdirSync(tmpdir()).filter((e) => e.startsWith("metal3-ipam-image-"))).to.deep.equal([]);
    expect(hostFacts()).to.deep.equal(hostBefore);
  });

  async function leaseHolder(): Promise<string> {
    const lease = await kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: LEASE, namespace: CONTROLLER_NAMESPACE });
    return lease.spec?.holderIdentity ?? "";
  }

  /** Pods whose /metrics say they lead (each replica says so of itself only). */
  async function leaders(): Promise<string[]> {
    const pods = await controllerPods(kc);
    const says = await Promise.all(pods.map(async (p) => metricSample(await metricsText(p.ip), "metal3_ipam_leader")));
    return pods.filter((_, i) => says[i] === 1).map((p) => p.name);
  }

  it("runs both replicas Ready, as UID 65532 on a read-only root, with exactly one leader", async () => {
    await eventually("2 ready replicas", async () => (await readyReplicas(kc)) === 2, 180_000, 1_000);
    const pods = await kc
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: CONTROLLER_NAMESPACE, labelSelector: "control-plane=controller-manager" });
    for (const p of pods.items) {
      expect(p.spec?.containers[0]?.image).to.equal(LOCAL_IMAGE);
      expect(p.spec?.containers[0]?.securityContext?.readOnlyRootFilesystem).to.equal(true);
      expect(p.status?.containerStatuses?.[0]?.restartCount, `restarts of ${p.metadata?.name}`).to.equal(0);
    }
    const leader = await eventually(
      "one leader",
      async () => {
        const l = await leaders();
        return l.length === 1 ? l[0] : undefined;
      },
      60_000,
      500,
    );
    expect(await leaseHolder()).to.match(new RegExp(`^${leader}_`));
    // What the next tests stand on: the webhook Service routes (kube-proxy lags the Deployment's Ready by seconds).
    await eventually(
      "the webhook Service to accept connections",
      () => serviceAccepts(kc, WEBHOOK_SERVICE, 443),
      60_000,
      500,
    );
  });

  it("serves the webhooks to the API server through the webhook Service", async () => {
    await c.core.createNamespace({ body: { metadata: { name: ns } } });
    const before = await webhookCalls();
    const denied = await c.pools.create(ns, pool(ns, "bad", { pools: [{ start: "10.9.0.9", end: "10.9.0.1" }] })).then(
      () => "created",
      (err: unknown) => describeError(err),
    );
    expect(denied).to.contain('admission webhook "validation.ippool.ipam.metal3.io" denied the request');
    await c.pools.create(ns, pool(ns, "p", { pools: [{ subnet: "10.60.0.0/24" }] }));
    expect(await webhookCalls()).to.be.greaterThan(before + 1);
  });

  async function webhookCalls(): Promise<number> {
    let sum = 0;
    for (const p of await controllerPods(kc)) sum += await webhookCallsOf(p.ip);
    return sum;
  }

  async function createClaims(prefix: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      await c.claims.create(ns, claim(ns, `${prefix}-${i}`, "p"));
      await capiClaims.create(ns, {
        metadata: { name: `${prefix}-${i}`, namespace: ns },
        spec: { poolRef: POOL_REF("p") },
      });
    }
  }

  /** `kind/name -> address` of every bound claim of both kinds, and the Cluster API addresses held twice. */
  async function allocations(): Promise<{ bound: Map<string, string>; unbound: number; duplicates: string[] }> {
    const audit = await auditAllocations(c, ns);
    const bound = new Map<string, string>();
    const byName = new Map((await c.addresses.list(ns)).items.map((a) => [a.metadata.name ?? "", a.spec.address]));
    for (const cl of (await c.claims.list(ns)).items) {
      const a = byName.get(cl.status?.address?.name ?? "");
      if (a) bound.set(`IPClaim/${cl.metadata.name}`, a);
    }
    const capiByName = new Map(
      (await capiAddresses.list(ns)).items.map((a) => [a.metadata.name ?? "", a.spec.address]),
    );
    let capiUnbound = 0;
    for (const cl of (await capiClaims.list(ns)).items) {
      const a = capiByName.get(cl.status?.addressRef?.name ?? "");
      if (a) bound.set(`IPAddressClaim/${cl.metadata.name}`, a);
      else capiUnbound++;
    }
    const seen = new Map<string, number>();
    for (const a of bound.values()) seen.set(a, (seen.get(a) ?? 0) + 1);
    return {
      bound,
      unbound: audit.unbound.length + capiUnbound,
      duplicates: [...audit.duplicateAddresses, ...[...seen].filter(([, n]) => n > 1).map(([a]) => a)],
    };
  }

  it("binds IPClaims and Cluster API IPAddressClaims, and keeps every one when the leader's pod is deleted", async () => {
    await createClaims("first", 10);
    const first = await eventually(
      "20 bound claims",
      async () => {
        const a = await allocations();
        // One audit: bound and unbound from the same reads (two reads in a row can straddle a binding).
        return a.bound.size === 20 && a.unbound === 0 ? a : undefined;
      },
      120_000,
      500,
    );
    expect(first.duplicates).to.deep.equal([]);
    const [leader] = await leaders();
    expect(leader).to.be.a("string");
    await c.core.deleteNamespacedPod({ name: leader!, namespace: CONTROLLER_NAMESPACE });
    // The other replica takes the Lease (the deleted one releases it on SIGTERM) and goes on allocating.
    await eventually(
      "another leader",
      async () => {
        const holder = await leaseHolder();
        return holder !== "" && !holder.startsWith(`${leader}_`);
      },
      90_000,
      500,
    );
    await createClaims("second", 10);
    const all = await eventually(
      "40 bound claims",
      async () => {
        const a = await allocations();
        return a.bound.size === 40 && a.unbound === 0 ? a : undefined;
      },
      120_000,
      500,
    );
    expect(all.unbound).to.equal(0);
    expect(all.duplicates).to.deep.equal([]);
    for (const [claimKey, address] of first.bound) expect(all.bound.get(claimKey), claimKey).to.equal(address);
    await eventually("2 ready replicas again", async () => (await readyReplicas(kc)) === 2, 180_000, 1_000);
  });

  it("serves /metrics through the metrics Service over HTTPS to a metrics-reader token, and refuses anyone else", async () => {
    const svc = await c.core.readNamespacedService({ name: METRICS_SERVICE, namespace: CONTROLLER_NAMESPACE });
    const ip = svc.spec?.clusterIP ?? "";
    expect(ip).to.match(/^10\.0\.0\./);
    const text = await eventually(
      "metrics through the ClusterIP",
      async () => {
        const t = await metricsText(ip);
        return t.includes("metal3_ipam_leader") ? t : undefined;
      },
      30_000,
      500,
    );
    expect(text).to.match(/^metal3_ipam_process_/m);
    const anonymous = await scrapeSecure(ip, METRICS_PORT);
    expect(anonymous.status, "no token").to.equal(401);
    expect(anonymous.body).to.not.include("metal3_ipam_");
    const withoutRole = await scrapeSecure(ip, METRICS_PORT, await scraperToken(kc, "node-e2e-no-reader", false));
    expect(withoutRole.status, "a token without metrics-reader").to.equal(403);
  });

  it("runs without cert-manager as the README says: --webhook-self-managed, both replicas sharing one CA", async () => {
    await applyOverlay(plane!.kubeconfigPath, "node-self-managed");
    await eventually("the self-managed rollout", () => rolledOut(kc), 180_000, 1_000);
    // The old replicas serve the cert-manager certificate, which the new CA in the caBundle no longer trusts, until
    // they exit: calls a stale route still sends them would fail for that reason alone (seen once under load).
    await eventually(
      "the old replicas to be gone",
      async () => {
        const all = await c.core.listNamespacedPod({
          namespace: CONTROLLER_NAMESPACE,
          labelSelector: "control-plane=controller-manager",
        });
        return all.items.length === 2 && all.items.every((p) => !p.metadata?.deletionTimestamp);
      },
      120_000,
      500,
    );
    await eventually(
      "the webhook Service to accept connections",
      () => serviceAccepts(kc, WEBHOOK_SERVICE, 443),
      60_000,
      500,
    );
    const secret = await c.core.readNamespacedSecret({
      name: "metal3-ipam-webhook-self-managed",
      namespace: CONTROLLER_NAMESPACE,
    });
    const ca = Buffer.from(secret.data?.["ca.crt"] ?? "", "base64").toString();
    expect(ca).to.contain("BEGIN CERTIFICATE");
    await eventually(
      "the shared CA in every webhook",
      async () => (await caBundles(kc)).every((b) => b === ca),
      60_000,
      500,
    );
    // The API server picks a replica per call through the Service: every call is answered by a trusted certificate.
    const pods = await controllerPods(kc);
    expect(pods).to.have.length(2);
    const before = await Promise.all(pods.map((p) => webhookCallsOf(p.ip)));
    for (let i = 0; i < 20; i++) {
      const answer = await c.pools
        .create(ns, pool(ns, `bad-${i}`, { pools: [{ start: "10.9.0.9", end: "10.9.0.1" }] }))
        .then(
          () => "created",
          (err: unknown) => describeError(err),
        );
      expect(answer, `call ${i}: ${answer}`).to.contain(
        'admission webhook "validation.ippool.ipam.metal3.io" denied the request',
      );
    }
    const after = await Promise.all(pods.map((p) => webhookCallsOf(p.ip)));
    expect(after.map((n, i) => n - before[i]!).reduce((a, b) => a + b)).to.be.at.least(20);
  });

  async function webhookCallsOf(ip: string): Promise<number> {
    let sum = 0;
    for (const line of (await metricsText(ip)).split("\n"))
      if (line.startsWith("metal3_ipam_webhook_requests_total{")) sum += Number(line.split(" ").pop());
    return sum;
  }

  it("passes the e2e suites that take an external controller (ippool, capi), as on kind", async () => {
    const env = {
      ...process.env,
      USE_EXISTING_CLUSTER: "true",
      E2E_EXTERNAL_CONTROLLER: "true",
      KUBECONFIG: plane!.kubeconfigPath,
    };
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn("npx", ["mocha", "e2e/ippool.test.ts", "e2e/capi.test.ts"], {
        cwd: repoRoot,
        env,
        stdio: ["ignore", "inherit", "inherit"],
      });
      child.on("exit", resolve);
    });
    if (code !== 0)
      for (const p of await controllerPods(kc)) {
        // Warnings and errors of the whole run, then its end: what reading a failure of the other suites needs.
        const log = (await c.core.readNamespacedPodLog({ name: p.name, namespace: CONTROLLER_NAMESPACE })).split("\n");
        const notable = log.filter((l) => /"level":"(warn|error)"/.test(l)).join("\n");
        console.log(
          `--- ${p.name}, warnings and errors:\n${notable}\n--- its last lines:\n${log.slice(-40).join("\n")}`,
        );
      }
    expect(code, "mocha exit code of the external-controller suites").to.equal(0);
  });
});
