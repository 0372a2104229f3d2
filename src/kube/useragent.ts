/**
 * The User-Agent of every request, in client-go's shape (`<program>/<version> (<os>/<arch>) <runtime>`), so that
 * audit logs and API Priority and Fairness see who asks: `metal3-ipam-ts/0.1.0 (linux/x64) node/v24.21.0`.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The project's version from its package.json, found upwards from this file (src/kube in a checkout, dist/src/kube in the image). */
function projectVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const path = join(dir, "package.json");
    if (existsSync(path)) {
      const pkg = JSON.parse(readFileSync(path, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "metal3-ipam-ts" && pkg.version) return pkg.version;
    }
    dir = dirname(dir);
  }
  return "unknown";
}

export const USER_AGENT = `metal3-ipam-ts/${projectVersion()} (${process.platform}/${process.arch}) node/${process.version}`;
