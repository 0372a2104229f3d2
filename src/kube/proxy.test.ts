import { expect } from "chai";
import { proxyFor } from "./proxy.js";

describe("proxyFor (which proxy reaches an API server)", () => {
  const env = { HTTPS_PROXY: "http://proxy.corp:3128", HTTP_PROXY: "http://plain.corp:3128" };

  it("takes the kubeconfig's proxy-url over the environment", () => {
    expect(proxyFor("https://api.corp:6443", "https://own.corp:8443", env)).to.equal("https://own.corp:8443");
  });

  it("takes HTTPS_PROXY for https servers and HTTP_PROXY for http ones, lower case too", () => {
    expect(proxyFor("https://api.corp:6443", undefined, env)).to.equal("http://proxy.corp:3128");
    expect(proxyFor("http://api.corp:8080", undefined, env)).to.equal("http://plain.corp:3128");
    expect(proxyFor("https://api.corp", undefined, { https_proxy: "proxy.corp:3128" })).to.equal(
      "http://proxy.corp:3128",
    );
    expect(proxyFor("https://api.corp", undefined, {})).to.equal(undefined);
  });

  it("goes direct to hosts NO_PROXY names: hosts, domains, IPs, CIDRs, ports and *", () => {
    const direct = (server: string, noProxy: string): boolean =>
      proxyFor(server, undefined, { ...env, NO_PROXY: noProxy }) === undefined;
    expect(direct("https://api.corp:6443", "other.corp,api.corp")).to.equal(true);
    expect(direct("https://api.k8s.corp:6443", ".corp")).to.equal(true);
    expect(direct("https://api.k8s.corp:6443", "corp")).to.equal(true);
    expect(direct("https://apicorp:6443", "corp")).to.equal(false);
    expect(direct("https://10.1.2.3:6443", "10.0.0.0/8")).to.equal(true);
    expect(direct("https://11.1.2.3:6443", "10.0.0.0/8")).to.equal(false);
    expect(direct("https://[fd00::1]:6443", "fd00::/8")).to.equal(true);
    expect(direct("https://api.corp:6443", "api.corp:443")).to.equal(false);
    expect(direct("https://api.corp:6443", "api.corp:6443")).to.equal(true);
    expect(direct("https://api.corp:6443", "*")).to.equal(true);
  });

  it("never sends loopback servers through an environment proxy", () => {
    expect(proxyFor("https://127.0.0.1:6443", undefined, env)).to.equal(undefined);
    expect(proxyFor("https://localhost:6443", undefined, env)).to.equal(undefined);
    expect(proxyFor("https://[::1]:6443", undefined, env)).to.equal(undefined);
  });

  it("refuses proxies it cannot speak instead of going around them", () => {
    expect(() => proxyFor("https://api.corp", "socks5://127.0.0.1:1080", {})).to.throw(
      "proxy scheme socks5 (127.0.0.1:1080) is not supported",
    );
    expect(() => proxyFor("https://api.corp", undefined, { HTTPS_PROXY: "socks5h://p:1080" })).to.throw("socks5h");
  });
});
