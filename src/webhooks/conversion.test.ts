import { expect } from "chai";
import { rmSync } from "node:fs";
import { silentLogger } from "../runtime/logger.js";
import { answerConversionReview, CONVERSION_PATH } from "./conversion.js";
import { httpsCall, loopbackPki, writeCertDir } from "./https.testutil.js";
import { DEFAULT_MAX_BODY_BYTES } from "./http.js";
import { staticLookup } from "./lookup.js";
import { startWebhookServer } from "./server.js";
import type { WebhookServer } from "./server.js";

const V1ALPHA1 = "ipam.cluster.x-k8s.io/v1alpha1";
const V1ALPHA2 = "ipam.cluster.x-k8s.io/v1alpha2";

function review(desiredAPIVersion: string, objects: unknown[], uid = "c-1"): Record<string, unknown> {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: { uid, desiredAPIVersion, objects },
  };
}

interface ConversionResponse {
  uid: string;
  convertedObjects: Array<Record<string, unknown>>;
  result: { status: string; message?: string };
}

function responseOf(body: unknown): ConversionResponse {
  const b = body as { apiVersion: string; kind: string; response: ConversionResponse };
  expect(b.apiVersion).to.equal("apiextensions.k8s.io/v1");
  expect(b.kind).to.equal("ConversionReview");
  return b.response;
}

const subnetPool = (name: string, kind = "InClusterIPPool"): Record<string, unknown> => ({
  apiVersion: V1ALPHA1,
  kind,
  metadata: { name },
  spec: { subnet: "10.0.0.0/24", gateway: "10.0.0.1" },
});

describe("conversion webhook: ConversionReview answers", () => {
  it("echoes the uid and converts every object, in order", () => {
    const answer = answerConversionReview(
      review(V1ALPHA2, [subnetPool("a"), subnetPool("b", "GlobalInClusterIPPool")], "uid-42"),
    );
    expect(answer.code).to.equal(200);
    expect(answer.result).to.equal("allowed");
    const response = responseOf(answer.body);
    expect(response.uid).to.equal("uid-42");
    expect(response.result).to.deep.equal({ status: "Success" });
    expect(
      response.convertedObjects.map((o) => [o.apiVersion, o.kind, (o.metadata as { name: string }).name]),
    ).to.deep.equal([
      [V1ALPHA2, "InClusterIPPool", "a"],
      [V1ALPHA2, "GlobalInClusterIPPool", "b"],
    ]);
    expect(response.convertedObjects[0]?.spec).to.deep.equal({
      addresses: ["10.0.0.1-10.0.0.254"],
      prefix: 24,
      gateway: "10.0.0.1",
    });
  });

  it("answers an empty object list with success and no objects", () => {
    const response = responseOf(answerConversionReview(review(V1ALPHA1, [])).body);
    expect(response).to.deep.equal({ uid: "c-1", convertedObjects: [], result: { status: "Success" } });
  });

  const bad: Array<[string, unknown, string, RegExp]> = [
    [
      "an object that does not convert",
      review(V1ALPHA2, [subnetPool("a"), { ...subnetPool("b"), spec: { subnet: "x" } }]),
      "c-1",
      /^request\.objects\[1\]: cannot convert InClusterIPPool "b" from .*v1alpha1: spec\.subnet: Invalid value: "x"/,
    ],
    [
      "another kind of object",
      review(V1ALPHA2, [{ apiVersion: "v1", kind: "Pod" }]),
      "c-1",
      /cannot convert kind "Pod"/,
    ],
    [
      "a desired version we do not serve",
      review("ipam.cluster.x-k8s.io/v1beta1", [subnetPool("a")]),
      "c-1",
      /desiredAPIVersion/,
    ],
    [
      "objects that are not a list",
      { ...review(V1ALPHA2, []), request: { uid: "c-2", desiredAPIVersion: V1ALPHA2, objects: {} } },
      "c-2",
      /request\.objects is not a list/,
    ],
    [
      "no desired version",
      { ...review(V1ALPHA2, []), request: { uid: "c-3", objects: [] } },
      "c-3",
      /desiredAPIVersion is not a string/,
    ],
    [
      "no uid",
      { ...review(V1ALPHA2, []), request: { desiredAPIVersion: V1ALPHA2, objects: [] } },
      "",
      /no request with a uid/,
    ],
    [
      "an AdmissionReview",
      { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { uid: "a-1" } },
      "a-1",
      /not a ConversionReview/,
    ],
    ["JSON that is not an object", [1, 2], "", /not a ConversionReview/],
  ];
  for (const [name, body, uid, message] of bad) {
    it(`fails the review, uid echoed, for ${name}`, () => {
      const answer = answerConversionReview(body);
      expect(answer.code).to.equal(200);
      expect(answer.result).to.equal("denied");
      const response = responseOf(answer.body);
      expect(response.uid).to.equal(uid);
      expect(response.convertedObjects).to.deep.equal([]);
      expect(response.result.status).to.equal("Failure");
      expect(response.result.message).to.match(message);
    });
  }
});

describe("conversion webhook: served by the webhook server over HTTPS", function () {
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
      lookup: staticLookup([]),
      logger: silentLogger(),
    });
  });

  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`answers a ConversionReview at ${CONVERSION_PATH}`, async () => {
    const a = await httpsCall(
      server.port,
      pki.ca.certPem,
      CONVERSION_PATH,
      JSON.stringify(review(V1ALPHA2, [subnetPool("a")])),
    );
    expect(a.status).to.equal(200);
    const response = responseOf(a.json);
    expect(response.result.status).to.equal("Success");
    expect(response.convertedObjects[0]?.apiVersion).to.equal(V1ALPHA2);
  });

  it("answers a review of a list larger than the body limit with 413 and a Status saying so, announced or streamed", async () => {
    // About 4 MiB of pools, as the API server sends a whole list in one review.
    const pools = Array.from({ length: 20_000 }, (_, i) => subnetPool(`pool-${String(i).padStart(6, "0")}`));
    const body = JSON.stringify(review(V1ALPHA2, pools));
    expect(body.length).to.be.greaterThan(DEFAULT_MAX_BODY_BYTES);
    for (const chunked of [false, true]) {
      const a = await httpsCall(server.port, pki.ca.certPem, CONVERSION_PATH, body, { chunked });
      expect(a.status, chunked ? "streamed" : "announced").to.equal(413);
      expect(a.json).to.deep.include({
        kind: "Status",
        status: "Failure",
        reason: "RequestEntityTooLarge",
        code: 413,
        message: `the request body is larger than ${DEFAULT_MAX_BODY_BYTES} bytes`,
      });
    }
    // The server goes on serving, a list just under the limit in full.
    const fits = Math.floor((pools.length * DEFAULT_MAX_BODY_BYTES) / body.length) - 100;
    const next = await httpsCall(
      server.port,
      pki.ca.certPem,
      CONVERSION_PATH,
      JSON.stringify(review(V1ALPHA2, pools.slice(0, fits))),
    );
    const response = responseOf(next.json);
    expect([response.result.status, response.convertedObjects.length]).to.deep.equal(["Success", fits]);
  });

  it("answers a body that is not JSON with 400, and a GET with 405", async () => {
    const notJson = await httpsCall(server.port, pki.ca.certPem, CONVERSION_PATH, "{nope");
    expect(notJson.status).to.equal(400);
    expect((notJson.json as { message: string }).message).to.match(/the body is not JSON/);
    const get = await httpsCall(server.port, pki.ca.certPem, CONVERSION_PATH, undefined, { method: "GET" });
    expect(get.status).to.equal(405);
  });
});
