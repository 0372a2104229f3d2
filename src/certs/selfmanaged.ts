/**
 * Self-managed certificates, for clusters without cert-manager: the process makes a CA and a serving certificate for
 * its Service, and keeps the `caBundle` of its webhook configurations, and of the conversion webhook of the CRDs named
 * in `conversionCrds`, equal to that CA (re-patching whenever someone resets it). Every `resyncMs` it renews the serving certificate 30 days before it expires and syncs the bundles.
 *
 * Replicas: every replica serves webhooks (spec §3.4), so they must share one CA, or each would overwrite the bundle
 * with its own and the API server would distrust the others. With `secretName` the CA and certificate live in that
 * Secret (type kubernetes.io/tls plus `ca.crt`/`ca.key`): the first replica creates it, the others adopt it,
 * renewals use optimistic locking and every replica picks the new pair up on its next resync. Without `secretName`
 * they live in memory: fine for one replica (a restart makes a new CA and re-patches the bundle).
 */
import type { Kube } from "../kube/access.js";
import { describeError, isConflict, isForbidden, isNotFound } from "../kube/errors.js";
import { ResourceClient, type KubeObject } from "../kube/resource.js";
import type { Logger } from "../runtime/logger.js";
import { CaBundleInjector } from "./cabundle.js";
import { CrdBundleInjector } from "./crdbundle.js";
import { SELF_MANAGED_RBAC_HINT } from "./rbac.js";
import type { CertificateSource } from "./certdir.js";
import {
  createCertificateAuthority,
  issueServingCertificate,
  serviceHosts,
  servingCertificateProblem,
  usableCertificateAuthority,
} from "./pki.js";
import type { CertificatePair } from "./pki.js";

/** Options of the self-managed mode. */
export interface SelfManagedOptions {
  /** Client for the webhook configurations (get, patch) and the Secret (get, create, update). */
  kubeConfig: Kube;
  /** Name of the MutatingWebhookConfiguration to keep current. */
  mutatingName: string;
  /** Name of the ValidatingWebhookConfiguration to keep current. */
  validatingName: string;
  /** The Service in front of the webhook server; its in-cluster names go into the certificate. */
  serviceName: string;
  /** Namespace of the Service (and of the Secret). */
  namespace: string;
  /** More names or IP addresses for the certificate, e.g. `127.0.0.1` for webhooks reached by URL. */
  extraHosts?: string[];
  /** Secret that shares the CA and certificate between replicas; see the file header. Default: memory only. */
  secretName?: string;
  /**
   * CRDs whose conversion webhook (at our Service, or a URL) gets the CA too; absent ones and ones converted by
   * another Service are left alone (crdbundle.ts). Default none.
   */
  conversionCrds?: readonly string[];
  /** Period of renewal checks and bundle syncs. Default 10 s. */
  resyncMs?: number;
}

interface Bundle {
  ca: CertificatePair;
  serving: CertificatePair;
}

/** Renew this long before expiry. */
const RENEW_BEFORE_MS = 30 * 86_400_000;
const CA_NAME = "metal3-ipam-webhook-ca";

function b64(text: string): string {
  return Buffer.from(text).toString("base64");
}

function unb64(text: string | undefined): string {
  return Buffer.from(text ?? "", "base64").toString("utf8");
}

/** A bundle that is good for `hosts`: `current` when it is, else a renewed one (the CA kept while it is usable). */
function renewed(current: Bundle | undefined, hosts: readonly string[]): Bundle {
  const caOk = current !== undefined && usableCertificateAuthority(current.ca, RENEW_BEFORE_MS);
  if (caOk && servingCertificateProblem(current.serving, current.ca.certPem, hosts, RENEW_BEFORE_MS) === undefined)
    return current;
  const ca = caOk ? current.ca : createCertificateAuthority(CA_NAME);
  return { ca, serving: issueServingCertificate(ca, hosts) };
}

/** The core/v1 Secret fields we read and write. */
interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

function fromSecret(secret: Secret): Bundle {
  const d = secret.data ?? {};
  return {
    ca: { certPem: unb64(d["ca.crt"]), keyPem: unb64(d["ca.key"]) },
    serving: { certPem: unb64(d["tls.crt"]), keyPem: unb64(d["tls.key"]) },
  };
}

function toSecret(name: string, namespace: string, bundle: Bundle, base?: Secret): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { ...(base?.metadata ?? {}), name, namespace },
    type: base?.type ?? "kubernetes.io/tls",
    data: {
      "tls.crt": b64(bundle.serving.certPem),
      "tls.key": b64(bundle.serving.keyPem),
      "ca.crt": b64(bundle.ca.certPem),
      "ca.key": b64(bundle.ca.keyPem),
    },
  };
}

/** Reads the shared Secret, renewing (or creating) it when needed; retries a lost race by adopting the winner's. */
async function obtainFromSecret(
  secrets: ResourceClient<Secret>,
  namespace: string,
  name: string,
  hosts: readonly string[],
): Promise<Bundle> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let secret: Secret | undefined;
    try {
      secret = await secrets.get(namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const current = secret ? fromSecret(secret) : undefined;
    const next = renewed(current, hosts);
    if (next === current) return current;
    try {
      if (secret) await secrets.replace(namespace, name, toSecret(name, namespace, next, secret));
      else await secrets.create(namespace, toSecret(name, namespace, next));
      return next;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error(`Secret ${namespace}/${name} kept changing while the webhook certificate was being stored`);
}

/** The certificate source of the self-managed mode; see the file header. */
export class SelfManagedSource implements CertificateSource {
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private injected = false;

  private constructor(
    private bundle: Bundle,
    private readonly options: SelfManagedOptions,
    private readonly hosts: readonly string[],
    private readonly injector: CaBundleInjector,
    private readonly crdInjector: CrdBundleInjector,
    private readonly logger: Logger,
  ) {}

  /**
   * Makes (or, with `secretName`, loads or creates) the CA and serving certificate. Does not touch the webhook
   * configurations yet: that starts with `start()`.
   * @throws when the Secret cannot be read or written.
   */
  static async create(options: SelfManagedOptions, logger: Logger): Promise<SelfManagedSource> {
    const hosts = [...serviceHosts(options.serviceName, options.namespace), ...(options.extraHosts ?? [])];
    const bundle = await SelfManagedSource.obtain(options, hosts, undefined);
    const injector = new CaBundleInjector(
      options.kubeConfig,
      [
        { kind: "mutating", name: options.mutatingName },
        { kind: "validating", name: options.validatingName },
      ],
      logger,
    );
    const crdInjector = new CrdBundleInjector(
      options.kubeConfig,
      options.conversionCrds ?? [],
      { name: options.serviceName, namespace: options.namespace },
      logger,
    );
    return new SelfManagedSource(bundle, options, hosts, injector, crdInjector, logger);
  }

  private static async obtain(
    options: SelfManagedOptions,
    hosts: readonly string[],
    current: Bundle | undefined,
  ): Promise<Bundle> {
    if (!options.secretName) return renewed(current, hosts);
    const secrets = new ResourceClient<Secret>(options.kubeConfig, {
      group: "",
      version: "v1",
      plural: "secrets",
      kind: "Secret",
      namespaced: true,
    });
    try {
      return await obtainFromSecret(secrets, options.namespace, options.secretName, hosts);
    } catch (err) {
      if (!isForbidden(err)) throw err;
      const secret = `${options.namespace}/${options.secretName}`;
      throw new Error(`Secret ${secret}: ${describeError(err)}; ${SELF_MANAGED_RBAC_HINT}`, { cause: err });
    }
  }

  current(): CertificatePair {
    return this.bundle.serving;
  }

  caPem(): string {
    return this.bundle.ca.certPem;
  }

  /**
   * True once the bundles of both configurations, and of the conversion CRDs that are ours and present, carried the
   * current CA (it stays true across later hiccups).
   */
  ready(): boolean {
    return this.injected;
  }

  start(onChange: (pair: CertificatePair) => void): void {
    void this.tick(onChange);
    this.timer = setInterval(() => void this.tick(onChange), this.options.resyncMs ?? 10_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async tick(onChange: (pair: CertificatePair) => void): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const next = await SelfManagedSource.obtain(this.options, this.hosts, this.bundle);
      if (next.ca.certPem !== this.bundle.ca.certPem) this.injected = false;
      const changed = next.serving.certPem !== this.bundle.serving.certPem;
      this.bundle = next;
      if (changed) {
        this.logger.info("Renewed webhook certificate", { hosts: this.hosts });
        onChange(next.serving);
      }
      const [configurations, crds] = await Promise.all([
        this.injector.sync(this.bundle.ca.certPem),
        this.crdInjector.sync(this.bundle.ca.certPem),
      ]);
      if (configurations && crds) this.injected = true;
    } catch (err) {
      this.logger.warn("Cannot refresh the self-managed webhook certificate; retrying", { error: err });
    } finally {
      this.ticking = false;
    }
  }
}
