import { X509Certificate } from "node:crypto";
import { connect, createServer, type Server } from "node:tls";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { pairProblem } from "./certdir.js";
import { selfSignedCertificate } from "./selfsigned.js";

/** Completes one TLS handshake with `server` that verifies its certificate against `caPem` for `servername`. */
function handshake(server: Server, caPem: string, servername: string): Promise<void> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, ca: caPem, servername }, () => {
      socket.end();
      resolve();
    });
    socket.once("error", reject);
  });
}

describe("self-signed serving certificate", () => {
  const now = Date.UTC(2030, 0, 15);
  const pair = selfSignedCertificate(["controller-0", "localhost", "127.0.0.1"], 365, now);
  const cert = new X509Certificate(pair.certPem);

  it("is a v3 leaf for server auth, signed by its own key, naming every host", () => {
    expect(cert.ca).to.equal(false);
    expect(cert.verify(cert.publicKey)).to.equal(true);
    expect(cert.subject).to.equal("CN=controller-0");
    expect(cert.issuer).to.equal("CN=controller-0");
    expect(cert.subjectAltName).to.equal("DNS:controller-0, DNS:localhost, IP Address:127.0.0.1");
    expect(cert.keyUsage).to.deep.equal(["1.3.6.1.5.5.7.3.1"]);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).to.equal("prime256v1");
    expect(cert.checkHost("localhost")).to.equal("localhost");
    expect(cert.checkIP("127.0.0.1")).to.equal("127.0.0.1");
    expect(cert.checkHost("other")).to.equal(undefined);
    expect(pairProblem(pair)).to.equal(undefined);
  });

  it("is valid from an hour before `now` for `days` days, in UTCTime and past 2049 in GeneralizedTime", () => {
    expect(Date.parse(cert.validFrom)).to.equal(now - 3_600_000);
    expect(Date.parse(cert.validTo)).to.equal(now + 365 * 86_400_000);
    const late = new X509Certificate(selfSignedCertificate(["x"], 30, Date.UTC(2060, 5, 1)).certPem);
    expect(Date.parse(late.validTo)).to.equal(Date.UTC(2060, 5, 1) + 30 * 86_400_000);
  });

  it("serves TLS that a client verifying it against the certificate itself accepts", async () => {
    const fresh = selfSignedCertificate(["localhost", "127.0.0.1"]);
    const server = createServer({ cert: fresh.certPem, key: fresh.keyPem }, (s) => s.end());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      await handshake(server, fresh.certPem, "localhost");
      const other = selfSignedCertificate(["localhost"]);
      let refused: unknown;
      await handshake(server, other.certPem, "localhost").catch((err: unknown) => (refused = err));
      expect(String(refused)).to.match(/self.signed|signature|verify/i);
    } finally {
      server.close();
    }
  });

  it("draws a fresh key and serial each time", () => {
    const again = new X509Certificate(selfSignedCertificate(["controller-0"], 365, now).certPem);
    expect(again.serialNumber).to.not.equal(cert.serialNumber);
    expect(again.fingerprint256).to.not.equal(cert.fingerprint256);
  });

  it("refuses no hosts and IPv6 addresses", () => {
    expect(() => selfSignedCertificate([])).to.throw(/at least one host/);
    expect(() => selfSignedCertificate(["::1"])).to.throw(/IPv6/);
  });
});
