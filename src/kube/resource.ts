/**
 * A typed client for one custom resource, through the generic CustomObjectsApi (which sends objects verbatim; the
 * typed APIs of client-node re-serialize through models and drop unknown keys).
 */
import {
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
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

/** CRUD for one resource type. Methods reject with client-node's ApiException; classify with ./errors.ts. */
export class ResourceClient<T extends KubeObject> {
  private readonly api: CustomObjectsApi;

  constructor(
    readonly kubeConfig: KubeConfig,
    readonly type: ResourceType,
  ) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
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

  /** Lists every object (all pages), in one namespace or all. */
  async list(namespace?: string): Promise<ListResult<T>> {
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion = "";
    do {
      const page = (namespace
        ? await this.api.listNamespacedCustomObject({ ...this.base(), namespace, limit: 500, _continue: continueToken })
        : await this.api.listClusterCustomObject({ ...this.base(), limit: 500, _continue: continueToken })) as {
        items: T[];
        metadata?: { resourceVersion?: string; continue?: string };
      };
      items.push(...page.items);
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return { items, resourceVersion };
  }

  /**
   * Lists a namespace with an optional field selector, guaranteed to be at least as new as `notOlderThan` (a
   * resourceVersion). The API server may answer from its watch cache, so this is cheap, yet it is a barrier: every
   * object written before that resourceVersion is in the answer. Without `notOlderThan` it is a quorum read.
   */
  async listFresh(namespace: string, options: { fieldSelector?: string; notOlderThan?: string }): Promise<T[]> {
    const items: T[] = [];
    let continueToken: string | undefined;
    do {
      // The first page pins the snapshot; later pages carry it in the continue token and must not repeat it.
      const freshness = !continueToken && options.notOlderThan ? { resourceVersion: options.notOlderThan, resourceVersionMatch: "NotOlderThan" } : {};
      const page = (await this.api.listNamespacedCustomObject({
        ...this.base(),
        namespace,
        limit: 500,
        _continue: continueToken,
        ...(options.fieldSelector ? { fieldSelector: options.fieldSelector } : {}),
        ...freshness,
      })) as { items: T[]; metadata?: { continue?: string } };
      items.push(...page.items);
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return items;
  }

  async get(namespace: string, name: string): Promise<T> {
    return (await this.api.getNamespacedCustomObject({ ...this.base(), namespace, name })) as T;
  }

  async create(namespace: string, body: T): Promise<T> {
    const full = { apiVersion: this.apiVersion(), kind: this.type.kind, ...body };
    return (await this.api.createNamespacedCustomObject({ ...this.base(), namespace, body: full })) as T;
  }

  /**
   * JSON merge patch. Put `metadata.resourceVersion` in the patch to make it conditional: the API server then
   * answers 409 Conflict when the object changed since (optimistic locking).
   */
  async patch(namespace: string, name: string, patch: object): Promise<T> {
    return (await this.api.patchNamespacedCustomObject({ ...this.base(), namespace, name, body: patch }, mergePatch)) as T;
  }

  /** Merge patch of the status subresource; conditional like patch(). */
  async patchStatus(namespace: string, name: string, patch: object): Promise<T> {
    return (await this.api.patchNamespacedCustomObjectStatus({ ...this.base(), namespace, name, body: patch }, mergePatch)) as T;
  }

  /** Deletes; with `uid`, only that incarnation of the object (a same-named successor is left alone). */
  async delete(namespace: string, name: string, uid?: string): Promise<void> {
    const body = uid ? { preconditions: { uid } } : undefined;
    await this.api.deleteNamespacedCustomObject({ ...this.base(), namespace, name, body });
  }

  apiVersion(): string {
    return this.type.group === "" ? this.type.version : `${this.type.group}/${this.type.version}`;
  }
}
