/**
 * Where the test NetBox comes from: `hack/netbox.sh install` fills a per-version cache entry (a virtualenv with
 * netbox from PyPI, and a PostgreSQL data directory with NetBox's migrations applied) outside the repository. The
 * test kit runs it on first use, so `npm test` on a fresh machine needs no step by hand; a machine that cannot run
 * NetBox at all (no Python 3.12, no PostgreSQL 15) skips the tests that need it, with one line saying why.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { cacheRoot } from "./binaries.js";
import { repoRoot } from "./cluster.js";
import type { ExternalTool } from "./skips.js";

export const NETBOX_VERSION = "4.7.3";
export const PG_MAJOR = 15;
export const PG_BIN = process.env.NETBOX_PG_BIN ?? `/usr/lib/postgresql/${PG_MAJOR}/bin`;
const SCRIPT = join(repoRoot, "hack", "netbox.sh");

export interface NetBoxInstall {
  /** `venv/bin/python`: everything NetBox runs through `python -m`, so the virtualenv could be built aside. */
  python: string;
  /** The migrated PostgreSQL data directory every start copies. */
  pgdata: string;
  /** The folder holding configuration.py (read from the environment the starter sets). */
  configurationDir: string;
}

export function netBoxInstall(): NetBoxInstall {
  const entry = join(cacheRoot(), `netbox-${NETBOX_VERSION}`);
  return {
    python: join(entry, "venv", "bin", "python"),
    pgdata: join(entry, `pgdata-pg${PG_MAJOR}`),
    configurationDir: join(repoRoot, "hack", "netbox"),
  };
}

/** What the tests that need NetBox say when they skip, and the command that makes them run. */
export const NETBOX_TOOL: ExternalTool = {
  command: "netbox",
  checks: "the NetBox client against a real NetBox",
  install: `pyenv install 3.12 && apt-get install postgresql-${PG_MAJOR} redis-server && hack/netbox.sh install`,
  missing: () => netBoxUnavailable(),
};

/** Why this machine cannot install or run NetBox (undefined when it can): a missing Python 3.12 or PostgreSQL. */
export function netBoxUnavailable(): string | undefined {
  if (!existsSync(join(PG_BIN, "postgres"))) return `no PostgreSQL ${PG_MAJOR} server in ${PG_BIN}`;
  if (!pythonPresent()) return "no Python 3.12 (pyenv's, python3.12 on the PATH, or NETBOX_PYTHON)";
  const root = process.getuid?.() === 0;
  const redis = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
  if (!redis && !(root && spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0))
    return "no redis-server (and not root with apt-get to install it)";
  return undefined;
}

function pythonPresent(): boolean {
  if (process.env.NETBOX_PYTHON) return existsSync(process.env.NETBOX_PYTHON);
  if (existsSync(netBoxInstall().python)) return true;
  const pyenv = spawnSync("pyenv", ["root"], { encoding: "utf8" });
  if (pyenv.status === 0) {
    const versions = join(pyenv.stdout.trim(), "versions");
    if (existsSync(versions) && readdirSync(versions).some((v) => v.startsWith("3.12"))) return true;
  }
  return spawnSync("python3.12", ["--version"], { stdio: "ignore" }).status === 0;
}

let installing: Promise<NetBoxInstall> | undefined;

/**
 * The installed NetBox, installing what is missing first (`hack/netbox.sh install`: about a minute for the
 * virtualenv, six minutes of CPU for the first migration; its progress goes to our stderr). Once per process.
 */
export async function ensureNetBoxInstalled(): Promise<NetBoxInstall> {
  installing ??= (async () => {
    if (spawnSync(SCRIPT, ["check"], { stdio: "ignore" }).status !== 0) {
      const code = await new Promise<number | null>((resolve, reject) => {
        const child = spawn(SCRIPT, ["install"], { stdio: ["ignore", "ignore", "inherit"] });
        child.on("error", reject);
        child.on("exit", resolve);
      });
      if (code !== 0) throw new Error(`hack/netbox.sh install failed (exit code ${code}); its output is above`);
    }
    return netBoxInstall();
  })();
  return await installing;
}
