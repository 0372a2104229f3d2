/**
 * The NetBox ceiling of a burst: a bare client in the bench process (plain fetch, keep-alive, no controller, no
 * Kubernetes) making the NetBox calls a controller needs for `count` claims of one pool at the least, one at a time as
 * the engine makes them (src/controllers/netbox/engine.ts): the prefix read for the listing's scope, one listing of
 * the prefix's records carrying our tag, the tag's check, then `available-ips` POSTs of {@link BATCH} records each
 * with the bodies the engine sends (description, tags, comments). Timed from the first call to the last answer.
 */
import { BATCH } from "../../src/controllers/netbox/engine.js";
import { ownerComments, OWNER_TAG, recordKey } from "../../src/controllers/netbox/identity.js";
import { nowMs } from "./stats.js";
import type { RouteCalls } from "./netboxcalls.js";

/** A NetBox and a write-enabled token. */
export interface NetBoxTarget {
  url: string;
  token: string;
}

/** Result of {@link bareNetBoxCalls}. */
export interface BareNetBoxResult {
  count: number;
  /** First call sent → last answer read. */
  ms: number;
  /** The calls made, by `<METHOD> <route>` as the controller's metrics name them. */
  calls: Record<string, RouteCalls>;
  /** The addresses NetBox handed out, as it wrote them (`10.0.4.1/22`). */
  addresses: string[];
}

const ROUTES = {
  prefix: "/api/ipam/prefixes/{id}/",
  addresses: "/api/ipam/ip-addresses/",
  tags: "/api/extras/tags/",
  available: "/api/ipam/prefixes/{id}/available-ips/",
} as const;

/** The `available-ips` bodies of `count` claims `bare-00001`… of `namespace`, in batches of {@link BATCH}. */
export function bareBatches(namespace: string, count: number, batch = BATCH): object[][] {
  const bodies = Array.from({ length: count }, (_, i) => {
    const owner = { namespace, name: `bare-${String(i + 1).padStart(5, "0")}`, cluster: undefined };
    return {
      description: recordKey(owner, "bench"),
      tags: [{ slug: OWNER_TAG.slug }],
      comments: ownerComments(owner, "NetBoxIPPool bare"),
    };
  });
  return Array.from({ length: Math.ceil(count / batch) }, (_, i) => bodies.slice(i * batch, (i + 1) * batch));
}

/**
 * The calls for `count` claims on prefix `prefix` (its id and CIDR) of `target`, records described as claims of
 * `namespace` (no such claims exist: nothing else reads them). Throws on any answer but 2xx.
 */
export async function bareNetBoxCalls(
  target: NetBoxTarget,
  prefix: { id: number; cidr: string },
  namespace: string,
  count: number,
): Promise<BareNetBoxResult> {
  const calls: Record<string, RouteCalls> = {};
  const call = async (method: "GET" | "POST", route: string, path: string, body?: unknown): Promise<unknown> => {
    const sent = nowMs();
    const res = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${target.token}`,
        Accept: "application/json",
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    const entry = (calls[`${method} ${route}`] ??= { count: 0, seconds: 0, codes: {} });
    entry.count++;
    entry.seconds += (nowMs() - sent) / 1000;
    entry.codes[String(res.status)] = (entry.codes[String(res.status)] ?? 0) + 1;
    if (!res.ok) throw new Error(`bare NetBox client: ${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text ? (JSON.parse(text) as unknown) : undefined;
  };
  const batches = bareBatches(namespace, count);
  const addresses: string[] = [];
  const start = nowMs();
  await call("GET", ROUTES.prefix, `/api/ipam/prefixes/${prefix.id}/`);
  const parent = encodeURIComponent(prefix.cidr);
  const tag = encodeURIComponent(OWNER_TAG.slug);
  await call(
    "GET",
    ROUTES.addresses,
    `/api/ipam/ip-addresses/?vrf_id=null&tag=${tag}&ordering=id&id__gt=0&limit=1000&parent=${parent}`,
  );
  await call("GET", ROUTES.tags, `/api/extras/tags/?slug=${tag}&limit=1`);
  for (const batch of batches) {
    const created = (await call("POST", ROUTES.available, `/api/ipam/prefixes/${prefix.id}/available-ips/`, batch)) as {
      address: string;
    }[];
    addresses.push(...created.map((r) => r.address));
  }
  return { count, ms: nowMs() - start, calls, addresses };
}
