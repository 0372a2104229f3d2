/**
 * The controller as a child process, as it runs in a pod: the one function that starts it, for the e2e suites
 * (resilience, leader election, monitoring), the bench and the soak. Each caller chooses the build, the credentials
 * (the plane's admin kubeconfig or a ServiceAccount's, see serviceAccountKubeconfigFile), the log level and extra
 * flags; the process is supervised (process.ts), so a dying run never leaves it behind.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./cluster.js";
import { startProcess, TSX_LOADER, type Supervised } from "./process.js";
import { eventually } from "./wait.js";

/** The compiled controller, what the image runs (`npm run build`; the bench and soak scripts build it first). */
export const COMPILED_MAIN = join(repoRoot, "dist", "src", "main.js");
/** The controller's source, run through the tsx loader (no build step). */
export const SOURCE_MAIN = join(repoRoot, "src", "main.ts");
const MANAGER_MANIFEST = join(repoRoot, "config", "manager", "manager.yaml");
const DOCKERFILE = join(repoRoot, "Dockerfile");

/**
 * The Node flags of the image's ENTRYPOINT (`["node", <flags>, "dist/src/main.js"]` in the Dockerfile): V8 flags that
 * NODE_OPTIONS refuses (such as --optimize-for-size) live there. Throws when the ENTRYPOINT is not of that shape, so
 * a changed Dockerfile cannot silently drop them from every measurement.
 */
export function imageNodeFlags(dockerfile = readFileSync(DOCKERFILE, "utf8")): string[] {
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1];
  const argv: unknown = line === undefined ? undefined : JSON.parse(line);
  if (!Array.isArray(argv) || argv[0] !== "node" || argv.at(-1) !== "dist/src/main.js")
    throw new Error(`the Dockerfile's ENTRYPOINT is not ["node", ...flags, "dist/src/main.js"]: ${line ?? "none"}`);
  return argv.slice(1, -1).map(String);
}

/**
 * The environment the image sets for the controller (`ENV` lines of the Dockerfile's last stage, `KEY=value` form),
 * such as the allocator settings of the C library, so a compiled child runs with them as a pod does.
 */
export function imageEnv(dockerfile = readFileSync(DOCKERFILE, "utf8")): Record<string, string> {
  const lastStage = dockerfile.split(/^FROM\s/m).at(-1) ?? "";
  const env: Record<string, string> = {};
  for (const [, pairs] of lastStage.matchAll(/^ENV\s+(.+)$/gm))
    for (const pair of (pairs ?? "").trim().split(/\s+/)) {
      const m = /^(\w+)=(\S*)$/.exec(pair);
      if (!m?.[1]) throw new Error(`the Dockerfile's ENV is not of the KEY=value form: ${pairs}`);
      env[m[1]] = m[2] ?? "";
    }
  return env;
}

/**
 * The Node flags the Deployment gives the controller (`NODE_OPTIONS` in config/manager/manager.yaml), so a compiled
 * child runs with the heap settings that ship, not Node's defaults.
 */
export function deploymentNodeFlags(manifest = readFileSync(MANAGER_MANIFEST, "utf8")): string[] {
  const value = /- name: NODE_OPTIONS\s+value: "?([^"\n]+)"?/.exec(manifest)?.[1];
  return value ? value.trim().split(/\s+/) : [];
}

/** Options of {@link startControllerProcess}. */
export interface ControllerProcessOptions {
  /** The kubeconfig file it authenticates with: the plane's admin one or a ServiceAccount's. */
  kubeconfigPath: string;
  /** Folder of the log file (created if missing). */
  logDir: string;
  /** Log file name inside `logDir`. Default `controller-<our pid>-<n>.log`. */
  logName?: string;
  /** `--namespace`; all namespaces when undefined or empty. */
  namespace?: string;
  /**
   * `compiled`: `dist/src/main.js` with the image's ENTRYPOINT flags and ENV and the Deployment's NODE_OPTIONS, as a
   * pod runs it (throws when not built).
   * `source` (default): `src/main.ts` through tsx on Node's defaults, no build step needed.
   */
  build?: "compiled" | "source";
  /** `--log-level`. Default `info`, which waitSynced needs ("Caches synced" is logged at info). */
  logLevel?: string;
  /** `--diagnostics-address` (/metrics). Default `0` (off): fixed ports would collide between runs. */
  diagnosticsAddress?: string;
  /**
   * `--insecure-diagnostics`: /metrics over plain HTTP without authentication, for suites, the bench and the soak that
   * read the controller's own figures (`scrapeMetrics`) rather than test the endpoint. Default false (HTTPS, tokens).
   */
  insecureDiagnostics?: boolean;
  /** `--health-probe-bind-address`. Default `0` (off), for the same reason. */
  healthProbeBindAddress?: string;
  /** Node flags added after the build's own (e.g. `--cpu-prof`). */
  nodeFlags?: readonly string[];
  /** `--serve-incluster-pools`, which config/manager's Deployment passes. Default true. */
  serveInClusterPools?: boolean;
  /**
   * `--netbox-allow-http`, which config/manager's Deployment never passes: the test kit's NetBox is http on loopback.
   * Default true.
   */
  netBoxAllowHttp?: boolean;
  /** Controller flags added after the ones above (leader election, webhooks, …). */
  flags?: readonly string[];
  /** Name in error messages. Default `controller`. */
  name?: string;
}

/** A controller child process: supervised, with its log file and readiness helpers. */
export interface ControllerProcess extends Supervised {
  readonly logFile: string;
  /** Resolves once the controller logged that its caches are synced; rejects if it exits first or after `timeoutMs`. */
  waitSynced(timeoutMs?: number): Promise<void>;
  /** Resolves with `work`, or rejects with the controller's last output if it exits first. */
  guard<T>(work: Promise<T>): Promise<T>;
  /** SIGTERM (drains in-flight reconciles), SIGKILL after `graceMs` (default 10 s). */
  stop(graceMs?: number): Promise<void>;
}

let counter = 0;

/** `node [flags] <main>` for the chosen build. */
function entryArgs(build: "compiled" | "source", nodeFlags: readonly string[]): string[] {
  if (build === "source") return ["--import", TSX_LOADER, ...nodeFlags, SOURCE_MAIN];
  if (!existsSync(COMPILED_MAIN))
    throw new Error(`${COMPILED_MAIN} is missing: build it first (npm run build), as npm run bench does`);
  return [...imageNodeFlags(), ...deploymentNodeFlags(), ...nodeFlags, COMPILED_MAIN];
}

/** The controller's own flags. */
function controllerArgs(o: ControllerProcessOptions): string[] {
  return [
    "--kubeconfig",
    o.kubeconfigPath,
    ...(o.namespace ? ["--namespace", o.namespace] : []),
    "--log-level",
    o.logLevel ?? "info",
    "--diagnostics-address",
    o.diagnosticsAddress ?? "0",
    ...(o.insecureDiagnostics ? ["--insecure-diagnostics"] : []),
    "--health-probe-bind-address",
    o.healthProbeBindAddress ?? "0",
    ...(o.serveInClusterPools === false ? [] : ["--serve-incluster-pools"]),
    ...(o.netBoxAllowHttp === false ? [] : ["--netbox-allow-http"]),
    ...(o.flags ?? []),
  ];
}

/** Starts the controller as a child process of this Node binary; see {@link ControllerProcessOptions}. */
export function startControllerProcess(options: ControllerProcessOptions): ControllerProcess {
  mkdirSync(options.logDir, { recursive: true });
  const logFile = join(options.logDir, options.logName ?? `controller-${process.pid}-${++counter}.log`);
  const args = [...entryArgs(options.build ?? "source", options.nodeFlags ?? []), ...controllerArgs(options)];
  const env = options.build === "compiled" ? imageEnv() : {};
  const proc = startProcess(options.name ?? "controller", process.execPath, args, logFile, env);
  let stopping = false;
  const crashed = (): Promise<never> => {
    const crash = proc.exited.then((how) => {
      throw new Error(
        `${proc.name} exited (${how})${stopping ? " while stopping" : ""}; log ${logFile}; last output:\n${proc.tail()}`,
      );
    });
    // The losing side of a race must not become an unhandled rejection when the process stops later.
    crash.catch(() => undefined);
    return crash;
  };
  return {
    ...proc,
    logFile,
    async waitSynced(timeoutMs = 60_000) {
      const synced = eventually(
        "the controller to sync its caches",
        () => logMentions(logFile, "Caches synced"),
        timeoutMs,
      );
      await Promise.race([synced, crashed()]);
    },
    guard: async (work) => await Promise.race([work, crashed()]),
    async stop(graceMs = 10_000) {
      stopping = true;
      await proc.stop(graceMs);
    },
  };
}

/** Whether the log file mentions `text` yet (false while it does not exist). */
function logMentions(logFile: string, text: string): boolean {
  try {
    return readFileSync(logFile, "utf8").includes(text);
  } catch {
    return false;
  }
}
