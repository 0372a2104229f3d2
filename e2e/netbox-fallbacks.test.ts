/**
 * NetBox pools with several sources (`spec.fallbacks`) against the real NetBox and the real API server: claims fill
 * the first prefix, then go on to the next; releases find each claim's record wherever it was made; a pool whose
 * sources are all full says PoolExhausted; appending a fallback gives a full pool room, and the API server refuses
 * removing one.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import type { CapiIPAddress } from "../api/capi/types.js";
import { gone, withController } from "../hack/testkit/ipam.js";
import { RECORDS_CONDITION } from "../src/controllers/netbox/drift.js";
import type { NetBoxServer } from "../hack/testkit/netbox.js";
import { eventually } from "../hack/testkit/wait.js";
import { addressClaim, waitBound, waitNotReady, type InClusterClients } from "../hack/testkit/incluster.js";
import {
  hostOf,
  keyIn,
  netBoxPool,
  netBoxRef,
  netBoxSuite,
  ourRecordsIn,
  writeToken,
  type NetBoxClients,
} from "../hack/testkit/netboxpools.js";

describe("NetBox pools with fallbacks (a real NetBox)", function () {
  /** The shared plane, the run's NetBox and the clients, once `before` has run. */
  let suite: { kc: KubeConfig; nb: NetBoxServer; k: NetBoxClients };
  this.timeout(300_000);
  before(async function () {
    suite = await netBoxSuite(this);
  });

  const asClaims = (): InClusterClients => suite.k as unknown as InClusterClients;

  async function claims(ns: string, pool: string, names: readonly string[]): Promise<void> {
    await Promise.all(names.map((name) => suite.k.claims.create(ns, addressClaim(ns, name, netBoxRef(pool)))));
  }

  /** The descriptions of our records in `cidr` that are claims' (not the pool's reservations), sorted. */
  async function claimRecordsIn(cidr: string): Promise<string[]> {
    const records = await ourRecordsIn(suite.nb, cidr);
    return records
      .map((r) => r.description)
      .filter((d) => d.startsWith("IPAddressClaim "))
      .sort();
  }

  it("fills the first prefix, then the fallback (its own gateway, never handed out); releases records in both; all full: PoolExhausted", async () => {
    const { kc, nb, k } = suite;
    const first = await nb.admin.freshPrefix(30); // two usable addresses
    const second = await nb.admin.freshPrefix(29); // six usable, one of them the fallback's gateway
    const gateway = hostOf(second.cidr).replace(/\.0$/, ".1");
    await withController(kc, "nb-fallbacks", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(
        ns,
        netBoxPool(ns, "p", { prefix: { id: first.id } }, { fallbacks: [{ prefix: { id: second.id }, gateway }] }),
      );
      const names = ["a", "b", "c", "d", "e", "f", "g"];
      await claims(ns, "p", names);
      const bound = await Promise.all(names.map((n) => waitBound(asClaims(), ns, n, 90_000)));
      const addresses = bound.map((r) => r.spec.address);
      expect(new Set(addresses).size, "distinct").to.equal(7);
      expect(addresses).to.not.include(gateway);
      const inFirst = bound.filter((r) => r.spec.prefix === 30);
      const inSecond = bound.filter((r) => r.spec.prefix === 29);
      expect(inFirst).to.have.length(2);
      expect(inSecond).to.have.length(5);
      for (const r of inSecond) expect(r.spec.gateway, r.spec.address).to.equal(gateway);
      for (const r of inFirst) expect(r.spec.gateway, r.spec.address).to.equal(undefined);
      const keyOf = async (r: CapiIPAddress): Promise<string> => await keyIn(kc, ns, r.spec.claimRef.name);
      expect(await claimRecordsIn(first.cidr)).to.deep.equal((await Promise.all(inFirst.map(keyOf))).sort());
      expect(await claimRecordsIn(second.cidr)).to.deep.equal((await Promise.all(inSecond.map(keyOf))).sort());

      const pool = await eventually("the pool's status lists both sources", async () => {
        const p = await k.pools.get(ns, "p");
        return p.status?.sources?.length === 2 && p.status.ipAddresses?.free === 0 ? p : undefined;
      });
      expect(pool.status?.netbox?.id).to.equal(first.id);
      expect(pool.status?.sources?.map((s) => [s.kind, s.id])).to.deep.equal([
        ["prefix", first.id],
        ["prefix", second.id],
      ]);
      expect(pool.status?.ipAddresses?.total).to.equal(2 + 6);

      // Every source full: the next claim waits, saying so.
      await claims(ns, "p", ["h"]);
      const waiting = await waitNotReady(asClaims(), ns, "h", "PoolExhausted");
      expect(waiting.message).to.include("no free address").and.include(`${second.cidr}`);

      // Releases find each claim's record in the source that holds it.
      const [one, two] = [inFirst[0], inSecond[0]] as [CapiIPAddress, CapiIPAddress];
      const released = [one.spec.claimRef.name, two.spec.claimRef.name];
      await Promise.all(released.map((n) => k.claims.delete(ns, n)));
      await eventually("released claims gone", async () =>
        (await Promise.all(released.map((n) => gone(k.claims, ns, n)))).every(Boolean),
      );
      const h = await waitBound(asClaims(), ns, "h", 60_000);
      expect([one.spec.address, two.spec.address]).to.include(h.spec.address);
      // Drift covers the fallback: a record deleted there under a live claim is reported on the pool.
      const [kept] = inSecond.filter((r) => !released.includes(r.spec.claimRef.name)) as [CapiIPAddress];
      const keptKey = await keyOf(kept);
      const record = (await ourRecordsIn(nb, second.cidr)).find((r) => r.description === keptKey);
      await nb.admin.deleteRecord("ipam/ip-addresses", record?.id ?? 0);
      await k.pools.patch(ns, "p", { metadata: { annotations: { touch: "1" } } });
      const drift = await eventually("RecordsInNetBox=False", async () => {
        const c = (await k.pools.get(ns, "p")).status?.conditions?.find((x) => x.type === RECORDS_CONDITION);
        return c?.status === "False" ? c : undefined;
      });
      expect(drift.message).to.include(`${ns}/${kept.spec.claimRef.name} ${kept.spec.address}`);
      const left = names.filter((n) => !released.includes(n));
      await Promise.all([...left, "h"].map((n) => k.claims.delete(ns, n)));
      await eventually("every claim gone", async () =>
        (await Promise.all([...left, "h"].map((n) => gone(k.claims, ns, n)))).every(Boolean),
      );
      expect(await claimRecordsIn(first.cidr)).to.deep.equal([]);
      expect(await claimRecordsIn(second.cidr)).to.deep.equal([]);
    });
  });

  it("a full pool gets room from an appended fallback; removing or reordering fallbacks is refused by the API server", async () => {
    const { kc, nb, k } = suite;
    const [first, second, third] = [
      await nb.admin.freshPrefix(30),
      await nb.admin.freshPrefix(30),
      await nb.admin.freshPrefix(30),
    ];
    await withController(kc, "nb-append", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: first.id } }));
      // c comes once a and b hold the /30's two addresses: claims created together are served in creation order,
      // which the API server's one-second timestamps do not fix between concurrent creates.
      await claims(ns, "p", ["a", "b"]);
      await Promise.all(["a", "b"].map((n) => waitBound(asClaims(), ns, n, 60_000)));
      await claims(ns, "p", ["c"]);
      await waitNotReady(asClaims(), ns, "c", "PoolExhausted");
      await k.pools.patch(ns, "p", { spec: { fallbacks: [{ prefix: { id: second.id } }] } });
      const c = await waitBound(asClaims(), ns, "c", 60_000);
      expect(c.spec.address.startsWith(hostOf(second.cidr).replace(/\.0$/, "."))).to.equal(true);
      await k.pools.patch(ns, "p", {
        spec: { fallbacks: [{ prefix: { id: second.id } }, { prefix: { id: third.id } }] },
      });
      for (const fallbacks of [[{ prefix: { id: third.id } }, { prefix: { id: second.id } }], [], null]) {
        const refused = await k.pools.patch(ns, "p", { spec: { fallbacks } }).then(
          () => "accepted",
          (err: unknown) => String(err),
        );
        expect(refused, JSON.stringify(fallbacks)).to.include("fallbacks may only be appended to");
      }
      const bad = await k.pools
        .patch(ns, "p", {
          spec: {
            fallbacks: [
              { prefix: { id: second.id } },
              { prefix: { id: third.id } },
              { prefix: { id: 1 }, range: { id: 1 } },
            ],
          },
        })
        .then(
          () => "accepted",
          (err: unknown) => String(err),
        );
      expect(bad).to.include("exactly one of prefix and range");
    });
  });
});
