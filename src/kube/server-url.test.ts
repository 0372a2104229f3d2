/**
 * The kubeconfig `server` URL on every transport, against real local servers: its path (a gateway's, as Rancher's
 * `/k8s/clusters/<id>`) prefixes every request over HTTP/2, HTTP/1.1 and watches; its user information is basic auth,
 * sent over TLS on every transport and refused over plain http, and never repeated in a message.
 */
import { expect } from "chai";
import { generateKeyPairSync } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Server } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import forge from "node-forge";
import { accessOf, type ClusterAccess } from "./access.js";
import { apiRequest } from "./transport.js";
import { streamWatch } from "./watch.js";

/** A throwaway certificate: the tests skip verification, they check what reaches the server. */
function throwawayCertificate(): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: "spki", format: "pem" }).toString());
  certificate.validity.notAfter = new Date(Date.now() + 3_600_000);
  const key = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  certificate.sign(forge.pki.privateKeyFromPem(key), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(certificate), key };
}
const TLS = throwawayCertificate();

/** What one request carried to the server. */
interface Seen {
  path: string;
  version: string;
  authorization: string | undefined;
}

type Answerer = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

/** HTTP/2 with HTTP/1.1 (watches), HTTPS with HTTP/1.1 only, or plain HTTP; every request recorded. */
async function listen(kind: "h2" | "https" | "http"): Promise<{ origin: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const answer: Answerer = (req, res) => {
    seen.push({ path: req.url ?? "", version: req.httpVersion, authorization: req.headers.authorization });
    const watch = (req.url ?? "").includes("watch=true");
    // The HTTP/2 compatibility answer has the same writeHead and end.
    (res as ServerResponse).writeHead(200, { "content-type": "application/json" }).end(watch ? "" : "{}");
  };
  const server =
    kind === "h2"
      ? createSecureServer({ ...TLS, allowHTTP1: true }, answer)
      : kind === "https"
        ? createHttpsServer(TLS, answer)
        : createHttpServer(answer);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const scheme = kind === "http" ? "http" : "https";
  return { origin: `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** A client-node KubeConfig for `server` (tests and tools hold these), trusting any certificate. */
function kubeConfig(server: string, token?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server, skipTLSVerify: true }],
    users: [{ name: "u", ...(token ? { token } : {}) }],
    contexts: [{ name: "ctx", cluster: "c", user: "u" }],
    currentContext: "ctx",
  });
  return kc;
}

const get = (access: ClusterAccess | KubeConfig): Promise<unknown> =>
  apiRequest(access, { method: "GET", path: "/api/v1/namespaces", timeoutMs: 5_000, what: "list namespaces" });

const watch = (access: ClusterAccess | KubeConfig): Promise<void> =>
  streamWatch(access, {
    path: "/api/v1/namespaces",
    query: {},
    signal: AbortSignal.timeout(5_000),
    onEvent: () => undefined,
  });

const failure = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => "sent",
    (err: unknown) => String(err),
  );

describe("the server URL on every transport", () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const server of servers.splice(0)) server.close();
  });
  const start = async (kind: "h2" | "https" | "http"): Promise<{ origin: string; seen: Seen[] }> => {
    const started = await listen(kind);
    servers.push(started.server);
    return started;
  };

  it("sends every request below the server's path: HTTP/2, HTTP/1.1 over TLS, plain HTTP and watches", async () => {
    const prefix = "/k8s/clusters/c-abc";
    for (const kind of ["h2", "https", "http"] as const) {
      const { origin, seen } = await start(kind);
      const access: ClusterAccess = {
        server: `${origin}${prefix}`,
        requestOptions: () => Promise.resolve({ rejectUnauthorized: false, headers: {} }),
      };
      await get(access);
      await watch(access);
      expect(
        seen.map((s) => [s.version, s.path]),
        kind,
      ).to.deep.equal([
        [kind === "h2" ? "2.0" : "1.1", `${prefix}/api/v1/namespaces`],
        ["1.1", `${prefix}/api/v1/namespaces?watch=true`],
      ]);
    }
  });

  it("keeps the path of a kubeconfig's server with a trailing slash, through client-node's KubeConfig too", async () => {
    const { origin, seen } = await start("h2");
    const kc = kubeConfig(`${origin}/k8s/clusters/c-abc/`, "t");
    expect(accessOf(kc).server).to.equal(`${origin}/k8s/clusters/c-abc`);
    await get(kc);
    expect(seen.map((s) => [s.version, s.path, s.authorization])).to.deep.equal([
      ["2.0", "/k8s/clusters/c-abc/api/v1/namespaces", "Bearer t"],
    ]);
  });

  it("sends the URL's user information as basic auth over TLS on every transport, and keeps it out of the server", async () => {
    for (const kind of ["h2", "https"] as const) {
      const { origin, seen } = await start(kind);
      const kc = kubeConfig(origin.replace("https://", "https://jane:s%3Acret@"));
      expect(accessOf(kc).server).to.equal(origin);
      await get(kc);
      await watch(kc);
      const basic = `Basic ${Buffer.from("jane:s:cret").toString("base64")}`;
      expect(
        seen.map((s) => s.authorization),
        kind,
      ).to.deep.equal([basic, basic]);
    }
  });

  it("a token wins over the URL's user information, as in Go's HTTP client", async () => {
    const { origin, seen } = await start("https");
    await get(kubeConfig(origin.replace("https://", "https://jane:secret@"), "t"));
    expect(seen.map((s) => s.authorization)).to.deep.equal(["Bearer t"]);
  });

  it("refuses the URL's user information over plain http, on requests and watches, without repeating it", async () => {
    const { origin, seen } = await start("http");
    const kc = kubeConfig(origin.replace("http://", "http://jane:hunter2@"));
    for (const err of [await failure(get(kc)), await failure(watch(kc))]) {
      expect(err).to.contain(`refusing to send credentials (a bearer token or basic auth) to ${origin}`);
      expect(err).not.to.contain("hunter2");
      expect(err).not.to.contain("jane");
    }
    expect(seen).to.deep.equal([]);
  });
});
