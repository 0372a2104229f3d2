/**
 * Loads how the controller reaches the API server, as client-go and kubectl do: `--kubeconfig`, else `$KUBECONFIG`,
 * else `~/.kube/config`, else the pod's ServiceAccount (in-cluster). The common cases (in-cluster, client
 * certificates, bearer tokens and token files, CA files or data) are read here, so the controller never loads
 * client-node (about 80 MiB of resident memory, issue 13). Anything else a kubeconfig may ask for (exec plugins, auth
 * providers, several files merged through `$KUBECONFIG`) is handed to client-node's KubeConfig, loaded on demand.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { accessOf, type AccessOptions, type ClusterAccess } from "./access.js";

const SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";
/** How long a token read from a file is used before it is read again (projected tokens rotate hourly). */
const TOKEN_REREAD_MS = 60_000;

interface Named<T> {
  name: string;
  [key: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}

interface KubeconfigFile {
  "current-context"?: string;
  clusters?: Named<Record<string, unknown>>[];
  users?: Named<Record<string, unknown>>[];
  contexts?: Named<Record<string, unknown>>[];
}

/** Reads `path`, or `data` (base64) when set: the kubeconfig's two spellings of one value. */
function fileOrData(data: unknown, path: unknown, base: string): Buffer | undefined {
  if (typeof data === "string" && data) return Buffer.from(data, "base64");
  if (typeof path === "string" && path) return readFileSync(isAbsolute(path) ? path : join(base, path));
  return undefined;
}

/** A token from a file, re-read at most every {@link TOKEN_REREAD_MS}. */
function tokenFile(path: string): () => string {
  let cached = { token: "", at: 0 };
  return () => {
    if (Date.now() - cached.at > TOKEN_REREAD_MS) cached = { token: readFileSync(path, "utf8").trim(), at: Date.now() };
    return cached.token;
  };
}

function staticAccess(
  server: string,
  tls: Omit<AccessOptions, "headers">,
  token: (() => string) | undefined,
  basic?: string,
): ClusterAccess {
  return {
    server: server.replace(/\/+$/, ""),
    requestOptions: () => {
      const headers: Record<string, string> = {};
      const bearer = token?.();
      if (bearer) headers.Authorization = `Bearer ${bearer}`;
      else if (basic) headers.Authorization = `Basic ${basic}`;
      return Promise.resolve({ ...tls, headers });
    },
  };
}

/** The pod's ServiceAccount; undefined outside a pod. */
function inCluster(): ClusterAccess | undefined {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (!host || !port || !existsSync(join(SERVICE_ACCOUNT, "token"))) return undefined;
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return staticAccess(
    server,
    { ca: readFileSync(join(SERVICE_ACCOUNT, "ca.crt")) },
    tokenFile(join(SERVICE_ACCOUNT, "token")),
  );
}

const entry = (
  list: Named<Record<string, unknown>>[] | undefined,
  name: unknown,
  field: "cluster" | "user" | "context",
): Record<string, unknown> | undefined => list?.find((e) => e.name === name)?.[field];

/**
 * The access of a kubeconfig file's current context; undefined when it needs client-node (exec, auth providers).
 * js-yaml is imported here, not at the top: a pod authenticates in-cluster and never needs a YAML parser.
 */
async function fromFile(path: string): Promise<ClusterAccess | undefined> {
  const { load } = await import("js-yaml");
  const config = (load(readFileSync(path, "utf8")) ?? {}) as KubeconfigFile;
  const context = entry(config.contexts, config["current-context"], "context");
  const cluster = entry(config.clusters, context?.cluster, "cluster");
  const user = entry(config.users, context?.user, "user") ?? {};
  if (!context || !cluster || typeof cluster.server !== "string")
    throw new Error(`${path}: no current context with a cluster and a server`);
  if (user.exec !== undefined || user["auth-provider"] !== undefined) return undefined;
  const base = dirname(path);
  const tls: Omit<AccessOptions, "headers"> = {
    ca: fileOrData(cluster["certificate-authority-data"], cluster["certificate-authority"], base),
    cert: fileOrData(user["client-certificate-data"], user["client-certificate"], base),
    key: fileOrData(user["client-key-data"], user["client-key"], base),
    ...(cluster["insecure-skip-tls-verify"] === true ? { rejectUnauthorized: false } : {}),
    ...(typeof cluster["tls-server-name"] === "string" ? { servername: cluster["tls-server-name"] } : {}),
  };
  const token =
    typeof user.token === "string" && user.token
      ? () => user.token as string
      : typeof user.tokenFile === "string"
        ? tokenFile(isAbsolute(user.tokenFile) ? user.tokenFile : join(base, user.tokenFile))
        : undefined;
  const basic =
    typeof user.username === "string"
      ? Buffer.from(`${user.username}:${typeof user.password === "string" ? user.password : ""}`).toString("base64")
      : undefined;
  return staticAccess(cluster.server, tls, token, basic);
}

/** client-node's KubeConfig for what this file does not read itself; imported only then. */
async function throughClientNode(path: string | undefined): Promise<ClusterAccess> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return accessOf(kc);
}

/**
 * How to reach the API server: `explicitPath` (the `--kubeconfig` flag), else `$KUBECONFIG`, else `~/.kube/config`,
 * else in-cluster. Throws with the reason when none is usable.
 */
export async function loadClusterAccess(explicitPath?: string): Promise<ClusterAccess> {
  const fromEnv = process.env.KUBECONFIG;
  if (!explicitPath && fromEnv?.includes(":")) return await throughClientNode(undefined);
  const home = join(homedir(), ".kube", "config");
  const path = explicitPath || fromEnv || (existsSync(home) ? home : undefined);
  if (!path) {
    const pod = inCluster();
    if (pod) return pod;
    throw new Error("no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a pod");
  }
  return (await fromFile(path)) ?? (await throughClientNode(path));
}
