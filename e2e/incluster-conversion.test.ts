/**
 * The in-cluster pools' v1alpha1 ⇄ v1alpha2 conversion through a real API server: the generated CRDs
 * (config/crd/incluster) are installed with their conversion webhook pointed by URL at our webhook server in this
 * process (on 127.0.0.1), first with a certificate folder, then in self-managed mode, where the server itself must
 * put its CA into the CRDs before any conversion can succeed.
 *
 * What is checked: a v1alpha1 pool written with subnet/start/end reads back as v1alpha2 with `addresses` and `prefix`,
 * and as v1alpha1 unchanged (and one written with only a subnet gets the provider's defaults); a v1alpha2 pool with
 * the fields v1alpha1 lacks, read and updated through v1alpha1, keeps them; both kinds. The conversion annotation
 * never shows on the version it was not written for.
 *
 * The CRDs are left installed as generated (service clientConfig) in after(), so later suites see the shipped CRDs.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import type { KubeConfig, V1CustomResourceDefinition } from "@kubernetes/client-node";
import { dump } from "js-yaml";
import { GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL, resourceType } from "../api/registry.js";
import type { ResourceDescriptor, ResourceType } from "../api/registry.js";
import { CONVERSION_DATA_ANNOTATION, INCLUSTER_DEPRECATED_VERSION } from "../api/incluster/types.js";
import { CONVERSION_CRDS } from "../src/conversioncrds.js";
import { ResourceClient } from "../src/kube/resource.js";
import type { KubeObject } from "../src/kube/resource.js";
import { silentLogger } from "../src/runtime/logger.js";
import { loopbackPki, writeCertDir } from "../src/webhooks/https.testutil.js";
import { CONVERSION_PATH, startWebhookServer } from "../src/webhooks/server.js";
import type { WebhookServer } from "../src/webhooks/server.js";
import { freshNamespace, INCLUSTER_POOL_CRDS, sharedCluster } from "../hack/testkit/cluster.js";
import { installCrds, loadCrds } from "../hack/testkit/crds.js";
import { eventually } from "../hack/testkit/wait.js";

type Spec = Record<string, unknown>;
interface Pool extends KubeObject {
  spec: Spec;
  status?: unknown;
}

const runId = `${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
const CRD_RESOURCE = { group: "apiextensions.k8s.io", version: "v1", plural: "customresourcedefinitions" };

/** The generated CRDs with the conversion webhook at `url` (and `caBundle` when given), in a temporary folder. */
function crdsPointedAt(url: string, caPem: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), "incluster-conversion-crds-"));
  for (const crd of loadCrds([INCLUSTER_POOL_CRDS])) {
    const webhook = crd.spec.conversion?.webhook;
    if (!webhook) throw new Error(`${crd.metadata?.name ?? "?"} has no conversion webhook`);
    webhook.clientConfig = { url, ...(caPem ? { caBundle: Buffer.from(caPem).toString("base64") } : {}) };
    writeFileSync(join(dir, `${crd.metadata?.name ?? "crd"}.yaml`), dump(crd));
  }
  return dir;
}

async function install(kc: KubeConfig, url: string, caPem: string | undefined): Promise<void> {
  const dir = crdsPointedAt(url, caPem);
  try {
    await installCrds(kc, [dir]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function at(descriptor: ResourceDescriptor, version: string): ResourceType {
  return { ...resourceType(descriptor as typeof INCLUSTER_IPPOOL), version };
}

const KINDS = [INCLUSTER_IPPOOL, GLOBAL_INCLUSTER_IPPOOL] as const;

interface Clients {
  v1alpha1: ResourceClient<Pool>;
  v1alpha2: ResourceClient<Pool>;
}

describe("in-cluster pools: v1alpha1 ⇄ v1alpha2 conversion (real API server)", function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let ns: string;
  const clients = new Map<string, Clients>();
  const servers: WebhookServer[] = [];
  const globals: string[] = [];
  let certDir: string | undefined;

  /** Namespace of a pool of `kind` (none for the cluster-scoped kind), and its name registered for clean-up. */
  function place(kind: ResourceDescriptor, name: string): { namespace: string; metadata: Record<string, string> } {
    if (kind.namespaced) return { namespace: ns, metadata: { name, namespace: ns } };
    const full = `${name}-${runId}`;
    globals.push(full);
    return { namespace: "", metadata: { name: full } };
  }

  function of(kind: ResourceDescriptor): Clients {
    const c = clients.get(kind.kind);
    if (!c) throw new Error(`no clients for ${kind.kind}`);
    return c;
  }

  before(async () => {
    kc = (await sharedCluster()).kubeConfig;
    ns = await freshNamespace(kc, "incluster-conversion");
    for (const kind of KINDS) {
      clients.set(kind.kind, {
        v1alpha1: new ResourceClient<Pool>(kc, at(kind, INCLUSTER_DEPRECATED_VERSION)),
        v1alpha2: new ResourceClient<Pool>(kc, resourceType(kind)),
      });
    }
  });

  after(async () => {
    for (const name of globals)
      await of(GLOBAL_INCLUSTER_IPPOOL)
        .v1alpha2.delete("", name)
        .catch(() => undefined);
    await Promise.all(servers.map((s) => s.stop()));
    if (certDir) rmSync(certDir, { recursive: true, force: true });
    // Back to the shipped CRDs (service clientConfig): later suites read v1alpha2 only, which needs no webhook.
    await installCrds(kc, [INCLUSTER_POOL_CRDS]);
  });

  describe("with a certificate folder", () => {
    before(async () => {
      const pki = loopbackPki();
      certDir = writeCertDir(pki.serving);
      const server = await startWebhookServer({
        port: 0,
        host: "127.0.0.1",
        certDir,
        kubeConfig: kc,
        logger: silentLogger(),
      });
      servers.push(server);
      await install(kc, `https://127.0.0.1:${server.port}${CONVERSION_PATH}`, pki.ca.certPem);
    });

    for (const kind of KINDS) {
      it(`${kind.kind}: written as v1alpha1, reads back as v1alpha2 (addresses, prefix) and as v1alpha1 unchanged`, async () => {
        const { v1alpha1, v1alpha2 } = of(kind);
        const { namespace, metadata } = place(kind, "from-v1alpha1");
        const spec = {
          subnet: "10.10.0.0/24",
          start: "10.10.0.10",
          end: "10.10.0.20",
          gateway: "10.10.0.1",
          prefix: 24,
        };
        await v1alpha1.create(namespace, { apiVersion: v1alpha1.apiVersion(), kind: kind.kind, metadata, spec });

        const hub = await v1alpha2.get(namespace, metadata.name ?? "");
        expect(hub.apiVersion).to.equal(v1alpha2.apiVersion());
        expect(hub.spec).to.deep.equal({ addresses: ["10.10.0.10-10.10.0.20"], prefix: 24, gateway: "10.10.0.1" });
        // The subnet, start and end ride along for the way back.
        expect(hub.metadata.annotations?.[CONVERSION_DATA_ANNOTATION]).to.include('"subnet":"10.10.0.0/24"');

        const spoke = await v1alpha1.get(namespace, metadata.name ?? "");
        expect(spoke.apiVersion).to.equal(v1alpha1.apiVersion());
        expect(spoke.spec).to.deep.equal(spec);
        expect(spoke.metadata.annotations ?? {}).to.not.have.property(CONVERSION_DATA_ANNOTATION);
      });

      it(`${kind.kind}: written as v1alpha1 with only a subnet, gets the provider's defaults`, async () => {
        const { v1alpha1, v1alpha2 } = of(kind);
        const { namespace, metadata } = place(kind, "subnet-only");
        await v1alpha1.create(namespace, {
          apiVersion: v1alpha1.apiVersion(),
          kind: kind.kind,
          metadata,
          spec: { subnet: "10.11.0.0/28" },
        });
        expect((await v1alpha2.get(namespace, metadata.name ?? "")).spec).to.deep.equal({
          addresses: ["10.11.0.1-10.11.0.14"],
          prefix: 28,
        });
        expect((await v1alpha1.get(namespace, metadata.name ?? "")).spec).to.deep.equal({
          subnet: "10.11.0.0/28",
          start: "10.11.0.1",
          end: "10.11.0.14",
          prefix: 28,
        });
      });

      it(`${kind.kind}: a v1alpha2 pool's v1alpha2-only fields survive a read and an update through v1alpha1`, async () => {
        const { v1alpha1, v1alpha2 } = of(kind);
        const { namespace, metadata } = place(kind, "from-v1alpha2");
        const spec = {
          addresses: ["10.12.0.0/24"],
          prefix: 24,
          gateway: "10.12.0.1",
          excludedAddresses: ["10.12.0.100-10.12.0.110"],
          allocateReservedIPAddresses: true,
          addressReuseGracePeriodSeconds: 45,
        };
        await v1alpha2.create(namespace, { apiVersion: v1alpha2.apiVersion(), kind: kind.kind, metadata, spec });

        const spoke = await v1alpha1.get(namespace, metadata.name ?? "");
        expect(spoke.spec).to.deep.equal({ addresses: ["10.12.0.0/24"], prefix: 24, gateway: "10.12.0.1" });
        expect(spoke.metadata.annotations?.[CONVERSION_DATA_ANNOTATION]).to.include('"excludedAddresses"');

        // A v1alpha1 client's full update, changing what v1alpha1 can say.
        await v1alpha1.replace(namespace, metadata.name ?? "", {
          ...spoke,
          spec: { ...spoke.spec, addresses: ["10.12.0.0/24", "10.12.1.5"], gateway: "10.12.0.254" },
        });

        const hub = await v1alpha2.get(namespace, metadata.name ?? "");
        expect(hub.spec).to.deep.equal({ ...spec, addresses: ["10.12.0.0/24", "10.12.1.5"], gateway: "10.12.0.254" });
        expect(hub.metadata.annotations ?? {}).to.not.have.property(CONVERSION_DATA_ANNOTATION);
      });
    }

    it("refuses a v1alpha1 pool whose subnet does not parse, with the conversion's message", async () => {
      const { v1alpha1 } = of(INCLUSTER_IPPOOL);
      const metadata = { name: "bad-subnet", namespace: ns };
      const err = await v1alpha1
        .create(ns, {
          apiVersion: v1alpha1.apiVersion(),
          kind: INCLUSTER_IPPOOL.kind,
          metadata,
          spec: { subnet: "10.0.0.0" },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(String((err as Error | undefined)?.message)).to.match(/spec\.subnet: Invalid value: "10\.0\.0\.0"/);
    });
  });

  describe("with self-managed certificates", () => {
    it("the server puts its CA into both CRDs, after which conversion works", async () => {
      const selfManaged = {
        kubeConfig: kc,
        mutatingName: `none-${runId}`,
        validatingName: `none-${runId}`,
        serviceName: "webhook-service",
        namespace: ns,
        extraHosts: ["127.0.0.1"],
        conversionCrds: CONVERSION_CRDS,
        resyncMs: 300,
      };
      const server = await startWebhookServer({ port: 0, host: "127.0.0.1", selfManaged, logger: silentLogger() });
      servers.push(server);
      // No CA in the CRDs: the API server cannot trust our server until the server publishes its CA.
      await install(kc, `https://127.0.0.1:${server.port}${CONVERSION_PATH}`, undefined);
      const api = kc.makeApiClient(CustomObjectsApi);
      const bundle = Buffer.from(server.caPem ?? "").toString("base64");
      for (const name of CONVERSION_CRDS) {
        await eventually(`the CA bundle in ${name}`, async () => {
          const crd = (await api.getClusterCustomObject({ ...CRD_RESOURCE, name })) as V1CustomResourceDefinition;
          return crd.spec.conversion?.webhook?.clientConfig?.caBundle === bundle;
        });
      }
      for (const kind of KINDS) {
        const { v1alpha1, v1alpha2 } = of(kind);
        const { namespace, metadata } = place(kind, "self-managed");
        await eventually(`a v1alpha1 ${kind.kind} to be accepted`, async () => {
          await v1alpha1.create(namespace, {
            apiVersion: v1alpha1.apiVersion(),
            kind: kind.kind,
            metadata,
            spec: { subnet: "10.13.0.0/24" },
          });
          return true;
        });
        expect((await v1alpha2.get(namespace, metadata.name ?? "")).spec).to.deep.equal({
          addresses: ["10.13.0.1-10.13.0.254"],
          prefix: 24,
        });
      }
    });
  });
});
