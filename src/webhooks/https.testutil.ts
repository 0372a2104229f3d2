/**
 * Test helpers for the webhook server: a certificate folder and an HTTPS client that returns status, headers and
 * the parsed body instead of throwing on non-2xx answers. Test-only; production code must not import it.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import type { IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCertificateAuthority, issueServingCertificate } from "../certs/pki.js";
import type { CertificatePair } from "../certs/pki.js";

/** A fresh CA and a serving certificate for 127.0.0.1 and localhost. */
export function loopbackPki(): { ca: CertificatePair; serving: CertificatePair } {
  const ca = createCertificateAuthority("webhook-test-ca");
  return { ca, serving: issueServingCertificate(ca, ["127.0.0.1", "localhost"]) };
}

/** Writes `pair` as tls.crt/tls.key into `dir` (a new temporary folder when absent); returns the folder. */
export function writeCertDir(pair: CertificatePair, dir = mkdtempSync(join(tmpdir(), "webhook-certs-"))): string {
  writeFileSync(join(dir, "tls.crt"), pair.certPem);
  writeFileSync(join(dir, "tls.key"), pair.keyPem);
  return dir;
}

/** An HTTPS answer. `json` is the parsed body, or undefined when it is not JSON. */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  json: unknown;
}

/** Options of {@link httpsCall}. */
export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Send the body in chunks without Content-Length. */
  chunked?: boolean;
  maxVersion?: "TLSv1.1" | "TLSv1.2" | "TLSv1.3";
}

/** One HTTPS request to 127.0.0.1:`port`, trusting only `caPem`. Rejects only on transport errors. */
export function httpsCall(
  port: number,
  caPem: string,
  path: string,
  body: string | Buffer = "",
  options: CallOptions = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = typeof body === "string" ? Buffer.from(body) : body;
    const headers: Record<string, string> = { "Content-Type": "application/json", ...options.headers };
    if (!options.chunked) headers["Content-Length"] = String(data.length);
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "POST",
        ca: caPem,
        headers,
        agent: false,
        ...(options.maxVersion ? { maxVersion: options.maxVersion } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (options.chunked) {
      for (let i = 0; i < data.length; i += 64 * 1024) req.write(data.subarray(i, i + 64 * 1024));
      req.end();
    } else {
      req.end(data);
    }
  });
}
