import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { silentLogger } from "../runtime/logger.js";
import { CERT_FILE, CertDirSource, KEY_FILE } from "./certdir.js";
import type { CertificatePair } from "./pki.js";
import { selfSignedCertificate } from "./selfsigned.js";

describe("CertDirSource", () => {
  let dir: string;
  const write = (pair: CertificatePair): void => {
    writeFileSync(join(dir, CERT_FILE), pair.certPem);
    writeFileSync(join(dir, KEY_FILE), pair.keyPem);
  };
  /** The source's poll, as its timer runs it. */
  const check = (source: CertDirSource, onChange: (pair: CertificatePair) => void): Promise<void> =>
    (source as unknown as { check(f: typeof onChange): Promise<void> }).check(onChange);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "certdir-test-"));
    write(selfSignedCertificate(["a.example"]));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("hands a new usable pair to onChange, and ignores a broken one", async () => {
    const source = new CertDirSource(dir, silentLogger(), 60_000);
    const seen: CertificatePair[] = [];
    source.start((pair) => seen.push(pair));
    try {
      writeFileSync(join(dir, KEY_FILE), "not a key");
      await check(source, (pair) => seen.push(pair));
      expect(seen).to.deep.equal([]);
      const next = selfSignedCertificate(["b.example"]);
      write(next);
      await check(source, (pair) => seen.push(pair));
      expect(seen).to.deep.equal([next]);
      expect(source.current()).to.deep.equal(next);
    } finally {
      source.stop();
    }
  });

  it("reports nothing once stopped, even from a check that was reading when stop() ran", async () => {
    const source = new CertDirSource(dir, silentLogger(), 60_000);
    const seen: CertificatePair[] = [];
    const onChange = (pair: CertificatePair): number => seen.push(pair);
    source.start(onChange);
    write(selfSignedCertificate(["b.example"]));
    const reading = check(source, onChange);
    source.stop();
    await reading;
    expect(seen).to.deep.equal([]);
  });
});
