/**
 * The controller's door to the API server (src/kube) against a real kube-apiserver: impersonation the server
 * enforces, a proxy on loopback, a client certificate rotated under a running controller, a 20-second admission
 * webhook during a burst, API Priority and Fairness rejecting with 429, and the User-Agent the audit log records.
 * One plane of its own, with an audit log.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { connect as netConnect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { dump } from "js-yaml";
import { CAPI_CRDS, freshNamespace, OUR_CRDS } from "../hack/testkit/cluster.js";
import { auditAllocations, startObservedController } from "../hack/testkit/faults.js";
import { claim, clients, pool, type Clients } from "../hack/testkit/ipam.js";
import { LocalPlane } from "../hack/testkit/plane.js";
import { eventually, sleep } from "../hack/testkit/wait.js";
import type { ClusterAccess } from "../src/kube/access.js";
import { AnswerTooLargeError, ApiError } from "../src/kube/errors.js";
import { ResourceClient } from "../src/kube/resource.js";
import { IPCLAIM, resourceType } from "../api/registry.js";
import type { IPClaim } from "../api/v1alpha1/types.js";
import { loadClusterAccess } from "../src/kube/kubeconfig.js";
import { clientStats } from "../src/kube/ratelimit.js";
import { apiRequest } from "../src/kube/transport.js";
import { loopbackPki } from "../src/webhooks/https.testutil.js";

const b64 = (s: string): string => Buffer.from(s).toString("base64");

/** Writes a kubeconfig for the plane's server with `user` and extra `cluster` keys; returns its path. */
function writeKubeconfig(dir: string, plane: LocalPlane, user: object, cluster: object = {}, name = "config"): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    dump({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "c",
      clusters: [
        { name: "p", cluster: { server: plane.server, "certificate-authority-data": b64(plane.caPem), ...cluster } },
      ],
      users: [{ name: "u", user }],
      contexts: [{ name: "c", context: { cluster: "p", user: "u" } }],
    }),
  );
  return path;
}

/** The admin's client certificate as kubeconfig user keys. */
function adminUser(plane: LocalPlane, extra: object = {}): object {
  const admin = plane.issueClientCertificate("door-admin", ["system:masters"], 1);
  return { "client-certificate-data": b64(admin.certPem), "client-key-data": b64(admin.keyPem), ...extra };
}

interface SelfSubjectReview {
  status: { userInfo: { username?: string; groups?: string[]; uid?: string } };
}

const whoAmI = (access: ClusterAccess): Promise<SelfSubjectReview> =>
  apiRequest<SelfSubjectReview>(access, {
    method: "POST",
    path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    timeoutMs: 10_000,
    what: "create selfsubjectreviews",
  });

const AUDIT_POLICY = { apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] };

describe("the API door against a real API server", function () {
  this.timeout(240_000);
  let plane: LocalPlane;
  let dir: string;
  let admin: Clients;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "apidoor-"));
    writeFileSync(join(dir, "audit-policy.yaml"), dump(AUDIT_POLICY));
    plane = await LocalPlane.start({
      crdDirs: [OUR_CRDS, CAPI_CRDS],
      controllerManager: false,
      apiServerFlags: [
        `--audit-policy-file=${join(dir, "audit-policy.yaml")}`,
        `--audit-log-path=${join(dir, "audit.log")}`,
        // The shared plane turns API Priority and Fairness off; this suite needs its 429s.
        "--enable-priority-and-fairness=true",
      ],
    });
    admin = clients(plane.kubeConfig);
  });
  after(async () => {
    await plane?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("acts as the identity a kubeconfig impersonates (as, as-groups, as-uid), as the API server sees it", async () => {
    const path = writeKubeconfig(
      dir,
      plane,
      adminUser(plane, { as: "system:serviceaccount:door:nobody", "as-groups": ["door-readers"], "as-uid": "u-123" }),
      {},
      "impersonating",
    );
    const access = await loadClusterAccess(path);
    const { userInfo } = (await whoAmI(access)).status;
    expect(userInfo.username).to.equal("system:serviceaccount:door:nobody");
    expect(userInfo.groups).to.include("door-readers");
    expect(userInfo.groups).to.not.include("system:masters");
    expect(userInfo.uid).to.equal("u-123");
    // With no RBAC for that identity, a write the admin could make is forbidden.
    const denied = await apiRequest(access, {
      method: "POST",
      path: "/api/v1/namespaces",
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: "door-forbidden" } },
      timeoutMs: 10_000,
      what: "create namespaces",
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(denied).to.be.instanceOf(ApiError);
    expect((denied as ApiError).code).to.equal(403);
  });

  it("sends every request with its User-Agent, as the API server's audit log records it", async () => {
    const access = await loadClusterAccess(writeKubeconfig(dir, plane, adminUser(plane), {}, "useragent"));
    await whoAmI(access);
    const agents = await eventually(
      "an audit record of a SelfSubjectReview from door-admin",
      () => {
        const records = readFileSync(join(dir, "audit.log"), "utf8")
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { user?: { username?: string }; userAgent?: string; objectRef?: object });
        const ours = records.filter((r) => r.user?.username === "door-admin").map((r) => r.userAgent ?? "");
        return ours.length > 0 && ours;
      },
      10_000,
    );
    for (const agent of agents) expect(agent).to.match(/^metal3-ipam-ts\/\d+\.\d+\.\d+ \(linux\/\w+\) node\/v\d+/);
  });

  it("reaches the API server through the proxy a kubeconfig names (proxy-url), requests and watches alike", async () => {
    const tunnels: string[] = [];
    const proxy = createHttpServer((_req, res) => res.writeHead(405).end());
    proxy.on("connect", (req, client, head) => {
      tunnels.push(req.url ?? "");
      const [host, port] = (req.url ?? "").split(":");
      const upstream = netConnect(Number(port), host ?? "", () => {
        client.write("HTTP/1.1 200 Connection established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const path = writeKubeconfig(dir, plane, adminUser(plane), { "proxy-url": proxyUrl }, "proxied");
      const access = await loadClusterAccess(path);
      expect((await whoAmI(access)).status.userInfo.username).to.equal("door-admin");
      const target = new URL(plane.server).host;
      expect(tunnels).to.include(target);
      // The controller, watches included, through the same proxy.
      const ns = `door-proxy-${Date.now()}`;
      await admin.core.createNamespace({ body: { metadata: { name: ns } } });
      const before = tunnels.length;
      const ctl = await startObservedController(plane.kubeConfig, ns);
      await ctl.stop();
      const proxied = await startObservedController(access, ns);
      try {
        await admin.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.90.0.1", end: "10.90.0.9" }] }));
        await admin.claims.create(ns, claim(ns, "a", "p"));
        await eventually("claim a bound", async () => (await admin.claims.get(ns, "a")).status?.address?.name, 30_000);
      } finally {
        await proxied.stop();
      }
      expect(tunnels.length, "tunnels opened by the controller (one request connection, watches)").to.be.greaterThan(
        before + 1,
      );
    } finally {
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it("keeps writing after its client certificate is rotated in place and the old one expires", async () => {
    const ns = `door-rotate-${Date.now()}`;
    await admin.core.createNamespace({ body: { metadata: { name: ns } } });
    const certFile = join(dir, "rotating.crt");
    const keyFile = join(dir, "rotating.key");
    const write = (pair: { certPem: string; keyPem: string }): void => {
      // As cert-manager and kubeadm do: a new file renamed over the old one.
      writeFileSync(`${keyFile}.new`, pair.keyPem);
      writeFileSync(`${certFile}.new`, pair.certPem);
      renameSync(`${keyFile}.new`, keyFile);
      renameSync(`${certFile}.new`, certFile);
    };
    const shortLived = plane.issueClientCertificate("rotating", ["system:masters"], 25 / 86_400);
    const expiresAt = Date.now() + 25_000;
    write(shortLived);
    const path = writeKubeconfig(dir, plane, { "client-certificate": certFile, "client-key": keyFile }, {}, "rotating");
    const access = await loadClusterAccess(path);
    const ctl = await startObservedController(access, ns);
    try {
      await admin.pools.create(ns, pool(ns, "p", { pools: [{ start: "10.91.0.1", end: "10.91.0.20" }] }));
      await admin.claims.create(ns, claim(ns, "before", "p"));
      await eventually(
        "claim before bound",
        async () => (await admin.claims.get(ns, "before")).status?.address,
        20_000,
      );
      write(plane.issueClientCertificate("rotating", ["system:masters"], 1));
      await sleep(Math.max(0, expiresAt - Date.now()) + 2_000);
      for (const name of ["after-1", "after-2", "after-3"]) await admin.claims.create(ns, claim(ns, name, "p"));
      for (const name of ["after-1", "after-2", "after-3"])
        await eventually(`claim ${name} bound`, async () => (await admin.claims.get(ns, name)).status?.address, 30_000);
      const audit = await auditAllocations(admin, ns);
      expect([audit.bound, audit.duplicateAddresses, audit.claimsWithSeveral]).to.deep.equal([4, [], []]);
    } finally {
      await ctl.stop();
    }
  });

  it("lets a 20-second admission webhook answer delay only its own write: a burst around it binds every claim once", async () => {
    const ns = `door-slow-${Date.now()}`;
    await admin.core.createNamespace({ body: { metadata: { name: ns } } });
    const pki = loopbackPki();
    let slowCalls = 0;
    const webhook: HttpsServer = createHttpsServer(
      { cert: pki.serving.certPem, key: pki.serving.keyPem },
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          const review = JSON.parse(Buffer.concat(chunks).toString()) as {
            request: { uid: string; object?: { spec?: { claim?: { name?: string } } } };
          };
          const slow = review.request.object?.spec?.claim?.name === "slow";
          if (slow) slowCalls++;
          const answer = (): void => {
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end(
              JSON.stringify({
                apiVersion: "admission.k8s.io/v1",
                kind: "AdmissionReview",
                response: { uid: review.request.uid, allowed: true },
              }),
            );
          };
          if (slow) setTimeout(answer, 20_000);
          else answer();
        });
      },
    );
    await new Promise<void>((resolve) => webhook.listen(0, "127.0.0.1", resolve));
    const name = `door-slow-${Date.now()}`;
    const registration = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name },
      webhooks: [
        {
          name: "slow.door.test",
          admissionReviewVersions: ["v1"],
          sideEffects: "None",
          failurePolicy: "Fail",
          timeoutSeconds: 30,
          clientConfig: {
            url: `https://127.0.0.1:${(webhook.address() as AddressInfo).port}/`,
            caBundle: b64(pki.ca.certPem),
          },
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } },
          rules: [
            { apiGroups: ["ipam.metal3.io"], apiVersions: ["*"], operations: ["CREATE"], resources: ["ipaddresses"] },
          ],
        },
      ],
    };
    const access = await loadClusterAccess(writeKubeconfig(dir, plane, adminUser(plane), {}, "slow"));
    await apiRequest(access, {
      method: "POST",
      path: "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
      body: registration,
      timeoutMs: 10_000,
      what: "create validatingwebhookconfigurations",
    });
    const ctl = await startObservedController(access, ns);
    try {
      await admin.pools.create(ns, pool(ns, "a", { pools: [{ start: "10.92.0.1", end: "10.92.0.200" }] }));
      await admin.pools.create(ns, pool(ns, "b", { pools: [{ start: "10.93.0.1", end: "10.93.0.200" }] }));
      const names = Array.from({ length: 40 }, (_, i) => `c-${i}`);
      await Promise.all([
        admin.claims.create(ns, claim(ns, "slow", "a")),
        ...names.map((n, i) => admin.claims.create(ns, claim(ns, n, i % 2 ? "a" : "b"))),
      ]);
      const audit = await eventually(
        "all 41 claims bound",
        async () => {
          const now = await auditAllocations(admin, ns);
          return now.bound === 41 && now;
        },
        60_000,
        250,
      );
      expect([audit.duplicateAddresses, audit.claimsWithSeveral, audit.strayAddresses]).to.deep.equal([[], [], []]);
      expect(slowCalls, "the slow claim's IPAddress was created once, not retried after a timeout").to.equal(1);
      const failures = ctl.logs.records.filter((r) => r.level === "error" || r.level === "warn");
      expect(failures.map((r) => r.msg)).to.deep.equal([]);
    } finally {
      await ctl.stop();
      await apiRequest(access, {
        method: "DELETE",
        path: `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${name}`,
        timeoutMs: 10_000,
        what: "delete validatingwebhookconfigurations",
      });
      webhook.closeAllConnections();
      webhook.close();
    }
  });

  it("lists a tenant's large objects in shorter pages when a page passes the answer bound, none lost or repeated", async () => {
    const ns = await freshNamespace(plane.kubeConfig, "door-large");
    // Thirty IPClaims of 100 KiB each (an annotation: the API server bounds one object, not a page of them).
    const filler = "x".repeat(100 * 1024);
    const names = Array.from({ length: 30 }, (_, i) => `big-${String(i).padStart(2, "0")}`);
    await Promise.all(
      names.map((name) =>
        admin.claims.create(ns, claim(ns, name, "p", { annotations: { "example.com/filler": filler } })),
      ),
    );
    const bound = 1024 * 1024;
    const bounded = new ResourceClient<IPClaim>(plane.kubeConfig, resourceType(IPCLAIM), { maxAnswerBytes: bound });
    const pages: number[] = [];
    const listed: string[] = [];
    await bounded.listPages(ns, {}, (items) => {
      pages.push(Buffer.byteLength(JSON.stringify(items)));
      listed.push(...items.map((c) => c.metadata.name ?? ""));
    });
    expect(listed, "every claim once, in order").to.deep.equal(names);
    expect(pages.length, "pages").to.be.greaterThan(3);
    expect(Math.max(...pages), "the largest page's objects, in bytes").to.be.below(bound);
    // A probe's page is not shrunk: it fails with the bound instead.
    const probe = await bounded.list(ns, { limit: 30 }).then(
      () => "listed",
      (err: unknown) => (err instanceof AnswerTooLargeError ? "too large" : String(err)),
    );
    expect(probe).to.equal("too large");
  });

  it("waits out API Priority and Fairness rejections (429 with Retry-After) instead of failing", async () => {
    const access = await loadClusterAccess(writeKubeconfig(dir, plane, adminUser(plane), {}, "apf-admin"));
    const create = (path: string, body: object): Promise<unknown> =>
      apiRequest(access, { method: "POST", path, body, timeoutMs: 10_000, what: `create ${path}` });
    const flowcontrol = "/apis/flowcontrol.apiserver.k8s.io/v1";
    await create(`${flowcontrol}/prioritylevelconfigurations`, {
      metadata: { name: "door-throttled" },
      spec: {
        type: "Limited",
        limited: { nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: "Reject" } },
      },
    });
    await create(`${flowcontrol}/flowschemas`, {
      metadata: { name: "door-throttled" },
      spec: {
        priorityLevelConfiguration: { name: "door-throttled" },
        matchingPrecedence: 100,
        rules: [
          {
            subjects: [{ kind: "User", user: { name: "door-throttled" } }],
            resourceRules: [
              { verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true },
            ],
            nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
          },
        ],
      },
    });
    // A role of its own: `view` is aggregated by a controller this plane does not run.
    await create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      metadata: { name: "door-throttled-read" },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }],
    });
    await create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      metadata: { name: "door-throttled-read" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "door-throttled-read" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "door-throttled" }],
    });
    const throttled = await loadClusterAccess(
      writeKubeconfig(dir, plane, adminUser(plane, { as: "door-throttled" }), {}, "apf-throttled"),
    );
    const rejected = async (): Promise<number> => {
      const text = await apiRequest<string>(access, {
        method: "GET",
        path: "/metrics",
        timeoutMs: 10_000,
        what: "get metrics",
      });
      return String(text)
        .split("\n")
        .filter(
          (l) =>
            l.startsWith("apiserver_flowcontrol_rejected_requests_total") &&
            l.includes('priority_level="door-throttled"'),
        )
        .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
    };
    const retriedBefore = clientStats.retriedAfterThrottle;
    const rejectedBefore = await rejected();
    // Waves of concurrent lists until the API server has rejected some (the new priority level reaches its
    // configuration within seconds); every request of every wave must succeed all the same.
    let waves = 0;
    await eventually(
      "API Priority and Fairness to reject some of the lists",
      async () => {
        waves++;
        const answers = await Promise.all(
          Array.from({ length: 24 }, () =>
            apiRequest<{ items: unknown[] }>(throttled, {
              method: "GET",
              path: "/api/v1/namespaces/kube-system/configmaps",
              timeoutMs: 60_000,
              what: "list configmaps",
            }),
          ),
        );
        expect(answers.every((a) => Array.isArray(a.items))).to.equal(true);
        return (await rejected()) > rejectedBefore;
      },
      60_000,
      500,
    );
    expect(waves).to.be.greaterThan(0);
    expect(clientStats.retriedAfterThrottle, "requests sent again after a 429").to.be.greaterThan(retriedBefore);
  });
});
