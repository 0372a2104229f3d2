/**
 * Where the control plane's binaries come from: `KUBEBUILDER_ASSETS` (the envtest convention) when set, else the
 * per-version cache that `hack/localplane-binaries.sh` fills from Go modules. That cache also holds the tools some
 * tests run (clusterctl, prometheus, promtool).
 */
import { execFile } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export interface PlaneBinaries {
  etcd: string;
  kubeApiServer: string;
  /** Absent when KUBEBUILDER_ASSETS has none and nothing is cached; planes then run without garbage collection. */
  kubeControllerManager?: string;
}

/** Thrown when a binary is missing or does not run; the message says how to get it. */
export class BinaryError extends Error {
  override name = "BinaryError";
}

export function cacheRoot(): string {
  return (
    process.env.METAL3_IPAM_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "metal3-ipam-ts")
  );
}

const HOW_TO_GET =
  "run `npm run binaries` (hack/localplane-binaries.sh builds them from Go modules; needs Go) " +
  "or set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver and kube-controller-manager";

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks that `path` runs and answers `--version` within 15 s. A truncated or corrupt cache entry fails here with a
 * message naming the file, instead of hanging a test run later.
 */
export async function verifyBinary(path: string, howToGet = HOW_TO_GET): Promise<void> {
  if (!(await isExecutable(path))) throw new BinaryError(`${path} is missing or not executable; ${howToGet}`);
  try {
    await execFileAsync(path, ["--version"], { timeout: 15_000 });
  } catch (err) {
    const why = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw new BinaryError(`${path} does not run (${why}); the cached build looks corrupt: delete it and ${howToGet}`);
  }
}

/** Resolves and verifies the binaries. Fails with a BinaryError naming both ways to get them. */
export async function resolveBinaries(): Promise<PlaneBinaries> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  const cached = join(cacheRoot(), "bin");
  const dir = assets && assets.length > 0 ? assets : cached;
  const etcd = join(dir, "etcd");
  const kubeApiServer = join(dir, "kube-apiserver");
  await verifyBinary(etcd);
  await verifyBinary(kubeApiServer);
  // envtest's asset bundles carry no kube-controller-manager: fall back to our cache for it.
  for (const candidate of [join(dir, "kube-controller-manager"), join(cached, "kube-controller-manager")]) {
    if (await isExecutable(candidate)) {
      await verifyBinary(candidate);
      return { etcd, kubeApiServer, kubeControllerManager: candidate };
    }
  }
  return { etcd, kubeApiServer };
}

/** Path of the cached clusterctl, verified. */
export async function resolveClusterctl(): Promise<string> {
  const path = join(process.env.KUBEBUILDER_ASSETS ?? join(cacheRoot(), "bin"), "clusterctl");
  const fallback = join(cacheRoot(), "bin", "clusterctl");
  const chosen = (await isExecutable(path)) ? path : fallback;
  if (!(await isExecutable(chosen)))
    throw new BinaryError(`clusterctl not found at ${chosen}; run \`npm run binaries\``);
  return chosen;
}

/**
 * Path of `tool` as `npm run binaries` built it into the cache, verified like the plane's binaries. Only the cache
 * is looked at (not the PATH), so every machine runs the version the script pins; a missing build fails the test
 * that needs it with the command that makes it, rather than skipping it.
 */
export async function resolveCachedTool(tool: "prometheus" | "promtool"): Promise<string> {
  await verifyBinary(join(cacheRoot(), "bin", tool), "run `npm run binaries` (builds it from Go modules; needs Go)");
  return join(cacheRoot(), "bin", tool);
}
