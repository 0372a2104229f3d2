/**
 * The one certificate issuer of the project: a CA, serving certificates it signs (the webhook server's self-managed
 * mode, the local control plane's kube-apiserver) and client certificates (the local plane's admin kubeconfig). Keys
 * are RSA 2048 from node:crypto (native and fast); node-forge only builds and signs the X.509 structures;
 * node:crypto's X509Certificate checks them.
 */
import { X509Certificate, createPrivateKey, generateKeyPairSync, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import forge from "node-forge";

/** A certificate and its private key, both PEM. */
export interface CertificatePair {
  certPem: string;
  keyPem: string;
}

const DAY_MS = 86_400_000;
/** Backdating covers clock skew between this process and the API server. */
const BACKDATE_MS = 3_600_000;

/** An RSA key pair, both PEM: the private key PKCS#1, the public key SPKI. */
export interface RsaKeyPair {
  privateKeyPem: string;
  publicKeyPem: string;
}

/** A fresh RSA 2048 key pair (also what the local plane signs service-account tokens with). */
export function generateRsaKeyPair(): RsaKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
}

function sign(
  subject: forge.pki.CertificateField[],
  extensions: object[],
  days: number,
  issuer: CertificatePair | undefined,
): CertificatePair {
  const keys = generateRsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem);
  // A positive serial (leading 0x01 byte) of 128 random bits, as RFC 5280 asks.
  cert.serialNumber = `01${randomBytes(16).toString("hex")}`;
  const now = Date.now();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + days * DAY_MS);
  cert.setSubject(subject);
  cert.setIssuer(issuer ? forge.pki.certificateFromPem(issuer.certPem).subject.attributes : subject);
  cert.setExtensions(extensions);
  const signer = forge.pki.privateKeyFromPem(issuer ? issuer.keyPem : keys.privateKeyPem);
  cert.sign(signer, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

/** A self-signed CA certificate valid for `days` days (default ten years), able to sign serving certificates. */
export function createCertificateAuthority(commonName: string, days = 3650): CertificatePair {
  return sign(
    [{ name: "commonName", value: commonName }],
    [
      { name: "basicConstraints", cA: true, critical: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
    days,
    undefined,
  );
}

/**
 * A TLS serving certificate signed by `ca` for `hosts` (DNS names and IP addresses, told apart by their form), valid
 * for `days` days (default one year). The first host is also the common name.
 * @throws Error when `hosts` is empty.
 */
export function issueServingCertificate(ca: CertificatePair, hosts: readonly string[], days = 365): CertificatePair {
  const [first] = hosts;
  if (first === undefined) throw new Error("a serving certificate needs at least one host");
  const altNames = hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h }));
  return sign(
    [{ name: "commonName", value: first }],
    [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames },
    ],
    days,
    ca,
  );
}

/**
 * A TLS client certificate signed by `ca` for `commonName`, with one organisation per entry of `organizations`
 * (Kubernetes reads the common name as the user and the organisations as its groups, e.g. `system:masters`), valid
 * for `days` days (default one year).
 */
export function issueClientCertificate(
  ca: CertificatePair,
  commonName: string,
  organizations: readonly string[] = [],
  days = 365,
): CertificatePair {
  return sign(
    [{ name: "commonName", value: commonName }, ...organizations.map((value) => ({ name: "organizationName", value }))],
    [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
      { name: "extKeyUsage", clientAuth: true },
    ],
    days,
    ca,
  );
}

/** The names a Service is reached by inside a cluster: `<svc>.<ns>.svc` (what the API server uses) and friends. */
export function serviceHosts(serviceName: string, namespace: string): string[] {
  const base = `${serviceName}.${namespace}`;
  return [`${base}.svc`, `${base}.svc.cluster.local`, base, serviceName];
}

/**
 * Why `pair` is not a usable serving certificate for `hosts` signed by `caPem` at `now` (plus `renewBeforeMs`), or
 * undefined when it is. Never throws: unparsable input is a reason too.
 */
export function servingCertificateProblem(
  pair: CertificatePair,
  caPem: string,
  hosts: readonly string[],
  renewBeforeMs: number,
  now = Date.now(),
): string | undefined {
  try {
    const cert = new X509Certificate(pair.certPem);
    const ca = new X509Certificate(caPem);
    if (!cert.verify(ca.publicKey)) return "not signed by the CA";
    if (!cert.checkPrivateKey(createPrivateKey(pair.keyPem))) return "the key does not match the certificate";
    if (Date.parse(cert.validTo) - renewBeforeMs <= now) return `expires ${cert.validTo}`;
    const missing = hosts.find((h) => (isIP(h) ? cert.checkIP(h) === undefined : cert.checkHost(h) === undefined));
    if (missing !== undefined) return `not valid for ${missing}`;
    return undefined;
  } catch (err) {
    return `unreadable: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** Whether `pair` is a CA certificate with its key, valid for more than `renewBeforeMs` yet. Never throws. */
export function usableCertificateAuthority(pair: CertificatePair, renewBeforeMs: number, now = Date.now()): boolean {
  try {
    const cert = new X509Certificate(pair.certPem);
    return (
      cert.ca && cert.checkPrivateKey(createPrivateKey(pair.keyPem)) && Date.parse(cert.validTo) - renewBeforeMs > now
    );
  } catch {
    return false;
  }
}
