/**
 * Serving certificates from a folder in cert-manager's Secret layout (`tls.crt`, `tls.key`), as mounted into the
 * controller's pod. The folder is polled: when the files change (cert-manager renewed the certificate, kubelet swapped
 * the volume) and the new pair is usable, it replaces the old one; a half-written or mismatched pair is ignored until
 * it is whole, so the server never loses its certificate.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import type { Logger } from "../runtime/logger.js";
import type { CertificatePair } from "./pki.js";

/** Where the server's certificate comes from, and how it learns about a new one. */
export interface CertificateSource {
  /** The pair to serve now. */
  current(): CertificatePair;
  /** The CA that signed `current()`, when this process made it (self-managed mode). */
  caPem(): string | undefined;
  /** Starts watching for new pairs; `onChange` gets each one. */
  start(onChange: (pair: CertificatePair) => void): void;
  /** Stops watching: `onChange` is not called again, not even by a check that was under way. */
  stop(): void;
  /** Whether the API server can be expected to trust the current pair. */
  ready(): boolean;
}

export const CERT_FILE = "tls.crt";
export const KEY_FILE = "tls.key";

/** Why `pair` cannot serve TLS, or undefined when it can. Never throws. */
export function pairProblem(pair: CertificatePair): string | undefined {
  try {
    createSecureContext({ cert: pair.certPem, key: pair.keyPem });
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Certificates read from `dir`; see the file header. */
export class CertDirSource implements CertificateSource {
  private pair: CertificatePair;
  private timer: NodeJS.Timeout | undefined;
  private lastProblem: string | undefined;
  private checking = false;

  /**
   * Reads `dir/tls.crt` and `dir/tls.key` once, synchronously, so a missing or broken pair fails start-up.
   * @throws Error naming the folder and the problem.
   */
  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
    private readonly reloadMs = 10_000,
  ) {
    let pair: CertificatePair;
    try {
      pair = { certPem: readFileSync(join(dir, CERT_FILE), "utf8"), keyPem: readFileSync(join(dir, KEY_FILE), "utf8") };
    } catch (err) {
      throw new Error(
        `cannot read the webhook certificate from ${dir}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const problem = pairProblem(pair);
    if (problem !== undefined) throw new Error(`the webhook certificate in ${dir} is not usable: ${problem}`);
    this.pair = pair;
  }

  current(): CertificatePair {
    return this.pair;
  }

  caPem(): string | undefined {
    return undefined;
  }

  ready(): boolean {
    return true;
  }

  start(onChange: (pair: CertificatePair) => void): void {
    this.timer = setInterval(() => void this.check(onChange), this.reloadMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async check(onChange: (pair: CertificatePair) => void): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const pair = {
        certPem: await readFile(join(this.dir, CERT_FILE), "utf8"),
        keyPem: await readFile(join(this.dir, KEY_FILE), "utf8"),
      };
      // A check still reading when stop() ran reports nothing: whoever it would tell has stopped listening.
      if (this.timer === undefined) return;
      if (pair.certPem === this.pair.certPem && pair.keyPem === this.pair.keyPem) return;
      const problem = pairProblem(pair);
      if (problem !== undefined) throw new Error(problem);
      this.pair = pair;
      this.lastProblem = undefined;
      this.logger.info("Reloaded webhook certificate", { dir: this.dir });
      onChange(pair);
    } catch (err) {
      const problem = err instanceof Error ? err.message : String(err);
      // Once per distinct problem: a renewal in progress must not flood the log.
      if (problem !== this.lastProblem)
        this.logger.warn("Keeping the current webhook certificate", { dir: this.dir, problem });
      this.lastProblem = problem;
    } finally {
      this.checking = false;
    }
  }
}
