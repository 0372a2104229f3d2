/**
 * The CLI's only door to the API server, through kubernetes-fluent-client (the stack the user asked for): reads, and
 * the two plain writes of `reserve` and `release` (a create and a delete, none of its server-side apply). The fluent client loads the kubeconfig itself on every request from
 * `KUBECONFIG` (see kubeconfig.ts for how --kubeconfig and --context reach it).
 */
import { GenericKind, K8s, WatchEvent, kind as kinds } from "kubernetes-fluent-client";
import { WatchPhase } from "kubernetes-fluent-client/dist/fluent/shared-types.js";
import { qualifiedName, type ResourceType } from "../../api/registry.js";
import { GROUP } from "../../api/v1alpha1/types.js";
import { CliError, explainReadError, statusOf, type Attempt } from "./errors.js";

/** Enough to address a resource type over REST (api/registry.ts's shape). `group` is "" for the core group. */
export type ResourceKind = ResourceType;

/** Minimal object shape every read returns. */
export interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string | Date;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  };
}

let server: string | undefined;

/** Records the API server URL, so that "cannot reach" messages can name it. */
export function useServer(url: string): void {
  server = url;
}

/** `plural.group`, the name RBAC and kubectl use. */
export function resourceName(k: ResourceKind): string {
  return qualifiedName(k);
}

function client(k: ResourceKind) {
  return K8s(GenericKind, { kindOverride: { group: k.group, version: k.version, kind: k.kind, plural: k.plural } });
}

function attempt(verb: Attempt["verb"], k: ResourceKind, namespace?: string, name?: string): Attempt {
  return { verb, resource: resourceName(k), ...(namespace ? { namespace } : {}), ...(name ? { name } : {}) };
}

/**
 * Lists `k` in `namespace` (all namespaces when undefined). A 404 means the type is not served: `missing` decides.
 * With `onForbidden`, a 403 is told to it and reads as an empty list (for kinds a view can do without); without it,
 * a 403 is an error naming the verb and resource.
 */
export async function list<T extends Obj>(
  k: ResourceKind,
  namespace: string | undefined,
  opts: { labelKey?: string; missing?: "empty" | "error"; onForbidden?: () => void } = {},
): Promise<T[]> {
  const c = client(k);
  try {
    const filtered = namespace && k.namespaced ? c.InNamespace(namespace) : c;
    const withLabel = opts.labelKey ? filtered.WithLabel(opts.labelKey) : filtered;
    const result = await withLabel.Get();
    return result.items as unknown as T[];
  } catch (err) {
    if (statusOf(err) === 404) {
      if (opts.missing === "empty") return [];
      throw new CliError(crdMissing(k));
    }
    if (statusOf(err) === 403 && opts.onForbidden) {
      opts.onForbidden();
      return [];
    }
    throw explainReadError(err, attempt("list", k, namespace), server);
  }
}

/** Gets one object; undefined when it does not exist. */
export async function get<T extends Obj>(k: ResourceKind, namespace: string, name: string): Promise<T | undefined> {
  try {
    const c = client(k);
    return (await (k.namespaced ? c.InNamespace(namespace) : c).Get(name)) as unknown as T;
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw explainReadError(err, attempt("get", k, k.namespaced ? namespace : undefined, name), server);
  }
}

/** Creates `obj` (namespaced by its metadata); a 409 is an error saying it exists. */
export async function create<T extends Obj>(k: ResourceKind, obj: T): Promise<T> {
  const namespace = obj.metadata.namespace ?? "";
  try {
    // The fluent client takes the namespace from the object's metadata.
    return (await client(k).Create(obj as unknown as GenericKind)) as unknown as T;
  } catch (err) {
    if (statusOf(err) === 409)
      throw new CliError(`${k.kind} "${obj.metadata.name ?? ""}" already exists in namespace "${namespace}"`);
    throw explainReadError(err, attempt("create", k, namespace), server);
  }
}

/** Deletes one object; false when it did not exist. */
export async function remove(k: ResourceKind, namespace: string, name: string): Promise<boolean> {
  try {
    const c = client(k);
    await (k.namespaced ? c.InNamespace(namespace) : c).Delete(name);
    return true;
  } catch (err) {
    if (statusOf(err) === 404) return false;
    throw explainReadError(err, attempt("delete", k, namespace, name), server);
  }
}

/** The message for a resource type the cluster does not serve. */
export function crdMissing(k: ResourceKind): string {
  const hint =
    k.group === GROUP ? ': install them with "kubectl apply -k config/crd" or "clusterctl init --ipam metal3-ts"' : "";
  return `the cluster does not serve ${resourceName(k)} (${k.group}/${k.version}): its CRD is not installed${hint}`;
}

/** A GET of a raw API path (discovery documents); undefined on 404. */
export async function raw<T>(path: string): Promise<T | undefined> {
  try {
    return (await K8s(GenericKind).Raw(path)) as unknown as T;
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw explainReadError(err, { verb: "get", resource: path }, server);
  }
}

/** Labelled CRDs (cluster-scoped list). */
export async function listCrds(labelKey: string): Promise<CrdObj[]> {
  try {
    const result = await K8s(kinds.CustomResourceDefinition).WithLabel(labelKey).Get();
    return result.items as unknown as CrdObj[];
  } catch (err) {
    throw explainReadError(err, { verb: "list", resource: "customresourcedefinitions.apiextensions.k8s.io" }, server);
  }
}

/** The parts of a CRD preflight-move reads. */
export interface CrdObj extends Obj {
  spec: {
    group: string;
    names: { kind: string; plural: string };
    scope: "Namespaced" | "Cluster";
    versions: { name: string; storage: boolean; served: boolean }[];
  };
}

/**
 * A change seen by a watch. `listed`: a complete list came in (the watch's first, or a relist), naming every object
 * that exists (`namespace/name`, see {@link objectKey}); an object held from an earlier read and not among them was
 * deleted before the list, and the watch will say nothing more about it.
 */
export type Change<T> =
  { type: "upsert"; object: T } | { type: "delete"; object: T } | { type: "listed"; keys: ReadonlySet<string> };

/** How a watched object is keyed: `namespace/name` (`/name` when cluster-scoped). */
export const objectKey = (o: Obj): string => `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;

/** A running watch; `close` stops it. */
export interface WatchHandle {
  close(): void;
}

/**
 * Watches `k` (list, then watch, reconnecting as the fluent client does) and reports every change. Failures of the
 * watch are reported through `onError`; the fluent client keeps retrying.
 */
export async function watch<T extends Obj>(
  k: ResourceKind,
  namespace: string | undefined,
  onChange: (c: Change<T>) => void,
  onError: (message: string) => void,
): Promise<WatchHandle> {
  const c = client(k);
  const target = namespace && k.namespaced ? c.InNamespace(namespace) : c;
  const watcher = target.Watch((object, phase) => {
    const obj = object as unknown as T;
    if (phase === WatchPhase.Deleted) onChange({ type: "delete", object: obj });
    else if (phase === WatchPhase.Added || phase === WatchPhase.Modified) onChange({ type: "upsert", object: obj });
  });
  // The fluent client's cache starts empty: its first list says "added" for what exists and nothing of what was
  // deleted since our own first read. The list itself, page by page, tells the caller which objects exist. A list
  // that fails halfway leaves its keys to the next one: a superset only keeps a stale object a while longer.
  let listed = new Set<string>();
  watcher.events.on(WatchEvent.LIST, (list: { items?: Obj[]; metadata?: { continue?: string } }) => {
    for (const item of list.items ?? []) listed.add(objectKey(item));
    if (list.metadata?.continue) return;
    onChange({ type: "listed", keys: listed });
    listed = new Set();
  });
  // The fluent client retries on its own; the user only needs to know that the picture may be stale.
  const report = (err: unknown): void =>
    onError(`watch of ${resourceName(k)}: ${err instanceof Error ? err.message : String(err)}`);
  watcher.events.on("list_error", report);
  watcher.events.on("watch_error", report);
  await watcher.start();
  return { close: () => watcher.close() };
}
