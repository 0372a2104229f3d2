/**
 * Certificates for a local control plane: one CA, a serving certificate for kube-apiserver and an admin client
 * certificate in `system:masters`. Keys come from Node's crypto (fast, native); node-forge only signs.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface PlanePki {
  ca: KeyPairPem;
  serving: KeyPairPem;
  admin: KeyPairPem;
  /** RSA key pair that signs and verifies service-account tokens. */
  serviceAccount: { privateKeyPem: string; publicKeyPem: string };
}

interface CertRequest {
  commonName: string;
  organization?: string;
  isCa?: boolean;
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: "ca" | "server" | "client";
}

function rsaKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
}

function extensionsFor(req: CertRequest): object[] {
  if (req.usage === "ca") {
    return [
      { name: "basicConstraints", cA: true, critical: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ];
  }
  const altNames = [
    ...(req.dnsNames ?? []).map((value) => ({ type: 2, value })),
    ...(req.ipAddresses ?? []).map((ip) => ({ type: 7, ip })),
  ];
  return [
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: req.usage === "server", clientAuth: req.usage === "client" },
    ...(altNames.length > 0 ? [{ name: "subjectAltName", altNames }] : []),
  ];
}

/**
 * Issues a certificate for `req`, signed by `issuer` (self-signed when absent). Valid from one hour ago (clock skew)
 * for `days` days.
 */
export function issueCertificate(req: CertRequest, issuer?: KeyPairPem, days = 365): KeyPairPem {
  const keys = rsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem);
  cert.serialNumber = "01" + randomBytes(15).toString("hex");
  cert.validity.notBefore = new Date(Date.now() - 3600_000);
  cert.validity.notAfter = new Date(Date.now() + days * 86400_000);
  const subject = [{ name: "commonName", value: req.commonName }];
  if (req.organization) subject.push({ name: "organizationName", value: req.organization });
  cert.setSubject(subject);
  cert.setIssuer(issuer ? forge.pki.certificateFromPem(issuer.certPem).subject.attributes : subject);
  cert.setExtensions(extensionsFor(req));
  const signingKey = forge.pki.privateKeyFromPem(issuer ? issuer.keyPem : keys.privateKeyPem);
  cert.sign(signingKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

/** Generates everything a plane needs. Takes well under a second. */
export function generatePlanePki(): PlanePki {
  const ca = issueCertificate({ commonName: "localplane-ca", usage: "ca" });
  const serving = issueCertificate(
    { commonName: "kube-apiserver", usage: "server", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] },
    ca,
  );
  const admin = issueCertificate({ commonName: "admin", organization: "system:masters", usage: "client" }, ca);
  return { ca, serving, admin, serviceAccount: rsaKeyPair() };
}
