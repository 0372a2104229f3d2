/**
 * An exec credential plugin's configuration made ready for client-node's runner, which spawns `command` as written and
 * passes nothing about the cluster: here it gets what client-go gives a plugin.
 * - `command` containing a path separator and relative is resolved against the folder of the kubeconfig file that
 *   names it (client-go's `ResolveLocalPaths`); a bare name is looked up on `PATH` when it runs.
 * - `KUBERNETES_EXEC_INFO` is set, after the plugin's own `env`: an ExecCredential of the plugin's `apiVersion` whose
 *   `spec.interactive` is false (the plugin's standard input is never a terminal) and whose `spec.cluster` is the
 *   cluster's information when `provideClusterInfo` is true: `server`, `tls-server-name`, `insecure-skip-tls-verify`,
 *   `certificate-authority-data` (the CA's bytes, file or data), `proxy-url` (the kubeconfig's), `disable-compression`
 *   and `config` (the cluster's `client.authentication.k8s.io/exec` extension), each left out when unset.
 */
import { dirname, isAbsolute, join, sep } from "node:path";

/** The variable client-go passes the ExecCredential in. */
export const EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO";
/** The cluster extension whose value a plugin gets as `spec.cluster.config`. */
const EXEC_EXTENSION = "client.authentication.k8s.io/exec";

/** What a plugin may learn about its cluster. */
export interface ExecCluster {
  /** The server, without user information. */
  server: string;
  /** The cluster entry of the kubeconfig (`tls-server-name`, `proxy-url`, `extensions`, …). */
  body: Record<string, unknown>;
  /** The CA's bytes (from `certificate-authority` or `-data`), if any. */
  ca: Buffer | undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** `spec.cluster` of the ExecCredential, as client-go's `ConfigToExecCluster` fills it. */
function clusterInfo(cluster: ExecCluster): Record<string, unknown> {
  const { body } = cluster;
  const extension = Array.isArray(body.extensions)
    ? (body.extensions as unknown[]).find((e) => isRecord(e) && e.name === EXEC_EXTENSION)
    : undefined;
  const info: Record<string, unknown> = { server: cluster.server };
  if (typeof body["tls-server-name"] === "string" && body["tls-server-name"])
    info["tls-server-name"] = body["tls-server-name"];
  if (body["insecure-skip-tls-verify"] === true) info["insecure-skip-tls-verify"] = true;
  if (cluster.ca && cluster.ca.length > 0) info["certificate-authority-data"] = cluster.ca.toString("base64");
  if (typeof body["proxy-url"] === "string" && body["proxy-url"]) info["proxy-url"] = body["proxy-url"];
  if (body["disable-compression"] === true) info["disable-compression"] = true;
  if (isRecord(extension) && extension.extension !== undefined) info.config = extension.extension;
  return info;
}

/** `exec` of the user entry read from `userFile`, as client-node should run it for `cluster`. */
export function execForClientNode(
  exec: Record<string, unknown>,
  userFile: string,
  cluster: ExecCluster,
): Record<string, unknown> {
  const { command } = exec;
  const resolved =
    typeof command === "string" && command.includes(sep) && !isAbsolute(command)
      ? join(dirname(userFile), command)
      : command;
  const credential = {
    apiVersion: exec.apiVersion,
    kind: "ExecCredential",
    spec: { interactive: false, ...(exec.provideClusterInfo === true ? { cluster: clusterInfo(cluster) } : {}) },
  };
  const env = Array.isArray(exec.env) ? (exec.env as unknown[]) : [];
  return { ...exec, command: resolved, env: [...env, { name: EXEC_INFO_ENV, value: JSON.stringify(credential) }] };
}
