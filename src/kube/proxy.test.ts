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
    // [server, NO_PROXY, goes direct]
    const cases: [string, string, boolean][] = [
      // `example.com`: the domain itself and its subdomains.
      ["https://example.com", "example.com", true],
      ["https://api.example.com", "example.com", true],
      ["https://notexample.com", "example.com", false],
      // `.example.com` and `*.example.com`: subdomains only, never the domain itself.
      ["https://example.com", ".example.com", false],
      ["https://api.example.com", ".example.com", true],
      ["https://example.com", "*.example.com", false],
      ["https://a.b.example.com", "*.example.com", true],
      // Ports: a domain or an IP with a port matches that port only (443 is an https server's default).
      ["https://example.com", "example.com:443", true],
      ["https://example.com:6443", ".example.com:6443", false],
      ["https://api.example.com:6443", ".example.com:6443", true],
      ["https://10.1.2.3:6443", "10.1.2.3:6443", true],
      ["https://10.1.2.3:6443", "10.1.2.3:443", false],
      ["https://[fd00::1]:6443", "[fd00::1]:6443", true],
      ["https://[fd00::1]:6443", "fd00::1", true],
      // A CIDR with a port is no CIDR to Go: it matches nothing.
      ["https://10.1.2.3:443", "10.0.0.0/8:443", false],
      // `*` anywhere in the list; case and spaces ignored.
      ["https://api.corp", "other.corp, * ", true],
      ["https://API.Example.COM", " Example.com ", true],
    ];
    const wrong = cases.filter(
      ([server, noProxy, direct]) =>
        (proxyFor(server, undefined, { ...env, NO_PROXY: noProxy }) === undefined) !== direct,
    );
    expect(wrong, "[server, NO_PROXY, expected to go direct]").to.deep.equal([]);
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
