/**
 * The diagnostics endpoint against the local plane's API server: /metrics over HTTPS for a ServiceAccount token bound
 * to config/rbac's metrics-reader ClusterRole, 401 without a valid token, 403 for a token without the role, the
 * reviews made as the controller's ServiceAccount (so the generated RBAC is proven sufficient), and plain HTTP to
 * anyone with --insecure-diagnostics.
 */
import { connect } from "node:net";
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { Gauge, Registry } from "prom-client";
import { selfSignedCertificate } from "../src/certs/selfsigned.js";
import { MAX_HEADER_BYTES, startDiagnosticsServer, type DiagnosticsServer } from "../src/runtime/diagnostics.js";
import { kubeAccessReviewer } from "../src/runtime/reviews.js";
import { ScrapeGate, type AccessReviewer } from "../src/runtime/scrapeauth.js";
import { httpsCall } from "../src/webhooks/https.testutil.js";
import { sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { scrapeMetrics, scrapeSecure } from "../hack/testkit/metrics.js";
import { scraperToken, serviceAccountKubeConfig } from "../hack/testkit/serviceaccount.js";

function registryWithSample(): Registry {
  const registry = new Registry();
  new Gauge({ name: "diagnostics_test_sample", help: "a sample", registers: [registry] }).set(7);
  return registry;
}

/** The status line a raw HTTP/1.1 exchange on a plain TCP connection gets back. */
function rawStatusLine(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port }, () => socket.write(request));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("close", () => resolve(text.split("\r\n")[0] ?? ""));
    socket.on("error", reject);
  });
}

describe("diagnostics endpoint (/metrics over HTTPS, tokens reviewed by the API server)", function () {
  this.timeout(120_000);
  let admin: KubeConfig;
  let server: DiagnosticsServer | undefined;
  /** TokenReviews the server asked for. */
  let tokenReviews = 0;
  const certificate = selfSignedCertificate(["localhost", "127.0.0.1"]);
  let readerToken: string;
  let otherToken: string;

  before(async function () {
    if (usingExistingCluster()) this.skip();
    admin = (await sharedCluster()).kubeConfig;
    // The reviews go out as the controller's ServiceAccount, with the generated rules only.
    const controller = await serviceAccountKubeConfig(admin);
    const reviewer = kubeAccessReviewer(controller);
    const counting: AccessReviewer = {
      authenticate: (token) => {
        tokenReviews++;
        return reviewer.authenticate(token);
      },
      authorize: (user, path, verb) => reviewer.authorize(user, path, verb),
    };
    const gate = new ScrapeGate(counting);
    server = await startDiagnosticsServer({
      address: "127.0.0.1:0",
      registry: registryWithSample(),
      secure: { certificate, gate },
    });
    readerToken = await scraperToken(admin, "diagnostics-reader", true);
    otherToken = await scraperToken(admin, "diagnostics-other", false);
  });

  after(async () => await server?.close());

  const port = (): number => server?.port ?? 0;
  const call = (path: string, token?: string, method = "GET") =>
    httpsCall(port(), certificate.certPem, path, "", {
      method,
      headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
    });

  it("serves /metrics to a ServiceAccount token bound to metrics-reader", async () => {
    const { status, body } = await scrapeSecure("127.0.0.1", port(), readerToken);
    expect(status).to.equal(200);
    expect(body).to.match(/^diagnostics_test_sample 7$/m);
  });

  it("answers 401 without a token and with one the API server does not authenticate", async () => {
    const none = await call("/metrics");
    expect(none.status).to.equal(401);
    expect(none.headers["www-authenticate"]).to.match(/^Bearer/);
    expect((await call("/metrics", "not-a-token")).status).to.equal(401);
    // A token of the right shape, signed by nobody the API server trusts.
    const forged = `${readerToken.slice(0, -8)}AAAAAAAA`;
    expect((await call("/metrics", forged)).status).to.equal(401);
    expect((await call("/metrics", readerToken, "POST")).status).to.equal(405);
  });

  it("answers 403 to a valid token whose ServiceAccount lacks metrics-reader", async () => {
    const answer = await scrapeSecure("127.0.0.1", port(), otherToken);
    expect(answer.status).to.equal(403);
    expect(answer.body).to.not.include("diagnostics_test_sample");
  });

  it("serves nothing but /metrics, and refuses request headers over the limit (431)", async () => {
    expect((await call("/debug/pprof", readerToken)).status).to.equal(404);
    const huge = await call("/metrics", readerToken.padEnd(MAX_HEADER_BYTES + 1, "A"));
    expect(huge.status).to.equal(431);
  });

  it("serves TLS only: a plain HTTP request on its port gets no metrics", async () => {
    const line = await rawStatusLine(port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(line).to.not.include("200");
  });

  it("remembers answers: scrapes with a token reviewed moments ago ask the API server nothing", async () => {
    const token = await scraperToken(admin, "diagnostics-reader", true);
    const before = tokenReviews;
    for (let i = 0; i < 3; i++) expect((await scrapeSecure("127.0.0.1", port(), token)).status).to.equal(200);
    expect(tokenReviews - before).to.equal(1);
  });

  it("with --insecure-diagnostics, serves /metrics over plain HTTP to anyone", async () => {
    const insecure = await startDiagnosticsServer({ address: "127.0.0.1:0", registry: registryWithSample() });
    try {
      expect(insecure.secure).to.equal(false);
      expect(await scrapeMetrics(insecure.port)).to.match(/^diagnostics_test_sample 7$/m);
      expect(
        await rawStatusLine(insecure.port, "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
      ).to.equal("HTTP/1.1 404 Not Found");
    } finally {
      await insecure.close();
    }
  });
});
