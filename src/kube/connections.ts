/**
 * Keep-alive connections to the API server for every client built on a KubeConfig.
 *
 * client-node gives every request a fresh HTTP dispatcher (an undici Agent in 2.x), so every call opened a new TCP
 * connection and did a full TLS handshake on both sides: on two cores the API server spent much of its CPU on
 * handshakes for us (issue 13). {@link shareConnections} makes all requests of a KubeConfig use one dispatcher per
 * API server and identity, which keeps connections open and reuses them.
 */
import type { KubeConfig, RequestContext } from "@kubernetes/client-node";

type Dispatcher = Parameters<RequestContext["setDispatcher"]>[0];

const shared = new WeakSet<KubeConfig>();

/**
 * What a dispatcher was built from: the server and the TLS material of the identity. Bearer tokens are headers,
 * read per request, so they may rotate freely; a change of server, CA or client certificate in the kubeconfig gets a
 * new dispatcher. (Client certificates named by file and rotated in place keep the old connection until restart.)
 */
function identityOf(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  return JSON.stringify([
    cluster?.server,
    cluster?.caData ?? cluster?.caFile,
    cluster?.skipTLSVerify,
    cluster?.tlsServerName,
    user?.name,
    user?.certData ?? user?.certFile,
    user?.keyData ?? user?.keyFile,
  ]);
}

/**
 * Makes every request of `kc` (ResourceClient, `makeApiClient` clients) reuse one keep-alive dispatcher per API
 * server and identity. Idempotent; returns `kc`. Requests that bring no dispatcher (plain HTTP) are left alone.
 */
export function shareConnections(kc: KubeConfig): KubeConfig {
  if (shared.has(kc)) return kc;
  shared.add(kc);
  const apply = kc.applySecurityAuthentication.bind(kc);
  let current: { identity: string; dispatcher: Dispatcher } | undefined;
  kc.applySecurityAuthentication = async (context: RequestContext): Promise<void> => {
    await apply(context);
    const fresh = context.getDispatcher();
    if (fresh === undefined) return;
    const identity = identityOf(kc);
    if (current?.identity !== identity) {
      // The previous dispatcher finishes what it carries, then closes its connections.
      void current?.dispatcher.close().catch(() => undefined);
      current = { identity, dispatcher: fresh };
    }
    context.setDispatcher(current.dispatcher);
  };
  return kc;
}
