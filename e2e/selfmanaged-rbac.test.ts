/**
 * The self-managed certificate mode and its RBAC, as the API server enforces it: run with config/rbac alone (the
 * default install's rules) the webhook server says which roles it lacks and stays unready; with config/selfmanaged's
 * roles alone it stores its Secret and reads the configurations (absent here: "not found", not "forbidden").
 */
import { expect } from "chai";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { CONVERSION_CRDS } from "../src/conversioncrds.js";
import { SELF_MANAGED_NAMES, SELF_MANAGED_RBAC_HINT } from "../src/certs/rbac.js";
import { startWebhookServer, type WebhookServer } from "../src/webhooks/server.js";
import { sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { LogCapture } from "../hack/testkit/faults.js";
import {
  bindSelfManagedRoles,
  CONTROLLER_NAMESPACE,
  serviceAccountKubeConfig,
} from "../hack/testkit/serviceaccount.js";
import { eventually } from "../hack/testkit/wait.js";

const CHECK_ACCOUNT = "metal3-ipam-selfmanaged-rbac";

describe("self-managed certificates under the shipped RBAC (real API server)", function () {
  this.timeout(120_000);
  let admin: KubeConfig;
  const servers: WebhookServer[] = [];

  before(async function () {
    if (usingExistingCluster()) this.skip();
    admin = (await sharedCluster()).kubeConfig;
  });

  afterEach(async () => {
    for (const s of servers.splice(0)) await s.stop();
  });

  /**
   * The server as main.ts starts it in this mode, with `kc` for its certificate work. The in-cluster pools' CRDs only
   * where it is refused: allowed, it would put its CA into the shared plane's CRDs, which other suites convert with.
   */
  const options = (kc: KubeConfig, logs: LogCapture, secretName?: string, conversionCrds: readonly string[] = []) => ({
    port: 0,
    host: "127.0.0.1",
    kubeConfig: admin,
    logger: logs.logger,
    selfManaged: {
      kubeConfig: kc,
      mutatingName: SELF_MANAGED_NAMES.mutating,
      validatingName: SELF_MANAGED_NAMES.validating,
      serviceName: "metal3-ipam-webhook-service",
      namespace: CONTROLLER_NAMESPACE,
      conversionCrds,
      resyncMs: 200,
      ...(secretName ? { secretName } : {}),
    },
  });

  it("with config/rbac alone: logs the refusal for each configuration and CRD, names the missing roles, stays unready", async () => {
    const kc = await serviceAccountKubeConfig(admin);
    const logs = new LogCapture();
    const server = await startWebhookServer(options(kc, logs, undefined, CONVERSION_CRDS));
    servers.push(server);
    const refused = (msg: string) =>
      logs.matching(msg, { hint: SELF_MANAGED_RBAC_HINT }).filter((r) => String(r.problem).includes("forbidden"));
    await eventually(
      "both configurations refused",
      () => refused("Cannot inject CA bundle; retrying").length === 2,
      30_000,
      100,
    );
    await eventually(
      "both CRDs refused",
      () => refused("Cannot inject CA bundle into CRD; retrying").length === CONVERSION_CRDS.length,
      30_000,
      100,
    );
    expect(server.ready()).to.equal(false);
  });

  it("with config/rbac alone and a shared Secret: fails to start, naming the Secret and the missing roles", async () => {
    const kc = await serviceAccountKubeConfig(admin);
    const failure = await startWebhookServer(options(kc, new LogCapture(), SELF_MANAGED_NAMES.secret)).then(
      (server) => {
        servers.push(server);
        return "started";
      },
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    expect(failure).to.contain(`Secret ${CONTROLLER_NAMESPACE}/${SELF_MANAGED_NAMES.secret}:`);
    expect(failure).to.contain("forbidden");
    expect(failure).to.contain(SELF_MANAGED_RBAC_HINT);
  });

  it("with config/selfmanaged's roles: stores the shared Secret and may read the configurations", async () => {
    await bindSelfManagedRoles(admin, CHECK_ACCOUNT);
    const kc = await serviceAccountKubeConfig(admin, CHECK_ACCOUNT);
    const logs = new LogCapture();
    const core = admin.makeApiClient(CoreV1Api);
    try {
      servers.push(await startWebhookServer(options(kc, logs, SELF_MANAGED_NAMES.secret)));
      const secret = await core.readNamespacedSecret({
        name: SELF_MANAGED_NAMES.secret,
        namespace: CONTROLLER_NAMESPACE,
      });
      expect(Object.keys(secret.data ?? {}).sort()).to.deep.equal(["ca.crt", "ca.key", "tls.crt", "tls.key"]);
      // The shared plane has no configurations of these names: read, and found missing.
      const missing = () => logs.matching("Cannot inject CA bundle; retrying", { problem: "not found" });
      await eventually("both configurations read", () => missing().length === 2, 30_000, 100);
      expect(logs.records.filter((r) => String(r.problem).includes("forbidden"))).to.deep.equal([]);
    } finally {
      await core
        .deleteNamespacedSecret({ name: SELF_MANAGED_NAMES.secret, namespace: CONTROLLER_NAMESPACE })
        .catch(() => undefined);
    }
  });
});
