/**
 * A typed client for one custom resource, through the generic CustomObjectsApi (which sends objects verbatim; the
 * typed APIs of client-node re-serialize through models and drop unknown keys).
 */
import {
  CustomObjectsApi,
  Observable,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type KubeConfig,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
} from "@kubernetes/client-node";
import { shareConnections } from "./connections.js";
import { statusCodeOf } from "./errors.js";
import type { ObjectMeta } from "../../api/v1alpha1/types.js";

/** The minimum every object we cache has. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/**
 * Default deadline of every request. The API server ends ordinary requests after 60 s itself (`--request-timeout`),
 * so this only bites when the server cannot answer at all (stopped, or a connection that died without a reset); then
 * a reconcile fails and is retried instead of waiting forever while holding its pool's queue slot.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 70_000;

/** Thrown when a request got no answer within its deadline. Whether a write took effect is then unknown. */
export class RequestTimeoutError extends Error {
  override name = "RequestTimeoutError";
}

/**
 * Per-request options adding an abort deadline to `base`; the timer starts when the request is sent. `clear` cancels
 * it once the call settled, so no timer (and no signal) outlives its request.
 */
function withDeadline(ms: number, base?: ConfigurationOptions): { options: ConfigurationOptions; clear: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const deadline: ObservableMiddleware = {
    pre: (ctx: RequestContext) => {
      const abort = new AbortController();
      timer = setTimeout(() => abort.abort(), ms);
      timer.unref();
      ctx.setSignal(abort.signal);
      return new Observable(Promise.resolve(ctx));
    },
    post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
  };
  const options: ConfigurationOptions = { ...base, middleware: [...(base?.middleware ?? []), deadline], middlewareMergeStrategy: "append" };
  return { options, clear: () => clearTimeout(timer) };
}

const isAbort = (err: unknown): boolean => typeof err === "object" && err !== null && (err as { name?: unknown }).name === "AbortError";

/** Options of {@link ResourceClient.list}. */
export interface ListOptions {
  /** Deadline of each page. */
  timeoutMs?: number;
  fieldSelector?: string;
  /** A resourceVersion the answer must be at least as new as. */
  notOlderThan?: string;
}

export interface ResourceClientOptions {
  /** Deadline of each request (each page of a list). Default {@link DEFAULT_REQUEST_TIMEOUT_MS}. */
  requestTimeoutMs?: number;
}

/**
 * CRUD for one resource type. Methods reject with client-node's ApiException (classify with ./errors.ts), with a
 * network error, or with {@link RequestTimeoutError} when the deadline passed.
 */
export class ResourceClient<T extends KubeObject> {
  private readonly api: CustomObjectsApi;
  private fieldSelectorsWork = true;

  constructor(
    readonly kubeConfig: KubeConfig,
    readonly type: ResourceType,
    private readonly clientOptions: ResourceClientOptions = {},
  ) {
    this.api = shareConnections(kubeConfig).makeApiClient(CustomObjectsApi);
  }

  /** Runs one request with a deadline; an abort becomes a RequestTimeoutError naming the request. */
  private async call<R>(what: string, send: (options: ConfigurationOptions) => Promise<unknown>, timeoutMs?: number, base?: ConfigurationOptions): Promise<R> {
    const ms = timeoutMs ?? this.clientOptions.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const deadline = withDeadline(ms, base);
    try {
      return (await send(deadline.options)) as R;
    } catch (err) {
      if (isAbort(err)) throw new RequestTimeoutError(`${what} ${this.type.plural} got no answer within ${ms} ms`);
      throw err;
    } finally {
      deadline.clear();
    }
  }

  private base(): { group: string; version: string; plural: string } {
    return { group: this.type.group, version: this.type.version, plural: this.type.plural };
  }

  /** URL path of the collection, for watches. */
  collectionPath(namespace?: string): string {
    const { group, version, plural } = this.type;
    const prefix = group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
    return namespace ? `${prefix}/namespaces/${namespace}/${plural}` : `${prefix}/${plural}`;
  }

  /**
   * Lists every object (all pages), in one namespace or all. `timeoutMs` is the deadline of each page.
   * With `notOlderThan` (a resourceVersion) the answer is at least that fresh, and the API server may serve it from
   * its watch cache, so it is cheap yet a barrier: every object written before that version is in it. Without it,
   * the list is a quorum read.
   */
  async list(namespace?: string, options: ListOptions = {}): Promise<ListResult<T>> {
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion = "";
    do {
      // The first page pins the snapshot; later pages carry it in the continue token and must not repeat it.
      const query = {
        ...this.base(),
        limit: 500,
        _continue: continueToken,
        ...(options.fieldSelector ? { fieldSelector: options.fieldSelector } : {}),
        ...(!continueToken && options.notOlderThan ? { resourceVersion: options.notOlderThan, resourceVersionMatch: "NotOlderThan" } : {}),
      };
      const page = await this.call<{ items: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
        "list",
        (o) => (namespace ? this.api.listNamespacedCustomObject({ ...query, namespace }, o) : this.api.listClusterCustomObject(query, o)),
        options.timeoutMs,
      );
      items.push(...page.items);
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return { items, resourceVersion };
  }

  /**
   * The objects of `namespace` whose selectable field `field` (e.g. `spec.pool.name`) equals `value`: filtered by the
   * API server where the CRD declares `selectableFields` (Kubernetes 1.31+). An older server answers 400; then this
   * client lists the namespace and filters with `read` itself, from then on.
   */
  async listWhere(namespace: string, field: string, value: string, read: (obj: T) => string | undefined, options: Omit<ListOptions, "fieldSelector"> = {}): Promise<T[]> {
    if (this.fieldSelectorsWork) {
      try {
        return (await this.list(namespace, { ...options, fieldSelector: `${field}=${value}` })).items;
      } catch (err) {
        if (statusCodeOf(err) !== 400) throw err;
        this.fieldSelectorsWork = false;
      }
    }
    return (await this.list(namespace, options)).items.filter((obj) => read(obj) === value);
  }

  async get(namespace: string, name: string): Promise<T> {
    return await this.call<T>("get", (o) => this.api.getNamespacedCustomObject({ ...this.base(), namespace, name }, o));
  }

  async create(namespace: string, body: T): Promise<T> {
    const full = { apiVersion: this.apiVersion(), kind: this.type.kind, ...body };
    return await this.call<T>("create", (o) => this.api.createNamespacedCustomObject({ ...this.base(), namespace, body: full }, o));
  }

  /**
   * JSON merge patch. Put `metadata.resourceVersion` in the patch to make it conditional: the API server then
   * answers 409 Conflict when the object changed since (optimistic locking).
   */
  async patch(namespace: string, name: string, patch: object): Promise<T> {
    return await this.call<T>("patch", (o) => this.api.patchNamespacedCustomObject({ ...this.base(), namespace, name, body: patch }, o), undefined, mergePatch);
  }

  /** Merge patch of the status subresource; conditional like patch(). */
  async patchStatus(namespace: string, name: string, patch: object): Promise<T> {
    return await this.call<T>("patch status of", (o) => this.api.patchNamespacedCustomObjectStatus({ ...this.base(), namespace, name, body: patch }, o), undefined, mergePatch);
  }

  /** Deletes; with `uid`, only that incarnation of the object (a same-named successor is left alone). */
  async delete(namespace: string, name: string, uid?: string): Promise<void> {
    const body = uid ? { preconditions: { uid } } : undefined;
    await this.call("delete", (o) => this.api.deleteNamespacedCustomObject({ ...this.base(), namespace, name, body }, o));
  }

  apiVersion(): string {
    return this.type.group === "" ? this.type.version : `${this.type.group}/${this.type.version}`;
  }
}
