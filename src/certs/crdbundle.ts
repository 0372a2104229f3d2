/**
 * Keeps `spec.conversion.webhook.clientConfig.caBundle` of named CustomResourceDefinitions equal to our CA
 * (self-managed mode): the in-cluster pools' CRDs name our webhook Service's `/convert` as their conversion webhook,
 * and the API server must trust the certificate it serves. Run like `CaBundleInjector` (every resync), so a reset
 * bundle (a re-applied CRD) is repaired on the next sync.
 *
 * Which CRDs are ours to patch (the names alone do not tell: a cluster running the in-cluster provider itself has CRDs
 * of the same names, converted by that provider's webhook):
 * - absent, or not converted by a webhook: nothing to do (the CRDs are an optional component);
 * - a webhook at a Service other than ours (name and namespace): the provider's, left alone (logged once);
 * - a webhook at our Service, or at a URL (set deliberately: local runs, tests): patched.
 * Each of those counts as current for readiness; only a failed read or patch does not.
 */
import type { Kube } from "../kube/access.js";
import { describeError, isForbidden, isNotFound } from "../kube/errors.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import type { Logger } from "../runtime/logger.js";
import { SELF_MANAGED_RBAC_HINT } from "./rbac.js";

interface ClientConfig {
  url?: string;
  caBundle?: string;
  service?: { name?: string; namespace?: string; path?: string };
}

interface Crd extends KubeObject {
  spec?: { conversion?: { strategy?: string; webhook?: { clientConfig?: ClientConfig } } };
}

/** Our webhook Service: a conversion webhook pointing at another one is not ours to touch. */
export interface OwnService {
  name: string;
  namespace: string;
}

interface PatchOp {
  op: "test" | "add";
  path: string;
  value: unknown;
}

const CLIENT_CONFIG_PATH = "/spec/conversion/webhook/clientConfig";

/**
 * The patch that makes a CRD's conversion webhook carry `bundle`: empty when it does, or when the CRD is not ours
 * (see the file header); `foreign` says why it was left alone. The patch tests the strategy and the Service first, so
 * a CRD re-pointed between our read and our write fails the patch instead of getting our CA.
 */
export function crdBundlePatch(crd: Crd, bundle: string, own: OwnService): { ops: PatchOp[]; foreign?: string } {
  const conversion = crd.spec?.conversion;
  const config = conversion?.webhook?.clientConfig;
  if (conversion?.strategy !== "Webhook" || !config) return { ops: [] };
  const service = config.service;
  if (service && (service.name !== own.name || service.namespace !== own.namespace)) {
    return { ops: [], foreign: `converted by Service ${service.namespace ?? ""}/${service.name ?? ""}` };
  }
  if (config.caBundle === bundle) return { ops: [] };
  return {
    ops: [
      { op: "test", path: "/spec/conversion/strategy", value: "Webhook" },
      ...(service ? [{ op: "test" as const, path: `${CLIENT_CONFIG_PATH}/service`, value: service }] : []),
      ...(config.url !== undefined
        ? [{ op: "test" as const, path: `${CLIENT_CONFIG_PATH}/url`, value: config.url }]
        : []),
      { op: "add", path: `${CLIENT_CONFIG_PATH}/caBundle`, value: bundle },
    ],
  };
}

/** See the file header. */
export class CrdBundleInjector {
  private readonly client: ResourceClient<Crd>;
  /** Last problem (or reason to leave it alone) logged per CRD, so a lasting one is logged once. */
  private readonly notes = new Map<string, string>();

  constructor(
    kube: Kube,
    private readonly names: readonly string[],
    private readonly own: OwnService,
    private readonly logger: Logger,
  ) {
    this.client = new ResourceClient<Crd>(kube, {
      group: "apiextensions.k8s.io",
      version: "v1",
      plural: "customresourcedefinitions",
      kind: "CustomResourceDefinition",
      namespaced: false,
    });
  }

  /**
   * Makes the conversion webhook of every named CRD that is ours carry `caPem`. Never rejects.
   * @returns true when none failed to be read or patched.
   */
  async sync(caPem: string): Promise<boolean> {
    const bundle = Buffer.from(caPem).toString("base64");
    const results = await Promise.all(this.names.map((name) => this.syncOne(name, bundle)));
    return results.every(Boolean);
  }

  /** Logs `text` about `name` once while it lasts (`undefined`: nothing to say any more). */
  private note(name: string, text: string | undefined, level: "info" | "warn" = "info", hint?: string): void {
    if (text === undefined || this.notes.get(name) === text) {
      if (text === undefined) this.notes.delete(name);
      return;
    }
    this.notes.set(name, text);
    const message = level === "warn" ? "Cannot inject CA bundle into CRD; retrying" : "Leaving CRD's conversion alone";
    this.logger[level](message, { crd: name, problem: text, ...(hint ? { hint } : {}) });
  }

  private async syncOne(name: string, bundle: string): Promise<boolean> {
    try {
      const { ops, foreign } = crdBundlePatch(await this.client.get("", name), bundle, this.own);
      this.note(name, foreign);
      if (ops.length === 0) return true;
      await this.client.patchJson("", name, ops);
      this.logger.info("Injected CA bundle into CRD conversion webhook", { crd: name });
      return true;
    } catch (err) {
      if (isNotFound(err)) {
        this.note(name, undefined);
        return true;
      }
      this.note(name, describeError(err), "warn", isForbidden(err) ? SELF_MANAGED_RBAC_HINT : undefined);
      return false;
    }
  }
}
