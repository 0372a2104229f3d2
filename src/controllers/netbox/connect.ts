/**
 * Connects a NetBox pool to its NetBox: the URL and CA bundle from its spec, the API token from the Secret it names.
 * Secrets are read by name (`get`, never listed or watched: see NETBOX_RULES) and kept for {@link TOKEN_TTL_MS}, so a
 * rotated token is picked up within that time; a client is kept per (URL, token, CA) and shared by every pool of one
 * NetBox, so its connections and its bound on concurrent calls are per instance. Errors name the Secret and the key,
 * never the token.
 */
import { createHash } from "node:crypto";
import { DEFAULT_TOKEN_KEY, type NetBoxIPPool } from "../../../api/netbox/types.js";
import { isNotFound } from "../../kube/errors.js";
import type { KubeObject } from "../../kube/resource.js";
import { ResourceClient } from "../../kube/resource.js";
import type { KindContext } from "../pools/kind.js";
import type { NetBoxApi } from "./api.js";
import type { NetBoxConnector } from "./engine.js";

/** How long a token read from a Secret is used before the Secret is read again. */
export const TOKEN_TTL_MS = 60_000;

/** What a client is made from. */
export interface NetBoxEndpointConfig {
  url: string;
  token: string;
  caBundle?: string;
}

type Secret = KubeObject & { data?: Record<string, string> };

const SECRETS = { group: "", version: "v1", plural: "secrets", kind: "Secret", namespaced: true };

/** A bad credentials reference: fails the claims with this message (a NetBox-style failure, so they say it). */
export class CredentialsError extends Error {
  readonly reason = "Unauthorized";
}

export function netBoxConnector(makeClient: (endpoint: NetBoxEndpointConfig) => NetBoxApi): NetBoxConnector {
  const tokens = new Map<string, { token: string; readAt: number }>();
  const clients = new Map<string, NetBoxApi>();
  let secrets: ResourceClient<Secret> | undefined;

  const readToken = async (pool: NetBoxIPPool, ctx: KindContext): Promise<string> => {
    const ref = pool.spec.netbox.credentialsRef;
    const namespace = pool.metadata.namespace ?? ref.namespace ?? "";
    const key = ref.key ?? DEFAULT_TOKEN_KEY;
    const where = `Secret ${namespace}/${ref.name} key ${key}`;
    const cacheKey = `${namespace}/${ref.name}/${key}`;
    const kept = tokens.get(cacheKey);
    if (kept && Date.now() - kept.readAt < TOKEN_TTL_MS) return kept.token;
    if (!namespace) throw new CredentialsError(`credentialsRef of a global pool needs a namespace`);
    secrets ??= new ResourceClient<Secret>(ctx.store.kubeConfig, SECRETS);
    let secret: Secret;
    try {
      secret = await secrets.get(namespace, ref.name);
    } catch (err) {
      if (isNotFound(err)) throw new CredentialsError(`${where}: the Secret does not exist`);
      throw err;
    }
    const encoded = secret.data?.[key];
    if (!encoded) throw new CredentialsError(`${where}: the Secret has no such key`);
    const token = Buffer.from(encoded, "base64").toString("utf8").trim();
    tokens.set(cacheKey, { token, readAt: Date.now() });
    return token;
  };

  return async (pool, ctx) => {
    const token = await readToken(pool, ctx);
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
}
