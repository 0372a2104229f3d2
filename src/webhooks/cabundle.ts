/**
 * Keeps `clientConfig.caBundle` of named Mutating/ValidatingWebhookConfigurations equal to our CA (self-managed
 * mode). Each sync reads the configurations and patches only webhooks whose bundle differs, with a JSON patch that
 * first tests the webhook's name at that index, so a concurrent reorder fails the patch instead of corrupting it.
 * Run it periodically: whoever resets a bundle (a re-applied manifest, `kubectl apply` of config/webhook) gets it
 * repaired on the next sync.
 */
import { AdmissionregistrationV1Api, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { describeError, isNotFound } from "../kube/errors.js";
import type { Logger } from "../runtime/logger.js";

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

const jsonPatch = setHeaderOptions("Content-Type", PatchStrategy.JsonPatch);

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
  private readonly api: AdmissionregistrationV1Api;
  /** Last problem logged per configuration, so a lasting one is logged once. */
  private readonly problems = new Map<string, string>();

  constructor(
    kubeConfig: KubeConfig,
    private readonly targets: readonly BundleTarget[],
    private readonly logger: Logger,
  ) {
    this.api = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
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
      const config =
        target.kind === "mutating"
          ? await this.api.readMutatingWebhookConfiguration({ name: target.name })
          : await this.api.readValidatingWebhookConfiguration({ name: target.name });
      const ops = bundlePatch(config.webhooks ?? [], bundle);
      if (ops.length === 0) {
        this.problems.delete(key);
        return true;
      }
      const request = { name: target.name, body: ops };
      if (target.kind === "mutating") await this.api.patchMutatingWebhookConfiguration(request, jsonPatch);
      else await this.api.patchValidatingWebhookConfiguration(request, jsonPatch);
      this.problems.delete(key);
      this.logger.info("Injected CA bundle", { configuration: key, webhooks: ops.length / 2 });
      return true;
    } catch (err) {
      const problem = isNotFound(err) ? "not found" : describeError(err);
      if (this.problems.get(key) !== problem) {
        this.logger.warn("Cannot inject CA bundle; retrying", { configuration: key, problem });
        this.problems.set(key, problem);
      }
      return false;
    }
  }
}
