import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { freshNamespace, sharedCluster, usingExistingCluster, type TestCluster } from "./cluster.js";
import { resolveBinaries } from "./binaries.js";
import { installCrds } from "./crds.js";
import { LocalPlane } from "./plane.js";
import { processAlive, reapOrphanedPlanes } from "./reaper.js";
import { isNotFound, statusCodeOf } from "../../src/kube/errors.js";
import { eventually } from "./wait.js";

const here = dirname(fileURLToPath(import.meta.url));
const testdata = join(here, "testdata");

async function configMapExists(kc: KubeConfig, namespace: string, name: string): Promise<boolean> {
  try {
    await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ name, namespace });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** Runs plane-child.ts; resolves with what it printed once it has printed it. */
async function startChildPlane(
  mode: "exit" | "wait",
): Promise<{ dir: string; pids: number[]; child: ReturnType<typeof spawn> }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(testdata, "plane-child.ts"), mode], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  return await new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve({ ...(JSON.parse(line) as { dir: string; pids: number[] }), child });
    });
    child.on("exit", (code) => {
      if (!out.includes("{")) reject(new Error(`plane child exited ${code} before printing`));
    });
  });
}

describe("local control plane", function () {
  this.timeout(180_000);
  let cluster: TestCluster;

  before(async function () {
    cluster = await sharedCluster();
    await installCrds(cluster.kubeConfig, [testdata]);
  });

  it("round-trips a custom resource and rejects one that breaks the schema", async () => {
    const kc = cluster.kubeConfig;
    const namespace = await freshNamespace(kc, "roundtrip");
    const api = kc.makeApiClient(CustomObjectsApi);
    const ref = { group: "localplane.test", version: "v1", namespace, plural: "widgets" };
    const body = {
      apiVersion: "localplane.test/v1",
      kind: "Widget",
      metadata: { name: "w1" },
      spec: { size: 3, colour: "red" },
    };
    await api.createNamespacedCustomObject({ ...ref, body });
    const read = (await api.getNamespacedCustomObject({ ...ref, name: "w1" })) as { spec: unknown };
    expect(read.spec).to.deep.equal({ size: 3, colour: "red" });

    const bad = { ...body, metadata: { name: "w2" }, spec: { size: 11, colour: "green" } };
    let rejected: unknown;
    try {
      await api.createNamespacedCustomObject({ ...ref, body: bad });
    } catch (err) {
      rejected = err;
    }
    expect(statusCodeOf(rejected)).to.equal(422);
    expect(String((rejected as Error).message))
      .to.match(/spec\.size/)
      .and.match(/spec\.colour/);
  });

  it("installs CRDs again while another writer keeps changing them (a CA published by a webhook server)", async () => {
    const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const crd = { group: "apiextensions.k8s.io", version: "v1", plural: "customresourcedefinitions" };
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      while (writing) {
        const body = [
          { op: "add", path: "/metadata/annotations", value: { "localplane.test/writes": String(++writes) } },
        ];
        await api.patchClusterCustomObject({ ...crd, name: "widgets.localplane.test", body });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      for (let i = 0; i < 10; i++) await installCrds(cluster.kubeConfig, [testdata]);
    } finally {
      writing = false;
      await writer;
    }
    expect(writes).to.be.greaterThan(10);
  });

  it("serves the in-cluster provider's pool kinds from the optional CRDs, with their schema", async function () {
    if (usingExistingCluster()) this.skip(); // an existing cluster may run that provider with its own CRDs, or none
    const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const namespace = await freshNamespace(cluster.kubeConfig, "incluster");
    const group = "ipam.cluster.x-k8s.io";
    const version = "v1alpha2";
    const spec = { addresses: ["10.0.0.10-10.0.0.20"], prefix: 24, gateway: "10.0.0.1" };
    const pool = (await api.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: "inclusterippools",
      body: { apiVersion: `${group}/${version}`, kind: "InClusterIPPool", metadata: { name: "p" }, spec },
    })) as { spec: Record<string, unknown> };
    expect(pool.spec).to.deep.equal(spec); // no defaulting, as with the provider's CRDs
    const name = `global-${namespace}`;
    await api.createClusterCustomObject({
      group,
      version,
      plural: "globalinclusterippools",
      body: { apiVersion: `${group}/${version}`, kind: "GlobalInClusterIPPool", metadata: { name }, spec },
    });
    await api.deleteClusterCustomObject({ group, version, plural: "globalinclusterippools", name });
    let rejected: unknown;
    try {
      await api.createNamespacedCustomObject({
        group,
        version,
        namespace,
        plural: "inclusterippools",
        body: {
          apiVersion: `${group}/${version}`,
          kind: "InClusterIPPool",
          metadata: { name: "bad" },
          spec: { addresses: [], prefix: 129 },
        },
      });
    } catch (err) {
      rejected = err;
    }
    expect(statusCodeOf(rejected)).to.equal(422);
  });

  it("garbage-collects dependents when their owner is deleted", async function () {
    if (!usingExistingCluster() && !cluster.plane?.hasControllerManager) this.skip();
    const kc = cluster.kubeConfig;
    const core = kc.makeApiClient(CoreV1Api);
    const namespace = await freshNamespace(kc, "gc");
    const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "owner" } } });
    const ownerReferences = [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata!.uid! }];
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "dependent", ownerReferences } } });
    await core.deleteNamespacedConfigMap({ name: "owner", namespace });
    await eventually(
      "the dependent to be collected",
      async () => !(await configMapExists(kc, namespace, "dependent")),
      60_000,
    );
  });

  it("removes a namespace's objects when the namespace is deleted", async function () {
    if (!usingExistingCluster() && !cluster.plane?.hasControllerManager) this.skip();
    const kc = cluster.kubeConfig;
    const core = kc.makeApiClient(CoreV1Api);
    const namespace = await freshNamespace(kc, "nsdel");
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "inside" } } });
    await core.deleteNamespace({ name: namespace });
    await eventually(
      "the namespace to be gone",
      async () => {
        try {
          await core.readNamespace({ name: namespace });
          return false;
        } catch (err) {
          return isNotFound(err);
        }
      },
      60_000,
    );
    expect(await configMapExists(kc, namespace, "inside")).to.equal(false);
  });

  describe("planes of their own", function () {
    before(function () {
      if (usingExistingCluster()) this.skip();
    });

    it("runs two planes at once with independent data, and stops leaving no process or folder", async () => {
      const a = await LocalPlane.start({ controllerManager: false });
      const b = await LocalPlane.start({ controllerManager: false });
      try {
        const coreA = a.kubeConfig.makeApiClient(CoreV1Api);
        const coreB = b.kubeConfig.makeApiClient(CoreV1Api);
        await coreA.createNamespacedConfigMap({
          namespace: "default",
          body: { metadata: { name: "only-in-a" }, data: { k: "a" } },
        });
        await coreB.createNamespacedConfigMap({
          namespace: "default",
          body: { metadata: { name: "only-in-b" }, data: { k: "b" } },
        });
        expect(await configMapExists(a.kubeConfig, "default", "only-in-a")).to.equal(true);
        expect(await configMapExists(a.kubeConfig, "default", "only-in-b")).to.equal(false);
        expect(await configMapExists(b.kubeConfig, "default", "only-in-a")).to.equal(false);
        expect(a.server).to.not.equal(b.server);
      } finally {
        const pids = [a, b].flatMap(
          (p) => (JSON.parse(readFileSync(join(p.dir, "owner.json"), "utf8")) as { children: number[] }).children,
        );
        await a.stop();
        await b.stop();
        expect(pids.filter(processAlive)).to.deep.equal([]);
        expect(existsSync(a.dir) || existsSync(b.dir)).to.equal(false);
      }
    });

    it("restarts and freezes kube-apiserver and etcd in place: same port, same data, same kubeconfig", async () => {
      const plane = await LocalPlane.start({ controllerManager: false });
      try {
        const core = plane.kubeConfig.makeApiClient(CoreV1Api);
        await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "survivor" } } });
        const before = plane.pids;
        await plane.restartApiServer();
        expect(plane.pids.apiServer).to.be.a("number").and.not.equal(before.apiServer);
        expect(await configMapExists(plane.kubeConfig, "default", "survivor")).to.equal(true);
        await plane.restartApiServer({ kill: true });
        await plane.restartEtcd();
        expect(plane.pids.etcd).to.be.a("number").and.not.equal(before.etcd);
        expect(await configMapExists(plane.kubeConfig, "default", "survivor")).to.equal(true);
        const twice = await plane.startApiServer().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(String(twice)).to.include("kube-apiserver: it is already running");

        // Frozen: a request gets no answer until the server thaws, then it does.
        await plane.pauseApiServer();
        const pending = configMapExists(plane.kubeConfig, "default", "survivor");
        const first = await Promise.race([pending, new Promise((r) => setTimeout(() => r("no answer"), 1_500))]);
        expect(first).to.equal("no answer");
        await plane.resumeApiServer();
        expect(await pending).to.equal(true);
        // stop() copes with a frozen process too.
        await plane.pauseApiServer();
      } finally {
        const pids = Object.values(plane.pids);
        await plane.stop();
        expect(pids.filter(processAlive)).to.deep.equal([]);
      }
    });

    it("kills its processes and removes its folder when the owning process exits without stopping it", async () => {
      const { dir, pids, child } = await startChildPlane("exit");
      await new Promise((r) => child.once("exit", r));
      expect(pids.length).to.be.greaterThan(1);
      await eventually("children to die", () => pids.every((p) => !processAlive(p)), 10_000);
      expect(existsSync(dir)).to.equal(false);
    });

    it("reaps the processes of a plane whose owner was killed with SIGKILL", async () => {
      const { dir, pids, child } = await startChildPlane("wait");
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      expect(pids.some(processAlive)).to.equal(true);
      expect(reapOrphanedPlanes()).to.include(dir);
      await eventually("orphans to die", () => pids.every((p) => !processAlive(p)), 10_000);
      expect(existsSync(dir)).to.equal(false);
    });

    describe("bad input fails fast with a clear error", () => {
      it("a port in use", async () => {
        const server: Server = createServer();
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        const port = (server.address() as { port: number }).port;
        try {
          const err = await LocalPlane.start({ apiServerPort: port }).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(String(err)).to.include(`port 127.0.0.1:${port} is already in use`);
        } finally {
          server.close();
        }
      });

      it("a corrupt cache entry", async () => {
        const real = await resolveBinaries();
        const fake = mkdtempSync(join(tmpdir(), "corrupt-assets-"));
        try {
          writeFileSync(join(fake, "kube-apiserver"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3]));
          chmodSync(join(fake, "kube-apiserver"), 0o755);
          const previous = process.env.KUBEBUILDER_ASSETS;
          process.env.KUBEBUILDER_ASSETS = fake;
          writeFileSync(join(fake, "etcd"), readFileSync(real.etcd));
          chmodSync(join(fake, "etcd"), 0o755);
          try {
            const err = await LocalPlane.start().then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(String(err)).to.include(join(fake, "kube-apiserver")).and.include("corrupt");
          } finally {
            if (previous === undefined) delete process.env.KUBEBUILDER_ASSETS;
            else process.env.KUBEBUILDER_ASSETS = previous;
          }
        } finally {
          rmSync(fake, { recursive: true, force: true });
        }
      });

      it("a missing CRD folder", async () => {
        const missing = join(tmpdir(), "no-such-crd-folder");
        const err = await LocalPlane.start({ controllerManager: false, crdDirs: [missing] }).then(
          async (p) => {
            await p.stop();
            return undefined;
          },
          (e: unknown) => e,
        );
        expect(String(err)).to.include(`CRD folder ${missing} does not exist`);
      });
    });
  });
});
