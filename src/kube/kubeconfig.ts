/**
 * Loads how the controller reaches the API server, as client-go and kubectl do: `--kubeconfig`, else `$KUBECONFIG`
 * (several files merged), else `~/.kube/config`, else the pod's ServiceAccount (in-cluster). Everything a kubeconfig
 * may say is either honoured here or refused with the file and key named (kubeconfig-file.ts):
 * - read here: server (its path kept, its user information as basic auth), CA (file or data), `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url`, client
 *   certificates (file or data), bearer tokens and token files, basic auth, impersonation (`as`, `as-uid`,
 *   `as-groups`, `as-user-extra`); files are read again when they change (certificates rotated in place);
 * - credentials of `exec` plugins and `auth-provider`s come from client-node's KubeConfig, loaded only then (it costs
 *   much resident memory), an exec plugin configured as client-go runs it (exec.ts); everything
 *   else about such a user is still read here.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { createSecureContext } from "node:tls";
import { parseServer, type AccessOptions, type ClusterAccess } from "./access.js";
import { execForClientNode } from "./exec.js";
import { WatchedFile } from "./files.js";
import { KubeconfigError, readCurrentContext, where, type CurrentContext, type Entry } from "./kubeconfig-file.js";
import { proxyFor } from "./proxy.js";

const SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";
/** How long a token read from a file is used before it is read again (projected tokens rotate hourly). */
const TOKEN_REREAD_MS = 60_000;

/** Bytes from `<key>-data` (base64) or from the file `<key>` (relative to the kubeconfig that named it). */
type Material = () => Buffer | undefined;

function material(entry: Entry, list: string, key: string): Material {
  const data = entry.body[`${key}-data`];
  if (typeof data === "string" && data) {
    const bytes = Buffer.from(data, "base64");
    return () => bytes;
  }
  const path = entry.body[key];
  if (typeof path !== "string" || !path) return () => undefined;
  const file = isAbsolute(path) ? path : join(dirname(entry.file), path);
  try {
    const watched = new WatchedFile(file);
    return () => watched.read();
  } catch (err) {
    throw new KubeconfigError(
      `${where(list, entry)}.${key}: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * A client certificate and its key, read again when either file changes. A pair caught half-rotated (the new
 * certificate, the old key) does not match: the last matching pair is kept until the other file follows.
 */
function certificatePair(cert: Material, key: Material): () => { cert?: Buffer; key?: Buffer } {
  let pair = { cert: cert(), key: key() };
  return () => {
    const next = { cert: cert(), key: key() };
    if (next.cert === pair.cert && next.key === pair.key) return pair;
    try {
      if (next.cert && next.key) createSecureContext({ cert: next.cert, key: next.key });
      pair = next;
    } catch {
      // mismatched halves of a rotation: keep the last pair
    }
    return pair;
  };
}

/** A token from a file, re-read at most every {@link TOKEN_REREAD_MS}. */
function tokenFile(path: string): () => string {
  let cached = { token: "", at: 0 };
  return () => {
    if (Date.now() - cached.at > TOKEN_REREAD_MS) cached = { token: readFileSync(path, "utf8").trim(), at: Date.now() };
    return cached.token;
  };
}

/** Impersonation headers of a user entry (`as`, `as-uid`, `as-groups`, `as-user-extra`). */
function impersonation(user: Record<string, unknown>): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  if (typeof user.as === "string") headers["Impersonate-User"] = user.as;
  if (typeof user["as-uid"] === "string") headers["Impersonate-Uid"] = user["as-uid"];
  if (Array.isArray(user["as-groups"])) headers["Impersonate-Group"] = user["as-groups"] as string[];
  const extra = (user["as-user-extra"] ?? {}) as Record<string, string[]>;
  for (const [key, values] of Object.entries(extra)) headers[`Impersonate-Extra-${encodeURIComponent(key)}`] = values;
  return headers;
}

/** The pod's ServiceAccount; undefined outside a pod. */
function inCluster(): ClusterAccess | undefined {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (!host || !port || !existsSync(join(SERVICE_ACCOUNT, "token"))) return undefined;
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const ca = new WatchedFile(join(SERVICE_ACCOUNT, "ca.crt"));
  const token = tokenFile(join(SERVICE_ACCOUNT, "token"));
  return {
    server,
    proxy: proxyFor(server),
    requestOptions: () => Promise.resolve({ ca: ca.read(), headers: { Authorization: `Bearer ${token()}` } }),
  };
}

/**
 * Credentials that need client-node (exec plugins, auth providers): its KubeConfig for just this context, the exec
 * plugin given what client-go gives it (exec.ts).
 */
async function pluginCredentials(
  current: CurrentContext,
  server: string,
  ca: Buffer | undefined,
): Promise<() => Promise<Partial<AccessOptions>>> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  const { cluster, user, context } = current;
  const exec = user.body.exec as Record<string, unknown> | undefined;
  kc.loadFromString(
    JSON.stringify({
      clusters: [{ name: cluster.name, cluster: { server } }],
      users: [
        {
          name: user.name,
          user: {
            exec: exec && execForClientNode(exec, user.file, { server, body: cluster.body, ca }),
            "auth-provider": user.body["auth-provider"],
          },
        },
      ],
      contexts: [{ name: context.name, context: { cluster: cluster.name, user: user.name } }],
      "current-context": context.name,
    }),
  );
  return async () => {
    const opts: { headers?: Record<string, unknown>; cert?: unknown; key?: unknown } = {};
    await kc.applyToHTTPSOptions(opts);
    const authorization = opts.headers?.Authorization;
    const headers: Record<string, string> = typeof authorization === "string" ? { Authorization: authorization } : {};
    return {
      headers,
      // An exec plugin may answer with a client certificate instead of a token.
      ...(opts.cert ? { cert: opts.cert as Buffer } : {}),
      ...(opts.key ? { key: opts.key as Buffer } : {}),
    };
  };
}

/** The access of the current context of `files`. */
async function fromFiles(files: string[]): Promise<ClusterAccess> {
  const current = await readCurrentContext(files);
  const { cluster, user } = current;
  const c = cluster.body;
  const u = user.body;
  // Checked by readCurrentContext: a URL, user information only where no other credential is set.
  const { server, basic: fromUrl } = parseServer(c.server as string);
  let proxy: string | undefined;
  try {
    proxy = proxyFor(server, c["proxy-url"] as string | undefined);
  } catch (err) {
    throw new KubeconfigError(`${where("clusters", cluster)}.proxy-url: ${err instanceof Error ? err.message : ""}`);
  }
  const ca = material(cluster, "clusters", "certificate-authority");
  const pair = certificatePair(material(user, "users", "client-certificate"), material(user, "users", "client-key"));
  const tls = {
    ...(c["insecure-skip-tls-verify"] === true ? { rejectUnauthorized: false } : {}),
    ...(typeof c["tls-server-name"] === "string" ? { servername: c["tls-server-name"] } : {}),
  };
  const base = dirname(user.file);
  const token =
    typeof u.token === "string" && u.token
      ? () => u.token as string
      : typeof u.tokenFile === "string"
        ? tokenFile(isAbsolute(u.tokenFile) ? u.tokenFile : join(base, u.tokenFile))
        : undefined;
  const basic =
    u.username !== undefined || u.password !== undefined
      ? `Basic ${Buffer.from(`${(u.username as string) ?? ""}:${(u.password as string) ?? ""}`).toString("base64")}`
      : undefined;
  const plugin =
    u.exec !== undefined || u["auth-provider"] !== undefined
      ? await pluginCredentials(current, server, ca())
      : undefined;
  const impersonate = impersonation(u);
  return {
    server,
    proxy,
    requestOptions: async () => {
      const headers: Record<string, string | string[]> = { ...impersonate };
      const bearer = token?.();
      if (bearer) headers.Authorization = `Bearer ${bearer}`;
      else if (basic) headers.Authorization = basic;
      const fromPlugin = plugin ? await plugin() : {};
      const all = { ...headers, ...fromPlugin.headers };
      if (fromUrl && !all.Authorization) all.Authorization = fromUrl;
      return { ...tls, ca: ca(), ...pair(), ...fromPlugin, headers: all };
    },
  };
}

/**
 * How to reach the API server: `explicitPath` (the `--kubeconfig` flag), else `$KUBECONFIG` (files joined by the
 * path delimiter, merged), else `~/.kube/config`, else in-cluster. Throws with the reason (file and key) when none is
 * usable.
 */
export async function loadClusterAccess(explicitPath?: string): Promise<ClusterAccess> {
  const fromEnv = (process.env.KUBECONFIG ?? "").split(delimiter).filter(Boolean);
  const home = join(homedir(), ".kube", "config");
  // client-go skips files of $KUBECONFIG that do not exist; an explicit --kubeconfig must exist.
  const files = explicitPath
    ? [explicitPath]
    : fromEnv.length > 0
      ? fromEnv.filter((f) => existsSync(f))
      : existsSync(home)
        ? [home]
        : [];
  if (explicitPath && !existsSync(explicitPath)) throw new KubeconfigError(`kubeconfig ${explicitPath}: no such file`);
  if (files.length === 0) {
    const pod = inCluster();
    if (pod) return pod;
    throw new Error("no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a pod");
  }
  return await fromFiles(files);
}
