/**
 * Large reviews answered in the validation worker (http.ts, offload.ts, validator-worker.ts): the request's thread
 * never parses their body, the answer is the one the request's thread gives, the cluster reads go through the
 * request thread's lookup (the stored pool left out), and a refusal echoes the uid at the head of the body.
 */
import { createServer, request } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import type { IPPool } from "../../api/v1alpha1/types.js";
import { silentLogger } from "../runtime/logger.js";
import { REVIEWS } from "./conversion.js";
import { ROUTES, WEBHOOK_PATHS } from "./handlers.js";
import { admissionListener, LARGE_BODY_BYTES, uidFromHead } from "./http.js";
import { staticLookup } from "./lookup.js";
import type { ClusterLookup } from "./lookup.js";
import { WorkerValidator } from "./offload.js";
import { CONVERSION_PATH } from "./conversion.js";

function ten(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

/** An IPPool of `n` entries and preallocations, the first `wrong` of them outside every entry. */
function bigPool(name: string, n: number, shift: number, wrong = 0): IPPool {
  const preAllocations: Record<string, string> = {};
  for (let i = 0; i < n; i++) preAllocations[`c${i}`] = i < wrong ? `11.${ten(i).slice(3)}` : ten(2 * i + shift);
  return {
    metadata: { name, namespace: "ns", uid: `uid-${name}` },
    spec: {
      namePrefix: name,
      pools: Array.from({ length: n }, (_, i) => ({ start: ten(2 * i + shift), end: ten(2 * i + shift) })),
      preAllocations,
    },
  };
}

function admission(uid: string, object: IPPool, oldObject?: IPPool): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "ipam.metal3.io", version: "v1alpha1", kind: "IPPool" },
      operation: oldObject ? "UPDATE" : "CREATE",
      name: object.metadata.name,
      namespace: "ns",
      object,
      ...(oldObject ? { oldObject } : {}),
    },
  });
}

function conversion(uid: string, n: number): string {
  const addresses = Array.from({ length: n }, (_, i) => ten(i));
  return JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: {
      uid,
      desiredAPIVersion: "ipam.cluster.x-k8s.io/v1alpha1",
      objects: [
        {
          apiVersion: "ipam.cluster.x-k8s.io/v1alpha2",
          kind: "InClusterIPPool",
          metadata: { name: "big", namespace: "ns" },
          spec: { addresses, prefix: 8 },
        },
      ],
    },
  });
}

/** A lookup that records the pools lists it was asked for. */
function recording(pools: IPPool[]): { lookup: ClusterLookup; asked: Array<[string, string | undefined]> } {
  const inner = staticLookup(pools);
  const asked: Array<[string, string | undefined]> = [];
  return {
    asked,
    lookup: {
      ...inner,
      poolsInNamespace: (namespace, except) => {
        asked.push([namespace, except]);
        return inner.poolsInNamespace(namespace, except);
      },
    },
  };
}

async function listen(lookup: ClusterLookup, validator?: WorkerValidator, maxLargeInFlight?: number): Promise<Server> {
  const server = createServer(
    admissionListener({
      routes: ROUTES,
      reviews: REVIEWS,
      context: { lookup, logger: silentLogger(), ...(validator ? { validator } : {}) },
      // No deadline to meet: these tests are about where the work runs, not how long it takes.
      deadlineMs: 600_000,
      ...(maxLargeInFlight !== undefined ? { maxLargeInFlight, maxLargeWaiting: 0 } : {}),
    }),
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return server;
}

function post(server: Server, path: string, body: string): Promise<{ status: number; body: unknown }> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = request({ port, host: "127.0.0.1", path, method: "POST" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) as unknown }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Lengths of the strings this thread's JSON.parse was given while `work` ran. */
async function parsedLengths<T>(work: () => Promise<T>): Promise<{ result: T; lengths: number[] }> {
  const lengths: number[] = [];
  const parse = JSON.parse;
  JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => {
    lengths.push(text.length);
    return parse(text, reviver) as unknown;
  }) as typeof JSON.parse;
  try {
    return { result: await work(), lengths };
  } finally {
    JSON.parse = parse;
  }
}

describe("large reviews in the validation worker", () => {
  const servers: Server[] = [];
  const validators: WorkerValidator[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    await Promise.all(validators.splice(0).map((v) => v.stop()));
  });
  function worker(): WorkerValidator {
    const v = new WorkerValidator(silentLogger(), { budgetMs: 600_000 });
    validators.push(v);
    return v;
  }

  it("answers an IPPool update as the request's thread does, never parsing its body there", async () => {
    const stored = bigPool("big", 20_000, 0);
    const body = admission("u-big", bigPool("big", 20_000, 1, 3), stored);
    expect(body.length).to.be.greaterThan(LARGE_BODY_BYTES);
    const neighbour = bigPool("small", 3, 40_000);
    const inThread = recording([stored, neighbour]);
    const expected = await post(
      await listen(inThread.lookup).then((s) => (servers.push(s), s)),
      WEBHOOK_PATHS.validateIPPool,
      body,
    );
    const offThread = recording([stored, neighbour]);
    const server = await listen(offThread.lookup, worker());
    servers.push(server);
    const { result, lengths } = await parsedLengths(() => post(server, WEBHOOK_PATHS.validateIPPool, body));
    expect(result).to.deep.equal(expected);
    expect(
      (result.body as { response: { allowed: boolean; status: { message: string } } }).response.status.message,
    ).to.match(/^IPPool\.ipam\.metal3\.io "big" is invalid: \[spec\.preAllocations\[c0\]/);
    // The reply is parsed by the test's client (short); the body never is, in this thread.
    expect(lengths.filter((n) => n >= body.length)).to.deep.equal([]);
    // Asked of this thread's lookup, without the stored pool.
    expect(offThread.asked).to.deep.equal([["ns", "big"]]);
  });

  it("converts a large ConversionReview as the request's thread does, never parsing its body there", async () => {
    const body = conversion("c-big", 40_000);
    expect(body.length).to.be.greaterThan(LARGE_BODY_BYTES);
    const plain = await listen(staticLookup([]));
    servers.push(plain);
    const expected = await post(plain, CONVERSION_PATH, body);
    const server = await listen(staticLookup([]), worker());
    servers.push(server);
    const { result, lengths } = await parsedLengths(() => post(server, CONVERSION_PATH, body));
    expect(result).to.deep.equal(expected);
    expect((result.body as { response: { result: { status: string } } }).response.result.status).to.equal("Success");
    expect(lengths.filter((n) => n >= body.length)).to.deep.equal([]);
  });

  it("refuses a large review it has no room for with the uid at the head of its body", async () => {
    const server = await listen(staticLookup([]), worker(), 0);
    servers.push(server);
    const reply = await post(server, WEBHOOK_PATHS.validateIPPool, admission("u-late", bigPool("big", 20_000, 0)));
    const response = (
      reply.body as { response: { uid: string; allowed: boolean; status: { code: number; message: string } } }
    ).response;
    expect(response.uid).to.equal("u-late");
    expect(response.allowed).to.equal(false);
    expect(response.status.code).to.equal(500);
    expect(response.status.message).to.equal(
      "too many large admission reviews are in progress (0) and waiting (0); retry later",
    );
  });

  it("reads the uid only where the API server writes it, at the head of the body", () => {
    expect(uidFromHead(Buffer.from('{"apiVersion":"a","request":{"uid":"x-1","kind":{}}}'))).to.equal("x-1");
    expect(uidFromHead(Buffer.from('{"request":{"kind":{},"uid":"x-1"}}'))).to.equal("");
    expect(uidFromHead(Buffer.from(`{"pad":"${" ".repeat(5000)}","request":{"uid":"x-1"}}`))).to.equal("");
  });
});
