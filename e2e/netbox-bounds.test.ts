/**
 * NetBox pools bounded against hostile input, against the real API server: a claim NetBox cannot store fails alone
 * (the real NetBox), and a server whose list never ends (a loopback server playing NetBox) fails the pool with a
 * condition instead of growing the controller's heap.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { freshNamespace } from "../hack/testkit/cluster.js";
import { gone, startController, withController } from "../hack/testkit/ipam.js";
import type { NetBoxServer } from "../hack/testkit/netbox.js";
import { eventually } from "../hack/testkit/wait.js";
import { addressClaim, waitBound, waitNotReady, type InClusterClients } from "../hack/testkit/incluster.js";
import {
  keyIn,
  hostOf,
  netBoxPool,
  netBoxSuite,
  netBoxRef,
  ourRecordsIn,
  recordsIn,
  writeToken,
  type NetBoxClients,
  type NetBoxRecordView,
} from "../hack/testkit/netboxpools.js";

describe("NetBox pools: bounded and per claim", function () {
  this.timeout(300_000);
  let kc: KubeConfig;
  let k: NetBoxClients;
  let nb: NetBoxServer;

  before(async function () {
    ({ kc, nb, k } = await netBoxSuite(this));
  });

  const asClaims = (): InClusterClients => k as unknown as InClusterClients;

  /** Claims `names` of pool `pool`, all at once. */
  const claims = async (ns: string, pool: string, names: readonly string[]): Promise<unknown> =>
    await Promise.all(names.map((name) => k.claims.create(ns, addressClaim(ns, name, netBoxRef(pool)))));

  /** The pool's Ready condition once it is False. */
  const poolNotReady = (ns: string, name: string) =>
    eventually(`pool ${ns}/${name} Ready=False`, async () => {
      const c = (await k.pools.get(ns, name)).status?.conditions?.find((x) => x.type === "Ready");
      return c?.status === "False" ? c : undefined;
    });

  it("a claim whose name NetBox cannot store (250 characters) fails alone, saying why; the pool's other claims are served", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const long = `m-${"x".repeat(246)}-0`;
    await withController(kc, "nb-long", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", ["a", long, "b"]);
      const refused = await waitNotReady(asClaims(), ns, long, "AllocationFailed");
      expect(refused.message).to.include("NetBox stores at most 200").and.include("shorten the claim's name");
      await Promise.all(["a", "b"].map((n) => waitBound(asClaims(), ns, n, 60_000)));
      // Later claims of the pool are served too: the long one fails every pass without failing theirs.
      await claims(ns, "p", ["c"]);
      await waitBound(asClaims(), ns, "c", 60_000);
      const records = await ourRecordsIn(nb, prefix.cidr);
      expect(records.map((r) => r.description).sort()).to.deep.equal(
        (await Promise.all(["a", "b", "c"].map((name) => keyIn(kc, ns, name)))).sort(),
      );
    });
  });

  it("credentialsRef, prefix and range are immutable: the API server refuses a change and says why", async () => {
    const [prefix, other] = [await nb.admin.freshPrefix(24), await nb.admin.freshPrefix(24)];
    await withController(kc, "nb-immutable", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      const changes: [string, object][] = [
        ["prefix", { spec: { prefix: { id: other.id } } }],
        ["the choice of prefix or range", { spec: { prefix: null, range: { start: "10.1.2.3", end: "10.1.2.9" } } }],
        ["credentialsRef", { spec: { netbox: { credentialsRef: { name: "another-secret" } } } }],
      ];
      for (const [field, patch] of changes) {
        const refused = await k.pools.patch(ns, "p", patch).then(
          () => "accepted",
          (err: unknown) => String(err),
        );
        expect(refused, field).to.include(`${field} is immutable`).and.include("create a new pool instead");
      }
      // What does not say where addresses come from may change.
      await k.pools.patch(ns, "p", { spec: { gateway: "10.9.9.1", tags: [] } });
      expect((await k.pools.get(ns, "p")).spec.prefix).to.deep.equal({ id: prefix.id });
    });
  });

  it("a pool whose spec names another prefix than the one it served (changed where the CRD's rules were not installed) serves nothing there and says why", async () => {
    const [served, named] = [await nb.admin.freshPrefix(24), await nb.admin.freshPrefix(24)];
    const ns = await freshNamespace(kc, "nb-moved");
    await writeToken(k, ns, nb.token);
    // What a controller stopped while the pool's prefix was edited finds: a status naming the prefix it served.
    await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: named.id } }));
    await k.pools.patchStatus(ns, "p", {
      status: { netbox: { kind: "prefix", id: served.id, display: `prefix ${served.cidr} (#${served.id})` } },
    });
    const ctl = await startController(kc, ns);
    try {
      await claims(ns, "p", ["a"]);
      const ready = await poolNotReady(ns, "p");
      expect(ready.message)
        .to.include(`served NetBox prefix ${served.cidr} (#${served.id})`)
        .and.include(`now names prefix ${named.cidr} (#${named.id})`);
      const claim = await waitNotReady(asClaims(), ns, "a", "PoolNotReady");
      expect(claim.message).to.include("would be left behind");
      expect(await ourRecordsIn(nb, named.cidr)).to.deep.equal([]);
      expect((await k.pools.get(ns, "p")).status?.netbox?.id).to.equal(served.id);
    } finally {
      await ctl.stop();
    }
  });

  it("a /28 pool whose gateway NetBox does not know fills up without handing the gateway out; the reservation goes with the pool", async () => {
    const prefix = await nb.admin.freshPrefix(28);
    const base = hostOf(prefix.cidr).replace(/\.\d+$/, "");
    const first = Number(hostOf(prefix.cidr).split(".")[3]);
    const gateway = `${base}.${first + 1}`;
    const names = Array.from({ length: 14 }, (_, i) => `m-${i}`);
    await withController(kc, "nb-gateway", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }, { gateway }));
      await claims(ns, "p", names);
      // 14 usable addresses, one of them the gateway: 13 claims bound, one waiting for room.
      const bound = await eventually(
        "13 claims bound",
        async () => {
          const addresses = (await k.addresses.list(ns)).items.map((a) => a.spec.address);
          return addresses.length === 13 && addresses;
        },
        120_000,
      );
      expect(bound).to.not.include(gateway);
      expect(new Set(bound).size).to.equal(13);
      const records = await recordsIn(nb, prefix.cidr);
      const reservation = records.find((r) => hostOf(r.address) === gateway) as
        (NetBoxRecordView & { status: { value: string } }) | undefined;
      expect(reservation?.status.value).to.equal("reserved");
      expect(reservation?.description).to.include(`NetBoxIPPool ${ns}/p`).and.include("gateway");
      await Promise.all(names.map((n) => k.claims.delete(ns, n)));
      await k.pools.delete(ns, "p");
      await eventually("the pool gone", async () => await gone(k.pools, ns, "p"), 60_000);
      expect(await recordsIn(nb, prefix.cidr)).to.deep.equal([]);
    });
  });

  describe("a server whose list of addresses never ends", () => {
    let server: Server | undefined;
    let pages = 0;
    /** Pages of the listing under way (each starts at id 0), and of the longest one. */
    let listing = 0;
    let longest = 0;
    const GIVE_UP = 500;

    after(() => {
      server?.closeAllConnections();
      server?.close();
    });

    /**
     * A prefix #7, and pages of 1,000 addresses that say a billion more are left, until {@link GIVE_UP} pages were
     * served (then every page is the last): far past the controller's limit, so that a controller without one ends its
     * list and fails the test's assertions instead of running the test process out of memory.
     */
    async function endlessNetBox(): Promise<string> {
      server = createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://x");
        const after = Number(url.searchParams.get("id__gt") ?? "0");
        const results = url.pathname.startsWith("/api/ipam/prefixes/")
          ? undefined
          : Array.from({ length: 1000 }, (_, i) => ({ id: after + i + 1, address: `10.0.0.1/8`, tags: [] }));
        if (results) pages++;
        if (results && url.searchParams.get("limit") !== "1") {
          listing = after === 0 ? 1 : listing + 1;
          longest = Math.max(longest, listing);
        }
        const body = results
          ? {
              count: pages >= GIVE_UP ? results.length : 1e9,
              next: `http://${req.headers.host}${req.url}`,
              previous: null,
              results,
            }
          : { id: 7, prefix: "10.0.0.0/8", vrf: null, is_pool: false };
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(body));
      });
      await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }

    it("fails the pool with a TooLarge condition after a bounded number of pages, and its claims say so", async () => {
      const url = await endlessNetBox();
      await withController(kc, "nb-endless", async (ns) => {
        await writeToken(k, ns, nb.token, { url });
        await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: 7 } }));
        await claims(ns, "p", ["a"]);
        const ready = await poolNotReady(ns, "p");
        expect(ready.message).to.include("TooLarge").and.include("at most 100000");
        const claim = await waitNotReady(asClaims(), ns, "a", "PoolNotReady");
        expect(claim.message).to.include("TooLarge");
      });
      // Each listing stops at the limit's 100 pages. Passes retry with a backoff, so how many listings ran depends
      // on how long the test took: the bound is per listing.
      expect(longest, "pages of the longest listing").to.equal(100);
    });
  });
});
