/**
 * Which NetBox a pool's token may be sent to: a pure decision, no Kubernetes and no network (connect.ts reads the
 * Secret and acts on it).
 *
 * The trust model: a token is bound to its NetBox by the Secret that holds it. The Secret, which only people who may
 * write Secrets in the controller's namespace can make, names the NetBox (`url`) and optionally a CA (`ca.crt`, added
 * to the system's roots); a pool only names the Secret. So no pool author can send a token, or make the controller
 * send any request, to a host the Secret's author did not name. The deprecated `spec.netbox.url` of a pool is
 * accepted only when it names the Secret's NetBox; a GlobalNetBoxIPPool (written by cluster administrators) may still
 * use a Secret without `url`, its own url then trusted. Plain `http://` only with `--netbox-allow-http`. A URL with
 * userinfo is refused (NetBox authenticates with the token; a password in a URL would be a second, unused secret),
 * and no message prints a URL's userinfo.
 */
import { ALLOWED_NAMESPACES_ANNOTATION } from "../../../api/netbox/types.js";

/** Key of the Secret naming the NetBox its token is for. */
export const SECRET_URL_KEY = "url";
/** Key of the Secret holding PEM certificates trusted for that NetBox besides the system's roots. */
export const SECRET_CA_KEY = "ca.crt";
/** The controller flag that permits plain-HTTP NetBox URLs. */
export const ALLOW_HTTP_FLAG = "--netbox-allow-http";
/** The pool's Ready reason when the controller refuses to call the NetBox it would have to (nothing was sent). */
export const URL_NOT_ALLOWED_REASON = "NetBoxURLNotAllowed";

/** What the Secret says: its name (for messages), annotations and the decoded values of `url` and `ca.crt`. */
export interface SecretTrust {
  name: string;
  annotations?: Readonly<Record<string, string>> | undefined;
  url?: string | undefined;
  ca?: string | undefined;
}

/** What the pool says: its namespace ("" for a global pool) and its deprecated url and CA bundle. */
export interface PoolTrust {
  namespace: string;
  url?: string | undefined;
  caBundle?: string | undefined;
}

export interface TrustPolicy {
  /** `--netbox-allow-http`: plain-HTTP URLs are permitted. */
  allowHttp: boolean;
}

/**
 * Where the token may go (`url` normalised, `caBundle` to add to the roots), with what the administrator should change
 * (deprecated fields, ignored ones); or why not: `Unauthorized` when the Secret is not this pool's to use,
 * `NotAllowed` when the URL is not one the controller may call.
 */
export type Binding =
  | { ok: true; url: string; caBundle?: string; warnings: string[] }
  | { ok: false; reason: "Unauthorized" | "NotAllowed"; message: string };

/** Whether a pool of `poolNamespace` ("" for a global pool) may use a Secret with these annotations. */
export function mayUseSecret(
  annotations: Readonly<Record<string, string>> | undefined,
  poolNamespace: string,
): boolean {
  if (poolNamespace === "") return true;
  const allowed = (annotations?.[ALLOWED_NAMESPACES_ANNOTATION] ?? "").split(",").map((s) => s.trim());
  return allowed.includes("*") || allowed.includes(poolNamespace);
}

/** A NetBox URL as it is compared and used: scheme, host, port, path without trailing slashes. */
export type ParsedUrl = { ok: true; url: string; http: boolean } | { ok: false; problem: string };

export function parseNetBoxUrl(text: string): ParsedUrl {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { ok: false, problem: "is not a URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return { ok: false, problem: `must be https:// (or http://), not ${url.protocol}` };
  if (url.username !== "" || url.password !== "")
    return { ok: false, problem: "carries a user name or password: NetBox takes the token alone; remove them" };
  if (url.search !== "" || url.hash !== "") return { ok: false, problem: "must have no query or fragment" };
  return {
    ok: true,
    url: `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`,
    http: url.protocol === "http:",
  };
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;

/** Decides where a pool's token may go; see the file's comment for the model. */
export function bindToken(pool: PoolTrust, secret: SecretTrust, policy: TrustPolicy): Binding {
  if (!mayUseSecret(secret.annotations, pool.namespace))
    return {
      ok: false,
      reason: "Unauthorized",
      message: `Secret ${secret.name} may not be used by pools of namespace ${pool.namespace}: its ${ALLOWED_NAMESPACES_ANNOTATION} annotation does not name it`,
    };
  const warnings: string[] = [];
  const chosen = urlOf(pool, secret, warnings);
  if (typeof chosen === "string") return refuse(chosen);
  if (chosen.http && !policy.allowHttp)
    return refuse(
      `${chosen.url} is plain http://, which would send the token unencrypted: the controller allows it only with ${ALLOW_HTTP_FLAG}`,
    );
  const ca = caOf(pool, secret, pool.namespace === "", warnings);
  if (ca && !PEM_CERTIFICATE.test(ca.pem)) return refuse(`${ca.from} holds no PEM certificate`);
  return { ok: true, url: chosen.url, ...(ca ? { caBundle: ca.pem } : {}), warnings };
}

const refuse = (message: string): Binding => ({ ok: false, reason: "NotAllowed", message });

/** The URL the token may go to: the Secret's; else a global pool's (deprecated). A string says why there is none. */
function urlOf(pool: PoolTrust, secret: SecretTrust, warnings: string[]): { url: string; http: boolean } | string {
  const where = `Secret ${secret.name}`;
  const secretUrl = secret.url?.trim() ? parseNetBoxUrl(secret.url) : undefined;
  const poolUrl = pool.url?.trim() ? parseNetBoxUrl(pool.url) : undefined;
  if (secretUrl && !secretUrl.ok) return `${where}: its ${SECRET_URL_KEY} ${secretUrl.problem}`;
  if (poolUrl && !poolUrl.ok) return `spec.netbox.url ${poolUrl.problem}`;
  if (secretUrl) {
    if (poolUrl && poolUrl.url !== secretUrl.url)
      return `spec.netbox.url ${poolUrl.url} is not the NetBox ${where} is for (${secretUrl.url}): no request is made; remove spec.netbox.url (deprecated), the Secret names the NetBox`;
    if (poolUrl) warnings.push(`spec.netbox.url is deprecated and can be removed: ${where} names the NetBox`);
    return secretUrl;
  }
  if (pool.namespace !== "")
    return `${where} has no key ${SECRET_URL_KEY}: the Secret must name the NetBox its token is for before a NetBoxIPPool may use it`;
  if (!poolUrl) return `${where} has no key ${SECRET_URL_KEY}: the Secret must name the NetBox its token is for`;
  warnings.push(
    `${where} has no key ${SECRET_URL_KEY}: this GlobalNetBoxIPPool's spec.netbox.url is used; add ${SECRET_URL_KEY} to the Secret (NetBoxIPPools need it, and spec.netbox.url is deprecated)`,
  );
  return poolUrl;
}

/** The CA bundle added to the roots: the Secret's; else a global pool's (deprecated); a NetBoxIPPool's never. */
function caOf(
  pool: PoolTrust,
  secret: SecretTrust,
  global: boolean,
  warnings: string[],
): { pem: string; from: string } | undefined {
  const poolCa = pool.caBundle?.trim() ? pool.caBundle : undefined;
  if (secret.ca?.trim()) {
    if (poolCa) warnings.push(`spec.netbox.caBundle is ignored: Secret ${secret.name} has ${SECRET_CA_KEY}`);
    return { pem: secret.ca, from: `Secret ${secret.name}: its ${SECRET_CA_KEY}` };
  }
  if (!poolCa) return undefined;
  if (!global) {
    warnings.push(`spec.netbox.caBundle is ignored: a NetBoxIPPool's CA comes from its Secret's ${SECRET_CA_KEY}`);
    return undefined;
  }
  warnings.push(`spec.netbox.caBundle is deprecated: put it in Secret ${secret.name} as ${SECRET_CA_KEY}`);
  return { pem: poolCa, from: "spec.netbox.caBundle" };
}
