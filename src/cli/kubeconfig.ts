/**
 * kubectl's connection flags for a client that reads its configuration by itself. kubernetes-fluent-client calls
 * `KubeConfig.loadFromDefault()` on every request, which honours `KUBECONFIG` (several files joined by ':') and the
 * file's current-context, but has no way to be told another context. So:
 * - `--kubeconfig F` replaces `KUBECONFIG` for this process;
 * - `--context C` writes the merged configuration with current-context C to a private temporary file (mode 0600,
 *   removed on exit) and points `KUBECONFIG` at it. Paths inside are made absolute by the loader, so certificates
 *   referenced relative to the original file still resolve.
 * Both happen before the first request. Before either, the chosen context is checked as the controller checks its
 * own (src/kube/kubeconfig-file.ts: an unknown key, a wrong type, a combination kubectl refuses is an error naming
 * the file and key), and what the fluent client would drop is refused: it takes only the bearer token and the TLS
 * material from client-node, so impersonation would read as the broader identity underneath, a `proxy-url` would be
 * bypassed and basic auth would be sent as a bearer token.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { KubeconfigError, readCurrentContext, where } from "../kube/kubeconfig-file.js";
import { CliError, ExitCode } from "./errors.js";

/** Connection flags as kubectl spells them. */
export interface ConnectionFlags {
  kubeconfig?: string;
  context?: string;
}

/** What the rest of the CLI needs to know about the chosen context. */
export interface Connection {
  /** The context's namespace, or "default" (kubectl's rule for a missing -n). */
  defaultNamespace: string;
  /** API server URL, for error messages. */
  server: string;
  context: string;
}

function load(): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromDefault();
  } catch (err) {
    throw new CliError(`cannot read the kubeconfig: ${err instanceof Error ? err.message : String(err)}`);
  }
  return kc;
}

/** Writes `kc` to a private temporary file removed when the process exits; returns its path. */
function writePrivate(kc: KubeConfig): string {
  const dir = mkdtempSync(join(tmpdir(), "kubectl-ipam-"));
  const path = join(dir, "kubeconfig");
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return path;
}

/** Kubeconfig keys kubernetes-fluent-client drops (user, cluster). */
const DROPPED_USER_KEYS = ["as", "as-uid", "as-groups", "as-user-extra", "username", "password"];
const DROPPED_CLUSTER_KEYS = ["proxy-url"];

/** Checks the context the CLI will use; throws CliError naming the file and key of what it would not honour. */
async function checkContext(env: NodeJS.ProcessEnv, context: string | undefined): Promise<void> {
  const home = join(homedir(), ".kube", "config");
  const listed = (env.KUBECONFIG ?? "").split(delimiter).filter(Boolean);
  const files = (listed.length > 0 ? listed : [home]).filter((f) => existsSync(f));
  if (files.length === 0) return; // load() reports the missing kubeconfig
  try {
    const { user, cluster } = await readCurrentContext(files, context);
    const dropped = (entry: typeof user, keys: string[]): string[] => keys.filter((k) => entry.body[k] !== undefined);
    const fromUser = dropped(user, DROPPED_USER_KEYS);
    if (fromUser.length > 0)
      throw new CliError(
        `${where("users", user)}: kubectl ipam cannot send ${fromUser.join(", ")} (its client takes only a bearer ` +
          `token or a client certificate); refusing rather than read as another identity`,
      );
    const fromCluster = dropped(cluster, DROPPED_CLUSTER_KEYS);
    if (fromCluster.length > 0)
      throw new CliError(
        `${where("clusters", cluster)}: kubectl ipam cannot use ${fromCluster.join(", ")}; refusing rather than go ` +
          `around it`,
      );
  } catch (err) {
    if (err instanceof KubeconfigError) throw new CliError(err.message);
    throw err;
  }
}

/**
 * Applies the flags to `env` (normally `process.env`, which the fluent client reads) and returns the connection.
 * @throws CliError (usage) for an unknown context; CliError for a kubeconfig it would not honour.
 */
export async function connect(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Promise<Connection> {
  if (flags.kubeconfig) env.KUBECONFIG = flags.kubeconfig;
  const kc = load();
  if (!flags.context || kc.getContextObject(flags.context)) await checkContext(env, flags.context);
  if (flags.context) {
    if (!kc.getContextObject(flags.context)) {
      const known =
        kc
          .getContexts()
          .map((c) => c.name)
          .join(", ") || "none";
      throw new CliError(`context "${flags.context}" not found in the kubeconfig (known: ${known})`, ExitCode.usage);
    }
    kc.setCurrentContext(flags.context);
    env.KUBECONFIG = writePrivate(kc);
  }
  const context = kc.getContextObject(kc.getCurrentContext());
  const cluster = kc.getCurrentCluster();
  if (!cluster)
    throw new CliError("the kubeconfig has no current context with a cluster: pass --kubeconfig or --context");
  return { defaultNamespace: context?.namespace || "default", server: cluster.server, context: kc.getCurrentContext() };
}
