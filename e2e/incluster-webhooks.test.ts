/**
 * The in-cluster provider's pool webhooks (src/webhooks/incluster.ts) through a real API server: our webhook server
 * runs in this process on 127.0.0.1, and the two in-cluster entries of config/webhook/manifests.yaml point at it by
 * URL. Every admission rule of docs/incluster.md is exercised: each create message, the update that would drop an
 * address in use (also by making it the gateway, excluded or reserved), delete while IPAddresses refer to the pool,
 * with the skip annotation and with none in use, and a global pool held by an IPAddress of another namespace.
 *
 * CRDs: config/crd/incluster (generated) when it exists, else the permissive fixture e2e/fixtures/incluster-crds.
 * With the generated CRD its bounds (prefix and grace period not negative) refuse some input before the webhook is
 * asked; those cases accept either refusal.
 *
 * Isolation: GlobalInClusterIPPools are cluster-scoped, so a namespaceSelector cannot scope the configuration to
 * this suite; both entries carry an objectSelector on a label only this run's pools carry, and the configuration and
 * the global pools are deleted in after().
 */
import { expect } from "chai";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AdmissionregistrationV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { KubeConfig, V1ValidatingWebhook, V1ValidatingWebhookConfiguration } from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import { CAPI_IPADDRESS, GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL, resourceType } from "../api/registry.js";
import type { CapiIPAddress } from "../api/capi/types.js";
import { INCLUSTER_GROUP, INCLUSTER_VERSION, SKIP_VALIDATE_DELETE_ANNOTATION } from "../api/incluster/types.js";
import type { InClusterIPPool, InClusterIPPoolSpec } from "../api/incluster/types.js";
import { describeError, isNotFound, statusCodeOf } from "../src/kube/errors.js";
import { ResourceClient } from "../src/kube/resource.js";
import { silentLogger } from "../src/runtime/logger.js";
import { loopbackPki, writeCertDir } from "../src/webhooks/https.testutil.js";
import { kubeLookup } from "../src/webhooks/lookup.js";
import { startWebhookServer } from "../src/webhooks/server.js";
import type { WebhookServer } from "../src/webhooks/server.js";
import { freshNamespace, repoRoot, sharedCluster } from "../hack/testkit/cluster.js";
import { installCrds } from "../hack/testkit/crds.js";
import { eventually } from "../hack/testkit/wait.js";

const GENERATED_CRDS = join(repoRoot, "config", "crd", "incluster");
const FIXTURE_CRDS = join(repoRoot, "e2e", "fixtures", "incluster-crds");
/** Label on this run's pools; the webhook entries select it. */
const SCOPE_LABEL = "e2e.ipam.metal3.io/incluster-webhooks";
const runId = `${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
const NAMESPACED_WEBHOOK = "validation.inclusterippool.ipam.cluster.x-k8s.io";
const GLOBAL_WEBHOOK = "validation.globalinclusterippool.ipam.cluster.x-k8s.io";
const DELETE_REFUSAL = "Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed.";
const DROPPED = "pool addresses do not contain allocated addresses: ";

const denied = (webhook: string): string => `admission webhook "${webhook}" denied the request: `;

/** The in-cluster entries of the shipped validating configuration, pointed at `baseUrl` and scoped to `scope`. */
function configurationFor(
  name: string,
  baseUrl: string,
  caPem: string,
  scope: string,
): V1ValidatingWebhookConfiguration {
  const docs = loadAll(readFileSync(join(repoRoot, "config", "webhook", "manifests.yaml"), "utf8")) as Array<{
    kind?: string;
    webhooks?: V1ValidatingWebhook[];
  }>;
  const shipped = docs.find((d) => d.kind === "ValidatingWebhookConfiguration")?.webhooks ?? [];
  const webhooks = shipped
    .filter((w) => (w.rules ?? []).some((r) => r.apiGroups?.includes(INCLUSTER_GROUP)))
    .map((w) => ({
      ...w,
      clientConfig: {
        url: `${baseUrl}${w.clientConfig.service?.path ?? ""}`,
        caBundle: Buffer.from(caPem).toString("base64"),
      },
      objectSelector: { matchLabels: { [SCOPE_LABEL]: scope } },
    }));
  if (webhooks.length !== 2) throw new Error(`config/webhook/manifests.yaml has ${webhooks.length} in-cluster entries`);
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name },
    webhooks,
  };
}

/** How the API server refused a call; fails the test when the call succeeds. */
async function rejection(call: Promise<unknown>): Promise<{ code: number | undefined; message: string }> {
  try {
    await call;
  } catch (err) {
    return { code: statusCodeOf(err), message: describeError(err) };
  }
  throw new Error("expected the API server to refuse the request");
}

describe("in-cluster provider pool webhooks (real API server)", function () {
  this.timeout(180_000);
  const configuration = `ipam-incluster-webhooks-e2e-${runId}`;
  const scope = `incluster-${runId}`;
  const pki = loopbackPki();
  let kc: KubeConfig;
  let server: WebhookServer | undefined;
  let certDir: string | undefined;
  let pools: ResourceClient<InClusterIPPool>;
  let globals: ResourceClient<InClusterIPPool>;
  let ipAddresses: ResourceClient<CapiIPAddress>;
  let ns: string;
  let elsewhere: string;
  /** Whether the fixture CRDs (no bounds) are installed, so every rule reaches the webhook. */
  let permissive: boolean;
  const globalNames: string[] = [];

  /** A pool of this run (labelled for the webhook entries). */
  function poolOf(namespace: string | undefined, name: string, spec: Partial<InClusterIPPoolSpec>): InClusterIPPool {
    const metadata = { name, labels: { [SCOPE_LABEL]: scope }, ...(namespace ? { namespace } : {}) };
    return { metadata, spec: spec as InClusterIPPoolSpec };
  }

  /** A cluster-scoped pool named after this run (removed in after()). */
  function globalName(name: string): string {
    const full = `${name}-${runId}`;
    globalNames.push(full);
    return full;
  }

  /** A Cluster API IPAddress in `namespace` holding `address` from the pool `kind`/`pool`. */
  async function hold(namespace: string, kind: string, pool: string, address: string): Promise<string> {
    const name = `${pool}-${address.replace(/[.:]/g, "-")}`.replace(/-+$/, "");
    await ipAddresses.create(namespace, {
      metadata: { name, namespace },
      spec: { address, prefix: 24, claimRef: { name }, poolRef: { apiGroup: INCLUSTER_GROUP, kind, name: pool } },
    });
    return name;
  }

  /** Waits until the API server calls our webhooks (a configuration takes effect lazily). */
  async function webhooksEffective(): Promise<void> {
    const api = kc.makeApiClient(CustomObjectsApi);
    const bad = { addresses: ["10.0.0.9-10.0.0.1"], prefix: 24 };
    const probe = async (create: () => Promise<unknown>): Promise<boolean> => {
      try {
        await create();
        return false;
      } catch (err) {
        return describeError(err).includes("denied the request");
      }
    };
    const common = { group: INCLUSTER_GROUP, version: INCLUSTER_VERSION, dryRun: "All" };
    await eventually(
      "the in-cluster webhooks to be called",
      async () =>
        (await probe(() =>
          api.createNamespacedCustomObject({
            ...common,
            namespace: ns,
            plural: INCLUSTER_IPPOOL.plural,
            body: { ...poolOf(ns, "probe", bad), apiVersion: pools.apiVersion(), kind: INCLUSTER_IPPOOL.kind },
          }),
        )) &&
        (await probe(() =>
          api.createClusterCustomObject({
            ...common,
            plural: GLOBAL_INCLUSTER_IPPOOL.plural,
            body: {
              ...poolOf(undefined, `probe-${runId}`, bad),
              apiVersion: globals.apiVersion(),
              kind: GLOBAL_INCLUSTER_IPPOOL.kind,
            },
          }),
        )),
      60_000,
      250,
    );
  }

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    permissive = !existsSync(GENERATED_CRDS);
    await installCrds(kc, [permissive ? FIXTURE_CRDS : GENERATED_CRDS]);
    pools = new ResourceClient<InClusterIPPool>(kc, resourceType(INCLUSTER_IPPOOL));
    globals = new ResourceClient<InClusterIPPool>(kc, resourceType(GLOBAL_INCLUSTER_IPPOOL));
    ipAddresses = new ResourceClient<CapiIPAddress>(kc, resourceType(CAPI_IPADDRESS));
    certDir = writeCertDir(pki.serving);
    server = await startWebhookServer({ port: 0, host: "127.0.0.1", certDir, kubeConfig: kc, logger: silentLogger() });
    const body = configurationFor(configuration, `https://127.0.0.1:${server.port}`, pki.ca.certPem, scope);
    await kc.makeApiClient(AdmissionregistrationV1Api).createValidatingWebhookConfiguration({ body });
    ns = await freshNamespace(kc, "incluster-webhooks");
    elsewhere = await freshNamespace(kc, "incluster-webhooks-other");
    await webhooksEffective();
  });

  after(async () => {
    await kc
      ?.makeApiClient(AdmissionregistrationV1Api)
      .deleteValidatingWebhookConfiguration({ name: configuration })
      .catch(() => undefined);
    // Cluster-scoped: nothing else removes them from the shared cluster.
    for (const name of globalNames) {
      await globals?.delete("", name).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
    await server?.stop();
    if (certDir) rmSync(certDir, { recursive: true, force: true });
  });

  describe("on create", () => {
    const valid = { addresses: ["10.10.0.10-10.10.0.20"], prefix: 24, gateway: "10.10.0.1" };
    // `message`: fragments of the webhook's message. `bounded`: the field a generated CRD's bounds may refuse first.
    const refusals: Array<{ name: string; spec: Partial<InClusterIPPoolSpec>; message: string[]; bounded?: string }> = [
      { name: "no-addresses", spec: { addresses: [], prefix: 24 }, message: ["addresses is required"] },
      {
        name: "garbage",
        spec: { addresses: ["10.10.0.25", "garbage"], prefix: 24 },
        message: ['spec.addresses: Invalid value: "garbage": provided address is not a valid IP, range, nor CIDR'],
      },
      {
        name: "reversed",
        spec: { addresses: ["10.10.0.10-10.10.0.5"], prefix: 24 },
        message: [
          'spec.addresses: Invalid value: "10.10.0.10-10.10.0.5": provided address is not a valid IP, range, nor CIDR',
        ],
      },
      {
        name: "mixed",
        spec: { addresses: ["fd00::1", "10.10.0.1"], prefix: 24 },
        message: ["spec.addresses: Invalid value: ", "provided addresses are of mixed IP families"],
      },
      {
        name: "prefix-33",
        spec: { addresses: ["10.10.0.10-10.10.0.20"], prefix: 33 },
        message: ["spec.prefix: Invalid value: ", "provided prefix is not valid"],
      },
      {
        name: "other-subnet",
        spec: { addresses: ["10.10.0.25", "10.10.1.27"], prefix: 24 },
        message: [
          'spec.addresses: Invalid value: "10.10.1.27": provided address belongs to a different subnet than others',
        ],
      },
      {
        name: "gateway-unreadable",
        spec: { ...valid, gateway: "invalid" },
        message: ['spec.gateway: Invalid value: "invalid": ParseAddr("invalid"): unable to parse IP'],
      },
      {
        name: "gateway-family",
        spec: { ...valid, gateway: "fd00::1" },
        message: ['spec.gateway: Invalid value: "fd00::1": provided gateway and addresses are of mixed IP families'],
      },
      {
        name: "excluded-mixed",
        spec: { ...valid, excludedAddresses: ["fd00::1", "10.10.0.4"] },
        message: ["spec.excludedAddresses: Invalid value: ", "provided addresses are of mixed IP families"],
      },
      {
        name: "excluded-family",
        spec: { ...valid, excludedAddresses: ["fd00::1"] },
        message: ["addresses and excluded addresses are of mixed IP families"],
      },
      {
        name: "negative-prefix",
        spec: { ...valid, prefix: -1 },
        message: ["a valid prefix is required"],
        bounded: "spec.prefix",
      },
      {
        name: "negative-grace",
        spec: { ...valid, addressReuseGracePeriodSeconds: -1 },
        message: ["addressReuseGracePeriodSeconds must not be negative"],
        bounded: "spec.addressReuseGracePeriodSeconds",
      },
    ];
    for (const r of refusals) {
      it(`refuses ${r.name} with 422 in kubectl's form`, async () => {
        const { code, message } = await rejection(pools.create(ns, poolOf(ns, r.name, r.spec)));
        expect(code).to.equal(422);
        if (r.bounded && !permissive && !message.includes("admission webhook")) {
          // The generated CRD's bounds refused it first (the API server's own 422 names the field).
          expect(message).to.contain(r.bounded);
        } else {
          expect(message).to.contain(
            `${denied(NAMESPACED_WEBHOOK)}InClusterIPPool.ipam.cluster.x-k8s.io "${r.name}" is invalid: `,
          );
          for (const fragment of r.message) expect(message).to.contain(fragment);
        }
        expect(await pools.get(ns, r.name).catch((err: unknown) => (isNotFound(err) ? "gone" : err))).to.equal("gone");
      });
    }

    it("refuses an invalid GlobalInClusterIPPool, naming its kind", async () => {
      const name = globalName("bad");
      const { code, message } = await rejection(
        globals.create("", poolOf(undefined, name, { addresses: ["10.10.0.25", "10.10.1.27"], prefix: 24 })),
      );
      expect(code).to.equal(422);
      expect(message).to.contain(
        `${denied(GLOBAL_WEBHOOK)}GlobalInClusterIPPool.ipam.cluster.x-k8s.io "${name}" is invalid: ` +
          'spec.addresses: Invalid value: "10.10.1.27": provided address belongs to a different subnet than others',
      );
    });

    it("accepts valid pools of both families and both kinds as they are (no defaulting)", async () => {
      const v4 = { addresses: ["10.10.0.10-10.10.0.20", "10.10.0.64/28"], prefix: 24, gateway: "10.10.0.1" };
      expect((await pools.create(ns, poolOf(ns, "valid-v4", v4))).spec).to.deep.equal(v4);
      const v6 = {
        addresses: ["fe01::2", "fe01::3-fe01::5", "fe01::1:1/126"],
        prefix: 28,
        excludedAddresses: ["fe01::4"],
        addressReuseGracePeriodSeconds: 60,
      };
      expect((await pools.create(ns, poolOf(ns, "valid-v6", v6))).spec).to.deep.equal(v6);
      const zero = { addresses: ["10.10.0.10-10.10.0.20"], prefix: 0 };
      const global = await globals.create("", poolOf(undefined, globalName("valid"), zero));
      expect(global.spec).to.deep.equal(zero);
    });
  });

  describe("on update", () => {
    const base = { addresses: ["10.20.0.10-10.20.0.20"], prefix: 24, gateway: "10.20.0.1" };

    before(async () => {
      await pools.create(ns, poolOf(ns, "held", base));
      await hold(ns, INCLUSTER_IPPOOL.kind, "held", "10.20.0.15");
    });

    it("reads the stored pool's uid as metadata only (kubeLookup), never the whole pool", async () => {
      const stored = await pools.get(ns, "held");
      const partial = await pools.getMetadata(ns, "held");
      expect([partial.kind, partial.metadata.uid, "spec" in partial]).to.deep.equal([
        "PartialObjectMetadata",
        stored.metadata.uid,
        false,
      ]);
      const lookup = kubeLookup(kc);
      expect(await lookup.inClusterPoolUid(INCLUSTER_IPPOOL.kind, "held", ns)).to.equal(stored.metadata.uid);
      expect(await lookup.inClusterPoolUid(INCLUSTER_IPPOOL.kind, "absent", ns)).to.equal(undefined);
    });

    it("refuses with 400 addresses that drop an address in use", async () => {
      const { code, message } = await rejection(
        pools.patch(ns, "held", { spec: { addresses: ["10.20.0.16-10.20.0.20"] } }),
      );
      expect(code).to.equal(400);
      expect(message).to.contain(`${denied(NAMESPACED_WEBHOOK)}${DROPPED}`);
      expect(message).to.contain("10.20.0.15");
    });

    it("refuses an address in use becoming the gateway, excluded or reserved", async () => {
      for (const spec of [
        { gateway: "10.20.0.15" },
        { excludedAddresses: ["10.20.0.14-10.20.0.16"] },
        { addresses: ["10.20.0.10-10.20.0.15"], prefix: 28 }, // 10.20.0.15 is the broadcast of 10.20.0.0/28
      ]) {
        const { code, message } = await rejection(pools.patch(ns, "held", { spec }));
        expect(code, JSON.stringify(spec)).to.equal(400);
        expect(message, JSON.stringify(spec)).to.contain(`${DROPPED}`);
        expect(message, JSON.stringify(spec)).to.contain("10.20.0.15");
      }
      await pools.create(
        ns,
        poolOf(ns, "reserved", { addresses: ["10.21.0.0/24"], prefix: 24, allocateReservedIPAddresses: true }),
      );
      await hold(ns, INCLUSTER_IPPOOL.kind, "reserved", "10.21.0.0");
      const { code, message } = await rejection(
        pools.patch(ns, "reserved", { spec: { allocateReservedIPAddresses: false } }),
      );
      expect(code).to.equal(400);
      expect(message).to.contain(`${DROPPED}`);
      expect(message).to.contain("10.21.0.0");
    });

    it("refuses an invalid change with 422, accepts a change that keeps every address in use", async () => {
      const { code, message } = await rejection(
        pools.patch(ns, "held", { spec: { addresses: ["10.20.0.20-10.20.0.10"] } }),
      );
      expect(code).to.equal(422);
      expect(message).to.contain(
        `${denied(NAMESPACED_WEBHOOK)}InClusterIPPool.ipam.cluster.x-k8s.io "held" is invalid`,
      );
      const grown = await pools.patch(ns, "held", {
        spec: { addresses: ["10.20.0.10-10.20.0.40"], excludedAddresses: ["10.20.0.30"] },
      });
      expect(grown.spec.addresses).to.deep.equal(["10.20.0.10-10.20.0.40"]);
    });

    it("takes metadata and status writes without reading the cluster, where a spec change is refused", async () => {
      // An IPAddress outside the pool (the provider counts it as out of range): any spec change is refused now.
      const stray = await hold(ns, INCLUSTER_IPPOOL.kind, "held", "10.20.1.1");
      const labelled = await pools.patch(ns, "held", { metadata: { labels: { touched: "yes" } } });
      expect(labelled.metadata.labels).to.include({ touched: "yes" });
      const status = await pools.patchStatus(ns, "held", {
        status: { ipAddresses: { total: 30, used: 2, free: 28, outOfRange: 1 } },
      });
      expect(status.status?.ipAddresses?.outOfRange).to.equal(1);
      const { code, message } = await rejection(pools.patch(ns, "held", { spec: { gateway: "10.20.0.2" } }));
      expect(code).to.equal(400);
      expect(message).to.contain(`${DROPPED}`);
      expect(message).to.contain("10.20.1.1");
      await ipAddresses.delete(ns, stray);
      expect((await pools.patch(ns, "held", { spec: { gateway: "10.20.0.2" } })).spec.gateway).to.equal("10.20.0.2");
    });
  });

  describe("on delete", () => {
    it("refuses with 400 while an IPAddress refers to the pool; allows once it is gone", async () => {
      await pools.create(ns, poolOf(ns, "busy", { addresses: ["10.30.0.10-10.30.0.20"], prefix: 24 }));
      const address = await hold(ns, INCLUSTER_IPPOOL.kind, "busy", "10.30.0.10");
      const { code, message } = await rejection(pools.delete(ns, "busy"));
      expect(code).to.equal(400);
      expect(message).to.equal(`${denied(NAMESPACED_WEBHOOK)}${DELETE_REFUSAL}`);
      await ipAddresses.delete(ns, address);
      await pools.delete(ns, "busy");
      expect(await pools.get(ns, "busy").catch((err: unknown) => (isNotFound(err) ? "gone" : err))).to.equal("gone");
    });

    it("allows a pool annotated skip-validate-delete-webhook although IPAddresses refer to it", async () => {
      await pools.create(ns, poolOf(ns, "moving", { addresses: ["10.31.0.10-10.31.0.20"], prefix: 24 }));
      await hold(ns, INCLUSTER_IPPOOL.kind, "moving", "10.31.0.10");
      await pools.patch(ns, "moving", { metadata: { annotations: { [SKIP_VALIDATE_DELETE_ANNOTATION]: "" } } });
      await pools.delete(ns, "moving");
    });

    it("counts for an InClusterIPPool only the IPAddresses of its namespace", async () => {
      await pools.create(ns, poolOf(ns, "local", { addresses: ["10.32.0.10-10.32.0.20"], prefix: 24 }));
      await hold(elsewhere, INCLUSTER_IPPOOL.kind, "local", "10.32.0.10");
      await pools.delete(ns, "local");
    });
  });

  describe("GlobalInClusterIPPool", () => {
    it("is held by an IPAddress of any namespace: update and delete refused, allowed with the annotation", async () => {
      const name = globalName("shared");
      await globals.create("", poolOf(undefined, name, { addresses: ["10.40.0.0/24"], prefix: 24 }));
      await hold(elsewhere, GLOBAL_INCLUSTER_IPPOOL.kind, name, "10.40.0.7");
      // An InClusterIPPool of the same name does not hold it.
      await hold(ns, INCLUSTER_IPPOOL.kind, name, "10.40.0.8");
      const update = await rejection(globals.patch("", name, { spec: { addresses: ["10.40.0.8-10.40.0.20"] } }));
      expect(update.code).to.equal(400);
      expect(update.message).to.contain(`${denied(GLOBAL_WEBHOOK)}${DROPPED}`);
      expect(update.message).to.contain("10.40.0.7");
      expect(update.message).to.not.contain("10.40.0.8");
      const removal = await rejection(globals.delete("", name));
      expect(removal).to.deep.equal({ code: 400, message: `${denied(GLOBAL_WEBHOOK)}${DELETE_REFUSAL}` });
      await globals.patch("", name, { metadata: { annotations: { [SKIP_VALIDATE_DELETE_ANNOTATION]: "true" } } });
      await globals.delete("", name);
    });

    it("may be deleted when nothing refers to it", async () => {
      const name = globalName("idle");
      await globals.create("", poolOf(undefined, name, { addresses: ["10.41.0.0/24"], prefix: 24 }));
      await globals.delete("", name);
    });
  });
});
