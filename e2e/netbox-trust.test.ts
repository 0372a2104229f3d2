/**
 * Who may make the controller call which NetBox, against the real test NetBox and the real API server: the token
 * Secret names its NetBox; a pool pointing anywhere else, a plain-http URL without `--netbox-allow-http`, and a URL
 * with userinfo are refused before any request, and the pool and its claims say why (never the userinfo).
 */
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { KubeConfig } from "@kubernetes/client-node";
import { URL_NOT_ALLOWED_REASON } from "../src/controllers/netbox/trust.js";
import { eventReasons, gone, startController, withController } from "../hack/testkit/ipam.js";
import { freshNamespace } from "../hack/testkit/cluster.js";
import type { NetBoxServer } from "../hack/testkit/netbox.js";
import { eventually, sleep } from "../hack/testkit/wait.js";
import { addressClaim, readyOf, waitBound, type InClusterClients } from "../hack/testkit/incluster.js";
import {
  netBoxPool,
  netBoxRef,
  netBoxSuite,
  ourRecordsIn,
  tokenSecret,
  writeToken,
  type NetBoxClients,
} from "../hack/testkit/netboxpools.js";

const PASSWORD = "hunter2-never-shown";

describe("NetBox trust: a token goes only to the NetBox its Secret names", function () {
  this.timeout(300_000);
  let kc: KubeConfig;
  let k: NetBoxClients;
  let nb: NetBoxServer;

  before(async function () {
    ({ kc, nb, k } = await netBoxSuite(this));
  });

  /** The pool's Ready condition once it is False. */
  const poolNotReady = (ns: string, name: string) =>
    eventually(`pool ${ns}/${name} Ready=False`, async () => {
      const c = (await k.pools.get(ns, name)).status?.conditions?.find((x) => x.type === "Ready");
      return c?.status === "False" ? c : undefined;
    });

  /** The claim's Ready condition once it is False with a message mentioning `text`. */
  const claimNotReady = (ns: string, name: string, text: string) =>
    eventually(`claim ${ns}/${name} Ready=False mentioning ${text}`, async () => {
      const c = readyOf(await k.claims.get(ns, name));
      return c?.status === "False" && c.message.includes(text) ? c : undefined;
    });

  /** Pool `p` of `ns` with `url` on `prefixId`, its Secret naming the run's NetBox, and a claim `a`. */
  async function poolWithUrl(ns: string, prefixId: number, url: string): Promise<void> {
    await writeToken(k, ns, nb.token);
    const pool = netBoxPool(ns, "p", { prefix: { id: prefixId } });
    pool.spec.netbox.url = url;
    await k.pools.create(ns, pool);
    await k.claims.create(ns, addressClaim(ns, "a", netBoxRef("p")));
  }

  it("a tenant pool whose url names another host: no token and no request reach that host; pool and claim say why", async () => {
    const requests: IncomingMessage[] = [];
    const listener: Server = createServer((req, res) => {
      requests.push(req);
      res.writeHead(404, { "Content-Type": "application/json" }).end("{}");
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const elsewhere = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    const prefix = await nb.admin.freshPrefix(28);
    try {
      await withController(kc, "nbt-elsewhere", async (ns) => {
        await poolWithUrl(ns, prefix.id, elsewhere);
        const ready = await poolNotReady(ns, "p");
        expect(ready.reason).to.equal(URL_NOT_ALLOWED_REASON);
        expect(ready.message).to.include(elsewhere).and.include(`Secret`).and.include(tokenSecret(ns));
        const claim = await claimNotReady(ns, "a", "NotAllowed");
        expect(claim.reason).to.equal("PoolNotReady");
        expect(await eventReasons(k as never, ns, "p")).to.include(URL_NOT_ALLOWED_REASON);
        // Past the first retry (backoff 2 s): still nothing sent, and nothing recorded in NetBox either.
        await sleep(5_000);
        expect(requests.map((r) => `${r.method ?? ""} ${r.url ?? ""}`)).to.deep.equal([]);
        expect(await ourRecordsIn(nb, prefix.cidr)).to.deep.equal([]);
        // The same url as the Secret's (deprecated, allowed): the pool serves.
        await k.pools.patch(ns, "p", { spec: { netbox: { url: `${nb.url}/` } } });
        expect((await waitBound(k as unknown as InClusterClients, ns, "a", 60_000)).spec.address).to.be.a("string");
      });
    } finally {
      listener.closeAllConnections();
      listener.close();
    }
  });

  it("plain http without --netbox-allow-http: refused with a condition naming the flag, nothing sent to NetBox", async () => {
    const prefix = await nb.admin.freshPrefix(28);
    const ns = await freshNamespace(kc, "nbt-http");
    const ctl = await startController(kc, ns, 4, false);
    try {
      // With the Secret's url repeated in the pool, as pools written before the Secret named the NetBox: the pool
      // names nothing new, and plain http is refused all the same.
      await poolWithUrl(ns, prefix.id, nb.url);
      const ready = await poolNotReady(ns, "p");
      expect(ready.reason).to.equal(URL_NOT_ALLOWED_REASON);
      expect(ready.message).to.include("--netbox-allow-http");
      await claimNotReady(ns, "a", "--netbox-allow-http");
      expect(await ourRecordsIn(nb, prefix.cidr)).to.deep.equal([]);
    } finally {
      await k.claims.delete(ns, "a").catch(() => undefined);
      await ctl.stop();
    }
  });

  it("a URL with userinfo, in the Secret or the pool: refused, and the password is in no message", async () => {
    const prefix = await nb.admin.freshPrefix(28);
    const withUserinfo = nb.url.replace("://", `://admin:${PASSWORD}@`);
    await withController(kc, "nbt-userinfo", async (ns) => {
      // The pool's url carries the password; the Secret's is clean.
      await poolWithUrl(ns, prefix.id, withUserinfo);
      const ready = await poolNotReady(ns, "p");
      const claim = await claimNotReady(ns, "a", "NotAllowed");
      for (const message of [ready.message, claim.message]) expect(message).to.not.include(PASSWORD);
      expect(ready.message).to.include("user name or password");
      // The Secret's url carries it (written first: a Secret that served is read again only after a minute).
      await writeToken(k, ns, nb.token, { url: withUserinfo });
      await k.pools.patch(ns, "p", { spec: { netbox: { url: null } } });
      const fromSecret = await eventually("the pool naming the Secret's url", async () => {
        const c = (await k.pools.get(ns, "p")).status?.conditions?.find((x) => x.type === "Ready");
        return c?.status === "False" && c.message.includes("its url") ? c : undefined;
      });
      expect(fromSecret.message).to.not.include(PASSWORD);
      const claimAgain = readyOf(await k.claims.get(ns, "a"));
      expect(claimAgain?.message ?? "").to.not.include(PASSWORD);
      expect(await ourRecordsIn(nb, prefix.cidr)).to.deep.equal([]);
      await k.claims.delete(ns, "a");
      await eventually("the claim gone", async () => await gone(k.claims, ns, "a"));
    });
  });
});
