/**
 * The public entry of the admission webhooks (spec §6): an HTTPS server (TLS 1.2 or newer) answering AdmissionReview
 * v1 requests at the paths of {@link WEBHOOK_PATHS} and the in-cluster pools' ConversionReviews at
 * {@link CONVERSION_PATH}, with its certificate from a mounted folder (cert-manager) or
 * made and published by itself (self-managed mode). See README.md in this folder.
 */
import { X509Certificate } from "node:crypto";
import { createServer } from "node:https";
import type { Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { Kube } from "../kube/access.js";
import type { Logger } from "../runtime/logger.js";
import type { WebhookMetrics } from "../runtime/metrics.js";
import { CertDirSource } from "../certs/certdir.js";
import { DEFAULT_ENDPOINT_KINDS } from "../ipam/endpoint.js";
import type { CertificateSource } from "../certs/certdir.js";
import { endpointRoute, kubeEndpointAccess } from "./endpoint.js";
import type { EndpointAccess } from "./endpoint.js";
import { ROUTES, WEBHOOK_PATHS } from "./handlers.js";
import type { Route } from "./route.js";
import { admissionListener } from "./http.js";
import { REVIEWS } from "./conversion.js";
import { kubeEndpointReads, type EndpointReads } from "./endpointreads.js";
import { kubeLookup } from "./lookup.js";
import { WorkerValidator } from "./offload.js";
import type { WorkerValidatorOptions } from "./offload.js";
import type { ClusterLookup } from "./lookup.js";
import type { CertificatePair } from "../certs/pki.js";
import type { SelfManagedOptions } from "../certs/selfmanaged.js";

export { WEBHOOK_PATHS } from "./handlers.js";
export { CONVERSION_PATH } from "./conversion.js";
export { DEFAULT_MAX_BODY_BYTES } from "./http.js";
export { MAX_ITEMS } from "./limits.js";
export type { ClusterLookup } from "./lookup.js";
export type { SelfManagedOptions } from "../certs/selfmanaged.js";

/** Options of {@link startWebhookServer}. Exactly one of `certDir` and `selfManaged` must be given. */
export interface WebhookServerOptions {
  /** TCP port (the kubebuilder convention is 9443); 0 picks a free one, reported in the result. */
  port: number;
  /** Address to bind. Default: every interface. */
  host?: string;
  /**
   * Folder holding `tls.crt` and `tls.key` (the layout of a cert-manager Secret mounted as a volume). Changed files
   * are picked up within `certReloadMs`, without a restart.
   */
  certDir?: string;
  /** Self-managed mode: make a CA and certificate and keep the configurations' `caBundle` current. */
  selfManaged?: SelfManagedOptions;
  /** Client for the lookups the handlers make (pools of a namespace, addresses in use); default `selfManaged.kubeConfig`. */
  kubeConfig?: Kube;
  /** Replaces the lookups through `kubeConfig` (tests). One of the two (or `selfManaged`) is required. */
  lookup?: ClusterLookup;
  logger: Logger;
  /** Replaces the endpoint guard's reads through `kubeConfig` (tests). */
  endpoints?: EndpointReads;
  /** Largest accepted request body; default 3 MiB. Larger ones get 413. */
  maxBodyBytes?: number;
  /** How often `certDir` is checked for a new certificate; default 10 s. */
  certReloadMs?: number;
  /** Where each answered request is counted; default nowhere. */
  metrics?: WebhookMetrics;
  /** Bounds of the validation worker (offload.ts); every one has a default. */
  validation?: WorkerValidatorOptions;
  /** Infrastructure cluster resources (`plural.group`) whose endpoint may come from a pool; default Metal3Cluster. */
  endpointKinds?: readonly string[];
  /** Replaces the endpoint webhook's reads and writes through `kubeConfig` (tests). Without either it is not served. */
  endpointAccess?: EndpointAccess;
  /** Most endpoint claims of one pool waiting for their Cluster (`--endpoint-pending-claims`); endpoint.ts's default. */
  endpointPendingLimit?: number;
  /** `--endpoint-claim-grace`, named in the endpoint webhook's refusals; endpoint.ts's default. */
  endpointClaimGraceMs?: number;
}

/** A running webhook server. */
export interface WebhookServer {
  /** The port it listens on (the actual one when 0 was asked). */
  readonly port: number;
  /** PEM of the CA that signed the serving certificate, in self-managed mode (it may change on renewal). */
  readonly caPem: string | undefined;
  /**
   * Whether the API server can call it: listening, and in self-managed mode the CA published in both webhook
   * configurations at least once. Wire it into `/readyz`.
   */
  ready(): boolean;
  /** When the certificate served now expires (it changes on renewal or remount); undefined if it cannot be read. */
  certificateExpiry(): Date | undefined;
  /** Stops accepting requests, drops open connections and stops certificate reloads. Idempotent. */
  stop(): Promise<void>;
}

const TLS_MIN_VERSION = "TLSv1.2";

async function certificateSource(options: WebhookServerOptions): Promise<CertificateSource> {
  if (options.certDir !== undefined && options.selfManaged !== undefined) {
    throw new Error("the webhook server takes a certificate folder or self-managed mode, not both");
  }
  if (options.selfManaged) {
    // Loaded only in self-managed mode: its certificate issuer (node-forge) costs resident memory that a controller
    // with cert-manager's certificates never needs.
    const { SelfManagedSource } = await import("../certs/selfmanaged.js");
    return await SelfManagedSource.create(options.selfManaged, options.logger);
  }
  if (options.certDir !== undefined) return new CertDirSource(options.certDir, options.logger, options.certReloadMs);
  throw new Error(
    "the webhook server needs a certificate folder (--webhook-cert-dir) or self-managed mode (--webhook-self-managed)",
  );
}

/** The `notAfter` of a PEM certificate, or undefined when it does not parse (it served, so that would be odd). */
function expiryOf(certPem: string): Date | undefined {
  try {
    return new Date(new X509Certificate(certPem).validTo);
  } catch {
    return undefined;
  }
}

function listen(server: Server, port: number, host: string | undefined): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/**
 * Starts the webhook server and resolves once it listens.
 *
 * Guarantees: every request is answered and none throws out of the server (see http.ts: 404/405/413/400 for bad
 * HTTP input, AdmissionReview answers otherwise, 500 denials for handler failures); large pools validated in a worker
 * thread within a time budget, so the caller's event loop never waits for one (offload.ts); TLS 1.2 or newer only; a new
 * certificate (renewed folder, self-managed renewal) applies to new connections without a restart.
 *
 * @throws (rejects) when neither or both certificate modes are given, when there is nothing to read the cluster
 * with (no `lookup`, `kubeConfig` or `selfManaged`), when the certificate folder has no usable pair, when the
 * self-managed Secret cannot be read or written, or when the port cannot be bound.
 */
export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const kubeConfig = options.kubeConfig ?? options.selfManaged?.kubeConfig;
  const lookup = options.lookup ?? (kubeConfig ? kubeLookup(kubeConfig) : undefined);
  if (!lookup) throw new Error("the webhook server needs a kubeConfig (or a lookup) to read pools and addresses");
  const { logger } = options;
  const source = await certificateSource(options);
  const tlsOptions = (pair: CertificatePair) =>
    ({ cert: pair.certPem, key: pair.keyPem, minVersion: TLS_MIN_VERSION }) as const;
  const validator = new WorkerValidator(logger, options.validation);
  const ownReads = !options.endpoints && kubeConfig ? kubeEndpointReads(kubeConfig, logger) : undefined;
  const endpoints = options.endpoints ?? ownReads;
  const routes = new Map<string, Route>(ROUTES);
  const endpointAccess = options.endpointAccess ?? (kubeConfig ? kubeEndpointAccess(kubeConfig) : undefined);
  if (endpointAccess)
    routes.set(
      WEBHOOK_PATHS.mutateControlPlaneEndpoint,
      endpointRoute({
        access: endpointAccess,
        kinds: options.endpointKinds ?? DEFAULT_ENDPOINT_KINDS,
        ...(options.endpointPendingLimit !== undefined ? { pendingLimit: options.endpointPendingLimit } : {}),
        ...(options.endpointClaimGraceMs !== undefined ? { graceMs: options.endpointClaimGraceMs } : {}),
      }),
    );
  const listener = admissionListener({
    routes,
    reviews: REVIEWS,
    context: { lookup, logger, validator, ...(endpoints ? { endpoints } : {}) },
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
    ...(options.metrics ? { onRequest: options.metrics.webhookRequest.bind(options.metrics) } : {}),
  });
  // keepAliveTimeout outlives the API server's idle connections (Go's transport drops them after 90 s): with Node's
  // default of 5 s the server closed idle connections the API server was just reusing, and that admission call
  // failed with "broken pipe" (seen once in the node suite). The client now always closes first.
  const server = createServer(
    { ...tlsOptions(source.current()), requestTimeout: 30_000, headersTimeout: 10_000, keepAliveTimeout: 120_000 },
    listener,
  );
  server.on("tlsClientError", (err) => logger.debug("TLS handshake failed", { error: err }));
  let address: AddressInfo;
  try {
    address = await listen(server, options.port, options.host);
  } catch (err) {
    source.stop();
    throw err;
  }
  source.start((pair) => server.setSecureContext(tlsOptions(pair)));
  logger.info("Serving webhooks", { port: address.port, mode: options.selfManaged ? "self-managed" : "cert-dir" });
  let stopped: Promise<void> | undefined;
  return {
    port: address.port,
    get caPem() {
      return source.caPem();
    },
    ready: () => server.listening && source.ready(),
    certificateExpiry: () => expiryOf(source.current().certPem),
    stop: () => {
      stopped ??= Promise.all([
        validator.stop(),
        Promise.resolve(ownReads?.stop()),
        new Promise<void>((resolve) => {
          source.stop();
          server.close(() => resolve());
          server.closeAllConnections();
        }),
      ]).then(() => undefined);
      return stopped;
    },
  };
}
