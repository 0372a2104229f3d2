/**
 * A real NetBox for tests: a throwaway PostgreSQL cluster (a copy of the migrated one `hack/netbox.sh install`
 * cached), Redis and NetBox under gunicorn, all on free loopback ports in one temporary folder, with a superuser and
 * a v2 API token made for the run and secrets generated per run. `stop` kills everything and removes the folder; an
 * exit hook does the same if the run ends without it; a run killed with SIGKILL is reaped by the next start
 * (reaper.ts). `sharedNetBox()` is one instance per test run (like sharedCluster): suites isolate themselves with
 * fresh prefixes (`admin.freshPrefix()`), not fresh servers.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { NetBoxAdmin } from "./netboxadmin.js";
import { ensureNetBoxInstalled, PG_BIN, type NetBoxInstall } from "./netboxinstall.js";
import { claimPort, claimPorts } from "./ports.js";
import { exitedWithError, killAllChildrenSync, startProcess, type Supervised } from "./process.js";
import { killProcessesMentioning, reapOrphanedPlanes, recordOwnership } from "./reaper.js";
import { eventually } from "./wait.js";

const execFileAsync = promisify(execFile);

export const NETBOX_DIR_PREFIX = "metal3-ipam-netbox-";

const liveDirs = new Set<string>();
process.on("exit", () => {
  killAllChildrenSync();
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
});

export interface NetBoxOptions {
  /** gunicorn workers and threads per worker. Default 2 x 4 (netbox.md: about 500 MB resident). */
  workers?: number;
  threads?: number;
  /** Deadline for each readiness wait. Default 120 s (gunicorn is ready in 8-18 s on a busy 2-core machine). */
  readyTimeoutMs?: number;
}

/**
 * Loopback TCP only (no socket file outside our folder), and no durability: the database dies with the run, so
 * neither fsync nor full-page writes are worth their time.
 */
const PG_SETTINGS = [
  "listen_addresses=127.0.0.1",
  "unix_socket_directories=",
  "fsync=off",
  "synchronous_commit=off",
  "full_page_writes=off",
];

/** The user PostgreSQL runs as: `postgres` when we are root (it refuses root), else ourselves. */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const [uid, gid] = await Promise.all(
    ["-u", "-g"].map(async (flag) => Number((await execFileAsync("id", [flag, "postgres"])).stdout.trim())),
  );
  return { uid: uid ?? 0, gid: gid ?? 0 };
}

/** The environment configuration.py reads (hack/netbox/configuration.py). */
function netBoxEnv(install: NetBoxInstall, dir: string, ports: { pg: number; redis: number }): Record<string, string> {
  return {
    NETBOX_CONFIGURATION: "configuration",
    PYTHONPATH: install.configurationDir,
    NETBOX_ROOT: dir,
    NETBOX_TEST_PG_PORT: String(ports.pg),
    NETBOX_TEST_REDIS_PORT: String(ports.redis),
    NETBOX_TEST_SECRET_KEY: randomBytes(48).toString("base64url"),
    NETBOX_TEST_TOKEN_PEPPER: randomBytes(48).toString("base64url"),
    DJANGO_SETTINGS_MODULE: "netbox.settings",
    PYTHONDONTWRITEBYTECODE: "1",
  };
}

/**
 * Makes the superuser `admin` and a write-enabled v2 token, printed as NetBox shows it once: `nbt_<key>.<secret>`.
 * Through Django directly (the API needs a token to make a token).
 */
const MAKE_TOKEN = `
import django
django.setup()
from users.models import Token, User
user = User.objects.create_user(username="admin", is_superuser=True)
token = Token(user=user, write_enabled=True)
token.save()
print("TOKEN " + token.get_auth_header_prefix().split(" ", 1)[-1] + token.token)
`;

export class NetBoxServer {
  private postgres?: Supervised;
  private redis?: Supervised;
  private gunicorn?: Supervised;
  private stopped = false;
  /** Admin helpers on the run's superuser token: prefixes, ranges, tags, tenants, reservations, tokens. */
  readonly admin: NetBoxAdmin;
  readonly url: string;
  token = "";

  private constructor(
    readonly dir: string,
    private readonly install: NetBoxInstall,
    private readonly ports: { pg: number; redis: number; http: number },
    private readonly env: Record<string, string>,
    private readonly options: NetBoxOptions,
  ) {
    this.url = `http://127.0.0.1:${ports.http}`;
    this.admin = new NetBoxAdmin(this.url, () => this.token);
  }

  /** Starts a NetBox (installing it first when the cache has none). Rejects, after cleaning up, when anything fails. */
  static async start(options: NetBoxOptions = {}): Promise<NetBoxServer> {
    const install = await ensureNetBoxInstalled();
    reapOrphanedPlanes(NETBOX_DIR_PREFIX);
    const dir = mkdtempSync(join(tmpdir(), NETBOX_DIR_PREFIX));
    liveDirs.add(dir);
    const [pg = 0, redis = 0, http = 0] = await claimPorts([0, 0, 0]);
    const ports = { pg, redis, http };
    const server = new NetBoxServer(dir, install, ports, netBoxEnv(install, dir, ports), options);
    try {
      await server.boot();
      return server;
    } catch (err) {
      await server.stop();
      throw err;
    }
  }

  private get readyTimeoutMs(): number {
    return this.options.readyTimeoutMs ?? 120_000;
  }

  private async boot(): Promise<void> {
    const pgUser = await postgresUser();
    // PostgreSQL (another user when we are root) must reach its data folder inside ours.
    chmodSync(this.dir, 0o711);
    const pgdata = join(this.dir, "pgdata");
    await execFileAsync("cp", ["-a", this.install.pgdata, pgdata]);
    if (pgUser) await execFileAsync("chown", ["-R", `${pgUser.uid}:${pgUser.gid}`, pgdata]);
    chmodSync(pgdata, 0o700);
    this.postgres = startProcess(
      "postgres",
      join(PG_BIN, "postgres"),
      [...["-D", pgdata, "-p", String(this.ports.pg)], ...PG_SETTINGS.flatMap((setting) => ["-c", setting])],
      join(this.dir, "postgres.log"),
      {},
      pgUser ?? {},
    );
    // set-proc-title no: the command line keeps naming our folder, which is how the reaper knows the process is ours.
    this.redis = startProcess(
      "redis",
      "redis-server",
      [
        ...["--port", String(this.ports.redis), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        ...["--dir", this.dir, "--set-proc-title", "no"],
      ],
      join(this.dir, "redis.log"),
    );
    this.record();
    await this.waitFor(this.postgres, "PostgreSQL accepts connections", async () => {
      await execFileAsync(join(PG_BIN, "pg_isready"), ["-q", "-h", "127.0.0.1", "-p", String(this.ports.pg)]);
      return true;
    });
    // The token is made while gunicorn starts: both only need the database.
    const token = this.makeToken();
    this.startGunicorn();
    this.token = await token;
    await this.waitForApi();
  }

  private async makeToken(): Promise<string> {
    const { stdout } = await execFileAsync(this.install.python, ["-c", MAKE_TOKEN], {
      env: { ...process.env, ...this.env },
      cwd: this.dir,
      timeout: this.readyTimeoutMs,
    });
    const token = /^TOKEN (nbt_\S+)$/m.exec(stdout)?.[1];
    if (!token) throw new Error("making the NetBox API token printed no token");
    return token;
  }

  private startGunicorn(): void {
    const workers = this.options.workers ?? 2;
    const threads = this.options.threads ?? 4;
    this.gunicorn = startProcess(
      "gunicorn",
      this.install.python,
      // --preload: the master imports NetBox once (about 7 s of CPU) and forks the workers, instead of each worker
      // importing it; --chdir names our folder on the command line (the reaper's proof the process is ours).
      [
        ...["-m", "gunicorn", "--no-control-socket", "--preload", "--bind", `127.0.0.1:${this.ports.http}`],
        ...["--workers", String(workers), "--threads", String(threads), "--chdir", this.dir, "--timeout", "60"],
        "netbox.wsgi",
      ],
      join(this.dir, "gunicorn.log"),
      this.env,
    );
    this.record();
  }

  /** Records the children for the reaper: a run killed with SIGKILL leaves them to the next start. */
  private record(): void {
    const pids = [this.postgres, this.redis, this.gunicorn].filter((p) => p?.isRunning()).map((p) => p?.pid ?? -1);
    recordOwnership(this.dir, pids);
  }

  private async waitFor(proc: Supervised, what: string, probe: () => Promise<boolean>): Promise<void> {
    await Promise.race([exitedWithError(proc), eventually(what, probe, this.readyTimeoutMs, 200)]);
  }

  private async waitForApi(): Promise<void> {
    const gunicorn = this.gunicorn;
    if (!gunicorn) throw new Error("gunicorn is not started");
    await this.waitFor(gunicorn, `NetBox answers on ${this.url}`, async () => {
      const res = await fetch(`${this.url}/api/status/`, {
        headers: { Authorization: `Bearer ${this.token}`, Accept: "application/json" },
        signal: AbortSignal.timeout(5_000),
      });
      await res.arrayBuffer();
      return res.status === 200;
    });
  }

  /**
   * Stops the web server only (PostgreSQL and Redis stay): NetBox is down, connections are refused. Killed, not
   * asked: a graceful stop takes gunicorn about 6 s, and its workers go too (they share the listening socket).
   */
  async stopServer(): Promise<void> {
    await this.killGunicorn();
    this.record();
  }

  private async killGunicorn(): Promise<void> {
    await this.gunicorn?.kill();
    this.gunicorn = undefined;
    await eventually("gunicorn's workers are gone", () => killProcessesMentioning(this.dir, "gunicorn") === 0, 10_000);
  }

  /** Starts the web server again on the same port with the same database and token; resolves once it answers. */
  async startServer(): Promise<void> {
    if (this.gunicorn?.isRunning()) return;
    await claimPort(this.ports.http);
    this.startGunicorn();
    await this.waitForApi();
  }

  /** Kills everything and removes every file. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.killGunicorn();
    await this.redis?.kill();
    // SIGQUIT: PostgreSQL's immediate shutdown; nothing of this database is worth a checkpoint.
    if (this.postgres?.signal("SIGQUIT")) await Promise.race([this.postgres.exited, sleepMs(5_000)]);
    await this.postgres?.kill();
    rmSync(this.dir, { recursive: true, force: true });
    liveDirs.delete(this.dir);
  }

  /** The last lines a component printed, for a failing test's message. */
  tail(component: "postgres" | "redis" | "gunicorn", lines = 20): string {
    return this[component]?.tail(lines) ?? "";
  }
}

const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let shared: Promise<NetBoxServer> | undefined;

/** The run's shared NetBox, started (and installed, the first time on a machine) on first use. */
export async function sharedNetBox(): Promise<NetBoxServer> {
  shared ??= NetBoxServer.start();
  return await shared;
}

/** Stops the shared NetBox, if this run started one. */
export async function stopSharedNetBox(): Promise<void> {
  if (!shared) return;
  const server = await shared.catch(() => undefined);
  shared = undefined;
  await server?.stop();
}

/** A NetBox of the caller's own (a suite that must not share one); `stop()` it. */
export async function startNetBox(options: NetBoxOptions = {}): Promise<NetBoxServer> {
  return await NetBoxServer.start(options);
}
