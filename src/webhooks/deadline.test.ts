/**
 * The bounds of one admission request in the HTTP layer (http.ts) and the validation worker (offload.ts): a review
 * is answered by its deadline whatever its handler still does, a body trickled slower than the deadline gets 408,
 * large reviews in progress are bounded, a job the worker cannot finish by its review's deadline is refused at
 * once, and a denial lists a bounded number of errors.
 */
import { createServer, request } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { silentLogger } from "../runtime/logger.js";
import { invalid, MAX_DENIAL_ERRORS } from "./admission.js";
import type { AdmissionResponse } from "./admission.js";
import { admissionListener, LARGE_BODY_BYTES } from "./http.js";
import type { ListenerOptions } from "./http.js";
import { staticLookup } from "./lookup.js";
import { WorkerValidator } from "./offload.js";
import type { Route } from "./route.js";

function reviewBody(padding = 0): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "u-1",
      kind: { group: "ipam.metal3.io", version: "v1alpha1", kind: "IPPool" },
      operation: "CREATE",
      object: { metadata: { name: "p", annotations: { pad: "x".repeat(padding) } }, spec: {} },
    },
  });
}

/** A route whose handler never answers, as one stuck on a read or a job. */
const stuck: Route = { kind: "IPPool", handle: () => new Promise<AdmissionResponse>(() => undefined) };

async function listen(options: Partial<ListenerOptions>): Promise<{ server: Server; port: number }> {
  const server = createServer(
    admissionListener({
      routes: new Map([["/stuck", stuck]]),
      context: { lookup: staticLookup([]), logger: silentLogger() },
      ...options,
    }),
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as AddressInfo).port };
}

interface Reply {
  status: number;
  body: { code?: number; response?: { allowed: boolean; status: { code: number; message: string } } };
}

/** Sends `chunks` of a body one after another, `gapMs` apart, and reads the answer. */
function post(port: number, chunks: string[], gapMs = 0): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: "127.0.0.1", path: "/stuck", method: "POST" }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Reply["body"] }));
    });
    req.on("error", reject);
    const write = (i: number): void => {
      if (req.destroyed) return;
      if (i >= chunks.length) {
        req.end();
        return;
      }
      req.write(chunks[i]);
      setTimeout(() => write(i + 1), gapMs);
    };
    write(0);
  });
}

describe("admission deadlines and bounds", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it("answers a review whose handler never does with a refusal at the deadline", async () => {
    const { server, port } = await listen({ deadlineMs: 100 });
    servers.push(server);
    const reply = await post(port, [reviewBody()]);
    expect(reply.status).to.equal(200);
    expect(reply.body.response?.allowed).to.equal(false);
    expect(reply.body.response?.status.code).to.equal(500);
    expect(reply.body.response?.status.message).to.equal(
      "the admission review was not answered within 0.1 s of its arrival; retry later",
    );
  });

  it("answers a body trickled past the deadline with 408, without waiting for its end", async () => {
    const { server, port } = await listen({ deadlineMs: 100 });
    servers.push(server);
    const body = reviewBody();
    // One byte every 20 ms: the body would take seconds, the deadline is 0.1 s.
    const reply = await post(port, body.split(""), 20);
    expect(reply.status).to.equal(408);
    expect(reply.body.code).to.equal(408);
  });

  it("refuses a large review at once while the most large reviews allowed are in progress and waiting", async () => {
    const { server, port } = await listen({ deadlineMs: 60_000, maxLargeInFlight: 1, maxLargeWaiting: 1 });
    servers.push(server);
    const large = reviewBody(LARGE_BODY_BYTES);
    void post(port, [large]).catch(() => undefined);
    void post(port, [large]).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 200));
    const reply = await post(port, [large]);
    expect(reply.body.response?.status.message).to.equal(
      "too many large admission reviews are in progress (1) and waiting (1); retry later",
    );
  });

  it("gives a large review waiting for its turn the slot that frees, then its own deadline", async () => {
    const { server, port } = await listen({ deadlineMs: 600, maxLargeInFlight: 1, maxLargeWaiting: 1 });
    servers.push(server);
    const large = reviewBody(LARGE_BODY_BYTES);
    const first = post(port, [large]);
    await new Promise((r) => setTimeout(r, 300));
    // Waits in line: the first holds the slot until its deadline, 0.3 s from now; this one's comes 0.3 s later.
    const second = post(port, [large]);
    const messages = (await Promise.all([first, second])).map((r) => r.body.response?.status.message);
    const late = "the admission review was not answered within 0.6 s of its arrival; retry later";
    expect(messages).to.deep.equal([late, late]);
  });

  it("refuses at once a job behind another that could not finish before its review's deadline", async () => {
    const v = new WorkerValidator(silentLogger(), { inlineItems: 10, budgetMs: 120_000 });
    try {
      const spec = {
        addresses: Array.from({ length: 40_000 }, (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`),
        prefix: 8,
      };
      const input = { pool: { metadata: { name: "p" }, spec }, old: undefined };
      // The first job starts the worker, the second teaches it its time per item; the fourth, due in 1 ms, would
      // wait behind the third.
      expect(await v.run("inClusterSpec", input)).to.deep.equal([]);
      expect(await v.run("inClusterSpec", input)).to.deep.equal([]);
      const third = v.run("inClusterSpec", input);
      const refused = await v.run("inClusterSpec", input, performance.now() + 1).then(
        () => "resolved",
        (err: Error) => err.message,
      );
      expect(refused).to.equal("the validation worker cannot finish this review in time; retry later");
      expect(await third).to.deep.equal([]);
      // Alone, with less than half its budget left (it spent it waiting for a turn): refused too, not started.
      const late = await v.run("inClusterSpec", input, performance.now() + 1).then(
        () => "resolved",
        (err: Error) => err.message,
      );
      expect(late).to.equal("the validation worker cannot finish this review in time; retry later");
      expect(v.hasWorker()).to.equal(true);
    } finally {
      await v.stop();
    }
  });

  it("lists at most MAX_DENIAL_ERRORS errors of a denial and counts the rest", () => {
    const errors = Array.from({ length: MAX_DENIAL_ERRORS + 50 }, (_, i) => ({
      field: `spec.pools[${i}].start`,
      type: "Required" as const,
      detail: "start is required",
    }));
    const status = invalid("ipam.metal3.io", "IPPool", "x", [...errors, ...errors]);
    expect(status.details?.causes).to.have.length(MAX_DENIAL_ERRORS);
    expect(status.message).to.match(
      /^IPPool\.ipam\.metal3\.io "x" is invalid: \[spec\.pools\[0\]\.start: Required value/,
    );
    expect(status.message).to.match(
      /spec\.pools\[99\]\.start: Required value: start is required, and 50 more errors\]$/,
    );
    expect(status.message).to.not.contain("spec.pools[100]");
  });
});
