/**
 * A typed client for one custom resource, through the generic CustomObjectsApi (which sends objects verbatim; the
 * typed APIs of client-node re-serialize through models and drop unknown keys).
 */
import type { Kube } from "./access.js";
import { AnswerTooLargeError, statusCodeOf } from "./errors.js";
import {
  apiRequest,
  PARTIAL_OBJECT_METADATA,
  PRINTED_TABLE,
  RequestTimeoutError,
  type ApiRequest,
  type Query,
} from "./transport.js";
import type { ResourceType } from "../../api/registry.js";
import type { ObjectMeta } from "../../api/v1alpha1/types.js";

export { RequestTimeoutError };

/**
 * A get, update, patch or delete asked for an object with an empty name. The API server would read `<plural>/` as the
 * collection (a GET lists it, a PATCH answers 404), so such a call is refused before anything is sent: a caller that
 * takes a name from an unchecked field (a claim's empty pool reference) gets this error, never a list posing as an
 * object.
 */
export class EmptyNameError extends Error {
  constructor(verb: string, plural: string) {
    super(`refused to ${verb} ${plural} with an empty name`);
    this.name = "EmptyNameError";
  }
}
/** The REST address of one served version of a kind; build it from api/registry.ts with `resourceType()`. */
export type { ResourceType };

/** The minimum every object we cache has. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/** An object read as metadata only (`meta.k8s.io/v1` PartialObjectMetadata). */
export interface PartialObjectMetadata extends KubeObject {
  kind?: "PartialObjectMetadata";
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

/**
 * Default deadline of every request. The API server ends ordinary requests after 60 s itself (`--request-timeout`),
 * so this only bites when the server cannot answer at all (stopped, or a connection that died without a reset); then
 * a reconcile fails and is retried instead of waiting forever while holding its pool's queue slot.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 70_000;

/** Objects a list page holds, as client-go's pager asks for. */
const LIST_PAGE = 500;

/**
 * Rows a printed list page holds. A row is a few cells (the name, then the kind's printer columns), so a page of this
 * many rows weighs about what a {@link LIST_PAGE} of whole objects does, and a namespace of a few thousand records is
 * one request per barrier instead of one per 500. A tenant who makes more records makes more pages, never a larger
 * one; rows made large by what a tenant wrote in the printed fields make the page shorter (see pageLoop).
 */
const PRINTED_PAGE = 5_000;

const MERGE_PATCH = "application/merge-patch+json";
const JSON_PATCH = "application/json-patch+json";

/** Options of {@link ResourceClient.list}. */
export interface ListOptions {
  /** Deadline of each page. */
  timeoutMs?: number;
  fieldSelector?: string;
  labelSelector?: string;
  /** A resourceVersion the answer must be at least as new as. */
  notOlderThan?: string;
  /** Stop after the first page of at most this many objects (a probe). */
  limit?: number;
  /** Awaited before each page after the first: the caller may hold the list there (src/kube/pacer.ts). */
  beforeNextPage?: () => Promise<void>;
}

/**
 * A collection as the API server prints it (server-side printing: `Name`, then the kind's printer columns), without
 * the objects: a few cells per object instead of the whole object.
 */
/** One page of a printed list: its rows, and the columns of the list (the first page names them). */
export interface PrintedPage {
  /** Column names, in cell order. */
  columns: readonly string[];
  /** One row of cells per object of this page. */
  rows: readonly (readonly unknown[])[];
}

export interface ResourceClientOptions {
  /** Deadline of each request (each page of a list). Default {@link DEFAULT_REQUEST_TIMEOUT_MS}. */
  requestTimeoutMs?: number;
  /** The largest answer body taken; default the transport's MAX_ANSWER_BYTES. */
  maxAnswerBytes?: number;
}

/**
 * CRUD for one resource type (custom or built-in, namespaced or cluster-scoped; `namespace` is ignored for
 * cluster-scoped types). Methods reject with an ApiError (classify with ./errors.ts), a network error, or a
 * {@link RequestTimeoutError} when the deadline passed.
 */
export class ResourceClient<T extends KubeObject> {
  private fieldSelectorsWork = true;
  /** Whether the API server has answered a list by a selectable field yet (filtered, or 400). */
  private fieldSelectorsKnown = false;

  constructor(
    readonly kube: Kube,
    readonly type: ResourceType,
    private readonly clientOptions: ResourceClientOptions = {},
  ) {}

  private async send<R>(what: string, req: Omit<ApiRequest, "what" | "timeoutMs">, timeoutMs?: number): Promise<R> {
    const ms = timeoutMs ?? this.clientOptions.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    return await apiRequest<R>(this.kube, {
      ...req,
      what: `${what} ${this.type.plural}`,
      timeoutMs: ms,
      maxAnswerBytes: this.clientOptions.maxAnswerBytes,
    });
  }

  /** URL path of the collection (all namespaces without `namespace`), for lists and watches. */
  collectionPath(namespace?: string): string {
    const { group, version, plural } = this.type;
    const prefix = group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
    return namespace && this.type.namespaced ? `${prefix}/namespaces/${namespace}/${plural}` : `${prefix}/${plural}`;
  }

  /** URL path of one object; throws {@link EmptyNameError} for an empty name (see there). */
  private objectPath(verb: string, namespace: string, name: string, subresource?: string): string {
    if (!name) throw new EmptyNameError(verb, this.type.plural);
    return `${this.collectionPath(namespace)}/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ""}`;
  }

  /**
   * Lists every object (all pages), in one namespace or all. `timeoutMs` is the deadline of each page.
   * With `notOlderThan` (a resourceVersion) the answer is at least that fresh, and the API server may serve it from
   * its watch cache, so it is cheap yet a barrier: every object written before that version is in it. Without it,
   * the list is a quorum read.
   */
  async list(namespace?: string, options: ListOptions = {}): Promise<ListResult<T>> {
    const items: T[] = [];
    const resourceVersion = await this.listPages(namespace, options, (page) => items.push(...page));
    return { items, resourceVersion };
  }

  /**
   * Lists like {@link list}, handing each page to `onPage` as it arrives instead of gathering them: a caller that
   * folds pages into its own structure holds one page at a time, not the whole collection. Every page is of one
   * snapshot; resolves to its resourceVersion after the last page. A page that fails rejects, after the earlier
   * pages were handed over.
   */
  async listPages(
    namespace: string | undefined,
    options: ListOptions,
    onPage: (items: T[], resourceVersion: string) => void,
  ): Promise<string> {
    return await this.pageLoop<{ items: T[]; metadata?: { resourceVersion?: string } }>(
      namespace,
      { ...options, query: { fieldSelector: options.fieldSelector, labelSelector: options.labelSelector } },
      (page) => onPage(page.items, page.metadata?.resourceVersion ?? ""),
    );
  }

  /**
   * The pagination of every list: pages of `limit` (default {@link LIST_PAGE}; a caller's `limit` stops after the
   * first page), each handed to `onPage` as it arrives, until `onPage` answers false; resolves to the snapshot's
   * resourceVersion. The first page pins the snapshot (`notOlderThan`); later pages carry it in the continue token and
   * must not repeat it. A page too large for the transport's bound (many large objects) is asked for again, from the
   * same place, a tenth as long, and the rest of the list keeps the shorter page: however large the objects tenants
   * write, a page stays within the bound, down to one object per page. A caller's probe (`limit`) is not shrunk.
   */
  private async pageLoop<P>(
    namespace: string | undefined,
    options: Pick<ListOptions, "notOlderThan" | "timeoutMs" | "limit" | "beforeNextPage"> & {
      query: Query;
      accept?: string;
      /** Objects or rows a page holds; default {@link LIST_PAGE}. */
      pageSize?: number;
    },
    onPage: (page: P) => boolean | void,
  ): Promise<string> {
    let continueToken: string | undefined;
    let resourceVersion = "";
    // Pages too large for the transport's bound are asked for again, from the same place, shorter.
    let pageSize = options.limit ?? options.pageSize ?? LIST_PAGE;
    for (;;) {
      const query: Query = {
        limit: pageSize,
        continue: continueToken,
        ...options.query,
        ...(!continueToken && options.notOlderThan
          ? { resourceVersion: options.notOlderThan, resourceVersionMatch: "NotOlderThan" }
          : {}),
      };
      let page: P & { metadata?: { resourceVersion?: string; continue?: string } };
      try {
        page = await this.send(
          "list",
          { method: "GET", path: this.collectionPath(namespace), query, accept: options.accept },
          options.timeoutMs,
        );
      } catch (err) {
        if (!(err instanceof AnswerTooLargeError) || options.limit !== undefined || pageSize === 1) throw err;
        pageSize = Math.max(1, Math.floor(pageSize / 10));
        continue;
      }
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      continueToken = options.limit === undefined ? page.metadata?.continue || undefined : undefined;
      if (onPage(page) === false || !continueToken) return resourceVersion;
      await options.beforeNextPage?.();
    }
  }

  /**
   * The objects of `namespace` whose selectable field `field` (e.g. `spec.pool.name`) equals `value`: filtered by the
   * API server where the CRD declares `selectableFields` (Kubernetes 1.31+). An older server answers 400; then this
   * client lists the namespace and filters with `read` itself, from then on.
   */
  async listWhere(
    namespace: string,
    field: string,
    value: string,
    read: (obj: T) => string | undefined,
    options: Omit<ListOptions, "fieldSelector"> = {},
  ): Promise<T[]> {
    if (this.fieldSelectorsWork) {
      try {
        const items = (await this.list(namespace, { ...options, fieldSelector: `${field}=${value}` })).items;
        this.fieldSelectorsKnown = true;
        return items;
      } catch (err) {
        if (statusCodeOf(err) !== 400) throw err;
        this.noFieldSelectors();
      }
    }
    // Filtered page by page: the heap holds one page and the matches, not the whole collection.
    const matches: T[] = [];
    await this.listPages(namespace, options, (page) => {
      for (const obj of page) if (read(obj) === value) matches.push(obj);
    });
    return matches;
  }

  /**
   * Whether the API server filters lists of this resource by selectable field `field`: asked once, with a list of at
   * most one object of `namespace` whose field equals `value`, and remembered (as {@link listWhere} remembers it). A
   * caller with a cheaper way than listing the namespace in full asks this first.
   */
  async filtersField(namespace: string, field: string, value: string): Promise<boolean> {
    if (this.fieldSelectorsKnown) return this.fieldSelectorsWork;
    try {
      await this.list(namespace, { fieldSelector: `${field}=${value}`, limit: 1 });
      this.fieldSelectorsKnown = true;
    } catch (err) {
      if (statusCodeOf(err) !== 400) throw err;
      this.noFieldSelectors();
    }
    return this.fieldSelectorsWork;
  }

  private noFieldSelectors(): void {
    this.fieldSelectorsWork = false;
    this.fieldSelectorsKnown = true;
  }

  /**
   * Lists one namespace's objects, or every namespace's with `namespace` "", as printed rows, handing each page to
   * `onPage` as it arrives (no page is kept) until it answers false, at least as fresh as `notOlderThan` when given
   * (the same barrier as {@link list}) and only of the objects `labelSelector` selects when given; resolves to the
   * list's resourceVersion. A row does not say its object's namespace.
   */
  async listPrinted(
    namespace: string,
    options: Pick<ListOptions, "notOlderThan" | "timeoutMs" | "labelSelector">,
    onPage: (page: PrintedPage) => boolean | void,
  ): Promise<string> {
    let columns: string[] = [];
    return await this.pageLoop<{ columnDefinitions?: { name: string }[]; rows?: { cells?: unknown[] }[] }>(
      namespace,
      {
        ...options,
        query: { includeObject: "None", labelSelector: options.labelSelector },
        accept: PRINTED_TABLE,
        pageSize: PRINTED_PAGE,
      },
      (page) => {
        if (page.columnDefinitions) columns = page.columnDefinitions.map((c) => c.name);
        return onPage({ columns, rows: (page.rows ?? []).map((row) => row.cells ?? []) });
      },
    );
  }

  /** Whether the API server serves this resource at all (a one-object list; 404 means not served). */
  async served(): Promise<boolean> {
    try {
      await this.list(undefined, { limit: 1 });
      return true;
    } catch (err) {
      if (statusCodeOf(err) === 404) return false;
      throw err;
    }
  }

  async get(namespace: string, name: string): Promise<T> {
    return await this.send<T>("get", { method: "GET", path: this.objectPath("get", namespace, name) });
  }

  /**
   * The object's metadata alone (a `PartialObjectMetadata`: `metadata`, no spec or status), for a caller that needs
   * its uid or labels: the API server then neither sends nor has this thread parse an object of up to 1.5 MiB.
   */
  async getMetadata(namespace: string, name: string): Promise<PartialObjectMetadata> {
    return await this.send<PartialObjectMetadata>("get metadata of", {
      method: "GET",
      path: this.objectPath("get metadata of", namespace, name),
      accept: PARTIAL_OBJECT_METADATA,
    });
  }

  async create(namespace: string, body: T): Promise<T> {
    const full = { apiVersion: this.apiVersion(), kind: this.type.kind, ...body };
    return await this.send<T>("create", { method: "POST", path: this.collectionPath(namespace), body: full });
  }

  /** Full update (PUT); carries the body's resourceVersion, so a stale one answers 409. */
  async replace(namespace: string, name: string, body: T): Promise<T> {
    const full = { apiVersion: this.apiVersion(), kind: this.type.kind, ...body };
    return await this.send<T>("update", {
      method: "PUT",
      path: this.objectPath("update", namespace, name),
      body: full,
    });
  }

  /**
   * JSON merge patch. Put `metadata.resourceVersion` in the patch to make it conditional: the API server then
   * answers 409 Conflict when the object changed since (optimistic locking).
   */
  async patch(namespace: string, name: string, patch: object): Promise<T> {
    return await this.send<T>("patch", {
      method: "PATCH",
      path: this.objectPath("patch", namespace, name),
      body: patch,
      contentType: MERGE_PATCH,
    });
  }

  /** JSON patch (RFC 6902): for edits a merge patch cannot express (one element of a list). */
  async patchJson(namespace: string, name: string, operations: readonly object[]): Promise<T> {
    return await this.send<T>("patch", {
      method: "PATCH",
      path: this.objectPath("patch", namespace, name),
      body: operations,
      contentType: JSON_PATCH,
    });
  }

  /** Merge patch of the status subresource; conditional like patch(). */
  async patchStatus(namespace: string, name: string, patch: object): Promise<T> {
    return await this.send<T>("patch status of", {
      method: "PATCH",
      path: this.objectPath("patch status of", namespace, name, "status"),
      body: patch,
      contentType: MERGE_PATCH,
    });
  }

  /** Deletes; with `uid`, only that incarnation of the object (a same-named successor is left alone). */
  async delete(namespace: string, name: string, uid?: string): Promise<void> {
    const body = uid ? { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid } } : undefined;
    const path = this.objectPath("delete", namespace, name);
    await this.send("delete", { method: "DELETE", path, ...(body ? { body } : {}) });
  }

  apiVersion(): string {
    return this.type.group === "" ? this.type.version : `${this.type.group}/${this.type.version}`;
  }
}
