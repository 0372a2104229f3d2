/**
 * Keeps `clientConfig.caBundle` of named Mutating/ValidatingWebhookConfigurations equal to our CA (self-managed
 * mode). Each sync reads the configurations and patches only webhooks whose bundle differs, with a JSON patch that
 * first tests the webhook's name at that index, so a concurrent reorder fails the patch instead of corrupting it.
 * Run it periodically: whoever resets a bundle (a re-applied manifest, `kubectl apply` of config/webhook) gets it
 * repaired on the next sync.
 */
import type { Kube } from "../kube/access.js";
import { describeError, isForbidden, isNotFound } from "../kube/errors.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import type { Logger } from "../runtime/logger.js";
import { SELF_MANAGED_RBAC_HINT } from "./rbac.js";

/** A webhook configuration to keep current. */
export interface BundleTarget {
  kind: "mutating" | "validating";
  name: string;
}

interface PatchOp {
  op: "test" | "add";
  path: string;
  value: unknown;
}

interface WebhookLike {
  name: string;
  clientConfig?: { caBundle?: string };
}

interface WebhookConfiguration extends KubeObject {
  webhooks?: WebhookLike[];
}

const configurations = (kube: Kube, plural: string, kind: string): ResourceClient<WebhookConfiguration> =>
  new ResourceClient<WebhookConfiguration>(kube, {
    group: "admissionregistration.k8s.io",
    version: "v1",
    plural,
    kind,
    namespaced: false,
  });

/** The patch that puts `bundle` (base64) into every webhook that lacks it; empty when all carry it. */
export function bundlePatch(webhooks: readonly WebhookLike[], bundle: string): PatchOp[] {
  const ops: PatchOp[] = [];
  webhooks.forEach((w, i) => {
    if (w.clientConfig?.caBundle === bundle) return;
    ops.push({ op: "test", path: `/webhooks/${i}/name`, value: w.name });
    ops.push({ op: "add", path: `/webhooks/${i}/clientConfig/caBundle`, value: bundle });
  });
  return ops;
}

/** See the file header. */
export class CaBundleInjector {
  private readonly clients: Record<BundleTarget["kind"], ResourceClient<WebhookConfiguration>>;
  /** Last problem logged per configuration, so a lasting one is logged once. */
  private readonly problems = new Map<string, string>();

  constructor(
    kube: Kube,
    private readonly targets: readonly BundleTarget[],
    private readonly logger: Logger,
  ) {
    this.clients = {
      mutating: configurations(kube, "mutatingwebhookconfigurations", "MutatingWebhookConfiguration"),
      validating: configurations(kube, "validatingwebhookconfigurations", "ValidatingWebhookConfiguration"),
    };
  }

  /**
   * Makes every webhook of every target carry `caPem`. Never rejects.
   * @returns true when every target exists and carries it (after this sync's patches).
   */
  async sync(caPem: string): Promise<boolean> {
    const bundle = Buffer.from(caPem).toString("base64");
    const results = await Promise.all(this.targets.map((t) => this.syncOne(t, bundle)));
    return results.every(Boolean);
  }

  private async syncOne(target: BundleTarget, bundle: string): Promise<boolean> {
    const key = `${target.kind}/${target.name}`;
    try {
      const client = this.clients[target.kind];
      const config = await client.get("", target.name);
      const ops = bundlePatch(config.webhooks ?? [], bundle);
      if (ops.length === 0) {
        this.problems.delete(key);
        return true;
      }
      await client.patchJson("", target.name, ops);
      this.problems.delete(key);
      this.logger.info("Injected CA bundle", { configuration: key, webhooks: ops.length / 2 });
      return true;
    } catch (err) {
      const problem = isNotFound(err) ? "not found" : describeError(err);
      if (this.problems.get(key) !== problem) {
        const hint = isForbidden(err) ? { hint: SELF_MANAGED_RBAC_HINT } : {};
        this.logger.warn("Cannot inject CA bundle; retrying", { configuration: key, problem, ...hint });
        this.problems.set(key, problem);
      }
      return false;
    }
  }
}
