import { expect } from "chai";
import { parseDuration, parseFlags, USAGE } from "./flags.js";

describe("flags", () => {
  it("defaults: all namespaces, no leader election, secure /metrics on :8443, probes on :8081, no webhooks", () => {
    const f = parseFlags([], {});
    expect(f).to.deep.include({
      namespace: "",
      poolConcurrency: 4,
      logLevel: "info",
      logFormat: "json",
      leaderElect: false,
      diagnosticsAddress: ":8443",
      insecureDiagnostics: false,
      warnings: [],
      healthAddress: ":8081",
      webhookPort: 0,
      memoryReleaseIntervalMs: 60_000,
      kubeApiQps: 1000,
      kubeApiBurst: 2000,
    });
    expect(f.leaseDurationMs).to.equal(15_000);
  });

  it("diagnostics: --diagnostics-address and --insecure-diagnostics, or their environment equivalents", () => {
    const flags = parseFlags(["--diagnostics-address=127.0.0.1:9000", "--insecure-diagnostics"], {});
    expect(flags).to.deep.include({ diagnosticsAddress: "127.0.0.1:9000", insecureDiagnostics: true, warnings: [] });
    const env = { DIAGNOSTICS_ADDRESS: ":9443", INSECURE_DIAGNOSTICS: "true" };
    expect(parseFlags([], env)).to.deep.include({ diagnosticsAddress: ":9443", insecureDiagnostics: true });
    expect(parseFlags(["--diagnostics-address=0"], {}).diagnosticsAddress).to.equal("0");
  });

  it("the deprecated --metrics-bind-address keeps plain HTTP on its address, with a warning; not with its successor", () => {
    const flags = parseFlags(["--metrics-bind-address=:8080"], {});
    expect(flags).to.deep.include({ diagnosticsAddress: ":8080", insecureDiagnostics: true });
    expect(flags.warnings).to.have.length(1);
    expect(flags.warnings[0]).to.match(/deprecated.*--diagnostics-address=:8080.*--insecure-diagnostics/);
    expect(parseFlags([], { METRICS_BIND_ADDRESS: "0" })).to.deep.include({ diagnosticsAddress: "0" });
    expect(() => parseFlags(["--metrics-bind-address=:8080", "--diagnostics-address=:8443"], {})).to.throw(
      /give only the latter/,
    );
  });

  it("takes environment equivalents, flags winning", () => {
    const env = {
      WATCH_NAMESPACE: "from-env",
      POOL_CONCURRENCY: "8",
      LEADER_ELECT: "true",
      POD_NAMESPACE: "ns-env",
      LOG_FORMAT: "text",
      MEMORY_RELEASE_INTERVAL: "0",
      KUBE_API_QPS: "20",
      KUBE_API_BURST: "30",
    };
    expect(parseFlags([], env)).to.deep.include({
      namespace: "from-env",
      poolConcurrency: 8,
      leaderElect: true,
      leaderElectionNamespace: "ns-env",
      logFormat: "text",
      memoryReleaseIntervalMs: 0,
      kubeApiQps: 20,
      kubeApiBurst: 30,
    });
    expect(
      parseFlags(
        [
          "--namespace",
          "flag",
          "--pool-concurrency=2",
          "--memory-release-interval=5m",
          "--kube-api-qps=2.5",
          "--kube-api-burst=5",
        ],
        env,
      ),
    ).to.deep.include({
      namespace: "flag",
      poolConcurrency: 2,
      memoryReleaseIntervalMs: 300_000,
      kubeApiQps: 2.5,
      kubeApiBurst: 5,
    });
  });

  const bad: [string, string[], RegExp][] = [
    ["concurrency not a number", ["--pool-concurrency", "x"], /--pool-concurrency must be an integer from 1 to 256/],
    ["concurrency zero", ["--pool-concurrency", "0"], /from 1 to 256/],
    ["log format", ["--log-format", "xml"], /--log-format must be json or text/],
    [
      "renew deadline not shorter than lease",
      ["--leader-elect-lease-duration", "5s", "--leader-elect-renew-deadline", "5s"],
      /renew-deadline must be shorter/,
    ],
    [
      "webhook port without a certificate source",
      ["--webhook-port", "9443"],
      /needs --webhook-cert-dir .* or --webhook-self-managed/,
    ],
    [
      "a webhook Secret without self-managed certificates",
      ["--webhook-port", "9443", "--webhook-cert-dir", "/certs", "--webhook-secret-name", "s"],
      /--webhook-secret-name is for --webhook-self-managed/,
    ],
    ["unknown flag", ["--no-such-flag"], /Unknown option/],
    ["duration text", ["--leader-elect-retry-period", "soon"], /must be a duration/],
    ["memory release interval", ["--memory-release-interval", "1h"], /--memory-release-interval must be a duration/],
    ["a rate of zero", ["--kube-api-qps", "0"], /--kube-api-qps must be a number above 0, got "0"/],
    ["a burst below one", ["--kube-api-burst", "0"], /--kube-api-burst must be an integer from 1/],
  ];
  for (const [what, argv, message] of bad)
    it(`rejects ${what} with a clear message`, () => expect(() => parseFlags(argv, {})).to.throw(message));

  it("takes the Secret self-managed replicas share, by flag or environment", () => {
    const argv = ["--webhook-port", "9443", "--webhook-self-managed"];
    expect(parseFlags([...argv, "--webhook-secret-name", "a"], {}).webhookSecretName).to.equal("a");
    expect(parseFlags(argv, { WEBHOOK_SECRET_NAME: "b" }).webhookSecretName).to.equal("b");
    expect(parseFlags(argv, {})).to.not.have.property("webhookSecretName");
  });

  it("serves the in-cluster kinds only when asked, by flag or environment, and names the provider's namespace", () => {
    expect(parseFlags([], {})).to.deep.include({
      serveInClusterPools: false,
      inClusterProviderNamespace: "capi-ipam-in-cluster-system",
    });
    expect(parseFlags(["--serve-incluster-pools", "--incluster-provider-namespace=caip"], {})).to.deep.include({
      serveInClusterPools: true,
      inClusterProviderNamespace: "caip",
    });
    const env = { SERVE_INCLUSTER_POOLS: "true", INCLUSTER_PROVIDER_NAMESPACE: "e" };
    expect(parseFlags([], env)).to.deep.include({ serveInClusterPools: true, inClusterProviderNamespace: "e" });
  });

  it("serves LoadBalancer Services only when asked, by flag or environment", () => {
    expect(parseFlags([], {})).to.deep.include({ serveLoadBalancers: false });
    expect(parseFlags(["--serve-load-balancers"], {})).to.deep.include({ serveLoadBalancers: true });
    expect(parseFlags([], { SERVE_LOAD_BALANCERS: "true" })).to.deep.include({ serveLoadBalancers: true });
    expect(USAGE).to.include("--serve-load-balancers");
  });

  it("takes a NetBox installation id by flag or environment; none by default; refuses one that cannot be a key", () => {
    expect(parseFlags([], {})).to.not.have.property("netBoxInstallationId");
    expect(parseFlags(["--netbox-installation-id=mgmt-1"], {})).to.deep.include({ netBoxInstallationId: "mgmt-1" });
    expect(parseFlags([], { NETBOX_INSTALLATION_ID: "A.b_c" })).to.deep.include({ netBoxInstallationId: "A.b_c" });
    for (const bad of ["a b", "x@y", "a".repeat(33), "ns/name"])
      expect(() => parseFlags([`--netbox-installation-id=${bad}`], {}), bad).to.throw(/--netbox-installation-id/);
  });

  it("permits plain-HTTP NetBox URLs only when asked, by flag or environment", () => {
    expect(parseFlags([], {}).netBoxAllowHttp).to.equal(false);
    expect(parseFlags(["--netbox-allow-http"], {}).netBoxAllowHttp).to.equal(true);
    expect(parseFlags([], { NETBOX_ALLOW_HTTP: "true" }).netBoxAllowHttp).to.equal(true);
    expect(parseFlags([], { NETBOX_ALLOW_HTTP: "yes" }).netBoxAllowHttp).to.equal(false);
  });

  it("serves Metal3Cluster endpoints by default, more infrastructure kinds when listed; refuses a name that is no plural.group", () => {
    expect(parseFlags([], {})).to.deep.include({
      endpointKinds: ["metal3clusters.infrastructure.cluster.x-k8s.io"],
      endpointClaimGraceMs: 600_000,
      endpointPendingClaims: 64,
    });
    const kinds = "metal3clusters.infrastructure.cluster.x-k8s.io, vsphereclusters.infrastructure.cluster.x-k8s.io";
    expect(parseFlags(["--endpoint-pending-claims", "8"], {}).endpointPendingClaims).to.equal(8);
    expect(parseFlags([], { ENDPOINT_PENDING_CLAIMS: "200" }).endpointPendingClaims).to.equal(200);
    for (const bad of ["0", "-1", "1.5", "x"])
      expect(() => parseFlags([`--endpoint-pending-claims=${bad}`], {}), bad).to.throw(
        "--endpoint-pending-claims must be an integer from 1",
      );
    expect(parseFlags(["--endpoint-kinds", kinds, "--endpoint-claim-grace", "5s"], {})).to.deep.include({
      endpointKinds: [
        "metal3clusters.infrastructure.cluster.x-k8s.io",
        "vsphereclusters.infrastructure.cluster.x-k8s.io",
      ],
      endpointClaimGraceMs: 5_000,
    });
    expect(parseFlags([], { ENDPOINT_KINDS: "foos.example.com", ENDPOINT_CLAIM_GRACE: "1m" })).to.deep.include({
      endpointKinds: ["foos.example.com"],
      endpointClaimGraceMs: 60_000,
    });
    for (const bad of ["Metal3Cluster", "metal3clusters", "", "a.b,,Foo.x"])
      expect(() => parseFlags(["--endpoint-kinds", bad], {}), bad).to.throw("--endpoint-kinds must list plural.group");
  });

  it("parses durations", () => {
    expect([
      parseDuration("d", "15s"),
      parseDuration("d", "500ms"),
      parseDuration("d", "2m"),
      parseDuration("d", "250"),
    ]).to.deep.equal([15_000, 500, 120_000, 250]);
  });
});
