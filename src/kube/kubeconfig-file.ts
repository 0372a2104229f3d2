/**
 * Reads kubeconfig files as client-go merges them (several files through `$KUBECONFIG`: the first file to name an
 * entry or a current context wins) and checks the current context against what this controller honours. The loader
 * fails closed: a key it does not know, a value of the wrong type, or a combination kubectl refuses is an error naming
 * the file, the entry and the key, never silently ignored (an ignored `as:` would have the controller act as the
 * broader identity underneath).
 */
import { readFileSync } from "node:fs";

/** One named entry of a kubeconfig, with the file it came from (its relative paths are relative to that file). */
export interface Entry {
  name: string;
  body: Record<string, unknown>;
  file: string;
}

/** The current context of the merged files. */
export interface CurrentContext {
  context: Entry;
  cluster: Entry;
  user: Entry;
}

/** Keys this controller honours in each entry; anything else is refused. */
export const CLUSTER_KEYS = [
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "tls-server-name",
  "proxy-url",
  // Honoured by construction: the controller never asks for compressed answers.
  "disable-compression",
  // Informational by kubeconfig's definition (for tools that extend it); client-go reads nothing from them either.
  "extensions",
] as const;
export const USER_KEYS = [
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
  "token",
  "tokenFile",
  "username",
  "password",
  "as",
  "as-uid",
  "as-groups",
  "as-user-extra",
  "exec",
  "auth-provider",
  "extensions",
] as const;
export const CONTEXT_KEYS = ["cluster", "user", "namespace", "extensions"] as const;
const TOP_KEYS = [
  "apiVersion",
  "kind",
  "clusters",
  "users",
  "contexts",
  "current-context",
  "preferences",
  "extensions",
];

/** An error about one place of one kubeconfig file. */
export class KubeconfigError extends Error {
  override name = "KubeconfigError";
}

/** `users[name="u"]`: how messages name an entry. */
export const where = (list: string, entry: Entry): string => `kubeconfig ${entry.file}: ${list}[name="${entry.name}"]`;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * An entry's keys as client-go reads them: a key set to null (`key:` in YAML) is unset, and a `name` equal to the
 * entry's own (client-node's exportConfig writes one into every context) says nothing new.
 */
function normalised(body: Record<string, unknown>, name: string): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(body).filter(
      ([key, value]) => value !== null && value !== undefined && !(key === "name" && value === name),
    ),
  );
}

/** The three lists of one file, checked for shape. */
interface ParsedFile {
  currentContext: string | undefined;
  lists: Record<"clusters" | "users" | "contexts", Entry[]>;
}

async function parseFile(file: string): Promise<ParsedFile> {
  const { load } = await import("js-yaml");
  let doc: unknown;
  try {
    doc = load(readFileSync(file, "utf8")) ?? {};
  } catch (err) {
    const reason = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw new KubeconfigError(`kubeconfig ${file}: cannot read it: ${reason}`);
  }
  if (!isObject(doc)) throw new KubeconfigError(`kubeconfig ${file}: not a kubeconfig (a YAML mapping is expected)`);
  for (const key of Object.keys(doc))
    if (!TOP_KEYS.includes(key)) throw new KubeconfigError(`kubeconfig ${file}: unknown top-level key "${key}"`);
  const current = doc["current-context"];
  if (current !== undefined && current !== null && typeof current !== "string")
    throw new KubeconfigError(`kubeconfig ${file}: current-context must be a string`);
  const list = (name: "clusters" | "users" | "contexts", field: string): Entry[] => {
    const raw = doc[name] ?? [];
    if (!Array.isArray(raw)) throw new KubeconfigError(`kubeconfig ${file}: ${name} must be a list`);
    return raw.map((item: unknown, i) => {
      if (!isObject(item) || typeof item.name !== "string")
        throw new KubeconfigError(`kubeconfig ${file}: ${name}[${i}] needs a name`);
      const raw = item[field] ?? {};
      if (!isObject(raw))
        throw new KubeconfigError(`kubeconfig ${file}: ${name}[name="${item.name}"].${field} must be a mapping`);
      return { name: item.name, body: normalised(raw, item.name), file };
    });
  };
  return {
    currentContext: current || undefined,
    lists: {
      clusters: list("clusters", "cluster"),
      users: list("users", "user"),
      contexts: list("contexts", "context"),
    },
  };
}

/**
 * The current context of `files` merged in order (or the context `contextName`, kubectl's `--context`), each entry
 * checked. Throws {@link KubeconfigError} naming the file and key of the first problem.
 */
export async function readCurrentContext(files: string[], contextName?: string): Promise<CurrentContext> {
  const parsed = await Promise.all(files.map(parseFile));
  const first = (list: "clusters" | "users" | "contexts", name: unknown): Entry | undefined => {
    for (const file of parsed) {
      const found = file.lists[list].find((e) => e.name === name);
      if (found) return found;
    }
    return undefined;
  };
  const currentName = contextName || parsed.find((f) => f.currentContext)?.currentContext;
  const named = files.join(", ");
  if (!currentName) throw new KubeconfigError(`kubeconfig ${named}: no current-context`);
  const context = first("contexts", currentName);
  if (!context) throw new KubeconfigError(`kubeconfig ${named}: current-context "${currentName}" is not in contexts`);
  checkKeys("contexts", context, CONTEXT_KEYS);
  const cluster = first("clusters", context.body.cluster);
  if (!cluster)
    throw new KubeconfigError(
      `${where("contexts", context)}: cluster ${JSON.stringify(context.body.cluster)} is not in clusters`,
    );
  // A context without a user is anonymous (kubectl allows it).
  const user = context.body.user === undefined ? undefined : first("users", context.body.user);
  if (context.body.user !== undefined && !user)
    throw new KubeconfigError(
      `${where("contexts", context)}: user ${JSON.stringify(context.body.user)} is not in users`,
    );
  checkKeys("clusters", cluster, CLUSTER_KEYS);
  const userEntry = user ?? { name: "", body: {}, file: context.file };
  checkKeys("users", userEntry, USER_KEYS);
  checkCombinations(cluster, userEntry);
  return { context, cluster, user: userEntry };
}

function checkKeys(list: string, entry: Entry, known: readonly string[]): void {
  for (const key of Object.keys(entry.body))
    if (!known.includes(key))
      throw new KubeconfigError(
        `${where(list, entry)}: key "${key}" is not understood by this controller; it refuses to start rather than ` +
          `ignore it (understood: ${known.join(", ")})`,
      );
  for (const [key, value] of Object.entries(entry.body)) checkType(list, entry, key, value);
}

const STRING_KEYS = new Set([
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "tls-server-name",
  "proxy-url",
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
  "token",
  "tokenFile",
  "username",
  "password",
  "as",
  "as-uid",
  "cluster",
  "user",
  "namespace",
]);

function checkType(list: string, entry: Entry, key: string, value: unknown): void {
  const fail = (expected: string): never => {
    throw new KubeconfigError(`${where(list, entry)}.${key} must be ${expected}`);
  };
  if (STRING_KEYS.has(key) && typeof value !== "string") fail("a string");
  if ((key === "insecure-skip-tls-verify" || key === "disable-compression") && typeof value !== "boolean")
    fail("true or false");
  if (key === "as-groups" && !(Array.isArray(value) && value.every((g) => typeof g === "string")))
    fail("a list of strings");
  if (
    key === "as-user-extra" &&
    !(isObject(value) && Object.values(value).every((v) => Array.isArray(v) && v.every((s) => typeof s === "string")))
  )
    fail("a mapping of strings to lists of strings");
  if (key.endsWith("-data") && typeof value === "string" && !/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(value))
    fail("base64 data");
  if ((key === "exec" || key === "auth-provider") && !isObject(value)) fail("a mapping");
}

/** The cluster's `server` as a URL; the message never repeats it, as it may carry a password. */
function serverUrl(cluster: Entry): URL {
  const { server } = cluster.body;
  const url = typeof server === "string" && /^https?:\/\/./.test(server) ? URL.parse(server) : null;
  if (!url) throw new KubeconfigError(`${where("clusters", cluster)}.server must be an http:// or https:// URL`);
  return url;
}

/** The ways of authenticating `user` names, user information in the server URL among them. */
function authMethods(u: Record<string, unknown>, server: URL): string[] {
  return [
    (u.token || u.tokenFile) && "token",
    (u.username !== undefined || u.password !== undefined) && "basic auth",
    u.exec !== undefined && "exec",
    u["auth-provider"] !== undefined && "auth-provider",
    (server.username || server.password) && "basic auth in the server URL",
  ].filter((m): m is string => typeof m === "string" && m !== "");
}

/** What kubectl refuses, refused here too. */
function checkCombinations(cluster: Entry, user: Entry): void {
  const c = cluster.body;
  const u = user.body;
  const server = serverUrl(cluster);
  const hasCa = Boolean(c["certificate-authority"] || c["certificate-authority-data"]);
  if (c["insecure-skip-tls-verify"] === true && hasCa)
    throw new KubeconfigError(
      `${where("clusters", cluster)}: insecure-skip-tls-verify is true and a certificate authority is set; choose one ` +
        `(kubectl refuses this too)`,
    );
  const methods = authMethods(u, server);
  if (methods.length > 1)
    throw new KubeconfigError(
      `${where("users", user)}: more than one authentication method (${methods.join(", ")}); only one is allowed`,
    );
  if (
    u.as === undefined &&
    (u["as-uid"] !== undefined || u["as-groups"] !== undefined || u["as-user-extra"] !== undefined)
  )
    throw new KubeconfigError(
      `${where("users", user)}: as-uid, as-groups and as-user-extra need "as" (the user to impersonate)`,
    );
  if (server.protocol === "http:" && methods.length > 0)
    throw new KubeconfigError(
      `${where("clusters", cluster)}.server is plain http://: refusing to send the ${methods.join(", ")} credentials ` +
        `of ${where("users", user)} over it; use https://`,
    );
}
