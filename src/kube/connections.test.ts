import { expect } from "chai";
import { HttpMethod, KubeConfig, RequestContext } from "@kubernetes/client-node";
import { shareConnections } from "./connections.js";

function kubeConfig(server: string, token = "t"): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server, skipTLSVerify: true }],
    users: [{ name: "u", token }],
    contexts: [{ name: "ctx", cluster: "c", user: "u" }],
    currentContext: "ctx",
  });
  return kc;
}

async function dispatcherOf(kc: KubeConfig, url: string): Promise<unknown> {
  const context = new RequestContext(url, HttpMethod.GET);
  await kc.applySecurityAuthentication(context);
  return context.getDispatcher();
}

describe("shareConnections", () => {
  it("without it, client-node builds a new dispatcher (a new connection) for every request", async () => {
    const kc = kubeConfig("https://127.0.0.1:6443");
    expect(await dispatcherOf(kc, "https://127.0.0.1:6443/api")).to.not.equal(await dispatcherOf(kc, "https://127.0.0.1:6443/api"));
  });

  it("gives every request of a KubeConfig one keep-alive dispatcher, and keeps the per-request headers", async () => {
    const kc = shareConnections(kubeConfig("https://127.0.0.1:6443"));
    const first = await dispatcherOf(kc, "https://127.0.0.1:6443/api");
    expect(first).to.not.equal(undefined);
    expect(await dispatcherOf(kc, "https://127.0.0.1:6443/apis")).to.equal(first);
    const context = new RequestContext("https://127.0.0.1:6443/api", HttpMethod.GET);
    await kc.applySecurityAuthentication(context);
    expect(context.getHeaders().Authorization).to.equal("Bearer t");
  });

  it("is idempotent, and a change of server gets a new dispatcher", async () => {
    const kc = shareConnections(shareConnections(kubeConfig("https://127.0.0.1:6443")));
    const first = await dispatcherOf(kc, "https://127.0.0.1:6443/api");
    expect(await dispatcherOf(kc, "https://127.0.0.1:6443/api")).to.equal(first);
    kc.clusters[0] = { ...kc.clusters[0]!, server: "https://127.0.0.1:7443" };
    expect(await dispatcherOf(kc, "https://127.0.0.1:7443/api")).to.not.equal(first);
  });
});
