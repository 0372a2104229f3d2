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

  it("reads NO_PROXY domains exactly as Go's httpproxy does: a leading dot or *. matches subdomains only", () => {
    const direct = (server: string, noProxy: string): boolean =>
      proxyFor(server, undefined, { ...env, NO_PROXY: noProxy }) === undefined;
    // `example.com`: the domain itself and its subdomains.
    expect(direct("https://example.com", "example.com")).to.equal(true);
    expect(direct("https://api.example.com", "example.com")).to.equal(true);
    expect(direct("https://notexample.com", "example.com")).to.equal(false);
    // `.example.com` and `*.example.com`: subdomains only, never the domain itself.
    expect(direct("https://example.com", ".example.com")).to.equal(false);
    expect(direct("https://api.example.com", ".example.com")).to.equal(true);
    expect(direct("https://example.com", "*.example.com")).to.equal(false);
    expect(direct("https://a.b.example.com", "*.example.com")).to.equal(true);
    // Ports: a domain or an IP with a port matches that port only (443 is an https server's default).
    expect(direct("https://example.com", "example.com:443")).to.equal(true);
    expect(direct("https://example.com:6443", ".example.com:6443")).to.equal(false);
    expect(direct("https://api.example.com:6443", ".example.com:6443")).to.equal(true);
    expect(direct("https://10.1.2.3:6443", "10.1.2.3:6443")).to.equal(true);
    expect(direct("https://10.1.2.3:6443", "10.1.2.3:443")).to.equal(false);
    expect(direct("https://[fd00::1]:6443", "[fd00::1]:6443")).to.equal(true);
    expect(direct("https://[fd00::1]:6443", "fd00::1")).to.equal(true);
    // A CIDR with a port is no CIDR to Go: it matches nothing.
    expect(direct("https://10.1.2.3:443", "10.0.0.0/8:443")).to.equal(false);
    // `*` anywhere in the list, case and spaces ignored.
    expect(direct("https://api.corp", "other.corp, * ")).to.equal(true);
    expect(direct("https://API.Example.COM", " Example.com ")).to.equal(true);
  });

  it("never sends loopback servers through an environment proxy", () => {
    expect(proxyFor("https://127.0.0.1:6443", undefined, env)).to.equal(undefined);
    expect(proxyFor("https://localhost:6443", undefined, env)).to.equal(undefined);
    expect(proxyFor("https://[::1]:6443", undefined, env)).to.equal(undefined);
    // Go bypasses exactly `localhost`, not names below it.
    expect(proxyFor("https://api.localhost:6443", undefined, env)).to.equal("http://proxy.corp:3128");
  });

  it("refuses proxies it cannot speak instead of going around them", () => {
    expect(() => proxyFor("https://api.corp", "socks5://127.0.0.1:1080", {})).to.throw(
      "proxy scheme socks5 (127.0.0.1:1080) is not supported",
    );
    expect(() => proxyFor("https://api.corp", undefined, { HTTPS_PROXY: "socks5h://p:1080" })).to.throw("socks5h");
  });
});
