/**
 * Files a kubeconfig names for TLS material (client certificate, key, CA bundle), read again when they change on disk:
 * cert-manager, kubeadm and SPIFFE helpers rotate them in place, and a controller that read them once would go on
 * presenting an expired certificate (401 on every request) until restarted. Tokens have their own re-read
 * (kubeconfig.ts).
 */
import { readFileSync, statSync } from "node:fs";

/** How often a file's identity (inode, size, mtime) is checked; a changed file is then read again. */
export const FILE_RECHECK_MS = 2_000;

/** The current contents of one file. `read()` returns the same Buffer until the file changes. */
export class WatchedFile {
  private contents: Buffer;
  private identity: string;
  private checkedAt = Date.now();

  constructor(readonly path: string) {
    this.identity = WatchedFile.identityOf(path);
    this.contents = readFileSync(path);
  }

  private static identityOf(path: string): string {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  }

  /**
   * The contents, re-read when the file changed since the last check. A file that vanished or cannot be read keeps its
   * last contents (a rotation writes a new file, then renames it into place: the window is short).
   */
  read(now = Date.now()): Buffer {
    if (now - this.checkedAt < FILE_RECHECK_MS) return this.contents;
    this.checkedAt = now;
    try {
      const identity = WatchedFile.identityOf(this.path);
      if (identity !== this.identity) {
        this.contents = readFileSync(this.path);
        this.identity = identity;
      }
    } catch {
      // keep the last contents; the next check tries again
    }
    return this.contents;
  }
}
