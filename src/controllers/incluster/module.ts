/**
 * The in-cluster provider's pool kinds as a module (pools/module.ts): served once their CRDs are, and only while the
 * operator enabled them and that provider does not run (provider.ts).
 */
import type { KindModule } from "../pools/module.js";
import { GLOBAL_INCLUSTER_POOL_KIND, INCLUSTER_POOL_KIND, INCLUSTER_RULES } from "./kind.js";
import { inClusterSharedKinds, INCLUSTER_PROVIDER_RULES } from "./provider.js";

export const INCLUSTER_MODULE: KindModule = {
  kinds: () => [INCLUSTER_POOL_KIND, GLOBAL_INCLUSTER_POOL_KIND],
  shared: (options) => inClusterSharedKinds(options.serveInClusterPools ?? false, options.inClusterProviderNamespace),
  clusterRules: [...INCLUSTER_RULES, ...INCLUSTER_PROVIDER_RULES],
};
