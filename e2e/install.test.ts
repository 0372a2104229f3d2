/**
 * The install commands of README.md, run as written: each kustomization built (`kubectl kustomize`) and its objects
 * checked (cert-manager's mode, the self-managed mode with exactly the names its roles grant, the NetworkPolicies on
 * the controller's pods and ports), then each command with `--dry-run=server` against the test plane. The node suite
 * applies the same folders (e2e/fixtures/node and node-self-managed change only the image; checked here).
 */
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { CoreV1Api } from "@kubernetes/client-node";
import { load, loadAll } from "js-yaml";
import { parseFlags } from "../src/flags.js";
import { SELF_MANAGED_NAMES } from "../src/certs/rbac.js";
import { LOAD_BALANCER_CLUSTER_ROLE_RULES, normalizeRules } from "../src/rbac.js";
import { repoRoot, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { installCrds } from "../hack/testkit/crds.js";
import { installCommand, installCommands, runInstallCommand } from "../hack/testkit/install.js";
import { isConflict } from "../src/kube/errors.js";

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  [field: string]: unknown;
}
interface Rule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}
interface Container {
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  volumeMounts?: unknown[];
}
interface PodSpec {
  serviceAccountName?: string;
  containers: Container[];
  volumes?: unknown[];
}
interface DeploymentSpec {
  replicas?: number;
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
}

const DEFAULT = "config/default";
const SELF_MANAGED = "config/selfmanaged";
const NETWORK_POLICY = "config/network-policy";
/** config/default with config/components/load-balancers, the overlay docs/endpoints.md gives. */
const LOAD_BALANCERS = "e2e/fixtures/load-balancers";

const kubectlAvailable = (): boolean => spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status === 0;

async function build(dir: string): Promise<Obj[]> {
  const { stdout } = await promisify(execFile)("kubectl", ["kustomize", join(repoRoot, dir)], {
    maxBuffer: 64 << 20,
  });
  return loadAll(stdout) as Obj[];
}

const key = (o: Obj): string => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
const one = (objs: Obj[], kind: string, name?: string): Obj => {
  const found = objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  expect(found, `${kind} ${name ?? ""}`).to.have.length(1);
  return found[0]!;
};
const deploymentOf = (objs: Obj[]): { deployment: Obj; spec: DeploymentSpec; container: Container } => {
  const deployment = one(objs, "Deployment");
  const spec = deployment.spec as DeploymentSpec;
  return { deployment, spec, container: spec.template.spec.containers[0]! };
};
/** Resource rules only: a rule of non-resource URLs (the metrics-reader's `/metrics`) names no resources. */
const rulesOf = (objs: Obj[], kind: "ClusterRole" | "Role"): Rule[] =>
  objs
    .filter((o) => o.kind === kind)
    .flatMap((o) => (o.rules as Partial<Rule>[] | undefined) ?? [])
    .filter((r): r is Rule => Array.isArray(r.resources));

describe("README's install commands", function () {
  this.timeout(120_000);
  const built = new Map<string, Obj[]>();

  before(async function () {
    if (!kubectlAvailable()) this.skip();
    for (const dir of [DEFAULT, SELF_MANAGED, NETWORK_POLICY, LOAD_BALANCERS]) built.set(dir, await build(dir));
  });

  it("are one `kubectl apply -k` per install: cert-manager, self-managed, the network policy", () => {
    expect(installCommands().map((c) => c.line)).to.deep.equal([
      `kubectl apply -k ${DEFAULT}`,
      `kubectl apply -k ${SELF_MANAGED}`,
      `kubectl apply -k ${NETWORK_POLICY}`,
    ]);
  });

  it("are what the node suite deploys: its fixtures take each certificate mode's folder and change only the image", () => {
    const fixture = (name: string): { resources?: string[]; components?: string[]; patches?: unknown } =>
      load(readFileSync(join(repoRoot, "e2e", "fixtures", name, "kustomization.yaml"), "utf8")) as {
        resources?: string[];
      };
    for (const [name, dir] of [
      ["node", DEFAULT],
      ["node-self-managed", SELF_MANAGED],
    ] as const) {
      const k = fixture(name);
      expect(k.resources, name).to.deep.equal([`../../../${installCommand(dir).dir}`]);
      expect(k.components, name).to.deep.equal(["../local-image"]);
      expect(k.patches, name).to.equal(undefined);
    }
  });

  it("config/default: cert-manager's Certificate and Issuer, the certificate folder, no RBAC on webhook configurations or CRDs", () => {
    const objs = built.get(DEFAULT)!;
    one(objs, "Certificate", "metal3-ipam-serving-cert");
    one(objs, "Issuer", "metal3-ipam-selfsigned-issuer");
    const { container, spec } = deploymentOf(objs);
    expect(spec.replicas).to.equal(2);
    expect(container.args).to.include("--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs");
    expect(container.args).to.not.include("--webhook-self-managed");
    const groups = [...rulesOf(objs, "ClusterRole"), ...rulesOf(objs, "Role")].flatMap((r) => r.apiGroups);
    expect(groups).to.not.include("admissionregistration.k8s.io");
    expect(groups).to.not.include("apiextensions.k8s.io");
    const secretVerbs = rulesOf(objs, "Role")
      .filter((r) => r.resources.includes("secrets"))
      .flatMap((r) => r.verbs);
    expect(secretVerbs).to.deep.equal(["get"]);
  });

  it("config/selfmanaged: config/default without cert-manager, self-managed flags, and roles for exactly its objects", () => {
    const objs = built.get(SELF_MANAGED)!;
    const base = built.get(DEFAULT)!;
    // Everything of config/default but cert-manager's two objects, plus the mode's roles and their bindings.
    const added = [
      "ClusterRole//metal3-ipam-webhook-certificates-role",
      "ClusterRoleBinding//metal3-ipam-webhook-certificates-rolebinding",
      "Role/metal3-ipam-system/metal3-ipam-webhook-secret-role",
      "RoleBinding/metal3-ipam-system/metal3-ipam-webhook-secret-rolebinding",
    ];
    const expected = base.filter((o) => o.apiVersion !== "cert-manager.io/v1").map(key);
    expect(objs.map(key).sort()).to.deep.equal([...expected, ...added].sort());
    for (const o of objs)
      expect(o.metadata.annotations ?? {}, key(o)).to.not.have.key("cert-manager.io/inject-ca-from");

    const { spec, container } = deploymentOf(objs);
    expect(spec.replicas).to.equal(2);
    expect(container.args).to.include("--webhook-self-managed");
    expect(container.args).to.include(`--webhook-secret-name=${SELF_MANAGED_NAMES.secret}`);
    expect((container.args ?? []).filter((a) => a.startsWith("--webhook-cert-dir"))).to.deep.equal([]);
    expect(container.volumeMounts).to.equal(undefined);
    expect(spec.template.spec.volumes).to.equal(undefined);

    // The roles name what the controller patches: the built configurations, which its flags' defaults name too.
    const mutating = one(objs, "MutatingWebhookConfiguration").metadata.name;
    const validating = one(objs, "ValidatingWebhookConfiguration").metadata.name;
    const flags = parseFlags(["--webhook-self-managed"], {});
    expect([flags.webhookMutatingName, flags.webhookValidatingName]).to.deep.equal([mutating, validating]);
    const names = (resource: string): string[] =>
      rulesOf(objs, "ClusterRole")
        .filter((r) => r.resources.includes(resource))
        .flatMap((r) => r.resourceNames ?? ["(every object)"]);
    expect(names("mutatingwebhookconfigurations")).to.deep.equal([mutating]);
    expect(names("validatingwebhookconfigurations")).to.deep.equal([validating]);
    const secretNames = rulesOf(objs, "Role")
      .filter((r) => r.resources.includes("secrets") && r.verbs.includes("update"))
      .flatMap((r) => r.resourceNames ?? ["(every object)"]);
    expect(secretNames).to.deep.equal([SELF_MANAGED_NAMES.secret]);

    // Bound to the Deployment's ServiceAccount, in its namespace.
    const { deployment } = deploymentOf(objs);
    for (const name of added.filter((k) => k.includes("Binding")).map((k) => k.split("/")[2]!)) {
      const binding = objs.find((o) => o.metadata.name === name)!;
      const roleRef = binding.roleRef as { kind: string; name: string };
      one(objs, roleRef.kind, roleRef.name);
      expect(binding.subjects).to.deep.equal([
        {
          kind: "ServiceAccount",
          name: spec.template.spec.serviceAccountName,
          namespace: deployment.metadata.namespace,
        },
      ]);
    }
  });

  it("config/components/load-balancers: the flag and one ClusterRole for it, bound to the controller, nothing else", () => {
    const objs = built.get(LOAD_BALANCERS)!;
    const base = built.get(DEFAULT)!;
    const added = [
      "ClusterRole//metal3-ipam-load-balancer-role",
      "ClusterRoleBinding//metal3-ipam-load-balancer-rolebinding",
    ];
    expect(objs.map(key).sort()).to.deep.equal([...base.map(key), ...added].sort());
    const { deployment, spec, container } = deploymentOf(objs);
    expect(container.args).to.deep.equal([...(deploymentOf(base).container.args ?? []), "--serve-load-balancers"]);
    expect(one(objs, "ClusterRole", "metal3-ipam-load-balancer-role").rules).to.deep.equal(
      normalizeRules(LOAD_BALANCER_CLUSTER_ROLE_RULES),
    );
    const binding = one(objs, "ClusterRoleBinding", "metal3-ipam-load-balancer-rolebinding");
    expect(binding.roleRef).to.include({ kind: "ClusterRole", name: "metal3-ipam-load-balancer-role" });
    expect(binding.subjects).to.deep.equal([
      { kind: "ServiceAccount", name: spec.template.spec.serviceAccountName, namespace: deployment.metadata.namespace },
    ]);
    expect(rulesOf(base, "ClusterRole").flatMap((r) => r.resources)).to.not.include("services");
  });

  it("config/network-policy: the controller's pods in its namespace, the ports they name", () => {
    const objs = built.get(NETWORK_POLICY)!;
    const { deployment, spec, container } = deploymentOf(built.get(DEFAULT)!);
    const ports = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]));
    const allowed: (string | number | undefined)[] = [];
    expect(objs.map((o) => o.kind)).to.deep.equal(["NetworkPolicy", "NetworkPolicy"]);
    for (const p of objs) {
      expect(p.metadata.namespace).to.equal(deployment.metadata.namespace);
      const policy = p.spec as {
        podSelector: { matchLabels: Record<string, string> };
        ingress: { ports: { port: string }[] }[];
      };
      expect(spec.template.metadata.labels).to.include(policy.podSelector.matchLabels);
      for (const rule of policy.ingress) for (const port of rule.ports) allowed.push(ports.get(port.port));
    }
    // The webhook port (the Service's target) and the metrics port; never the health port.
    const service = one(built.get(DEFAULT)!, "Service", "metal3-ipam-webhook-service").spec as {
      ports: { targetPort: number }[];
    };
    expect(allowed).to.include(service.ports[0]!.targetPort);
    expect(allowed).to.include(ports.get("metrics"));
    expect(allowed).to.not.include(undefined);
    expect(allowed).to.not.include(ports.get("health"));
  });

  it("each passes `--dry-run=server` as written", async function () {
    if (usingExistingCluster()) this.skip();
    const cluster = await sharedCluster();
    await installCrds(cluster.kubeConfig, [join(repoRoot, "e2e", "fixtures")]);
    // The namespace must exist for a dry-run of the objects inside it (a dry-run creates nothing).
    await cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: "metal3-ipam-system" } } })
      .catch((err: unknown) => {
        if (!isConflict(err)) throw err;
      });
    for (const command of installCommands()) {
      const out = await runInstallCommand(command, cluster.kubeconfigPath, ["--dry-run=server"]);
      const lines = out.split("\n").filter((l) => l.endsWith("(server dry run)"));
      expect(lines, command.line).to.have.length(built.get(command.dir)!.length);
    }
  });
});
