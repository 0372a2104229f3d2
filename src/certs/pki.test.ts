import { expect } from "chai";
import { X509Certificate, createPublicKey } from "node:crypto";
import { bundlePatch } from "./cabundle.js";
import { pairProblem } from "./certdir.js";
import {
  createCertificateAuthority,
  generateRsaKeyPair,
  issueClientCertificate,
  issueServingCertificate,
  serviceHosts,
  servingCertificateProblem,
  usableCertificateAuthority,
} from "./pki.js";

describe("certificates", function () {
  this.timeout(20_000);
  const ca = createCertificateAuthority("test-ca");
  const hosts = [...serviceHosts("webhook-service", "ipam-system"), "127.0.0.1"];
  const serving = issueServingCertificate(ca, hosts);

  it("issues a CA and a serving certificate Go's TLS accepts (SANs, server auth, signed by the CA)", () => {
    const caCert = new X509Certificate(ca.certPem);
    const cert = new X509Certificate(serving.certPem);
    expect(caCert.ca).to.equal(true);
    expect(cert.ca).to.equal(false);
    expect(cert.verify(caCert.publicKey)).to.equal(true);
    expect(cert.subjectAltName).to.contain("DNS:webhook-service.ipam-system.svc");
    expect(cert.subjectAltName).to.contain("IP Address:127.0.0.1");
    expect(cert.keyUsage).to.include("1.3.6.1.5.5.7.3.1");
    expect(pairProblem(serving)).to.equal(undefined);
    expect(hosts).to.include.members([
      "webhook-service.ipam-system.svc",
      "webhook-service.ipam-system.svc.cluster.local",
    ]);
  });

  it("tells why a pair cannot serve", () => {
    expect(servingCertificateProblem(serving, ca.certPem, hosts, 0)).to.equal(undefined);
    expect(servingCertificateProblem(serving, ca.certPem, ["other.svc"], 0)).to.equal("not valid for other.svc");
    expect(servingCertificateProblem(serving, ca.certPem, ["10.0.0.1"], 0)).to.equal("not valid for 10.0.0.1");
    expect(servingCertificateProblem(serving, createCertificateAuthority("other").certPem, hosts, 0)).to.equal(
      "not signed by the CA",
    );
    expect(servingCertificateProblem({ ...serving, keyPem: ca.keyPem }, ca.certPem, hosts, 0)).to.equal(
      "the key does not match the certificate",
    );
    expect(servingCertificateProblem(serving, ca.certPem, hosts, 400 * 86_400_000)).to.match(/^expires /);
    expect(servingCertificateProblem({ certPem: "x", keyPem: "y" }, ca.certPem, hosts, 0)).to.match(/^unreadable: /);
    expect(pairProblem({ certPem: serving.certPem, keyPem: ca.keyPem })).to.be.a("string");
  });

  it("tells whether a CA is still usable", () => {
    expect(usableCertificateAuthority(ca, 0)).to.equal(true);
    expect(usableCertificateAuthority(serving, 0)).to.equal(false);
    expect(usableCertificateAuthority(ca, 4000 * 86_400_000)).to.equal(false);
    expect(usableCertificateAuthority({ certPem: "x", keyPem: "y" }, 0)).to.equal(false);
  });

  it("issues a client certificate whose organisations are Kubernetes groups", () => {
    const admin = issueClientCertificate(ca, "admin", ["system:masters", "ops"]);
    const cert = new X509Certificate(admin.certPem);
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).to.equal(true);
    expect(cert.ca).to.equal(false);
    expect(cert.subject.split("\n")).to.deep.equal(["CN=admin", "O=system:masters", "O=ops"]);
    expect(cert.keyUsage).to.deep.equal(["1.3.6.1.5.5.7.3.2"]);
    expect(cert.subjectAltName).to.equal(undefined);
    expect(pairProblem(admin)).to.equal(undefined);
    expect(new X509Certificate(issueClientCertificate(ca, "bob").certPem).subject).to.equal("CN=bob");
  });

  it("generates RSA key pairs whose halves match", () => {
    const keys = generateRsaKeyPair();
    expect(keys.privateKeyPem).to.match(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(keys.publicKeyPem).to.match(/^-----BEGIN PUBLIC KEY-----/);
    expect(createPublicKey(keys.privateKeyPem).export({ type: "spki", format: "pem" }).toString()).to.equal(
      keys.publicKeyPem,
    );
  });

  it("refuses to issue a certificate without hosts", () => {
    expect(() => issueServingCertificate(ca, [])).to.throw("at least one host");
  });

  it("patches only the webhooks whose caBundle differs, guarding each index by name", () => {
    const webhooks = [
      { name: "a", clientConfig: { caBundle: "NEW" } },
      { name: "b", clientConfig: { caBundle: "" } },
      { name: "c", clientConfig: {} },
      { name: "d" },
    ];
    expect(bundlePatch(webhooks, "NEW")).to.deep.equal([
      { op: "test", path: "/webhooks/1/name", value: "b" },
      { op: "add", path: "/webhooks/1/clientConfig/caBundle", value: "NEW" },
      { op: "test", path: "/webhooks/2/name", value: "c" },
      { op: "add", path: "/webhooks/2/clientConfig/caBundle", value: "NEW" },
      { op: "test", path: "/webhooks/3/name", value: "d" },
      { op: "add", path: "/webhooks/3/clientConfig/caBundle", value: "NEW" },
    ]);
    expect(bundlePatch(webhooks.slice(0, 1), "NEW")).to.deep.equal([]);
  });
});
