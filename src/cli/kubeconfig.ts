/**
 * kubectl's connection flags for a client that reads its configuration by itself. kubernetes-fluent-client calls
 * `KubeConfig.loadFromDefault()` on every request, which honours `KUBECONFIG` (several files joined by ':') and the
 * file's current-context, but has no way to be told another context. So:
 * - `--kubeconfig F` replaces `KUBECONFIG` for this process;
 * - `--context C` writes the merged configuration with current-context C to a private temporary file (mode 0600,
 *   removed on exit) and points `KUBECONFIG` at it. Paths inside are made absolute by the loader, so certificates
 *   referenced relative to the original file still resolve.
 * Both happen before the first request.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
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

/**
 * Applies the flags to `env` (normally `process.env`, which the fluent client reads) and returns the connection.
 * @throws CliError (usage) for an unknown context.
 */
export function connect(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Connection {
  if (flags.kubeconfig) env.KUBECONFIG = flags.kubeconfig;
  const kc = load();
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
