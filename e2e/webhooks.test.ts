/**
 * The admission webhooks of spec §6 through a real API server: our server runs in this process on 127.0.0.1, the
 * webhook configurations (built from config/webhook/manifests.yaml) point at it by URL.
 *
 * Isolation: webhook configurations are cluster-scoped and the cluster is shared with other suites, so every
 * configuration here carries a namespaceSelector matching a label only this suite's namespaces carry, and is deleted
 * in after().
 *
 * Order of checks in the API server: mutating webhooks, then the CRD schema (patterns, CEL rules), then validating
 * webhooks. Input the schema already refuses (an unparsable address, a changed namePrefix) never reaches our
 * validating webhook; the tests show those are refused too, and src/webhooks/handlers.test.ts shows what the webhook
 * itself says about them.
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import { request } from "node:https";
import type { RequestOptions } from "node:https";
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { CRDS } from "../api/v1alpha1/schema.js";
import { CAPI_IPADDRESSCLAIM, IPADDRESS, IPPOOL, resourceType } from "../api/registry.js";
import { DELETE_FOR_MOVE_ANNOTATION, GROUP, IPPOOL_FINALIZER, VERSION } from "../api/v1alpha1/types.js";
import type { IPAddress, IPPool } from "../api/v1alpha1/types.js";
import type { IPAddressClaim } from "../api/capi/types.js";
import { ResourceClient } from "../src/kube/resource.js";
import { describeError } from "../src/kube/errors.js";
import { silentLogger } from "../src/runtime/logger.js";
import { loopbackPki, writeCertDir } from "../src/webhooks/https.testutil.js";
import { createCertificateAuthority, issueServingCertificate, servingCertificateProblem } from "../src/certs/pki.js";
import { startWebhookServer } from "../src/webhooks/server.js";
import type { WebhookServer } from "../src/webhooks/server.js";
import { freshNamespace, sharedCluster } from "../hack/testkit/cluster.js";
import { scopedWebhookConfigurations } from "../hack/testkit/hostile.js";
import { addressOf, claim, clients, exists, pool, startController } from "../hack/testkit/ipam.js";
import type { Clients } from "../hack/testkit/ipam.js";
import { eventually } from "../hack/testkit/wait.js";

/** Label on this suite's namespaces; the webhook configurations select it. */
const SCOPE_LABEL = "e2e.ipam.metal3.io/webhooks";
const runId = `${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions("Content-Type", PatchStrategy.JsonPatch);

/** Whether a shipped webhook entry is one of Metal3's kinds (`ipam.metal3.io`). */
const servesMetal3 = (w: { rules?: Array<{ apiGroups?: string[] }> }): boolean =>
  (w.rules ?? []).some((r) => r.apiGroups?.includes(GROUP));

/**
 * The shipped configurations, renamed, pointed at `baseUrl` by URL and scoped to namespaces labelled `scope`. Metal3's
 * entries only: the in-cluster pools' entries (one cluster-scoped, which no namespaceSelector scopes) have their own
 * suite, e2e/incluster-webhooks.test.ts.
 */
function configurationsFor(
  name: string,
  baseUrl: string,
  caPem: string,
  scope: string,
): ReturnType<typeof scopedWebhookConfigurations> {
  return scopedWebhookConfigurations(name, baseUrl, caPem, SCOPE_LABEL, scope, servesMetal3);
}

async function createConfigurations(kc: KubeConfig, configs: ReturnType<typeof configurationsFor>): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  await api.createMutatingWebhookConfiguration({ body: configs.mutating });
  await api.createValidatingWebhookConfiguration({ body: configs.validating });
}

async function deleteConfigurations(kc: KubeConfig, name: string): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  await api.deleteMutatingWebhookConfiguration({ name: `${name}-mutating` }).catch(() => undefined);
  await api.deleteValidatingWebhookConfiguration({ name: `${name}-validating` }).catch(() => undefined);
}

/** Puts `ns` in the scope of the configurations selecting `scope`. */
async function labelNamespace(kc: KubeConfig, ns: string, scope: string): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .patchNamespace({ name: ns, body: { metadata: { labels: { [SCOPE_LABEL]: scope } } } }, mergePatch);
}

/** A fresh namespace carrying the scope label. */
async function scopedNamespace(kc: KubeConfig, prefix: string, scope: string): Promise<string> {
  const ns = await freshNamespace(kc, prefix);
  await labelNamespace(kc, ns, scope);
  return ns;
}

/** The API error message of a rejected call; fails the test when the call succeeds. */
async function rejection(
  call: Promise<unknown>,
): Promise<{ message: string; status: { details?: { causes?: Array<{ field?: string }> } } }> {
  try {
    await call;
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    const status = (typeof body === "string" ? JSON.parse(body) : body) as {
      details?: { causes?: Array<{ field?: string }> };
    };
    return { message: describeError(err), status };
  }
  throw new Error("expected the API server to refuse the request");
}

const denied = (webhook: string): string => `admission webhook "${webhook}" denied the request: `;

/** Waits until the API server calls our validating webhook for `ns` (configurations and labels propagate lazily). */
async function webhooksEffective(kc: KubeConfig, ns: string): Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const probe = pool(ns, "probe", { pools: [{ start: "10.0.0.9", end: "10.0.0.1" }] });
  await eventually(
    `webhooks to serve namespace ${ns}`,
    async () => {
      try {
        await api.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: IPPOOL.plural,
          body: probe,
          dryRun: "All",
        });
        return false;
      } catch (err) {
        return describeError(err).includes("denied the request");
      }
    },
    60_000,
    250,
  );
}

/** A create through the API server by raw HTTPS, to read the `Warning` headers client-node does not surface. */
function createWithWarnings(
  kc: KubeConfig,
  path: string,
  body: unknown,
): Promise<{ status: number; warnings: string[] }> {
  return new Promise((resolve, reject) => {
    const server = new URL(kc.getCurrentCluster()?.server ?? "");
    const options: RequestOptions = {
      method: "POST",
      hostname: server.hostname,
      port: server.port,
      path,
      headers: { "Content-Type": "application/json" },
    };
    kc.applyToHTTPSOptions(options).then(() => {
      const req = request(options, (res) => {
        res.resume();
        res.on("end", () => {
          const warnings: string[] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            if (res.rawHeaders[i]?.toLowerCase() !== "warning") continue;
            const m = /^\d{3} \S+ "(.*)"$/.exec(res.rawHeaders[i + 1] ?? "");
            if (m?.[1] !== undefined) warnings.push(m[1].replace(/\\(.)/g, "$1"));
          }
          resolve({ status: res.statusCode ?? 0, warnings });
        });
      });
      req.on("error", reject);
      req.end(JSON.stringify(body));
    }, reject);
  });
}

describe("admission webhooks (real API server)", function () {
  this.timeout(180_000);
  const name = `ipam-webhooks-e2e-${runId}`;
  const scope = `certdir-${runId}`;
  const pki = loopbackPki();
  let kc: KubeConfig;
  let c: Clients;
  let server: WebhookServer;
  let certDir: string;
  let ns: string;

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    c = clients(kc);
    certDir = writeCertDir(pki.serving);
    server = await startWebhookServer({ port: 0, host: "127.0.0.1", certDir, kubeConfig: kc, logger: silentLogger() });
    await createConfigurations(kc, configurationsFor(name, `https://127.0.0.1:${server.port}`, pki.ca.certPem, scope));
    ns = await scopedNamespace(kc, "webhooks", scope);
    await webhooksEffective(kc, ns);
  });

  after(async () => {
    await deleteConfigurations(kc, name);
    await server?.stop();
    if (certDir) rmSync(certDir, { recursive: true, force: true });
  });

  describe("the CRDs as served", () => {
    it("discovery lists Metal3's eight short names and categories per kind (what `kubectl get m3ipaddresses` resolves)", async () => {
      const served = await kc.makeApiClient(CustomObjectsApi).getAPIResources({ group: GROUP, version: VERSION });
      const byName = new Map(served.resources.map((r) => [r.name, r]));
      expect(byName.get("ipaddresses")?.shortNames).to.include.members(["m3ipaddresses", "metal3ipa", "ipaddress"]);
      for (const def of CRDS) {
        const r = byName.get(def.plural);
        expect(r?.shortNames, def.kind).to.have.members(def.shortNames);
        expect(r?.shortNames, def.kind).to.have.length(8);
        expect(r?.categories, def.kind).to.deep.equal(def.categories);
      }
    });

    it("carry Cluster API's provider-contract labels next to clusterctl's", async () => {
      const api = kc.makeApiClient(ApiextensionsV1Api);
      for (const def of CRDS) {
        const crd = await api.readCustomResourceDefinition({ name: `${def.plural}.${GROUP}` });
        expect(crd.metadata?.labels, def.kind).to.include({
          "cluster.x-k8s.io/v1beta1": "v1alpha1",
          "cluster.x-k8s.io/v1beta2": "v1alpha1",
          "clusterctl.cluster.x-k8s.io": "",
        });
      }
    });
  });

  describe("IPPool on create", () => {
    const refusals: Array<{
      name: string;
      spec: Partial<IPPool["spec"]> & { pools: IPPool["spec"]["pools"] };
      message: string;
    }> = [
      {
        name: "end-before-start",
        spec: { pools: [{ subnet: "10.0.0.0/24" }, { start: "10.0.1.9", end: "10.0.1.1" }] },
        message: 'spec.pools[1].end: Invalid value: "10.0.1.1": end is before start',
      },
      {
        name: "empty-entry",
        spec: { pools: [{ prefix: 24, gateway: "10.0.0.1" }] },
        message: "spec.pools[0]: Required value: one of start, end or subnet is required",
      },
      {
        name: "prealloc-outside",
        spec: { pools: [{ subnet: "10.0.0.0/24" }], preAllocations: { m1: "10.9.0.1" } },
        message:
          'spec.preAllocations[m1]: Invalid value: "10.9.0.1": out of bounds: the address lies in no entry of spec.pools',
      },
      {
        name: "prealloc-repeated",
        spec: { pools: [{ subnet: "2001:db8::/64" }], preAllocations: { a: "2001:db8::5", b: "2001:db8::0005" } },
        message: 'spec.preAllocations[b]: Duplicate value: "2001:db8::0005": same address as spec.preAllocations[a]',
      },
      {
        name: "random-unbounded",
        spec: { pools: [{ start: "10.0.0.1" }], allocationStrategy: "random" },
        message: 'spec.allocationStrategy: Invalid value: "random": spec.pools[0] has no known size',
      },
    ];
    for (const r of refusals) {
      it(`refuses ${r.name} in kubectl's form`, async () => {
        const { message } = await rejection(c.pools.create(ns, pool(ns, r.name, r.spec)));
        expect(message).to.contain(
          `${denied("validation.ippool.ipam.metal3.io")}IPPool.ipam.metal3.io "${r.name}" is invalid: ${r.message}`,
        );
        expect(await exists(c.pools, ns, r.name)).to.equal(false);
      });
    }

    it("reports every error of one object at once", async () => {
      const spec = {
        pools: [{ subnet: "10.0.0.0/24" }, { start: "10.0.1.9", end: "10.0.1.1" }, { prefix: 24 }],
        preAllocations: { m: "10.7.0.1" },
      };
      const { message, status } = await rejection(c.pools.create(ns, pool(ns, "many", spec)));
      expect(message).to.contain(
        'IPPool.ipam.metal3.io "many" is invalid: [spec.pools[1].end: Invalid value: "10.0.1.1": end is before start, ',
      );
      expect(message).to.contain("spec.pools[2]: Required value");
      expect(message).to.contain("spec.preAllocations[m]: Invalid value");
      expect(status.details?.causes?.map((x) => x.field)).to.deep.equal([
        "spec.pools[1].end",
        "spec.pools[2]",
        "spec.preAllocations[m]",
      ]);
    });

    it("refuses unparsable addresses (the CRD schema catches them before the webhook)", async () => {
      const { message } = await rejection(
        c.pools.create(ns, pool(ns, "unparsable", { pools: [{ start: "10.0.0.256", end: "10.0.1.1" }] })),
      );
      expect(message).to.contain('IPPool.ipam.metal3.io "unparsable" is invalid: spec.pools[0].start');
    });

    it('accepts valid pools of both families and defaults allocationStrategy, "" included', async () => {
      const v4 = await c.pools.create(
        ns,
        pool(ns, "valid-v4", {
          pools: [{ start: "10.1.0.10", end: "10.1.0.20", gateway: "10.1.0.1" }],
          prefix: 24,
          allocationStrategy: "",
        }),
      );
      expect(v4.spec.allocationStrategy).to.equal("sequential");
      const v6 = await c.pools.create(
        ns,
        pool(ns, "valid-v6", {
          pools: [{ subnet: "2001:db8:1::/120" }],
          preAllocations: { a: "2001:db8:1::0005" },
          allocationStrategy: "random",
        }),
      );
      expect(v6.spec.allocationStrategy).to.equal("random");
    });

    it("warns (admission warnings through the API server) about overlapping ranges and a shared namePrefix", async () => {
      await c.pools.create(
        ns,
        pool(ns, "warn-a", { namePrefix: "shared", pools: [{ start: "10.2.0.10", end: "10.2.0.20" }] }),
      );
      const path = c.pools.collectionPath(ns);
      const body = pool(ns, "warn-b", { namePrefix: "shared", pools: [{ subnet: "10.2.0.0/24" }] });
      const res = await createWithWarnings(kc, path, body);
      expect(res.status).to.equal(201);
      expect(res.warnings).to.deep.equal([
        'namePrefix "shared" is also used by IPPool "warn-a": names of IPAddresses of overlapping ranges collide',
        'spec.pools[0] overlaps spec.pools[0] of IPPool "warn-a"',
      ]);
      const quiet = await createWithWarnings(kc, path, pool(ns, "warn-c", { pools: [{ subnet: "10.3.0.0/24" }] }));
      expect(quiet).to.deep.equal({ status: 201, warnings: [] });
    });

    it("accepts what Metal3 accepts, with warnings: mixed-family entries, a preallocation no entry yields", async () => {
      const body = pool(ns, "mixed", {
        pools: [{ start: "10.3.1.1", end: "2001:db8::1" }, { subnet: "10.3.2.0/24" }],
        preAllocations: { m: "10.3.2.0" },
      });
      const res = await createWithWarnings(kc, c.pools.collectionPath(ns), body);
      expect(res.status).to.equal(201);
      expect(res.warnings).to.deep.equal([
        'spec.pools[0].end "2001:db8::1": start, end and subnet are of different address families: the entry yields no address',
        'spec.preAllocations[m]: no entry of spec.pools yields 10.3.2.0: claim "m" will fail with "Pre-allocated IP out of bounds"',
      ]);
      expect((await c.pools.get(ns, "mixed")).spec.pools).to.have.length(2);
    });

    it("accepts a pool of an IPv4 and an IPv6 range (Metal3 does), warning about the order and spec.prefix", async () => {
      const body = pool(ns, "dual", {
        pools: [
          { start: "10.3.3.10", end: "10.3.3.20" },
          { start: "2001:db8:3::10", end: "2001:db8:3::20" },
        ],
        prefix: 24,
      });
      const res = await createWithWarnings(kc, c.pools.collectionPath(ns), body);
      expect(res.status).to.equal(201);
      expect(res.warnings).to.deep.equal([
        "spec.pools mixes IPv4 and IPv6 entries: claims that request no address get IPv4 addresses (spec.pools[0]) " +
          "until those run out, then IPv6 ones (spec.pools[1]); and one spec.prefix cannot suit both families: set a " +
          "prefix on each entry (spec.pools[0], spec.pools[1] have none)",
      ]);
      expect((await c.pools.get(ns, "dual")).spec.pools).to.have.length(2);
    });
  });

  describe("IPPool on update", () => {
    it("keeps namePrefix and strategy immutable, validates changed specs, accepts valid changes", async () => {
      await c.pools.create(
        ns,
        pool(ns, "upd", { pools: [{ start: "10.4.0.10", end: "10.4.0.20" }], allocationStrategy: "random" }),
      );
      // The CRD's CEL rules refuse these before our webhook is asked (which would refuse them too).
      expect((await rejection(c.pools.patch(ns, "upd", { spec: { namePrefix: "other" } }))).message).to.match(
        /spec\.namePrefix: .*immutable/,
      );
      expect(
        (await rejection(c.pools.patch(ns, "upd", { spec: { allocationStrategy: "sequential" } }))).message,
      ).to.match(/spec\.allocationStrategy: .*immutable/);
      const broken = await rejection(
        c.pools.patch(ns, "upd", { spec: { pools: [{ start: "10.4.0.10", end: "10.4.0.2" }] } }),
      );
      expect(broken.message).to.contain(
        `${denied("validation.ippool.ipam.metal3.io")}IPPool.ipam.metal3.io "upd" is invalid: spec.pools[0].end: Invalid value: "10.4.0.2": end is before start`,
      );
      const widened = await c.pools.patch(ns, "upd", { spec: { pools: [{ start: "10.4.0.10", end: "10.4.0.40" }] } });
      expect(widened.spec.pools?.[0]?.end).to.equal("10.4.0.40");
    });

    it("validates only spec changes: a pool stored invalid before the webhooks still takes metadata and status writes", async () => {
      const legacy = await freshNamespace(kc, "webhooks-legacy");
      await c.pools.create(legacy, pool(legacy, "legacy", { pools: [{ start: "10.5.0.9", end: "10.5.0.1" }] }));
      const empty = await c.pools.create(
        legacy,
        pool(legacy, "legacy-empty", { pools: [{ subnet: "10.6.0.0/24" }], allocationStrategy: "" }),
      );
      expect(empty.spec.allocationStrategy, 'the schema keeps ""; only our webhook defaults it').to.equal("");
      await labelNamespace(kc, legacy, scope);
      await webhooksEffective(kc, legacy);
      const defaulted = await c.pools.patch(legacy, "legacy-empty", { metadata: { labels: { touched: "yes" } } });
      expect(defaulted.spec.allocationStrategy).to.equal("sequential");
      const patched = await c.pools.patch(legacy, "legacy", {
        metadata: { labels: { a: "b" }, finalizers: [IPPOOL_FINALIZER] },
      });
      expect(patched.metadata.labels).to.deep.equal({ a: "b" });
      const status = await c.pools.patchStatus(legacy, "legacy", { status: { indexes: { x: "10.5.0.1" } } });
      expect(status.status?.indexes).to.deep.equal({ x: "10.5.0.1" });
      const stillBroken = await rejection(c.pools.patch(legacy, "legacy", { spec: { gateway: "10.5.0.254" } }));
      expect(stillBroken.message).to.contain('spec.pools[0].end: Invalid value: "10.5.0.1": end is before start');
      const fixed = await c.pools.patch(legacy, "legacy", {
        spec: { pools: [{ start: "10.5.0.1", end: "10.5.0.9" }] },
      });
      expect(fixed.spec.pools?.[0]?.start).to.equal("10.5.0.1");
      await c.pools.patch(legacy, "legacy", { metadata: { finalizers: null } });
    });
  });

  describe("IPClaim and IPAddress", () => {
    it("refuses an ipAddress annotation that is not an address, and a moved claim", async () => {
      const bad = await rejection(
        c.claims.create(ns, claim(ns, "bad-annotation", "valid-v4", { annotations: { ipAddress: "10.1.0.x" } })),
      );
      expect(bad.message).to.contain(
        `${denied("validation.ipclaim.ipam.metal3.io")}IPClaim.ipam.metal3.io "bad-annotation" is invalid: metadata.annotations[ipAddress]: Invalid value: "10.1.0.x": not a valid IP address`,
      );
      await c.claims.create(ns, claim(ns, "good", "valid-v4", { annotations: { ipAddress: "10.1.0.15" } }));
      expect(
        (await rejection(c.claims.patch(ns, "good", { metadata: { annotations: { ipAddress: "nope" } } }))).message,
      ).to.contain("metadata.annotations[ipAddress]");
      expect((await rejection(c.claims.patch(ns, "good", { spec: { pool: { name: "valid-v6" } } }))).message).to.match(
        /spec\.pool: .*immutable/,
      );
      const labelled = await c.claims.patch(ns, "good", { metadata: { labels: { x: "y" } } });
      expect(labelled.metadata.labels).to.deep.equal({ x: "y" });
    });

    it("accepts an empty ipAddress annotation (Metal3 treats it as absent), with a warning", async () => {
      const res = await createWithWarnings(
        kc,
        c.claims.collectionPath(ns),
        claim(ns, "empty-annotation", "valid-v4", { annotations: { ipAddress: "" } }),
      );
      expect(res).to.deep.equal({
        status: 201,
        warnings: ["metadata.annotations[ipAddress] is empty: treated as absent, the claim gets any free address"],
      });
      const labelled = await c.claims.patch(ns, "empty-annotation", { metadata: { labels: { x: "y" } } });
      expect(labelled.metadata.annotations).to.deep.equal({ ipAddress: "" });
    });

    it("accepts a person-made IPAddress and keeps address, pool and claim immutable, as Metal3 does", async () => {
      const reservation: IPAddress = {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "IPAddress",
        metadata: { name: "reserved", namespace: ns },
        spec: {
          address: "10.1.0.12",
          pool: { name: "valid-v4", namespace: "" },
          claim: { name: "outside-kubernetes" },
          prefix: 24,
        },
      };
      await c.addresses.create(ns, reservation);
      // The CRD's CEL rules refuse these before our webhook is asked (which would refuse them too).
      expect((await rejection(c.addresses.patch(ns, "reserved", { spec: { address: "10.1.0.13" } }))).message).to.match(
        /spec\.address: .*address is immutable/,
      );
      expect(
        (await rejection(c.addresses.patch(ns, "reserved", { spec: { pool: { name: "valid-v6" } } }))).message,
      ).to.match(/spec\.pool: .*pool is immutable/);
      expect(
        (await rejection(c.addresses.patch(ns, "reserved", { spec: { pool: { name: "valid-v4", kind: "Other" } } })))
          .message,
      ).to.match(/spec\.pool: .*pool is immutable/);
      expect(
        (await rejection(c.addresses.patch(ns, "reserved", { spec: { claim: { name: "other", namespace: ns } } })))
          .message,
      ).to.match(/spec\.claim: .*claim is immutable/);
      const labelled = await c.addresses.patch(ns, "reserved", { metadata: { labels: { kept: "yes" } } });
      expect(labelled.metadata.labels).to.deep.equal({ kept: "yes" });
    });

    it("lets prefix, gateway and dnsServers change", async () => {
      const stored = await c.addresses.patch(ns, "reserved", {
        spec: { gateway: "10.1.0.1", dnsServers: ["8.8.8.8"] },
      });
      expect(stored.spec.gateway).to.equal("10.1.0.1");
      const changed = await c.addresses.patch(ns, "reserved", {
        spec: { gateway: "10.1.0.254", prefix: 26, dnsServers: ["1.1.1.1", "9.9.9.9"] },
      });
      expect([changed.spec.gateway, changed.spec.prefix, changed.spec.dnsServers]).to.deep.equal([
        "10.1.0.254",
        26,
        ["1.1.1.1", "9.9.9.9"],
      ]);
    });

    it('takes a full update from a Go client that omits zero values (prefix 0, empty lists, "" references)', async () => {
      const stored = await c.addresses.create(ns, {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "IPAddress",
        metadata: { name: "zeroes", namespace: ns },
        spec: {
          address: "10.1.0.14",
          pool: { name: "valid-v4", namespace: "", kind: "" },
          claim: { name: "someone", namespace: "" },
          prefix: 0,
          dnsServers: [],
        },
      });
      expect([stored.spec.prefix, stored.spec.dnsServers, stored.spec.pool.namespace]).to.deep.equal([0, [], ""]);
      // What encoding Metal3's Go types produces for the same object: every zero value left out (omitempty).
      const fromGo = {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "IPAddress",
        metadata: {
          name: "zeroes",
          namespace: ns,
          resourceVersion: stored.metadata.resourceVersion,
          labels: { touched: "by-go" },
        },
        spec: { address: "10.1.0.14", pool: { name: "valid-v4" }, claim: { name: "someone" } },
      };
      const api = kc.makeApiClient(CustomObjectsApi);
      const replaced = (await api.replaceNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: IPADDRESS.plural,
        name: "zeroes",
        body: fromGo,
      })) as IPAddress;
      expect(replaced.metadata.labels).to.deep.equal({ touched: "by-go" });
      expect(replaced.spec).to.deep.equal(fromGo.spec);
    });
  });

  describe("with the controller running", () => {
    let ctlNs: string;
    let stopController: () => Promise<void>;

    before(async () => {
      ctlNs = await scopedNamespace(kc, "webhooks-ctl", scope);
      await webhooksEffective(kc, ctlNs);
      stopController = (await startController(kc, ctlNs)).stop;
    });

    after(async () => {
      await stopController?.();
    });

    const bound = (claimName: string): Promise<string> =>
      eventually(`claim ${claimName} to get an address`, () => addressOf(c, ctlNs, claimName), 60_000, 200);

    it("allocates and releases: the controller's finalizer, metadata and status writes are never refused", async () => {
      await c.pools.create(
        ctlNs,
        pool(ctlNs, "alloc", { pools: [{ start: "10.60.0.1", end: "10.60.0.9" }], prefix: 24 }),
      );
      for (const n of ["c1", "c2", "c3"]) await c.claims.create(ctlNs, claim(ctlNs, n, "alloc"));
      const got = await Promise.all(["c1", "c2", "c3"].map(bound));
      expect(new Set(got)).to.deep.equal(new Set(["10.60.0.1", "10.60.0.2", "10.60.0.3"]));
      await eventually(
        "pool status to count 3",
        async () => (await c.pools.get(ctlNs, "alloc")).status?.used === 3,
        30_000,
        200,
      );
      expect((await c.pools.get(ctlNs, "alloc")).metadata.finalizers).to.include(IPPOOL_FINALIZER);
      await c.claims.delete(ctlNs, "c2");
      await eventually("c2 to be released", async () => !(await exists(c.claims, ctlNs, "c2")), 30_000, 200);
      await eventually(
        "pool status to count 2",
        async () => (await c.pools.get(ctlNs, "alloc")).status?.used === 2,
        30_000,
        200,
      );
    });

    it('gives a claim annotated ipAddress: "" the first free address, like a claim without the annotation', async () => {
      await c.pools.create(ctlNs, pool(ctlNs, "blank", { pools: [{ start: "10.64.0.1", end: "10.64.0.9" }] }));
      await c.claims.create(ctlNs, claim(ctlNs, "blank-claim", "blank", { annotations: { ipAddress: "" } }));
      expect(await bound("blank-claim")).to.equal("10.64.0.1");
      expect((await c.claims.get(ctlNs, "blank-claim")).status?.errorMessage).to.equal(undefined);
    });

    it("refuses a pool update that would drop an address in use", async () => {
      await c.pools.create(ctlNs, pool(ctlNs, "inuse", { pools: [{ start: "10.61.0.10", end: "10.61.0.20" }] }));
      await c.claims.create(ctlNs, claim(ctlNs, "holder", "inuse"));
      expect(await bound("holder")).to.equal("10.61.0.10");
      const { message } = await rejection(
        c.pools.patch(ctlNs, "inuse", { spec: { pools: [{ start: "10.61.0.11", end: "10.61.0.20" }] } }),
      );
      expect(message).to.contain(
        'IPPool.ipam.metal3.io "inuse" is invalid: spec.pools: Invalid value: "10.61.0.10": the address is in use and would be out of bounds of the pools',
      );
      const moved = await c.pools.patch(ctlNs, "inuse", {
        spec: {
          pools: [
            { start: "10.61.0.10", end: "10.61.0.10" },
            { start: "10.61.1.1", end: "10.61.1.9" },
          ],
        },
      });
      expect(moved.spec.pools).to.have.length(2);
    });

    it("refuses a pool update that would drop an address a Cluster API claim holds", async () => {
      const capiClaims = new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM));
      await c.pools.create(ctlNs, pool(ctlNs, "capiuse", { pools: [{ start: "10.62.0.10", end: "10.62.0.20" }] }));
      await capiClaims.create(ctlNs, {
        metadata: { name: "capi-holder", namespace: ctlNs },
        spec: { poolRef: { apiGroup: GROUP, kind: "IPPool", name: "capiuse" } },
      });
      await eventually(
        "the Cluster API claim bound",
        async () => (await capiClaims.get(ctlNs, "capi-holder")).status?.addressRef?.name,
        30_000,
        200,
      );
      const { message } = await rejection(
        c.pools.patch(ctlNs, "capiuse", { spec: { pools: [{ start: "10.62.0.11", end: "10.62.0.20" }] } }),
      );
      expect(message).to.contain(
        'spec.pools: Invalid value: "10.62.0.10": the address is in use and would be out of bounds of the pools',
      );
    });

    it("never blocks deleting a pool: in use (the finalizer holds it) or marked delete-for-move", async () => {
      await c.pools.create(ctlNs, pool(ctlNs, "busy", { pools: [{ start: "10.62.0.1", end: "10.62.0.9" }] }));
      await c.claims.create(ctlNs, claim(ctlNs, "busy-claim", "busy"));
      await bound("busy-claim");
      await c.pools.delete(ctlNs, "busy");
      const deleting = await c.pools.get(ctlNs, "busy");
      expect(deleting.metadata.deletionTimestamp).to.be.a("string");
      expect(deleting.metadata.finalizers).to.include(IPPOOL_FINALIZER);

      await c.pools.create(ctlNs, pool(ctlNs, "moving", { pools: [{ start: "10.63.0.1", end: "10.63.0.9" }] }));
      await c.claims.create(ctlNs, claim(ctlNs, "moving-claim", "moving"));
      await bound("moving-claim");
      // What clusterctl move does to a source: annotate, delete, then clear the finalizers.
      await c.pools.patch(ctlNs, "moving", { metadata: { annotations: { [DELETE_FOR_MOVE_ANNOTATION]: "" } } });
      await c.pools.delete(ctlNs, "moving");
      await c.pools.patch(ctlNs, "moving", { metadata: { finalizers: null } });
      await eventually("the moved pool to be gone", async () => !(await exists(c.pools, ctlNs, "moving")), 30_000, 200);

      await c.claims.delete(ctlNs, "busy-claim");
      await eventually(
        "the released pool to be gone",
        async () => !(await exists(c.pools, ctlNs, "busy")),
        60_000,
        200,
      );
    });
  });
});

describe("admission webhooks, self-managed certificates (real API server)", function () {
  this.timeout(180_000);
  const name = `ipam-webhooks-self-${runId}`;
  const scope = `self-${runId}`;
  let kc: KubeConfig;
  let servers: WebhookServer[] = [];

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
  });

  after(async () => {
    await deleteConfigurations(kc, name);
    for (const s of servers) await s.stop();
    servers = [];
  });

  it("renews a stored serving certificate close to expiry, keeping the CA", async () => {
    const ns = await freshNamespace(kc, "webhooks-renew");
    const ca = createCertificateAuthority("renew-test-ca");
    const expiring = issueServingCertificate(ca, ["webhook-service.x.svc", "127.0.0.1"], 10);
    const b64 = (text: string): string => Buffer.from(text).toString("base64");
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: "certs" },
        type: "kubernetes.io/tls",
        data: {
          "tls.crt": b64(expiring.certPem),
          "tls.key": b64(expiring.keyPem),
          "ca.crt": b64(ca.certPem),
          "ca.key": b64(ca.keyPem),
        },
      },
    });
    const server = await startWebhookServer({
      port: 0,
      host: "127.0.0.1",
      kubeConfig: kc,
      logger: silentLogger(),
      selfManaged: {
        kubeConfig: kc,
        mutatingName: "none",
        validatingName: "none",
        serviceName: "webhook-service",
        namespace: ns,
        extraHosts: ["127.0.0.1"],
        secretName: "certs",
        resyncMs: 60_000,
      },
    });
    servers.push(server);
    expect(server.caPem).to.equal(ca.certPem);
    const stored = await core.readNamespacedSecret({ name: "certs", namespace: ns });
    const renewed = Buffer.from(stored.data?.["tls.crt"] ?? "", "base64").toString("utf8");
    expect(renewed).to.not.equal(expiring.certPem);
    expect(
      servingCertificateProblem(
        { certPem: renewed, keyPem: Buffer.from(stored.data?.["tls.key"] ?? "", "base64").toString("utf8") },
        ca.certPem,
        [`webhook-service.${ns}.svc`],
        300 * 86_400_000,
      ),
    ).to.equal(undefined);
  });

  it("makes a CA and certificate, shares them through a Secret, publishes the caBundle and repairs it when reset", async () => {
    const ns = await scopedNamespace(kc, "webhooks-self", scope);
    const selfManaged = {
      kubeConfig: kc,
      mutatingName: `${name}-mutating`,
      validatingName: `${name}-validating`,
      serviceName: "webhook-service",
      namespace: ns,
      extraHosts: ["127.0.0.1"],
      secretName: "webhook-server-cert",
      resyncMs: 300,
    };
    const start = () =>
      startWebhookServer({ port: 0, host: "127.0.0.1", selfManaged, kubeConfig: kc, logger: silentLogger() });
    const first = await start();
    servers.push(first);
    const second = await start();
    servers.push(second);
    expect(second.caPem).to.equal(first.caPem);
    const secret = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: "webhook-server-cert", namespace: ns });
    expect(Object.keys(secret.data ?? {}).sort()).to.deep.equal(["ca.crt", "ca.key", "tls.crt", "tls.key"]);
    expect(first.ready()).to.equal(false);

    // The configurations exist only now, with an empty caBundle: the server fills it in.
    await createConfigurations(kc, configurationsFor(name, `https://127.0.0.1:${first.port}`, "", scope));
    const api = kc.makeApiClient(AdmissionregistrationV1Api);
    const bundle = Buffer.from(first.caPem ?? "").toString("base64");
    const published = async (): Promise<boolean> => {
      const m = await api.readMutatingWebhookConfiguration({ name: `${name}-mutating` });
      const v = await api.readValidatingWebhookConfiguration({ name: `${name}-validating` });
      return [...(m.webhooks ?? []), ...(v.webhooks ?? [])].every((w) => w.clientConfig.caBundle === bundle);
    };
    await eventually("the caBundle to be published", published, 30_000, 100);
    await eventually("the server to be ready", () => first.ready(), 30_000, 100);
    await webhooksEffective(kc, ns);
    const c = clients(kc);
    const { message } = await rejection(
      c.pools.create(ns, pool(ns, "bad", { pools: [{ start: "10.0.0.9", end: "10.0.0.1" }] })),
    );
    expect(message).to.contain('IPPool.ipam.metal3.io "bad" is invalid: spec.pools[0].end');
    const created = await c.pools.create(
      ns,
      pool(ns, "good", { pools: [{ subnet: "10.0.0.0/24" }], allocationStrategy: "" }),
    );
    expect(created.spec.allocationStrategy).to.equal("sequential");

    // Someone re-applies the manifests: the bundle is gone, and comes back.
    const reset = await api.patchValidatingWebhookConfiguration(
      { name: `${name}-validating`, body: [{ op: "replace", path: "/webhooks/0/clientConfig/caBundle", value: "" }] },
      jsonPatch,
    );
    expect(reset.webhooks?.[0]?.clientConfig.caBundle ?? "").to.equal("");
    const removed = await api.patchMutatingWebhookConfiguration(
      { name: `${name}-mutating`, body: [{ op: "remove", path: "/webhooks/0/clientConfig/caBundle" }] },
      jsonPatch,
    );
    expect(removed.webhooks?.[0]?.clientConfig.caBundle).to.equal(undefined);
    await eventually("the caBundle to be repaired", published, 30_000, 100);
    await eventually(
      "the API server to call the webhook again",
      async () => {
        try {
          await c.pools.create(ns, pool(ns, "bad", { pools: [{ start: "10.0.0.9", end: "10.0.0.1" }] }));
          return false;
        } catch (err) {
          return describeError(err).includes('"bad" is invalid: spec.pools[0].end');
        }
      },
      30_000,
      200,
    );
  });
});
