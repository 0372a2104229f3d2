import { expect } from "chai";
import { bindToken, mayUseSecret, parseNetBoxUrl, type Binding } from "./trust.js";

const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const allow = (v: string) => ({ "netbox.ipam.cluster.x-k8s.io/allowed-namespaces": v });
const HTTPS = { allowHttp: false };

function refused(b: Binding): { reason: string; message: string } {
  if (b.ok) throw new Error(`expected a refusal, got ${b.url}`);
  return b;
}
function bound(b: Binding): Extract<Binding, { ok: true }> {
  if (!b.ok) throw new Error(`expected a binding, got ${b.message}`);
  return b;
}

describe("which pools may use a token Secret (pure)", () => {
  for (const [annotations, pool, expected] of [
    [undefined, "", true],
    // The controller's own namespace gets no exception: its pools need the annotation like any other.
    [undefined, "metal3-ipam-system", false],
    [undefined, "team-a", false],
    [allow("team-a"), "team-a", true],
    [allow("team-a, team-b"), "team-b", true],
    [allow("team-a"), "team-ab", false],
    [allow("*"), "anyone", true],
    [allow(""), "team-a", false],
  ] as const) {
    it(`${JSON.stringify(annotations ?? null)}: a pool of ${pool || "(global)"} ${expected ? "may" : "may not"}`, () => {
      expect(mayUseSecret(annotations, pool)).to.equal(expected);
    });
  }
});

describe("NetBox URLs (pure)", () => {
  it("normalises scheme, host, default port and trailing slashes, keeping a path", () => {
    expect(parseNetBoxUrl("HTTPS://NetBox.Example.com:443/")).to.deep.equal({
      ok: true,
      url: "https://netbox.example.com",
      http: false,
    });
    expect(parseNetBoxUrl(" http://10.0.0.1:8000/netbox// ")).to.deep.equal({
      ok: true,
      url: "http://10.0.0.1:8000/netbox",
      http: true,
    });
  });

  it("refuses other schemes, userinfo, queries and text that is no URL, never repeating the userinfo", () => {
    for (const text of ["ftp://x", "netbox.example.com", "https://x/?a=1", "https://x/#f", "https://u:p@x/"]) {
      const parsed = parseNetBoxUrl(text);
      expect(parsed.ok, text).to.equal(false);
      if (!parsed.ok) expect(parsed.problem).to.not.include("u:p");
    }
  });
});

describe("where a pool's token may go (pure)", () => {
  const secret = { name: "ns/nb", annotations: allow("team"), url: "https://netbox.example.com/" };

  it("a namespaced pool goes to the Secret's NetBox, with the Secret's CA added", () => {
    const b = bound(bindToken({ namespace: "team" }, { ...secret, ca: PEM }, HTTPS));
    expect(b).to.deep.equal({ ok: true, url: "https://netbox.example.com", caBundle: PEM, warnings: [] });
  });

  it("a pool url naming another NetBox is refused (nothing sent); the same one is deprecated", () => {
    const other = refused(bindToken({ namespace: "team", url: "https://evil.example.com" }, secret, HTTPS));
    expect(other.reason).to.equal("NotAllowed");
    expect(other.message).to.include("https://evil.example.com").and.include("https://netbox.example.com");
    const same = bound(bindToken({ namespace: "team", url: "https://NETBOX.example.com:443" }, secret, HTTPS));
    expect(same.warnings.join()).to.include("deprecated");
  });

  it("a global pool may too: its url must also be the Secret's", () => {
    expect(refused(bindToken({ namespace: "", url: "https://evil.example.com" }, secret, HTTPS)).reason).to.equal(
      "NotAllowed",
    );
  });

  it("a Secret without url: a global pool's url is used with a warning, a namespaced pool is refused", () => {
    const old = { name: "ns/nb", annotations: allow("*") };
    const global = bound(bindToken({ namespace: "", url: "https://netbox.example.com" }, old, HTTPS));
    expect(global.url).to.equal("https://netbox.example.com");
    expect(global.warnings.join()).to.include("has no key url");
    const tenant = refused(bindToken({ namespace: "team", url: "https://netbox.example.com" }, old, HTTPS));
    expect(tenant.reason).to.equal("NotAllowed");
    expect(tenant.message).to.include("has no key url");
    expect(refused(bindToken({ namespace: "" }, old, HTTPS)).reason).to.equal("NotAllowed");
  });

  it("plain http only with --netbox-allow-http, whoever names it", () => {
    const http = { ...secret, url: "http://127.0.0.1:8000" };
    expect(refused(bindToken({ namespace: "team" }, http, HTTPS)).message).to.include("--netbox-allow-http");
    expect(bound(bindToken({ namespace: "team" }, http, { allowHttp: true })).url).to.equal("http://127.0.0.1:8000");
    const oldGlobal = { namespace: "", url: "http://127.0.0.1:8000" };
    expect(refused(bindToken(oldGlobal, { name: "ns/nb" }, HTTPS)).reason).to.equal("NotAllowed");
  });

  it("userinfo in the Secret's url or the pool's is refused and never repeated", () => {
    for (const [pool, s] of [
      [{ namespace: "team" }, { ...secret, url: "https://admin:hunter2@netbox.example.com" }],
      [{ namespace: "", url: "https://admin:hunter2@netbox.example.com" }, { name: "ns/nb" }],
      [{ namespace: "team", url: "https://admin:hunter2@netbox.example.com" }, secret],
    ] as const) {
      const r = refused(bindToken(pool, s, HTTPS));
      expect(r.reason).to.equal("NotAllowed");
      expect(r.message).to.not.include("hunter2").and.not.include("admin");
    }
  });

  it("caBundle of a pool: ignored beside the Secret's ca.crt and for a NetBoxIPPool, used for a global pool", () => {
    const mine = `${PEM}# pool`;
    const beside = bound(bindToken({ namespace: "", caBundle: mine }, { ...secret, ca: PEM }, HTTPS));
    expect(beside.caBundle).to.equal(PEM);
    expect(beside.warnings.join()).to.include("ignored");
    const tenant = bound(bindToken({ namespace: "team", caBundle: mine }, secret, HTTPS));
    expect(tenant.caBundle).to.equal(undefined);
    expect(tenant.warnings.join()).to.include("ignored");
    expect(bound(bindToken({ namespace: "", caBundle: mine }, secret, HTTPS)).caBundle).to.equal(mine);
    expect(refused(bindToken({ namespace: "team" }, { ...secret, ca: "not a pem" }, HTTPS)).message).to.include(
      "ca.crt holds no PEM certificate",
    );
  });

  it("a Secret whose annotation does not name the pool's namespace is Unauthorized, before any URL is looked at", () => {
    const r = refused(bindToken({ namespace: "other" }, secret, HTTPS));
    expect(r.reason).to.equal("Unauthorized");
    expect(r.message).to.include("allowed-namespaces");
  });
});
