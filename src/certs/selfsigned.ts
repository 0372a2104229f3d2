/**
 * A self-signed TLS serving certificate made with node:crypto alone: an ECDSA P-256 key and an X.509 v3 certificate
 * written in DER by the small encoder below. It serves the diagnostics endpoint, whose scrapers do not verify it (they
 * authenticate with a bearer token instead, as with Cluster API's providers); the controller makes one at every start.
 * Not `pki.ts`: its issuer loads node-forge, resident memory a controller without self-managed webhooks never
 * needs.
 */
import { createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { isIP } from "node:net";
import type { CertificatePair } from "./pki.js";

const DAY_MS = 86_400_000;
/** Backdating covers clock skew between this process and its scrapers. */
const BACKDATE_MS = 3_600_000;

/** A DER element: tag, definite length, contents. */
function der(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const n = body.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  if (n > 0xffff) throw new Error("DER element too long");
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

const sequence = (...items: Buffer[]): Buffer => der(0x30, ...items);

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return der(0x06, Buffer.from(bytes));
}

/** RFC 5280: UTCTime through 2049, GeneralizedTime after. */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z";
  return d.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(iso.slice(2))) : der(0x18, Buffer.from(iso));
}

const commonName = (cn: string): Buffer => sequence(der(0x31, sequence(oid("2.5.4.3"), der(0x0c, Buffer.from(cn)))));
const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  sequence(oid(id), ...(critical ? [der(0x01, Buffer.from([0xff]))] : []), der(0x04, value));
const ECDSA_WITH_SHA256 = sequence(oid("1.2.840.10045.4.3.2"));

/** A DNS name or IPv4 address as a subjectAltName entry (context tags 2 and 7). */
function altName(host: string): Buffer {
  if (isIP(host) === 6) throw new Error(`IPv6 addresses are not supported here, got ${host}`);
  return isIP(host) === 4 ? der(0x87, Buffer.from(host.split(".").map(Number))) : der(0x82, Buffer.from(host, "ascii"));
}

/**
 * A self-signed serving certificate for `hosts` (DNS names and IPv4 addresses; the first is also the common name),
 * valid for `days` days from an hour ago, with a fresh ECDSA P-256 key.
 * @throws Error when `hosts` is empty or holds an IPv6 address.
 */
export function selfSignedCertificate(hosts: readonly string[], days = 365, now = Date.now()): CertificatePair {
  const [first] = hosts;
  if (first === undefined) throw new Error("a serving certificate needs at least one host");
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = createPublicKey(privateKey).export({ type: "spki", format: "der" });
  // A positive serial (leading 0x01 byte) of 128 random bits, as RFC 5280 asks.
  const serial = der(0x02, Buffer.from([0x01]), randomBytes(16));
  const name = commonName(first);
  const extensions = der(
    0xa3,
    sequence(
      extension("2.5.29.19", true, sequence()),
      // keyUsage digitalSignature (bit 0); an ECDSA key signs the handshake, it never enciphers keys.
      extension("2.5.29.15", true, der(0x03, Buffer.from([0x07, 0x80]))),
      extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1"))),
      extension("2.5.29.17", false, sequence(...hosts.map(altName))),
    ),
  );
  const tbs = sequence(
    der(0xa0, der(0x02, Buffer.from([0x02]))),
    serial,
    ECDSA_WITH_SHA256,
    name,
    sequence(time(new Date(now - BACKDATE_MS)), time(new Date(now + days * DAY_MS))),
    name,
    spki,
    extensions,
  );
  const signature = sign("sha256", tbs, privateKey);
  const cert = sequence(tbs, ECDSA_WITH_SHA256, der(0x03, Buffer.from([0x00]), signature));
  return { certPem: pem("CERTIFICATE", cert), keyPem: keyPem(privateKey) };
}

const pem = (label: string, body: Buffer): string =>
  `-----BEGIN ${label}-----\n${(body.toString("base64").match(/.{1,64}/g) ?? []).join("\n")}\n-----END ${label}-----\n`;

const keyPem = (key: KeyObject): string => key.export({ type: "pkcs8", format: "pem" }).toString();
