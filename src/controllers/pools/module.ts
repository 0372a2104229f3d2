/**
 * A pool kind's module as the manager and RBAC generation see it: the kinds it adds, the RBAC they need, and, for a
 * kind whose CRD ships with us, the caches it makes and maps onto pool keys itself. `src/controllers/kinds.ts` lists
 * every module once; the manager and `src/rbac.ts` iterate that list and name no kind.
 */
import type { PolicyRule } from "../../kube/policy.js";
import type { ControllerMetrics } from "../../runtime/metrics.js";
import type { Store } from "../store.js";
import type { PoolKind } from "./kind.js";
import type { ClaimApi } from "./pass.js";
import type { SharedKinds } from "./providers.js";

/** The manager's flags a module may read when it builds its kinds. */
export interface ModuleOptions {
  metrics: ControllerMetrics;
  /** The controller's own namespace (where a module reads Secrets it is given by name). */
  controllerNamespace?: string;
  serveInClusterPools?: boolean;
  inClusterProviderNamespace?: string;
  netBoxAllowHttp?: boolean;
  netBoxInstallationId?: string;
}

/** Puts a pool's key on the manager's work queue; `waiting`: a claim of it waits for an address. */
export type Enqueue = (key: string, waiting?: boolean) => void;

/** What a module's own caches give the manager once attached. */
export interface AttachedCaches {
  /** The claim API of the claims those caches hold. */
  readonly api: ClaimApi;
  /** Keys of the module's pools a Cluster's change can affect: pools naming it, and pools of claims naming it. */
  poolsOfCluster(clusterKey: string): string[];
}

/**
 * The I/O of a kind served from the start (its CRD ships with us, so it is never discovered): `attach` makes its
 * caches on `store` (once, before the store starts), serves its pools from them, and sends each event's pool key to
 * `enqueue`.
 */
export interface CacheHook {
  readonly kind: PoolKind;
  attach(store: Store, enqueue: Enqueue): AttachedCaches;
}

export interface KindModule {
  /** The module's pool kinds, built once per manager. */
  kinds(options: ModuleOptions): PoolKind[];
  /** Hooks of the kinds it serves from caches of its own; the others are served once discovered. */
  readonly hooks?: readonly CacheHook[];
  /** Its kinds another provider may serve too, with that provider (pools/providers.ts). */
  shared?(options: ModuleOptions): SharedKinds<PoolKind>;
  /** RBAC granted cluster-wide. */
  readonly clusterRules: readonly PolicyRule[];
  /** RBAC granted in the controller's own namespace only. */
  readonly namespaceRules?: readonly PolicyRule[];
}
