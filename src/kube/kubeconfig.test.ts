import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { expect } from "chai";
import yaml from "js-yaml";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import type { ClusterAccess } from "./access.js";
import { loadClusterAccess } from "./kubeconfig.js";
import { apiRequest } from "./transport.js";

function kubeconfig(dir: string, user: object, cluster: object = {}): string {
  const path = join(dir, "config");
  writeFileSync(
    path,
    yaml.dump({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "ctx",
      contexts: [
        { name: "other", context: { cluster: "nope", user: "nope" } },
        { name: "ctx", context: { cluster: "c", user: "u" } },
      ],
      clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443/", ...cluster } }],
      users: [{ name: "u", user }],
    }),
  );
  return path;
}

describe("loadClusterAccess (kubeconfig without client-node)", () => {
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "kubeconfig-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("reads the current context: server, CA file relative to the kubeconfig, bearer token", async () => {
    writeFileSync(join(dir, "ca.crt"), "CA PEM");
    const access = await loadClusterAccess(
      kubeconfig(dir, { token: "secret" }, { "certificate-authority": "ca.crt", "tls-server-name": "api.local" }),
    );
    expect(access.server).to.equal("https://127.0.0.1:6443");
    const options = await access.requestOptions();
    expect(options.headers).to.deep.equal({ Authorization: "Bearer secret" });
    expect((options.ca as Buffer).toString()).to.equal("CA PEM");
    expect(options.servername).to.equal("api.local");
  });

  it("reads client certificates from data, and skips TLS verification only when asked", async () => {
    const b64 = (s: string): string => Buffer.from(s).toString("base64");
    const access = await loadClusterAccess(
      kubeconfig(
        dir,
        { "client-certificate-data": b64("CERT"), "client-key-data": b64("KEY") },
        { "insecure-skip-tls-verify": true },
      ),
    );
    const options = await access.requestOptions();
    expect([
      (options.cert as Buffer).toString(),
      (options.key as Buffer).toString(),
      options.rejectUnauthorized,
    ]).to.deep.equal(["CERT", "KEY", false]);
    expect(options.headers).to.deep.equal({});
  });

  it("re-reads a token file, so rotated tokens are used", async () => {
    writeFileSync(join(dir, "token"), "first\n");
    const access = await loadClusterAccess(kubeconfig(dir, { tokenFile: join(dir, "token") }));
    expect((await access.requestOptions()).headers.Authorization).to.equal("Bearer first");
  });

  it("hands exec credentials to client-node instead of ignoring them: the plugin's token is sent", async () => {
    const credential = JSON.stringify({
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      status: { token: "from-exec" },
    });
    const exec = {
      apiVersion: "client.authentication.k8s.io/v1",
      command: "sh",
      args: ["-c", `echo '${credential}'`],
      interactiveMode: "Never",
    };
    const access = await loadClusterAccess(kubeconfig(dir, { exec }));
    expect(access.server).to.equal("https://127.0.0.1:6443");
    expect((await access.requestOptions()).headers.Authorization).to.equal("Bearer from-exec");
  });

  /** An exec plugin, a shell script, whose token is `KUBERNETES_EXEC_INFO` as it received it (base64). */
  const ECHO_EXEC_INFO = [
    "#!/bin/sh",
    'info=$(printf %s "$KUBERNETES_EXEC_INFO" | base64 | tr -d "\\n")',
    'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\' "$info"',
    "",
  ].join("\n");
  const execInfo = async (access: ClusterAccess): Promise<unknown> => {
    const token = String((await access.requestOptions()).headers.Authorization).replace(/^Bearer /, "");
    return JSON.parse(Buffer.from(token, "base64").toString("utf8"));
  };

  it("runs a relative exec command from the kubeconfig's folder and passes the cluster's information", async () => {
    mkdirSync(join(dir, "bin"));
    writeFileSync(join(dir, "bin", "plugin"), ECHO_EXEC_INFO, { mode: 0o755 });
    const ca = Buffer.from("CA PEM");
    const exec = {
      apiVersion: "client.authentication.k8s.io/v1",
      command: "bin/plugin",
      interactiveMode: "Never",
      provideClusterInfo: true,
      env: [{ name: "OTHER", value: "kept" }],
    };
    const extension = { audience: "api-123" };
    const access = await loadClusterAccess(
      kubeconfig(
        dir,
        { exec },
        {
          server: "https://rancher.example/k8s/clusters/c-abc/",
          "certificate-authority-data": ca.toString("base64"),
          "tls-server-name": "api.local",
          "proxy-url": "http://proxy.corp:3128",
          extensions: [{ name: "client.authentication.k8s.io/exec", extension }],
        },
      ),
    );
    expect(await execInfo(access)).to.deep.equal({
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      spec: {
        interactive: false,
        cluster: {
          server: "https://rancher.example/k8s/clusters/c-abc",
          "tls-server-name": "api.local",
          "certificate-authority-data": ca.toString("base64"),
          "proxy-url": "http://proxy.corp:3128",
          config: extension,
        },
      },
    });
  });

  it("passes no cluster information unless asked, and looks a bare exec command up on PATH", async () => {
    const bin = join(dir, "path-bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "kube-plugin-test"), ECHO_EXEC_INFO, { mode: 0o755 });
    const exec = { apiVersion: "client.authentication.k8s.io/v1beta1", command: "kube-plugin-test" };
    const saved = process.env.PATH;
    process.env.PATH = `${bin}${delimiter}${saved ?? ""}`;
    try {
      const access = await loadClusterAccess(kubeconfig(dir, { exec }));
      expect(await execInfo(access)).to.deep.equal({
        apiVersion: "client.authentication.k8s.io/v1beta1",
        kind: "ExecCredential",
        spec: { interactive: false },
      });
    } finally {
      process.env.PATH = saved;
    }
  });

  it("reads the user information of an https server as basic auth, and keeps the server's path", async () => {
    const access = await loadClusterAccess(
      kubeconfig(dir, {}, { server: "https://jane:s%40cret@rancher.example/k8s/clusters/c-abc/" }),
    );
    expect(access.server).to.equal("https://rancher.example/k8s/clusters/c-abc");
    expect((await access.requestOptions()).headers).to.deep.equal({
      Authorization: `Basic ${Buffer.from("jane:s@cret").toString("base64")}`,
    });
  });

  it("says what is wrong with a kubeconfig without a usable current context", async () => {
    const path = join(dir, "broken");
    writeFileSync(path, yaml.dump({ "current-context": "missing", contexts: [] }));
    const err = await loadClusterAccess(path).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(err)).to.contain(`kubeconfig ${path}: current-context "missing" is not in contexts`);
  });

  it("sends the impersonation a user asks for (as, as-uid, as-groups, as-user-extra)", async () => {
    const access = await loadClusterAccess(
      kubeconfig(dir, {
        token: "t",
        as: "jane",
        "as-uid": "42",
        "as-groups": ["devs", "ops"],
        "as-user-extra": { "example.com/scopes": ["a", "b"] },
      }),
    );
    expect((await access.requestOptions()).headers).to.deep.equal({
      Authorization: "Bearer t",
      "Impersonate-User": "jane",
      "Impersonate-Uid": "42",
      "Impersonate-Group": ["devs", "ops"],
      "Impersonate-Extra-example.com%2Fscopes": ["a", "b"],
    });
  });

  it("merges the files of $KUBECONFIG as kubectl does: the first to name an entry wins, paths relative to their file", async () => {
    const other = mkdtempSync(join(tmpdir(), "kubeconfig-other-"));
    const saved = process.env.KUBECONFIG;
    try {
      writeFileSync(join(other, "ca.crt"), "OTHER CA");
      const first = join(dir, "config");
      writeFileSync(
        first,
        yaml.dump({
          "current-context": "mixed",
          contexts: [{ name: "mixed", context: { cluster: "c2", user: "u2" } }],
          users: [{ name: "u2", user: { token: "first" } }],
        }),
      );
      const second = join(other, "config");
      writeFileSync(
        second,
        yaml.dump({
          "current-context": "ignored",
          clusters: [{ name: "c2", cluster: { server: "https://second:6443", "certificate-authority": "ca.crt" } }],
          users: [{ name: "u2", user: { token: "second" } }],
        }),
      );
      process.env.KUBECONFIG = [first, join(dir, "missing"), second].join(":");
      const access = await loadClusterAccess();
      const options = await access.requestOptions();
      expect([access.server, options.headers.Authorization, String(options.ca)]).to.deep.equal([
        "https://second:6443",
        "Bearer first",
        "OTHER CA",
      ]);
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("loads what client-node's exportConfig writes (null keys, a name inside each context)", async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "c", server: "https://127.0.0.1:6443", skipTLSVerify: true }],
      users: [{ name: "u", token: "exported" }],
      contexts: [{ name: "ctx", cluster: "c", user: "u", namespace: "ns" }],
      currentContext: "ctx",
    });
    const path = join(dir, "exported");
    writeFileSync(path, kc.exportConfig());
    const access = await loadClusterAccess(path);
    expect((await access.requestOptions()).headers).to.deep.equal({ Authorization: "Bearer exported" });
  });

  describe("refuses what it would not honour, naming the file and the key", () => {
    const refusal = async (path: string): Promise<string> =>
      String(
        await loadClusterAccess(path).then(
          () => "loaded",
          (e: unknown) => e,
        ),
      );

    it("an unknown key in the user, cluster or context", async () => {
      const path = kubeconfig(dir, { token: "t", "as-tenant": "x" });
      expect(await refusal(path)).to.contain(`kubeconfig ${path}: users[name="u"]: key "as-tenant" is not understood`);
      expect(await refusal(kubeconfig(dir, {}, { "proxy-urls": "http://p" }))).to.contain(
        `clusters[name="c"]: key "proxy-urls"`,
      );
    });

    it("a value of the wrong type, malformed base64 and malformed YAML", async () => {
      expect(await refusal(kubeconfig(dir, { token: "t", as: "x", "as-groups": "devs" }))).to.contain(
        `users[name="u"].as-groups must be a list of strings`,
      );
      expect(await refusal(kubeconfig(dir, { "client-certificate-data": "not base64!" }))).to.contain(
        `users[name="u"].client-certificate-data must be base64 data`,
      );
      const path = join(dir, "broken.yaml");
      writeFileSync(path, "clusters: [\n  - oops: {\n");
      expect(await refusal(path)).to.contain(`kubeconfig ${path}: cannot read it:`);
    });

    it("a file it names that cannot be read", async () => {
      const path = kubeconfig(dir, { token: "t" }, { "certificate-authority": "nope.crt" });
      expect(await refusal(path)).to.contain(
        `kubeconfig ${path}: clusters[name="c"].certificate-authority: cannot read ${join(dir, "nope.crt")}`,
      );
    });

    it("combinations kubectl refuses: insecure with a CA, two credentials, groups without a user", async () => {
      writeFileSync(join(dir, "ca.crt"), "CA");
      expect(
        await refusal(kubeconfig(dir, {}, { "insecure-skip-tls-verify": true, "certificate-authority": "ca.crt" })),
      ).to.contain("insecure-skip-tls-verify is true and a certificate authority is set");
      expect(await refusal(kubeconfig(dir, { token: "t", username: "a", password: "b" }))).to.contain(
        "more than one authentication method (token, basic auth)",
      );
      expect(await refusal(kubeconfig(dir, { token: "t", "as-groups": ["g"] }))).to.contain(
        `as-uid, as-groups and as-user-extra need "as"`,
      );
    });

    it("a proxy it cannot speak", async () => {
      expect(await refusal(kubeconfig(dir, { token: "t" }, { "proxy-url": "socks5://127.0.0.1:1080" }))).to.contain(
        `clusters[name="c"].proxy-url: proxy scheme socks5 (127.0.0.1:1080) is not supported`,
      );
    });

    it("user information in the server URL over plain http://, or beside another credential, never repeating it", async () => {
      const plain = kubeconfig(dir, {}, { server: "http://jane:hunter2@127.0.0.1:8080" });
      const refused = await refusal(plain);
      expect(refused).to.contain(
        `clusters[name="c"].server is plain http://: refusing to send the basic auth in the server URL credentials`,
      );
      const both = await refusal(kubeconfig(dir, { token: "t" }, { server: "https://jane:hunter2@api.corp" }));
      expect(both).to.contain("more than one authentication method (token, basic auth in the server URL)");
      const malformed = await refusal(kubeconfig(dir, {}, { server: "https://jane:hunter2@[oops" }));
      expect(malformed).to.contain(`clusters[name="c"].server must be an http:// or https:// URL`);
      for (const message of [refused, both, malformed]) expect(message).not.to.match(/hunter2|jane/);
    });

    it("credentials over plain http://: nothing reaches the server", async () => {
      const seen: string[] = [];
      const server = createServer((req, res) => {
        seen.push(req.headers.authorization ?? "(none)");
        res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const path = kubeconfig(dir, { token: "secret" }, { server: url });
        expect(await refusal(path)).to.contain(
          `clusters[name="c"].server is plain http://: refusing to send the token`,
        );
        // The same through a client-node KubeConfig (tests and tools hold those).
        const kc = new KubeConfig();
        kc.loadFromOptions({
          clusters: [{ name: "c", server: url, skipTLSVerify: true }],
          users: [{ name: "u", token: "secret" }],
          contexts: [{ name: "ctx", cluster: "c", user: "u" }],
          currentContext: "ctx",
        });
        const err = await apiRequest(kc, { method: "GET", path: "/api", timeoutMs: 2_000, what: "get api" }).then(
          () => "sent",
          (e: unknown) => String(e),
        );
        expect(err).to.contain("refusing to send credentials");
        expect(seen).to.deep.equal([]);
      } finally {
        server.close();
      }
    });
  });
});
