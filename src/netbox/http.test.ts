/**
 * How NetBox's answers and a connection's failures become NetBoxError reasons, and that the token never leaves the
 * client. A loopback server of the test plays the failing NetBox here, for the error mapping only: what NetBox
 * really does is tested against a real one (e2e/netbox-client.test.ts).
 */
import { expect } from "chai";
import { generateKeyPairSync } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { getCACertificates, setDefaultCACertificates } from "node:tls";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import forge from "node-forge";
import { netBoxClient, NetBoxError, type NetBoxObservation } from "./client.js";

const TOKEN = "nbt_K3yPart0123.S3cretPartThatMustNeverLeak0123456789abcdef";
const SECRET = TOKEN.slice(TOKEN.indexOf(".") + 1);
const V1_TOKEN = "0123456789abcdef0123456789abcdef01234567";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return `127.0.0.1:${port}`;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify(body));
};

/** Every place a thrown error could show the token: message, stack, util.inspect, JSON. */
function everythingShown(err: unknown): string {
  return [
    String(err),
    (err as Error).stack ?? "",
    inspect(err, { depth: 10, showHidden: true }),
    JSON.stringify(err),
  ].join("\n");
}

describe("NetBox client: error mapping and redaction (loopback server)", () => {
  let server: Server | undefined;
  let handler: Handler = (_req, res) => json(res, 200, {});
  const observed: NetBoxObservation[] = [];

  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
    server = undefined;
    observed.length = 0;
  });

  async function client(token = TOKEN, timeoutMs = 2_000): Promise<ReturnType<typeof netBoxClient>> {
    server = createHttpServer((req, res) => handler(req, res));
    const host = await listen(server);
    return netBoxClient(
      { url: `http://${host}`, token },
      { timeoutMs, userAgent: "metal3-ipam-ts/test", observe: (o) => observed.push(o) },
    );
  }

  async function failure(promise: Promise<unknown>): Promise<NetBoxError> {
    try {
      await promise;
    } catch (err) {
      expect(err).to.be.instanceOf(NetBoxError);
      const shown = everythingShown(err);
      expect(shown).not.to.include(SECRET);
      expect(shown).not.to.include(TOKEN);
      return err as NetBoxError;
    }
    throw new Error("expected a NetBoxError");
  }

  const cases: [number, string, string][] = [
    [401, "/api/ipam/ip-addresses/{id}/", "Unauthorized"],
    [403, "/api/ipam/ip-addresses/{id}/", "Forbidden"],
    [500, "/api/ipam/ip-addresses/{id}/", "ServerError"],
    [503, "/api/ipam/ip-addresses/{id}/", "ServerError"],
    [400, "/api/ipam/ip-addresses/{id}/", "BadRequest"],
    [409, "/api/ipam/ip-addresses/{id}/", "BadRequest"],
  ];
  for (const [status, route, reason] of cases) {
    it(`maps ${status} on ${route} to ${reason}`, async () => {
      handler = (_req, res) => json(res, status, { detail: `status ${status} here` });
      const c = await client();
      const err = await failure(c.getAddress(7));
      expect(err.reason).to.equal(reason);
      expect(err.status).to.equal(status);
      expect(err.message).to.equal(`NetBox GET ${route}: ${status} ${reason}: status ${status} here`);
      expect(observed).to.have.length(1);
      expect(observed[0]).to.include({ method: "GET", route, status, reason });
    });
  }

  it("maps NetBox's 403 for a rejected credential to Unauthorized, and a 403 for a missing permission to Forbidden", async () => {
    const c = await client();
    for (const detail of ["Invalid v2 token", "Token expired", "Authentication credentials were not provided."]) {
      handler = (_req, res) => json(res, 403, { detail });
      expect((await failure(c.getAddress(1))).reason, detail).to.equal("Unauthorized");
    }
    handler = (_req, res) => json(res, 403, { detail: "You do not have permission to perform this action." });
    expect((await failure(c.getAddress(1))).reason).to.equal("Forbidden");
  });

  it("maps 409 on available-ips to Exhausted, and reads field errors of a list", async () => {
    handler = (_req, res) =>
      json(res, 409, { detail: "Insufficient resources: 2 IP addresses requested, 1 available" });
    const c = await client();
    const err = await failure(c.allocate({ kind: "prefix", id: 3 }, [{ description: "a" }, { description: "b" }]));
    expect(err.reason).to.equal("Exhausted");
    expect(err.message).to.include("2 IP addresses requested, 1 available");
    expect(observed[0]).to.include({ method: "POST", route: "/api/ipam/prefixes/{id}/available-ips/", status: 409 });

    handler = (_req, res) => json(res, 400, [{ address: ["Duplicate IP address found in global table"] }, {}]);
    const bad = await failure(c.allocate({ kind: "ip-range", id: 4 }, [{ description: "a" }, { description: "b" }]));
    expect(bad.reason).to.equal("BadRequest");
    expect(bad.message).to.include("address: Duplicate IP address found in global table");
  });

  it("maps 404 to NotFound where a record must exist, and to undefined or done where absence is an answer", async () => {
    handler = (_req, res) => json(res, 404, { detail: "No IPAddress matches the given query." });
    const c = await client();
    expect(await c.getAddress(9)).to.equal(undefined);
    await c.deleteAddress(9);
    const err = await failure(c.findPrefix({ id: 9 }));
    expect(err.reason).to.equal("NotFound");
  });

  it("maps 429 to Throttled with Retry-After in seconds, as a number or an HTTP date", async () => {
    handler = (_req, res) => json(res, 429, { detail: "slow down" }, { "Retry-After": "7" });
    const c = await client();
    const err = await failure(c.getAddress(1));
    expect(err).to.include({ reason: "Throttled", status: 429, retryAfterSeconds: 7 });
    handler = (_req, res) =>
      json(res, 503, { detail: "maintenance" }, { "Retry-After": new Date(Date.now() + 30_000).toUTCString() });
    const later = await failure(c.getAddress(1));
    expect(later.reason).to.equal("ServerError");
    expect(later.retryAfterSeconds).to.be.within(28, 31);
  });

  it("maps a refused connection to Unreachable, a reset to Unreachable, and silence to Timeout", async () => {
    const c = await client(TOKEN, 300);
    const url = `http://${(server?.address() as AddressInfo).address}:${(server?.address() as AddressInfo).port}`;
    handler = (req) => req.socket.destroy();
    const reset = await failure(c.getAddress(1));
    expect(reset.reason).to.equal("Unreachable");
    expect(reset.status).to.equal(undefined);

    handler = () => undefined; // never answers
    const started = Date.now();
    const slow = await failure(c.getAddress(1));
    expect(slow.reason).to.equal("Timeout");
    expect(Date.now() - started).to.be.within(250, 2_000);
    expect(slow.message).to.include("within 300 ms");

    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    const refused = await failure(c.getAddress(1));
    expect(refused.reason).to.equal("Unreachable");
    expect(refused.message).to.include(url).and.include("ECONNREFUSED");
    expect(observed.map((o) => o.reason)).to.deep.equal(["Unreachable", "Timeout", "Unreachable"]);
  });

  it("waits for a slow answer within the deadline, past the 1.5 s after which idle connections are closed", async () => {
    handler = (_req, res) => setTimeout(() => json(res, 200, { id: 2, address: "10.0.0.2/24" }), 2_000);
    const c = await client(TOKEN, 5_000);
    expect((await c.getAddress(2))?.address).to.equal("10.0.0.2/24");
  });

  it("sends a request again, once, when a kept-alive connection turns out closed before it was read", async () => {
    const served = new WeakMap<object, number>();
    handler = (req, res) => {
      const count = served.get(req.socket) ?? 0;
      served.set(req.socket, count + 1);
      // A server that closed the idle connection: the second request on it is never read, the socket is reset.
      if (count > 0) req.socket.resetAndDestroy();
      else json(res, 200, { id: 1, address: "10.0.0.1/24" });
    };
    const c = await client();
    expect((await c.getAddress(1))?.address).to.equal("10.0.0.1/24");
    expect((await c.getAddress(1))?.address).to.equal("10.0.0.1/24");
    expect(observed.map((o) => o.status)).to.deep.equal([200, 200]);
  });

  it("never shows the token: not in messages, stacks, inspected errors, observations, even when NetBox echoes it", async () => {
    handler = (req, res) => json(res, 400, { detail: `bad header ${req.headers.authorization}`, token: [SECRET] });
    const c = await client();
    const err = await failure(c.allocate({ kind: "prefix", id: 1 }, [{ description: "x" }]));
    expect(err.message).to.include("[redacted]");
    handler = (req, res) => json(res, 401, { detail: `Invalid v2 token ${req.headers.authorization}` });
    await failure(c.getAddress(1));
    expect(JSON.stringify(observed)).not.to.include(SECRET);
    expect(inspect(c, { depth: 10, showHidden: true })).not.to.include(SECRET);
  });

  it("sends a v2 token as Bearer, a v1 token as Token, with our User-Agent and no token in the URL", async () => {
    const seen: IncomingMessage[] = [];
    handler = (req, res) => {
      seen.push(req);
      json(res, 200, { count: 0, results: [] });
    };
    await (await client(TOKEN)).ensureTag("x", "x").catch(() => undefined);
    expect(seen[0]?.headers.authorization).to.equal(`Bearer ${TOKEN}`);
    expect(seen[0]?.headers["user-agent"]).to.equal("metal3-ipam-ts/test");
    expect(seen[0]?.url).to.equal("/api/extras/tags/?slug=x&limit=1");
    server?.close();
    seen.length = 0;
    await (await client(V1_TOKEN)).getAddress(1).catch(() => undefined);
    expect(seen[0]?.headers.authorization).to.equal(`Token ${V1_TOKEN}`);
  });

  it("talks HTTPS with a CA bundle, and refuses a server its bundle does not vouch for", async () => {
    const { cert, key } = selfSigned();
    const tls = createHttpsServer({ cert, key }, (_req, res) => json(res, 200, { id: 5, address: "10.0.0.5/24" }));
    server = tls;
    const host = await listen(tls);
    const options = { timeoutMs: 2_000, userAgent: "t" };
    const trusted = netBoxClient({ url: `https://${host}`, token: TOKEN, caBundle: cert }, options);
    expect((await trusted.getAddress(5))?.address).to.equal("10.0.0.5/24");
    trusted.close();
    const untrusted = netBoxClient({ url: `https://${host}`, token: TOKEN }, options);
    const err = await failure(untrusted.getAddress(5));
    expect(err.reason).to.equal("Unreachable");
    expect(err.message).to.match(/SELF_SIGNED|self.signed/i);
    untrusted.close();
  });

  it("adds a CA bundle to the default roots: a server the defaults vouch for is still trusted", async () => {
    const byDefault = selfSigned("default root");
    const byBundle = selfSigned("bundle root");
    const answer: Handler = (_req, res) => json(res, 200, { id: 5, address: "10.0.0.5/24" });
    const defaultServer = createHttpsServer(byDefault, answer);
    const bundleServer = createHttpsServer(byBundle, answer);
    const defaults = getCACertificates("default");
    setDefaultCACertificates([...defaults, byDefault.cert]);
    try {
      const options = { timeoutMs: 2_000, userAgent: "t" };
      const hosts = [await listen(defaultServer), await listen(bundleServer)];
      for (const host of hosts) {
        const c = netBoxClient({ url: `https://${host}`, token: TOKEN, caBundle: byBundle.cert }, options);
        expect((await c.getAddress(5))?.address, host).to.equal("10.0.0.5/24");
        c.close();
      }
    } finally {
      setDefaultCACertificates(defaults);
      for (const s of [defaultServer, bundleServer]) {
        s.closeAllConnections();
        s.close();
      }
    }
  });

  it("never follows a redirect: the other origin gets no request, and the caller a BadRequest naming the status", async () => {
    const elsewhere: IncomingMessage[] = [];
    const other = createHttpServer((req, res) => {
      elsewhere.push(req);
      json(res, 200, { id: 5, address: "10.0.0.5/24" });
    });
    const otherHost = await listen(other);
    try {
      handler = (_req, res) => {
        res.writeHead(302, { Location: `http://${otherHost}/api/ipam/ip-addresses/5/` }).end();
      };
      const err = await failure((await client()).getAddress(5));
      expect(err.reason).to.equal("BadRequest");
      expect(err.status).to.equal(302);
      expect(elsewhere).to.deep.equal([]);
    } finally {
      other.close();
    }
  });
});

/**
 * A self-signed certificate for 127.0.0.1 (its subject alternative name) named `commonName` (roots are looked up by
 * subject, so two of one name would be confused): node:crypto makes the key, node-forge the X.509 structure.
 */
function selfSigned(commonName = "127.0.0.1"): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  cert.serialNumber = "01";
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 3_600_000);
  const subject = [{ name: "commonName", value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: "basicConstraints", cA: true },
    { name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }] },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: privateKey };
}
