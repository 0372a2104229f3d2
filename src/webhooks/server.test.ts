import { expect } from "chai";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { rmSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { X509Certificate } from "node:crypto";
import { silentLogger } from "../runtime/logger.js";
import { PrometheusMetrics, type WebhookResult } from "../runtime/metrics.js";
import { admissionListener } from "./http.js";
import { httpsCall, loopbackPki, writeCertDir } from "./https.testutil.js";
import type { Answer } from "./https.testutil.js";
import { staticLookup } from "./lookup.js";
import { DEFAULT_MAX_BODY_BYTES, startWebhookServer, WEBHOOK_PATHS } from "./server.js";
import type { WebhookServer } from "./server.js";

const POOL_PATH = WEBHOOK_PATHS.validateIPPool;

function reviewBody(
  kind = "IPPool",
  object: unknown = {
    metadata: { name: "p", namespace: "ns" },
    spec: { namePrefix: "p", pools: [{ subnet: "10.0.0.0/24" }] },
  },
): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "u-1",
      kind: { group: "ipam.metal3.io", version: "v1alpha1", kind },
      operation: "CREATE",
      namespace: "ns",
      name: "p",
      object,
    },
  });
}

function statusOf(a: Answer): { code?: number; reason?: string; message?: string } {
  return a.json as { code?: number; reason?: string; message?: string };
}

function responseOf(a: Answer): { uid?: string; allowed?: boolean; status?: { code?: number; message?: string } } {
  return (a.json as { response?: ReturnType<typeof responseOf> }).response ?? {};
}

describe("webhook server over HTTPS", function () {
  this.timeout(20_000);
  const pki = loopbackPki();
  let dir: string;
  let server: WebhookServer;

  before(async () => {
    dir = writeCertDir(pki.serving);
    server = await startWebhookServer({
      port: 0,
      host: "127.0.0.1",
      certDir: dir,
      certReloadMs: 100,
      lookup: staticLookup([]),
      // The endpoint webhook reads nothing for the reviews sent here (kinds it does not serve).
      endpointAccess: {
        clusterAnnotations: () => Promise.resolve(undefined),
        claim: () => Promise.resolve(undefined),
        pendingClaims: () => Promise.resolve([]),
        createClaim: (claim) => Promise.resolve(claim),
        address: () => Promise.resolve(undefined),
      },
      logger: silentLogger(),
      maxBodyBytes: 64 * 1024,
    });
  });

  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = (path: string, body?: string | Buffer, options?: Parameters<typeof httpsCall>[4]): Promise<Answer> =>
    httpsCall(server.port, pki.ca.certPem, path, body, options);

  it("answers an AdmissionReview with 200 and the request's uid", async () => {
    const a = await call(POOL_PATH, reviewBody());
    expect(a.status).to.equal(200);
    expect(a.json).to.deep.equal({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: { uid: "u-1", allowed: true },
    });
    expect(server.ready()).to.equal(true);
    expect(server.caPem).to.equal(undefined);
  });

  it("serves every path of WEBHOOK_PATHS", async () => {
    for (const path of Object.values(WEBHOOK_PATHS)) {
      expect((await call(path, reviewBody("Other"))).status, path).to.equal(200);
    }
  });

  const bad: Array<[string, string, number, string]> = [
    ["a body that is not JSON", "{not json", 400, "the body is not JSON"],
    ["an empty body", "", 400, "the body is not JSON"],
    ["JSON that is not an object", "[1,2]", 400, "not an AdmissionReview: the body is not a JSON object"],
    [
      "a wrong kind",
      JSON.stringify({ apiVersion: "v1", kind: "Pod" }),
      400,
      "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview",
    ],
    [
      "AdmissionReview v1beta1",
      JSON.stringify({ apiVersion: "admission.k8s.io/v1beta1", kind: "AdmissionReview", request: {} }),
      400,
      "expected apiVersion",
    ],
    [
      "a review without request",
      JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }),
      400,
      "request is missing",
    ],
    [
      "a request without uid",
      JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { operation: "CREATE" } }),
      400,
      "request.uid is missing",
    ],
  ];
  for (const [what, body, code, message] of bad) {
    it(`answers ${what} with ${code} and a Status, and keeps serving`, async () => {
      const a = await call(POOL_PATH, body);
      expect(a.status).to.equal(code);
      expect(a.headers["content-type"]).to.equal("application/json");
      expect(statusOf(a)).to.include({ code, reason: "BadRequest" });
      expect(statusOf(a).message).to.contain(message);
      expect((await call(POOL_PATH, reviewBody())).status).to.equal(200);
    });
  }

  it("denies a review of the wrong object kind inside a valid envelope (200, denied with 400)", async () => {
    const a = await call(POOL_PATH, reviewBody("IPClaim"));
    expect(a.status).to.equal(200);
    expect(responseOf(a)).to.include({ uid: "u-1", allowed: false });
    expect(responseOf(a).status?.code).to.equal(400);
  });

  it("answers an unknown path with 404 and a non-POST with 405", async () => {
    const missing = await call("/validate-something-else", reviewBody());
    expect(missing.status).to.equal(404);
    expect(statusOf(missing).reason).to.equal("NotFound");
    const get = await call(POOL_PATH, "", { method: "GET" });
    expect(get.status).to.equal(405);
    expect(get.headers.allow).to.equal("POST");
  });

  it("answers a body over the limit with 413, announced or streamed, and keeps serving", async () => {
    const big = Buffer.alloc(200 * 1024, "x");
    const announced = await call(POOL_PATH, big);
    expect(announced.status).to.equal(413);
    expect(statusOf(announced).reason).to.equal("RequestEntityTooLarge");
    const streamed = await call(POOL_PATH, big, { chunked: true });
    expect(streamed.status).to.equal(413);
    expect((await call(POOL_PATH, reviewBody())).status).to.equal(200);
  });

  it("accepts a body just under the limit", async () => {
    const padded = reviewBody().replace('"operation"', `"padding":"${"x".repeat(60 * 1024)}","operation"`);
    expect((await call(POOL_PATH, padded, { chunked: true })).status).to.equal(200);
  });

  it("survives a client that goes away in the middle of a body", async () => {
    await new Promise<void>((resolve, reject) => {
      const socket = tlsConnect({ host: "127.0.0.1", port: server.port, ca: pki.ca.certPem }, () => {
        socket.write(
          `POST ${POOL_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"apiV`,
        );
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 50);
      });
      socket.on("error", reject);
    });
    expect((await call(POOL_PATH, reviewBody())).status).to.equal(200);
  });

  it("refuses TLS older than 1.2", async () => {
    let error: unknown;
    try {
      await call(POOL_PATH, reviewBody(), { maxVersion: "TLSv1.1" });
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(Error);
  });

  it("picks up a renewed certificate from its folder without a restart", async () => {
    const renewed = loopbackPki();
    writeCertDir(renewed.serving, dir);
    for (let i = 0; i < 50; i++) {
      try {
        if ((await httpsCall(server.port, renewed.ca.certPem, POOL_PATH, reviewBody())).status === 200) break;
      } catch {
        // still the old certificate
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await httpsCall(server.port, renewed.ca.certPem, POOL_PATH, reviewBody())).status).to.equal(200);
    let oldTrusted = true;
    try {
      await call(POOL_PATH, reviewBody());
    } catch {
      oldTrusted = false;
    }
    expect(oldTrusted).to.equal(false);
    // A broken pair is ignored: the server keeps its certificate.
    writeCertDir({ certPem: "garbage", keyPem: renewed.serving.keyPem }, dir);
    await new Promise((r) => setTimeout(r, 300));
    expect((await httpsCall(server.port, renewed.ca.certPem, POOL_PATH, reviewBody())).status).to.equal(200);
  });
});

describe("webhook server start-up", () => {
  const logger = silentLogger();
  const lookup = staticLookup([]);
  const rejection = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
    throw new Error("expected a rejection");
  };

  it("needs exactly one certificate mode and a lookup", async () => {
    expect(await rejection(startWebhookServer({ port: 0, lookup, logger }))).to.contain("--webhook-cert-dir");
    const selfManaged = {
      kubeConfig: new KubeConfig(),
      mutatingName: "m",
      validatingName: "v",
      serviceName: "s",
      namespace: "n",
    };
    expect(
      await rejection(startWebhookServer({ port: 0, lookup, logger, certDir: "/nonexistent", selfManaged })),
    ).to.contain("not both");
    expect(await rejection(startWebhookServer({ port: 0, logger, certDir: "/nonexistent" }))).to.contain("kubeConfig");
  });

  it("fails with the folder's name when the certificate is missing or broken", async () => {
    expect(await rejection(startWebhookServer({ port: 0, lookup, logger, certDir: "/nonexistent/certs" }))).to.contain(
      "/nonexistent/certs",
    );
    const dir = writeCertDir({ certPem: "x", keyPem: "y" });
    try {
      expect(await rejection(startWebhookServer({ port: 0, lookup, logger, certDir: dir }))).to.contain("not usable");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("bounds bodies at 3 MiB by default", async () => {
    const pki = loopbackPki();
    const dir = writeCertDir(pki.serving);
    const server = await startWebhookServer({ port: 0, host: "127.0.0.1", lookup, logger, certDir: dir });
    try {
      const body = (size: number): string =>
        reviewBody().replace('"operation"', `"padding":"${"x".repeat(size - reviewBody().length - 13)}","operation"`);
      expect(Buffer.byteLength(body(DEFAULT_MAX_BODY_BYTES))).to.equal(DEFAULT_MAX_BODY_BYTES);
      expect((await httpsCall(server.port, pki.ca.certPem, POOL_PATH, body(DEFAULT_MAX_BODY_BYTES))).status).to.equal(
        200,
      );
      expect(
        (await httpsCall(server.port, pki.ca.certPem, POOL_PATH, body(DEFAULT_MAX_BODY_BYTES + 1))).status,
      ).to.equal(413);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails when the port is taken", async () => {
    const pki = loopbackPki();
    const dir = writeCertDir(pki.serving);
    const first = await startWebhookServer({ port: 0, host: "127.0.0.1", lookup, logger, certDir: dir });
    try {
      expect(
        await rejection(startWebhookServer({ port: first.port, host: "127.0.0.1", lookup, logger, certDir: dir })),
      ).to.contain("EADDRINUSE");
    } finally {
      await first.stop();
      await first.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("self-managed: serves with its own CA, and is not ready while the bundle cannot be published", async function () {
    this.timeout(20_000);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "c", server: "https://127.0.0.1:1", skipTLSVerify: true }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const server = await startWebhookServer({
      port: 0,
      host: "127.0.0.1",
      lookup,
      logger,
      selfManaged: {
        kubeConfig,
        mutatingName: "m",
        validatingName: "v",
        serviceName: "svc",
        namespace: "ns",
        extraHosts: ["127.0.0.1"],
        resyncMs: 200,
      },
    });
    try {
      expect(server.caPem).to.be.a("string").and.contain("BEGIN CERTIFICATE");
      expect((await httpsCall(server.port, server.caPem ?? "", POOL_PATH, reviewBody())).status).to.equal(200);
      await new Promise((r) => setTimeout(r, 300));
      expect(server.ready()).to.equal(false);
    } finally {
      await server.stop();
    }
  });
});

describe("admission listener failures", () => {
  it("turns a throwing handler into a 500 denial and keeps serving", async () => {
    const routes = new Map([["/boom", { kind: "IPPool", handle: () => Promise.reject(new Error("kaboom")) }]]);
    const http = createServer(
      admissionListener({ routes, context: { lookup: staticLookup([]), logger: silentLogger() } }),
    );
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    const { port } = http.address() as AddressInfo;
    try {
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/boom`, { method: "POST", body: reviewBody() });
        expect(res.status).to.equal(200);
        const body = (await res.json()) as {
          response: { allowed: boolean; status: { code: number; message: string } };
        };
        expect(body.response.allowed).to.equal(false);
        expect(body.response.status.code).to.equal(500);
        expect(body.response.status.message).to.contain("kaboom");
      }
    } finally {
      await new Promise((r) => http.close(r));
    }
  });
});

describe("webhook server metrics", function () {
  this.timeout(20_000);

  it("reports each request's webhook and result, bounds unknown paths to one label, and tells its certificate's expiry", async () => {
    const pki = loopbackPki();
    const dir = writeCertDir(pki.serving);
    const seen: [string, WebhookResult][] = [];
    const metrics = { webhookRequest: (webhook: string, result: WebhookResult) => void seen.push([webhook, result]) };
    const server = await startWebhookServer({
      port: 0,
      host: "127.0.0.1",
      certDir: dir,
      lookup: staticLookup([]),
      logger: silentLogger(),
      metrics,
    });
    try {
      const call = (path: string, body: string): Promise<Answer> => httpsCall(server.port, pki.ca.certPem, path, body);
      await call(POOL_PATH, reviewBody());
      await call(
        POOL_PATH,
        reviewBody("IPPool", {
          metadata: { name: "p", namespace: "ns" },
          spec: { namePrefix: "p", pools: [{ subnet: "not-a-subnet" }] },
        }),
      );
      await call(POOL_PATH, "not json");
      await call("/scanner-probe-12345", reviewBody());
      expect(seen).to.deep.equal([
        [POOL_PATH, "allowed"],
        [POOL_PATH, "denied"],
        [POOL_PATH, "rejected"],
        ["unknown", "rejected"],
      ]);
      expect(server.certificateExpiry()?.getTime()).to.equal(
        new Date(new X509Certificate(pki.serving.certPem).validTo).getTime(),
      );
      const registry = new PrometheusMetrics();
      registry.webhookCertificate("cert-dir", () => server.certificateExpiry());
      expect(
        await registry.registry.getSingleMetricAsString("metal3_ipam_webhook_certificate_expiry_timestamp_seconds"),
      ).to.match(/\{mode="cert-dir"\} \d{10}/);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
