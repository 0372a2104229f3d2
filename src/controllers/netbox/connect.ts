/**
 * Connects a NetBox pool to its NetBox: the token, the NetBox's URL and its CA from the Secret the pool names (trust.ts
 * decides where the token may go; a pool's own deprecated url and caBundle only within those rules).
 *
 * Where tokens live, and why: in the controller's own namespace. The controller may `get` Secrets there and nowhere
 * else (NETBOX_SECRET_RULES, a Role of that namespace; no list, no watch), so a pool cannot make it read a Secret of
 * another namespace, and it learns no Secret nobody named. Which pools may use a token is the Secret's to say:
 * its allowed-namespaces annotation (trust.ts) names the namespaces whose NetBoxIPPools may (or `*`), the controller's own
 * included; cluster-scoped GlobalNetBoxIPPools, which only cluster administrators create, may use any.
 *
 * A Secret is kept for {@link TOKEN_TTL_MS}, or until NetBox refuses its token (a rotated token is picked up at the
 * next call after that, or within the TTL); a client is kept per (URL, token, CA) and shared by every pool of one
 * NetBox, so connections are per instance. Errors name the Secret and key, never the token nor a URL's userinfo; a
 * refusal is thrown before any client exists, so nothing is sent. A client is closed and dropped once no pool uses
 * it (each pool holds the one it last connected with, until it is gone: forget).
 */
import { createHash } from "node:crypto";
import { DEFAULT_TOKEN_KEY, type NetBoxIPPool } from "../../../api/netbox/types.js";
import { isNotFound } from "../../kube/errors.js";
import { ResourceClient, type KubeObject } from "../../kube/resource.js";
import type { KindContext } from "../pools/kind.js";
import { NetBoxError, type NetBoxClient, type NetBoxEndpoint } from "../../netbox/client.js";
import { poolKey, type NetBoxConnector } from "./engine.js";
import { bindToken, SECRET_CA_KEY, SECRET_URL_KEY, type TrustPolicy } from "./trust.js";

/** How long a token read from a Secret is used before the Secret is read again. */
export const TOKEN_TTL_MS = 60_000;

type Secret = KubeObject & { data?: Record<string, string> };

const SECRETS = { group: "", version: "v1", plural: "secrets", kind: "Secret", namespaced: true };

/** A credentials problem: an Unauthorized failure, so the claims and the pool say it. */
const credentialsError = (message: string): NetBoxError => new NetBoxError(message, "Unauthorized");

/** RBAC in the controller's namespace: read a named Secret, nothing else. */
export const NETBOX_SECRET_RULES = [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }];

interface KeptSecret {
  secret: Secret;
  readAt: number;
}

/** Pools whose last warnings are remembered, so each is logged once per change; forgotten past this many. */
const MAX_WARNED_POOLS = 4096;

const decoded = (data: Record<string, string> | undefined, key: string): string | undefined => {
  const value = data?.[key];
  return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
};

/** A client and the pools (by poolKey) whose last connect gave it. */
interface SharedClient {
  client: ClosableClient;
  users: Set<string>;
}

type ClosableClient = NetBoxClient & { close(): void };

export function netBoxConnector(
  controllerNamespace: string,
  makeClient: (endpoint: NetBoxEndpoint) => ClosableClient,
  policy: TrustPolicy = { allowHttp: false },
): NetBoxConnector {
  const secrets = new Map<string, KeptSecret>();
  const clients = new Map<string, SharedClient>();
  /** The client id each pool last connected with. */
  const clientOfPool = new Map<string, string>();
  const warned = new Map<string, string>();
  let api: ResourceClient<Secret> | undefined;

  /** The pool no longer uses the client it had (unless it is `keep`): the client closes once nobody does. */
  const letGo = (pool: string, keep?: string): void => {
    const id = clientOfPool.get(pool);
    if (id === undefined || id === keep) return;
    clientOfPool.delete(pool);
    const shared = clients.get(id);
    shared?.users.delete(pool);
    if (shared && shared.users.size === 0) {
      shared.client.close();
      clients.delete(id);
    }
  };

  const readSecret = async (name: string, ctx: KindContext): Promise<Secret> => {
    const kept = secrets.get(name);
    if (kept && Date.now() - kept.readAt < TOKEN_TTL_MS) return kept.secret;
    api ??= new ResourceClient<Secret>(ctx.store.kubeConfig, SECRETS);
    try {
      const secret = await api.get(controllerNamespace, name);
      secrets.set(name, { secret, readAt: Date.now() });
      return secret;
    } catch (err) {
      if (isNotFound(err))
        throw credentialsError(`Secret ${controllerNamespace}/${name} (credentialsRef) does not exist`);
      throw err;
    }
  };

  /** Logs the binding's warnings when they differ from the pool's last ones. */
  const warn = (pool: NetBoxIPPool, warnings: readonly string[], ctx: KindContext): void => {
    const id = pool.metadata.uid ?? `${pool.metadata.namespace ?? ""}/${pool.metadata.name ?? ""}`;
    const text = warnings.join("; ");
    if ((warned.get(id) ?? "") === text) return;
    if (warned.size >= MAX_WARNED_POOLS) warned.clear();
    warned.set(id, text);
    for (const warning of warnings) ctx.log.warn("NetBox pool", { pool: pool.metadata.name, warning });
  };

  /** The endpoint the pool's Secret allows it; throws Unauthorized or NotAllowed (nothing sent) otherwise. */
  const endpointOf = async (pool: NetBoxIPPool, ctx: KindContext): Promise<NetBoxEndpoint> => {
    const ref = pool.spec.netbox.credentialsRef;
    const key = ref.key ?? DEFAULT_TOKEN_KEY;
    const name = `${controllerNamespace}/${ref.name}`;
    const secret = await readSecret(ref.name, ctx);
    const binding = bindToken(
      { namespace: pool.metadata.namespace ?? "", url: pool.spec.netbox.url, caBundle: pool.spec.netbox.caBundle },
      {
        name,
        annotations: secret.metadata.annotations,
        url: decoded(secret.data, SECRET_URL_KEY),
        ca: decoded(secret.data, SECRET_CA_KEY),
      },
      policy,
    );
    if (!binding.ok) throw new NetBoxError(binding.message, binding.reason);
    warn(pool, binding.warnings, ctx);
    const token = decoded(secret.data, key)?.trim();
    if (!token) throw credentialsError(`Secret ${name} has no key ${key}`);
    return { url: binding.url, token, ...(binding.caBundle ? { caBundle: binding.caBundle } : {}) };
  };

  const connect = async (pool: NetBoxIPPool, ctx: KindContext): Promise<NetBoxClient> => {
    const endpoint = await endpointOf(pool, ctx);
    const id = createHash("sha256")
      .update(JSON.stringify([endpoint.url, endpoint.token, endpoint.caBundle ?? ""]))
      .digest("hex");
    const user = poolKey(pool.metadata);
    letGo(user, id);
    let shared = clients.get(id);
    if (!shared) {
      shared = { client: makeClient(endpoint), users: new Set() };
      clients.set(id, shared);
    }
    shared.users.add(user);
    clientOfPool.set(user, id);
    return shared.client;
  };
  return {
    connect,
    tokenRejected: (pool) => void secrets.delete(pool.spec.netbox.credentialsRef.name),
    forget: (pool) => letGo(poolKey(pool)),
  };
}
