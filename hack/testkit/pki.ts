/**
 * Certificates for a local control plane: one CA, a serving certificate for kube-apiserver and an admin client
 * certificate in `system:masters`, all from the project's one issuer (src/certs/pki.ts).
 */
import {
  createCertificateAuthority,
  generateRsaKeyPair,
  issueClientCertificate,
  issueServingCertificate,
  type CertificatePair,
  type RsaKeyPair,
} from "../../src/certs/pki.js";

export interface PlanePki {
  ca: CertificatePair;
  serving: CertificatePair;
  admin: CertificatePair;
  /** RSA key pair that signs and verifies service-account tokens. */
  serviceAccount: RsaKeyPair;
}

/** Generates everything a plane needs; `extraHosts` go into the serving certificate. Takes well under a second. */
export function generatePlanePki(extraHosts: readonly string[] = []): PlanePki {
  const ca = createCertificateAuthority("localplane-ca");
  // kube-apiserver is reached by loopback address and by name (clients that resolve localhost).
  const serving = issueServingCertificate(ca, ["localhost", "127.0.0.1", ...extraHosts]);
  const admin = issueClientCertificate(ca, "admin", ["system:masters"]);
  return { ca, serving, admin, serviceAccount: generateRsaKeyPair() };
}
