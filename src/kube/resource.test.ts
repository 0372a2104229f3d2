import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ClusterAccess } from "./access.js";
import { EmptyNameError, ResourceClient, type KubeObject } from "./resource.js";

const POOLS = { group: "ipam.metal3.io", version: "v1alpha1", plural: "ippools", kind: "IPPool", namespaced: true };

describe("ResourceClient with an empty object name", () => {
  let server: Server | undefined;
  const paths: string[] = [];
  let client: ResourceClient<KubeObject>;

  before(async () => {
    // Answers every request with an empty object, so a call that reaches it succeeds.
    server = createServer((req, res) => {
      paths.push(`${req.method ?? ""} ${req.url ?? ""}`);
      res.writeHead(200, { "Content-Type": "application/json" }).end('{"metadata":{}}');
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const access: ClusterAccess = {
      server: `http://127.0.0.1:${port}`,
      requestOptions: () => Promise.resolve({ headers: {} }),
    };
    client = new ResourceClient<KubeObject>(access, POOLS, { requestTimeoutMs: 5_000 });
  });

  after(() => {
    server?.closeAllConnections();
    server?.close();
  });

  beforeEach(() => {
    paths.length = 0;
  });

  /** Each method that names one object: its name, the verb its error names, and a call. */
  const calls: [string, string, (c: ResourceClient<KubeObject>, name: string) => Promise<unknown>][] = [
    ["get", "get", (c, name) => c.get("ns", name)],
    ["replace", "update", (c, name) => c.replace("ns", name, { metadata: { name } })],
    ["patch", "patch", (c, name) => c.patch("ns", name, { metadata: { labels: { a: "b" } } })],
    ["patchJson", "patch", (c, name) => c.patchJson("ns", name, [{ op: "remove", path: "/metadata/labels/a" }])],
    ["patchStatus", "patch status of", (c, name) => c.patchStatus("ns", name, { status: {} })],
    ["delete", "delete", (c, name) => c.delete("ns", name, "uid-1")],
  ];

  for (const [method, verb, call] of calls) {
    it(`${method} refuses an object named "" with a clear error and sends nothing`, async () => {
      const err = await call(client, "").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(EmptyNameError);
      expect((err as Error).message).to.equal(`refused to ${verb} ippools with an empty name`);
      expect(paths).to.deep.equal([]);
    });
  }

  it("sends the same calls for a named object, each to the object's own path", async () => {
    for (const [, , call] of calls) await call(client, "p1");
    expect(paths.map((p) => p.split(" ")[1])).to.deep.equal(
      Array.from({ length: calls.length }, (_, i) =>
        i === 4
          ? "/apis/ipam.metal3.io/v1alpha1/namespaces/ns/ippools/p1/status"
          : "/apis/ipam.metal3.io/v1alpha1/namespaces/ns/ippools/p1",
      ),
    );
  });
});

describe("ResourceClient: whether the API server filters by a selectable field", () => {
  let server: Server | undefined;
  const requests: string[] = [];
  /** Whether the fake server filters by field; otherwise it answers 400 to a field selector, as an older one does. */
  let filters = false;

  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "", "http://x");
      requests.push(`${url.searchParams.get("fieldSelector") ?? "-"} limit=${url.searchParams.get("limit") ?? "-"}`);
      if (url.searchParams.has("fieldSelector") && !filters)
        res.writeHead(400, { "Content-Type": "application/json" }).end('{"message":"field label not supported"}');
      else res.writeHead(200, { "Content-Type": "application/json" }).end('{"metadata":{},"items":[]}');
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  });

  after(() => {
    server?.closeAllConnections();
    server?.close();
  });

  const client = (): ResourceClient<KubeObject> => {
    const { port } = server?.address() as AddressInfo;
    const access: ClusterAccess = {
      server: `http://127.0.0.1:${port}`,
      requestOptions: () => Promise.resolve({ headers: {} }),
    };
    return new ResourceClient<KubeObject>(access, POOLS, { requestTimeoutMs: 5_000 });
  };

  beforeEach(() => {
    requests.length = 0;
  });

  it("asks once with a list of one object, and remembers a 400 for listWhere too", async () => {
    filters = false;
    const c = client();
    expect(await c.filtersField("ns", "spec.pool.name", "p")).to.equal(false);
    expect(await c.filtersField("ns", "spec.pool.name", "q")).to.equal(false);
    expect(requests, "one question, of one object").to.deep.equal(["spec.pool.name=p limit=1"]);
    await c.listWhere("ns", "spec.pool.name", "p", () => "p");
    expect(requests[1], "listWhere lists without the field at once").to.equal("- limit=500");
  });

  it("asks once and remembers a filtered answer; a client that listed by field already knows", async () => {
    filters = true;
    const asked = client();
    expect(await asked.filtersField("ns", "spec.pool.name", "p")).to.equal(true);
    expect(await asked.filtersField("ns", "spec.pool.name", "q")).to.equal(true);
    const listed = client();
    await listed.listWhere("ns", "spec.pool.name", "p", () => "p");
    expect(await listed.filtersField("ns", "spec.pool.name", "p")).to.equal(true);
    expect(requests).to.deep.equal(["spec.pool.name=p limit=1", "spec.pool.name=p limit=500"]);
  });
});
