/**
 * `kubectl ipam` against a real API server with the controller running on config/samples: golden text and JSON,
 * exit codes, kubectl's connection flags, errors a person understands, and --watch.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { dump } from "js-yaml";
import { LocalPlane } from "../../hack/testkit/plane.js";
import { freshNamespace, repoRoot, sharedCluster, usingExistingCluster } from "../../hack/testkit/cluster.js";
import { claim, clients, startController, type Clients } from "../../hack/testkit/ipam.js";
import { eventually } from "../../hack/testkit/wait.js";
import { applySamples, expectGolden, normalise } from "./support.js";
import { runCli, type CliRun } from "../../hack/testkit/cli.js";

describe("kubectl ipam on config/samples (real API server)", function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let kubeconfigPath: string;
  let c: Clients;
  let ns: string;
  let stop: () => Promise<void>;
  const tmp = mkdtempSync(join(tmpdir(), "cli-test-"));
  const cli = (...args: string[]): Promise<CliRun> => runCli(args, { KUBECONFIG: kubeconfigPath });

  before(async () => {
    const cluster = await sharedCluster();
    ({ kubeConfig: kc, kubeconfigPath } = cluster);
    c = clients(kc);
    ns = await freshNamespace(kc, "cli");
    ({ stop } = await startController(kc, ns));
    const claims = await applySamples(c, ns);
    // Settled: every claim answered, and the one claim too many on pool-small failed.
    await eventually(
      "samples allocated",
      async () => {
        const list = (await c.claims.list(ns)).items;
        const answered = list.filter((x) => x.status?.conditions?.some((k) => k.type === "Ready"));
        const bound = list.filter((x) => x.status?.address?.name);
        return answered.length === claims && bound.length === claims - 1;
      },
      60_000,
      200,
    );
  });

  after(async () => {
    await stop?.();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("pools: one line per pool, plain when piped, JSON with exact counts", async () => {
    const text = await cli("pools", "-n", ns);
    expect(text.code, text.stderr).to.equal(0);
    expectGolden("pools.txt", normalise(text.stdout, ns));
    const json = await cli("pools", "-n", ns, "-o", "json");
    expect(json.code).to.equal(0);
    expectGolden("pools.json", normalise(json.stdout, ns));
    const parsed = JSON.parse(json.stdout) as {
      pools: { name: string; used: number; total: unknown; failed: { ipClaims: number } }[];
    };
    expect(parsed.pools.map((p) => [p.name, p.used, p.total, p.failed.ipClaims])).to.deep.equal([
      ["pool-small", 3, 3, 1],
      ["pool-v4", 4, 27, 0],
      ["pool-v6", 2, 496, 0],
    ]);
    const yaml = await cli("pools", "-n", ns, "-o", "yaml");
    expect(yaml.stdout).to.match(/^pools:\n {2}- namespace: /);
    const all = await cli("pools", "-A");
    expect(all.code).to.equal(0);
    // Other suites' pools of other kinds on the shared plane add a KIND column to the all-namespaces view.
    expect(all.stdout.split("\n")[0]).to.match(/^NAMESPACE\s+(KIND\s+)?NAME\s+CLUSTER/);
    expect(all.stdout).to.match(new RegExp(`^${ns} +(IPPool +)?pool-v4 `, "m"));
  });

  it("free: compact ranges and the next address under the strategy", async () => {
    for (const pool of ["pool-v4", "pool-v6", "pool-small"]) {
      const text = await cli("free", pool, "-n", ns);
      expect(text.code, text.stderr).to.equal(0);
      expectGolden(`free-${pool}.txt`, normalise(text.stdout, ns));
    }
    const json = await cli("free", "pool-v4", "-n", ns, "-o", "json");
    expectGolden("free-pool-v4.json", normalise(json.stdout, ns));
    expect((JSON.parse(json.stdout) as { next: { address: string } }).next.address).to.equal("192.168.10.12");
  });

  it("who: by address (any spelling) and by claim", async () => {
    const byAddress = await cli("who", "192.168.10.15", "-n", ns);
    expect(byAddress.code, byAddress.stderr).to.equal(0);
    expectGolden("who-address.txt", normalise(byAddress.stdout, ns));
    const v6 = await cli("who", "2001:DB8:0:1:0::10", "-n", ns, "-o", "json");
    expect(v6.code).to.equal(0);
    expect((JSON.parse(v6.stdout) as { holders: { address: string }[] }).holders.map((h) => h.address)).to.deep.equal([
      "2001:db8:0:1::10",
    ]);
    const byClaim = await cli("who", "node-requested", "-n", ns, "-o", "json");
    expectGolden("who-claim.json", normalise(byClaim.stdout, ns));
    const free = await cli("who", "192.168.10.19", "-n", ns);
    expect(free.stdout).to.equal(`192.168.10.19 is free: nobody holds it (in the ranges of ${ns}/pool-v4)\n`);
  });

  it("exit codes and messages: unknown pool, address or claim (3), usage (2)", async () => {
    const cases: [string[], number, string][] = [
      [["free", "nope", "-n", ns], 3, "error-unknown-pool.txt"],
      [["who", "10.99.0.1", "-n", ns], 3, "error-unknown-address.txt"],
      [["who", "nobody", "-n", ns], 3, "error-unknown-claim.txt"],
      [["free"], 2, "error-usage.txt"],
    ];
    for (const [args, code, golden] of cases) {
      const r = await cli(...args);
      expect(r.code, args.join(" ")).to.equal(code);
      expect(r.stdout).to.equal("");
      expectGolden(golden, normalise(r.stderr, ns));
    }
  });

  it("honours --kubeconfig and --context over KUBECONFIG, and says when the server cannot be reached", async () => {
    const admin = kc.getCurrentUser()!;
    const cluster = kc.getCurrentCluster()!;
    const file = join(tmp, "two-contexts");
    writeFileSync(
      file,
      dump({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "broken",
        clusters: [
          { name: "real", cluster: { server: cluster.server, "certificate-authority-data": cluster.caData } },
          { name: "nowhere", cluster: { server: "https://127.0.0.1:1", "insecure-skip-tls-verify": true } },
        ],
        users: [
          { name: "admin", user: { "client-certificate-data": admin.certData, "client-key-data": admin.keyData } },
        ],
        contexts: [
          { name: "broken", context: { cluster: "nowhere", user: "admin" } },
          { name: "real", context: { cluster: "real", user: "admin", namespace: ns } },
        ],
      }),
    );
    const current = await runCli(["--kubeconfig", file, "pools"], { KUBECONFIG: "/nonexistent" });
    expect(current.code).to.equal(3);
    expect(current.stderr).to.match(/^error: cannot reach the API server at https:\/\/127\.0\.0\.1:1: /);
    // --context picks the other cluster, and its namespace becomes the default for -n.
    const real = await runCli(["--kubeconfig", file, "--context", "real", "pools"], { KUBECONFIG: "/nonexistent" });
    expect(real.code, real.stderr).to.equal(0);
    expect(real.stdout)
      .to.match(/^NAME +CLUSTER/)
      .and.to.include("pool-v4");
    const viaEnv = await runCli(["--context", "real", "free", "pool-small"], { KUBECONFIG: file });
    expect(viaEnv.code, viaEnv.stderr).to.equal(0);
    const unknown = await runCli(["--kubeconfig", file, "--context", "nope", "pools"], {});
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.equal('error: context "nope" not found in the kubeconfig (known: broken, real)\n');
  });

  it("refuses a kubeconfig that impersonates or has keys it does not know, instead of reading as the admin underneath", async () => {
    const admin = kc.getCurrentUser()!;
    const cluster = kc.getCurrentCluster()!;
    const write = (name: string, user: object): string => {
      const file = join(tmp, name);
      writeFileSync(
        file,
        dump({
          apiVersion: "v1",
          kind: "Config",
          "current-context": "c",
          clusters: [{ name: "c", cluster: { server: cluster.server, "certificate-authority-data": cluster.caData } }],
          users: [
            {
              name: "admin",
              user: { "client-certificate-data": admin.certData, "client-key-data": admin.keyData, ...user },
            },
          ],
          contexts: [{ name: "c", context: { cluster: "c", user: "admin", namespace: ns } }],
        }),
      );
      return file;
    };
    // Its client sends no Impersonate-* headers: reading as the admin underneath would be a quiet privilege
    // escalation, so any impersonation is refused, naming the file.
    for (const user of [{ as: "someone" }, { as: "someone", "as-groups": ["devs"] }]) {
      const file = write("impersonating", user);
      const r = await runCli(["pools"], { KUBECONFIG: file });
      expect(r.code).to.equal(3);
      expect(r.stderr).to.equal(
        `error: kubeconfig ${file}: users[name="admin"]: kubectl ipam cannot send ${Object.keys(user).join(", ")} ` +
          "(its client takes only a bearer token or a client certificate); refusing rather than read as another identity\n",
      );
    }
    const unknownFile = write("unknown-key", { "as-tenant": "x" });
    const unknown = await runCli(["pools"], { KUBECONFIG: unknownFile });
    expect(unknown.code).to.equal(3);
    expect(unknown.stderr).to.contain(
      `error: kubeconfig ${unknownFile}: users[name="admin"]: key "as-tenant" is not understood`,
    );
  });

  it("names the verb and resource RBAC refuses", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "nobody" } } });
    const token = await core.createNamespacedServiceAccountToken({
      name: "nobody",
      namespace: ns,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const cluster = kc.getCurrentCluster()!;
    const file = join(tmp, "nobody");
    writeFileSync(
      file,
      dump({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "sa",
        clusters: [{ name: "c", cluster: { server: cluster.server, "certificate-authority-data": cluster.caData } }],
        users: [{ name: "nobody", user: { token: token.status!.token } }],
        contexts: [{ name: "sa", context: { cluster: "c", user: "nobody", namespace: ns } }],
      }),
    );
    const r = await runCli(["pools"], { KUBECONFIG: file });
    expect(r.code).to.equal(3);
    expect(r.stderr).to.match(
      new RegExp(
        `^error: forbidden: your user may not list ippools\\.ipam\\.metal3\\.io in namespace "${ns}"; ask for an RBAC rule granting "list" on ippools\\.ipam\\.metal3\\.io`,
      ),
    );
  });

  it("pools --watch redraws when an allocation happens", async () => {
    const child = spawn(process.execPath, [join(repoRoot, "bin", "kubectl-ipam.mjs"), "pools", "-n", ns, "--watch"], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await eventually("the first table", () => out.includes("4/27"), 30_000, 100);
      // Give the watches time to connect before the change; a change before that shows up through the initial list.
      await c.claims.create(ns, claim(ns, "watched", "pool-v4"));
      await eventually("a redraw with the new allocation", () => out.includes("5/27"), 30_000, 100);
      const blocks = out.trim().split("\n\n");
      expect(blocks.length).to.be.greaterThan(1);
      expect(blocks.at(-1)).to.match(/pool-v4 +- +sequential +5\/27/);
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).to.equal(0);
  });

  it("pools --watch exits 0 on Ctrl-C even while its watches are still connecting", async () => {
    // The first table is drawn before the watches start: a SIGINT right after it lands while they connect.
    const child = spawn(process.execPath, [join(repoRoot, "bin", "kubectl-ipam.mjs"), "pools", "-n", ns, "--watch"], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.on("close", (code, signal) => resolve([code, signal])),
    );
    child.stdout.once("data", () => child.kill("SIGINT"));
    expect(await exited).to.deep.equal([0, null]);
  });

  it("says our CRDs are missing on a cluster without them", async function () {
    if (usingExistingCluster()) this.skip();
    const bare = await LocalPlane.start({ crdDirs: [] });
    try {
      const r = await runCli(["pools"], { KUBECONFIG: bare.kubeconfigPath });
      expect(r.code).to.equal(3);
      expectGolden("error-no-crds.txt", r.stderr);
      const pre = await runCli(["preflight-move", "-n", "default"], { KUBECONFIG: bare.kubeconfigPath });
      expect(pre.code).to.equal(3);
      expect(pre.stderr).to.equal(r.stderr);
    } finally {
      await bare.stop();
    }
  });
});
