/** Command-line flags of the controller (spec §8), each with an environment-variable equivalent. */
import { parseArgs } from "node:util";
import { INSTALLATION_PATTERN } from "./controllers/netbox/identity.js";
import {
  DEFAULT_ENDPOINT_CLAIM_GRACE_MS,
  DEFAULT_ENDPOINT_KINDS,
  DEFAULT_ENDPOINT_PENDING_CLAIMS,
  formatGrace,
} from "./ipam/endpoint.js";
import { DEFAULT_BURST, DEFAULT_QPS } from "./kube/ratelimit.js";
import { DEFAULT_CONTROLLER_NAMESPACE } from "../api/install.js";

export interface Flags {
  kubeconfig?: string;
  namespace: string;
  poolConcurrency: number;
  logLevel: string;
  logFormat: "json" | "text";
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionId: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Where /metrics is served; "0" nowhere. */
  diagnosticsAddress: string;
  /** Plain HTTP without authentication and authorization instead of HTTPS with both. */
  insecureDiagnostics: boolean;
  healthAddress: string;
  webhookPort: number;
  webhookCertDir?: string;
  webhookSelfManaged: boolean;
  /** Secret through which self-managed replicas share one CA and certificate (src/certs/selfmanaged.ts). */
  webhookSecretName?: string;
  webhookServiceName: string;
  webhookMutatingName: string;
  webhookValidatingName: string;
  /** Client-side rate limit of API requests (src/kube/ratelimit.ts). */
  kubeApiQps: number;
  kubeApiBurst: number;
  /** How often RSS is checked for V8 heap pages to give back to the OS; 0 never (src/runtime/memory.ts). */
  memoryReleaseIntervalMs: number;
  /** Serve the in-cluster provider's pool kinds, never while it runs (src/controllers/incluster/provider.ts). */
  serveInClusterPools: boolean;
  inClusterProviderNamespace: string;
  /** The id NetBox records of this management cluster carry (src/controllers/netbox/installation.ts). */
  netBoxInstallationId?: string;
  /** Plain-HTTP NetBox URLs are permitted (src/controllers/netbox/trust.ts); otherwise only https. */
  netBoxAllowHttp: boolean;
  /** Infrastructure cluster resources (`plural.group`) whose endpoint may come from a pool (src/webhooks/endpoint.ts). */
  endpointKinds: string[];
  /** How long an endpoint claim waits for its Cluster before it is deleted (src/controllers/capi/endpoint.ts). */
  endpointClaimGraceMs: number;
  /** Most endpoint claims of one pool waiting for their Cluster; the webhook refuses more (src/webhooks/endpoint.ts). */
  endpointPendingClaims: number;
  /** Give Services of type LoadBalancer and our class addresses (src/controllers/loadbalancer/). */
  serveLoadBalancers: boolean;
  /** What the operator should change in the flags given (deprecated ones), for the log. */
  warnings: string[];
}

export const USAGE = `Usage: npm start -- [flags]
  --kubeconfig PATH                  kubeconfig (env KUBECONFIG; default: in-cluster, then ~/.kube/config)
  --namespace NS                     namespace to watch; empty watches all (env WATCH_NAMESPACE)
  --pool-concurrency N               pools reconciled in parallel (env POOL_CONCURRENCY, default 4)
  --log-level LEVEL                  error|warn|info|debug (env LOG_LEVEL, default info)
  --log-format FORMAT                json|text (env LOG_FORMAT, default json)
  --leader-elect                     elect a leader on a Lease; only it reconciles (env LEADER_ELECT=true)
  --leader-election-namespace NS     namespace of the Lease (env POD_NAMESPACE, default metal3-ipam-system)
  --leader-election-id NAME          name of the Lease (default metal3-ipam-controller)
  --leader-elect-lease-duration D    e.g. 15s (default 15s); also --leader-elect-renew-deadline (10s), --leader-elect-retry-period (2s)
  --diagnostics-address ADDR         /metrics over HTTPS (a self-signed certificate made at start); each request needs
                                     a bearer token whose user may get the non-resource URL /metrics, as the API server
                                     reviews it (TokenReview, SubjectAccessReview) (env DIAGNOSTICS_ADDRESS, default
                                     :8443; 0 disables)
  --insecure-diagnostics             serve /metrics over plain HTTP to anyone instead (env INSECURE_DIAGNOSTICS=true)
  --metrics-bind-address ADDR        deprecated: --diagnostics-address ADDR --insecure-diagnostics (env
                                     METRICS_BIND_ADDRESS)
  --health-probe-bind-address ADDR   /healthz and /readyz address (env HEALTH_PROBE_BIND_ADDRESS, default :8081; 0 disables)
  --webhook-port N                   serve admission webhooks on this port (env WEBHOOK_PORT; default 0: no webhooks)
  --webhook-cert-dir DIR             tls.crt and tls.key of the webhook server (cert-manager) (env WEBHOOK_CERT_DIR)
  --webhook-self-managed             make the webhook certificate and keep the configurations' caBundle current
  --webhook-secret-name NAME         with --webhook-self-managed: the Secret (in the controller's namespace) through
                                     which replicas share one CA and certificate; needed with more than one replica
                                     (env WEBHOOK_SECRET_NAME; default: none, each process keeps its own in memory)
  --webhook-service-name NAME        Service in front of the webhooks (default metal3-ipam-webhook-service)
  --webhook-mutating-configuration-name NAME    (default metal3-ipam-mutating-webhook-configuration)
  --webhook-validating-configuration-name NAME  (default metal3-ipam-validating-webhook-configuration)
  --kube-api-qps N                   API requests a second this controller may send, watches aside (env KUBE_API_QPS,
                                     default 1000)
  --kube-api-burst N                 requests it may send at once above that rate (env KUBE_API_BURST, default 2000)
  --memory-release-interval D        how often to check whether freed heap pages should go back to the OS; needs
                                     node --expose-gc, as the image runs it (env MEMORY_RELEASE_INTERVAL, default 60s;
                                     0 never)
  --serve-incluster-pools            serve InClusterIPPool and GlobalInClusterIPPool claims, except while the in-cluster
                                     provider runs (env SERVE_INCLUSTER_POOLS=true)
  --incluster-provider-namespace NS  where that provider's leader-election Lease is (env INCLUSTER_PROVIDER_NAMESPACE,
                                     default capi-ipam-in-cluster-system)
  --netbox-installation-id ID        the id in the key of every NetBox record this controller makes (1-32 of A-Z a-z
                                     0-9 . _ -; env NETBOX_INSTALLATION_ID; default: from the kube-system Namespace's
                                     uid). Give a rebuilt management cluster its predecessor's id to keep its records
  --netbox-allow-http                permit http:// NetBox URLs in token Secrets (tokens then travel unencrypted;
                                     for a NetBox on loopback or in tests) (env NETBOX_ALLOW_HTTP=true)
  --endpoint-kinds LIST              infrastructure cluster resources, plural.group, comma-separated, whose
                                     spec.controlPlaneEndpoint the endpoint webhook fills from a pool (Clusters always);
                                     each needs a rule in the mutating webhook configuration too (env ENDPOINT_KINDS,
                                     default ${DEFAULT_ENDPOINT_KINDS.join(",")})
  --endpoint-claim-grace D           how long a control-plane endpoint claim waits for its Cluster (a create refused
                                     after the webhook made it) before it is deleted (env ENDPOINT_CLAIM_GRACE,
                                     default ${formatGrace(DEFAULT_ENDPOINT_CLAIM_GRACE_MS)})
  --endpoint-pending-claims N        most control-plane endpoint claims of one pool waiting for their Cluster at once;
                                     the endpoint webhook refuses to make more (429), which bounds the addresses that
                                     reviews of Clusters never created can hold (env ENDPOINT_PENDING_CLAIMS, default ${DEFAULT_ENDPOINT_PENDING_CLAIMS})
  --serve-load-balancers             give Services of type LoadBalancer with loadBalancerClass ipam.metal3.io/pool an
                                     address from the pool their annotation names, written to kube-vip.io/loadbalancerIPs;
                                     needs config/components/load-balancers (env SERVE_LOAD_BALANCERS=true)`;

const bool = (v: string | boolean | undefined, env: string | undefined): boolean =>
  v === undefined ? env === "true" : v === true || v === "true";

/** Parses "15s", "500ms", "2m" or plain milliseconds. */
export function parseDuration(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new Error(`--${flag} must be a duration such as 15s or 500ms, got "${text}"`);
  const n = Number(m[1]);
  return Math.round(m[2] === "m" ? n * 60_000 : m[2] === "ms" || m[2] === undefined ? n : n * 1000);
}

function integer(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`--${flag} must be an integer from ${min} to ${max}, got "${text}"`);
  return n;
}

const OPTIONS = {
  kubeconfig: { type: "string" },
  namespace: { type: "string" },
  "pool-concurrency": { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  "leader-elect": { type: "boolean" },
  "leader-election-namespace": { type: "string" },
  "leader-election-id": { type: "string" },
  "leader-elect-lease-duration": { type: "string" },
  "leader-elect-renew-deadline": { type: "string" },
  "leader-elect-retry-period": { type: "string" },
  "diagnostics-address": { type: "string" },
  "insecure-diagnostics": { type: "boolean" },
  "metrics-bind-address": { type: "string" },
  "health-probe-bind-address": { type: "string" },
  "webhook-port": { type: "string" },
  "webhook-cert-dir": { type: "string" },
  "webhook-self-managed": { type: "boolean" },
  "webhook-service-name": { type: "string" },
  "webhook-secret-name": { type: "string" },
  "webhook-mutating-configuration-name": { type: "string" },
  "webhook-validating-configuration-name": { type: "string" },
  "memory-release-interval": { type: "string" },
  "kube-api-qps": { type: "string" },
  "kube-api-burst": { type: "string" },
  "serve-incluster-pools": { type: "boolean" },
  "incluster-provider-namespace": { type: "string" },
  "netbox-installation-id": { type: "string" },
  "netbox-allow-http": { type: "boolean" },
  "endpoint-kinds": { type: "string" },
  "endpoint-claim-grace": { type: "string" },
  "endpoint-pending-claims": { type: "string" },
  "serve-load-balancers": { type: "boolean" },
  help: { type: "boolean" },
} as const;

type Values = ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; strict: true }>>["values"];

function coreFlags(
  v: Values,
  env: NodeJS.ProcessEnv,
): Pick<Flags, "kubeconfig" | "namespace" | "poolConcurrency" | "logLevel" | "logFormat"> {
  const logFormat = v["log-format"] ?? env.LOG_FORMAT ?? "json";
  if (logFormat !== "json" && logFormat !== "text")
    throw new Error(`--log-format must be json or text, got "${logFormat}"`);
  const kubeconfig = v.kubeconfig ?? env.KUBECONFIG;
  return {
    ...(kubeconfig ? { kubeconfig } : {}),
    namespace: v.namespace ?? env.WATCH_NAMESPACE ?? "",
    poolConcurrency: integer("pool-concurrency", v["pool-concurrency"] ?? env.POOL_CONCURRENCY ?? "4", 1, 256),
    logLevel: v["log-level"] ?? env.LOG_LEVEL ?? "info",
    logFormat,
  };
}

type LeaderFlags = Pick<
  Flags,
  | "leaderElect"
  | "leaderElectionNamespace"
  | "leaderElectionId"
  | "leaseDurationMs"
  | "renewDeadlineMs"
  | "retryPeriodMs"
>;

function leaderFlags(v: Values, env: NodeJS.ProcessEnv): LeaderFlags {
  const flags = {
    leaderElect: bool(v["leader-elect"], env.LEADER_ELECT),
    leaderElectionNamespace: v["leader-election-namespace"] ?? env.POD_NAMESPACE ?? DEFAULT_CONTROLLER_NAMESPACE,
    leaderElectionId: v["leader-election-id"] ?? "metal3-ipam-controller",
    leaseDurationMs: parseDuration("leader-elect-lease-duration", v["leader-elect-lease-duration"] ?? "15s"),
    renewDeadlineMs: parseDuration("leader-elect-renew-deadline", v["leader-elect-renew-deadline"] ?? "10s"),
    retryPeriodMs: parseDuration("leader-elect-retry-period", v["leader-elect-retry-period"] ?? "2s"),
  };
  if (!(flags.renewDeadlineMs < flags.leaseDurationMs))
    throw new Error("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration");
  return flags;
}

type ServingFlags = Pick<
  Flags,
  | "healthAddress"
  | "webhookPort"
  | "webhookCertDir"
  | "webhookSelfManaged"
  | "webhookSecretName"
  | "webhookServiceName"
  | "webhookMutatingName"
  | "webhookValidatingName"
>;

function servingFlags(v: Values, env: NodeJS.ProcessEnv): ServingFlags {
  const webhookCertDir = v["webhook-cert-dir"] ?? env.WEBHOOK_CERT_DIR;
  const webhookSecretName = v["webhook-secret-name"] ?? env.WEBHOOK_SECRET_NAME;
  const flags = {
    healthAddress: v["health-probe-bind-address"] ?? env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    webhookPort: integer("webhook-port", v["webhook-port"] ?? env.WEBHOOK_PORT ?? "0", 0, 65535),
    ...(webhookCertDir ? { webhookCertDir } : {}),
    webhookSelfManaged: bool(v["webhook-self-managed"], env.WEBHOOK_SELF_MANAGED),
    ...(webhookSecretName ? { webhookSecretName } : {}),
    webhookServiceName: v["webhook-service-name"] ?? "metal3-ipam-webhook-service",
    webhookMutatingName: v["webhook-mutating-configuration-name"] ?? "metal3-ipam-mutating-webhook-configuration",
    webhookValidatingName: v["webhook-validating-configuration-name"] ?? "metal3-ipam-validating-webhook-configuration",
  };
  if (flags.webhookPort > 0 && !flags.webhookCertDir && !flags.webhookSelfManaged) {
    throw new Error("--webhook-port needs --webhook-cert-dir (cert-manager) or --webhook-self-managed");
  }
  if (flags.webhookSecretName && !flags.webhookSelfManaged)
    throw new Error("--webhook-secret-name is for --webhook-self-managed");
  return flags;
}

type DiagnosticsFlags = Pick<Flags, "diagnosticsAddress" | "insecureDiagnostics" | "warnings">;

/**
 * The diagnostics endpoint. The deprecated `--metrics-bind-address` keeps what it always meant, plain HTTP without
 * authentication on its address, so a Deployment that still passes it keeps being scraped; it cannot be combined with
 * the flags that replace it.
 */
function diagnosticsFlags(v: Values, env: NodeJS.ProcessEnv): DiagnosticsFlags {
  const legacy = v["metrics-bind-address"] ?? env.METRICS_BIND_ADDRESS;
  const address = v["diagnostics-address"] ?? env.DIAGNOSTICS_ADDRESS;
  const insecure = bool(v["insecure-diagnostics"], env.INSECURE_DIAGNOSTICS);
  if (legacy === undefined)
    return { diagnosticsAddress: address ?? ":8443", insecureDiagnostics: insecure, warnings: [] };
  if (address !== undefined)
    throw new Error("--metrics-bind-address is deprecated and replaced by --diagnostics-address: give only the latter");
  return {
    diagnosticsAddress: legacy,
    insecureDiagnostics: true,
    warnings: [
      `--metrics-bind-address is deprecated: it serves /metrics over plain HTTP without authentication; use --diagnostics-address=${legacy} (HTTPS, a token with the metrics-reader ClusterRole), or add --insecure-diagnostics to keep plain HTTP`,
    ],
  };
}

/** A positive number of requests a second. */
function rate(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${flag} must be a number above 0, got "${text}"`);
  return n;
}

function installationFlag(id: string | undefined): Pick<Flags, "netBoxInstallationId"> {
  if (id === undefined || id === "") return {};
  if (!INSTALLATION_PATTERN.test(id))
    throw new Error(`--netbox-installation-id must be 1 to 32 of A-Z a-z 0-9 . _ -, got "${id.slice(0, 64)}"`);
  return { netBoxInstallationId: id };
}

const RESOURCE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;

/** `plural.group` names, comma-separated; at least one. */
function endpointKinds(text: string): string[] {
  const kinds = text
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  const bad = kinds.find((k) => k.length > 253 || !RESOURCE_NAME.test(k));
  if (bad !== undefined || kinds.length === 0)
    throw new Error(
      `--endpoint-kinds must list plural.group names such as metal3clusters.infrastructure.cluster.x-k8s.io, got "${text.slice(0, 64)}"`,
    );
  return [...new Set(kinds)];
}

/** Parses argv and env. Throws an Error with a one-line message on bad input (the caller prints USAGE). */
export function parseFlags(argv: string[], env: NodeJS.ProcessEnv): Flags {
  const { values } = parseArgs({ args: argv, options: OPTIONS, strict: true });
  if (values.help) throw new Error("help");
  return {
    ...coreFlags(values, env),
    ...leaderFlags(values, env),
    ...servingFlags(values, env),
    ...diagnosticsFlags(values, env),
    kubeApiQps: rate("kube-api-qps", values["kube-api-qps"] ?? env.KUBE_API_QPS ?? String(DEFAULT_QPS)),
    kubeApiBurst: integer(
      "kube-api-burst",
      values["kube-api-burst"] ?? env.KUBE_API_BURST ?? String(DEFAULT_BURST),
      1,
      1_000_000,
    ),
    memoryReleaseIntervalMs: parseDuration(
      "memory-release-interval",
      values["memory-release-interval"] ?? env.MEMORY_RELEASE_INTERVAL ?? "60s",
    ),
    serveInClusterPools: bool(values["serve-incluster-pools"], env.SERVE_INCLUSTER_POOLS),
    inClusterProviderNamespace:
      values["incluster-provider-namespace"] ?? env.INCLUSTER_PROVIDER_NAMESPACE ?? "capi-ipam-in-cluster-system",
    ...installationFlag(values["netbox-installation-id"] ?? env.NETBOX_INSTALLATION_ID),
    netBoxAllowHttp: bool(values["netbox-allow-http"], env.NETBOX_ALLOW_HTTP),
    endpointKinds: endpointKinds(values["endpoint-kinds"] ?? env.ENDPOINT_KINDS ?? DEFAULT_ENDPOINT_KINDS.join(",")),
    endpointClaimGraceMs: parseDuration(
      "endpoint-claim-grace",
      values["endpoint-claim-grace"] ?? env.ENDPOINT_CLAIM_GRACE ?? formatGrace(DEFAULT_ENDPOINT_CLAIM_GRACE_MS),
    ),
    endpointPendingClaims: integer(
      "endpoint-pending-claims",
      values["endpoint-pending-claims"] ?? env.ENDPOINT_PENDING_CLAIMS ?? String(DEFAULT_ENDPOINT_PENDING_CLAIMS),
      1,
      10_000,
    ),
    serveLoadBalancers: bool(values["serve-load-balancers"], env.SERVE_LOAD_BALANCERS),
  };
}
