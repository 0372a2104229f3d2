/**
 * The NetBox pool of the bench: a NetBoxIPPool on a fresh prefix of a real NetBox (hack/testkit/netbox.ts)
 * just large enough for the scenario's claims, its token in a Secret of the controller's namespace that allows the
 * pool's namespace only (as hack/testkit/netboxpools.ts sets one up). As a {@link BenchPool}, so the bursts' code drives it.
 */
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import {
  ALLOWED_NAMESPACES_ANNOTATION,
  NETBOX_ADDRESS_FINALIZER,
  NETBOX_CLAIM_FINALIZER,
  type NetBoxIPPool,
} from "../../api/netbox/types.js";
import { NETBOX_IPPOOL, resourceType } from "../../api/registry.js";
import { isConflict, isNotFound } from "../../src/kube/errors.js";
import { ResourceClient } from "../../src/kube/resource.js";
import type { NetBoxServer } from "../testkit/netbox.js";
import { CONTROLLER_NAMESPACE } from "../testkit/serviceaccount.js";
import type { BenchPool } from "./pools.js";

/** The prefix length whose usable addresses (network and broadcast excluded) hold `count` claims: at most /24. */
export function prefixLengthFor(count: number): number {
  const bits = Math.max(8, Math.ceil(Math.log2(count + 2)));
  if (bits > 16) throw new Error(`${count} addresses do not fit in the /16 a fresh NetBox block may be`);
  return 32 - bits;
}

/** The token Secret of the pools of `namespace`. */
const tokenSecret = (namespace: string): string => `netbox-token-${namespace}`;

/** A NetBox bench pool and the prefixes it made in NetBox, by pool name (for the scenario's checks). */
export interface NetBoxBenchPool extends BenchPool {
  /** The last pool `name` created: its namespace, and the CIDR and NetBox id of its prefix. */
  created(name: string): { namespace: string; cidr: string; id: number } | undefined;
}

/** NetBoxIPPools on `server`: each {@link BenchPool.create} makes a fresh prefix, a token Secret and the pool. */
export function netBoxBenchPool(server: NetBoxServer): NetBoxBenchPool {
  const made = new Map<string, { namespace: string; cidr: string; id: number }>();
  const pools = new WeakMap<KubeConfig, ResourceClient<NetBoxIPPool>>();
  const client = (kc: KubeConfig): ResourceClient<NetBoxIPPool> => {
    let made = pools.get(kc);
    if (!made) pools.set(kc, (made = new ResourceClient<NetBoxIPPool>(kc, resourceType(NETBOX_IPPOOL))));
    return made;
  };
  return {
    label: NETBOX_IPPOOL.kind,
    descriptor: NETBOX_IPPOOL,
    claimNamespaces: 1,
    poolName: (_namespace, base) => base,
    async create(kc, namespace, name, count) {
      const prefix = await server.admin.freshPrefix(prefixLengthFor(count));
      made.set(name, { namespace, ...prefix });
      await writeToken(kc, namespace, server);
      await client(kc).create(namespace, {
        metadata: { name, namespace },
        spec: {
          netbox: { credentialsRef: { name: tokenSecret(namespace) } },
          prefix: { id: prefix.id },
        },
      });
    },
    async used(kc, namespace, name) {
      try {
        return this.usedOf(await client(kc).get(namespace, name));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    usedOf: (pool) => (pool as NetBoxIPPool | undefined)?.status?.ipAddresses?.used,
    getRequest: `GET ${NETBOX_IPPOOL.group}/${NETBOX_IPPOOL.plural}`,
    ref: (name) => ({ apiGroup: NETBOX_IPPOOL.group, kind: NETBOX_IPPOOL.kind, name }),
    capiRecord: {
      claimFinalizer: NETBOX_CLAIM_FINALIZER,
      recordFinalizer: NETBOX_ADDRESS_FINALIZER,
      name: (_poolName, claimName) => claimName,
    },
    created: (name) => made.get(name),
  };
}

/**
 * The token Secret of `namespace`'s pools in the controller's namespace (made first if missing), allowing it only,
 * naming the NetBox it is for.
 */
async function writeToken(kc: KubeConfig, namespace: string, server: { url: string; token: string }): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name: CONTROLLER_NAMESPACE } } });
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  await core.createNamespacedSecret({
    namespace: CONTROLLER_NAMESPACE,
    body: {
      metadata: {
        name: tokenSecret(namespace),
        namespace: CONTROLLER_NAMESPACE,
        annotations: { [ALLOWED_NAMESPACES_ANNOTATION]: namespace },
      },
      stringData: { token: server.token, url: server.url },
    },
  });
}
