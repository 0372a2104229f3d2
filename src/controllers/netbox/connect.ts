/**
 * Connects a NetBox pool to its NetBox: the URL and CA bundle from its spec, the API token from the Secret it names.
 *
 * Where tokens live, and why: in the controller's own namespace. The controller may `get` Secrets there and nowhere
 * else (NETBOX_SECRET_RULES, a Role of that namespace; no list, no watch), so a pool cannot make it read a Secret of
 * another namespace, and it learns no Secret nobody named. Which pools may use a token is the Secret's to say:
 * {@link ALLOWED_NAMESPACES_ANNOTATION} names the namespaces whose NetBoxIPPools may (or `*`); cluster-scoped
 * GlobalNetBoxIPPools, which only cluster administrators create, may use any.
 *
 * A token is kept for {@link TOKEN_TTL_MS}, or until NetBox refuses it (a rotated token is picked up at the next
 * call after that, or within the TTL); a client is kept per (URL, token,
 * CA) and shared by every pool of one NetBox, so connections are per instance. Errors name the Secret and key, never
 * the token.
 */
import { createHash } from "node:crypto";
import { ALLOWED_NAMESPACES_ANNOTATION, DEFAULT_TOKEN_KEY, type NetBoxIPPool } from "../../../api/netbox/types.js";
import { isNotFound } from "../../kube/errors.js";
import { ResourceClient, type KubeObject } from "../../kube/resource.js";
import type { KindContext } from "../pools/kind.js";
import { NetBoxError, type NetBoxClient, type NetBoxEndpoint } from "../../netbox/client.js";
import type { NetBoxConnector } from "./engine.js";

/** How long a token read from a Secret is used before the Secret is read again. */
export const TOKEN_TTL_MS = 60_000;

type Secret = KubeObject & { data?: Record<string, string> };

const SECRETS = { group: "", version: "v1", plural: "secrets", kind: "Secret", namespaced: true };

/** A credentials problem: an Unauthorized failure, so the claims and the pool say it. */
const credentialsError = (message: string): NetBoxError => new NetBoxError(message, "Unauthorized");

/** RBAC in the controller's namespace: read a named Secret, nothing else. */
export const NETBOX_SECRET_RULES = [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }];

/** Whether a pool of `poolNamespace` ("" for a global pool) may use a Secret with these annotations. */
export function mayUseSecret(
  annotations: Readonly<Record<string, string>> | undefined,
  poolNamespace: string,
  controllerNamespace: string,
): boolean {
  if (poolNamespace === "" || poolNamespace === controllerNamespace) return true;
  const allowed = (annotations?.[ALLOWED_NAMESPACES_ANNOTATION] ?? "").split(",").map((s) => s.trim());
  return allowed.includes("*") || allowed.includes(poolNamespace);
}

interface KeptSecret {
  secret: Secret;
  readAt: number;
}

export function netBoxConnector(
  controllerNamespace: string,
  makeClient: (endpoint: NetBoxEndpoint) => NetBoxClient,
): NetBoxConnector {
  const secrets = new Map<string, KeptSecret>();
  const clients = new Map<string, NetBoxClient>();
  let api: ResourceClient<Secret> | undefined;

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

  const tokenOf = async (pool: NetBoxIPPool, ctx: KindContext): Promise<string> => {
    const ref = pool.spec.netbox.credentialsRef;
    const key = ref.key ?? DEFAULT_TOKEN_KEY;
    const where = `Secret ${controllerNamespace}/${ref.name}`;
    const secret = await readSecret(ref.name, ctx);
    const poolNamespace = pool.metadata.namespace ?? "";
    if (!mayUseSecret(secret.metadata.annotations, poolNamespace, controllerNamespace))
      throw credentialsError(
        `${where} may not be used by pools of namespace ${poolNamespace}: its ${ALLOWED_NAMESPACES_ANNOTATION} annotation does not name it`,
      );
    const encoded = secret.data?.[key];
    if (!encoded) throw credentialsError(`${where} has no key ${key}`);
    return Buffer.from(encoded, "base64").toString("utf8").trim();
  };

  const connect = async (pool: NetBoxIPPool, ctx: KindContext): Promise<NetBoxClient> => {
    const token = await tokenOf(pool, ctx);
    const { url, caBundle } = pool.spec.netbox;
    const id = createHash("sha256")
      .update(JSON.stringify([url, token, caBundle ?? ""]))
      .digest("hex");
    let client = clients.get(id);
    if (!client) {
      client = makeClient({ url, token, ...(caBundle ? { caBundle } : {}) });
      clients.set(id, client);
    }
    return client;
  };
  return { connect, tokenRejected: (pool) => void secrets.delete(pool.spec.netbox.credentialsRef.name) };
}
