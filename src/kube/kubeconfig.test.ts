import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import yaml from "js-yaml";
import { loadClusterAccess } from "./kubeconfig.js";

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

  it("says what is wrong with a kubeconfig without a usable current context", async () => {
    const path = join(dir, "broken");
    writeFileSync(path, yaml.dump({ "current-context": "missing", contexts: [] }));
    const err = await loadClusterAccess(path).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(err)).to.contain("no current context");
  });
});
