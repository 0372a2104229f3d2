/**
 * NetBox pools against a real NetBox (hack/testkit/netbox.ts: NetBox 4.7 from PyPI, its PostgreSQL and Redis, one per
 * run) and the real API server: addresses are NetBox's, every record carries the claim's identity, a retry never takes
 * a second address, releases give records back, and each fault says what it is where the user looks.
 */
import { expect } from "chai";
import type { KubeConfig } from "@kubernetes/client-node";
import { NETBOX_CLAIM_FINALIZER, NETBOX_POOL_FINALIZER } from "../api/netbox/types.js";
import { CLUSTER_NAME_LABEL } from "../api/v1alpha1/types.js";
import { OWNER_TAG } from "../src/controllers/netbox/identity.js";
import { RECORD_MISSING_REASON, RECORDS_CONDITION } from "../src/controllers/netbox/kind.js";
import { CLAIMED_CONDITION, UNCLAIMED_REASON } from "../src/controllers/netbox/drift.js";
import { GATEWAY_TAG } from "../src/controllers/netbox/gateway.js";
import { cluster, eventReasons, gone, withController } from "../hack/testkit/ipam.js";
import { CLUSTER, resourceType } from "../api/registry.js";
import type { Cluster } from "../src/controllers/clusters.js";
import { ResourceClient } from "../src/kube/resource.js";
import type { NetBoxServer } from "../hack/testkit/netbox.js";
import { eventually, sleep } from "../hack/testkit/wait.js";
import { addressClaim, readyOf, waitBound, waitNotReady, type InClusterClients } from "../hack/testkit/incluster.js";
import {
  hostOf,
  keyIn,
  netBoxPool,
  netBoxSuite,
  netBoxRef,
  ourRecordsIn,
  recordsIn,
  writeToken,
  type NetBoxClients,
} from "../hack/testkit/netboxpools.js";

/** Someone else's finalizer on a claim: our release waits for it (as it waits for a consumer's). */
const HOLD_FINALIZER = "e2e.example.com/hold";

describe("NetBox pools (a real NetBox)", function () {
  this.timeout(300_000);
  let kc: KubeConfig;
  let k: NetBoxClients;
  let nb: NetBoxServer;

  before(async function () {
    ({ kc, nb, k } = await netBoxSuite(this));
  });

  /** The claim helpers of the in-cluster suites work on any IPAddressClaim: the same clients, typed loosely. */
  const asClaims = (): InClusterClients => k as unknown as InClusterClients;

  async function claims(ns: string, pool: string, names: readonly string[], cluster?: string): Promise<void> {
    const labels = cluster ? { labels: { [CLUSTER_NAME_LABEL]: cluster } } : {};
    await Promise.all(names.map((name) => k.claims.create(ns, addressClaim(ns, name, netBoxRef(pool), labels))));
  }

  it("binds claims of a prefix pool to the addresses NetBox recorded, each record carrying the claim's identity", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const tenant = await nb.admin.createTenant(`t-${prefix.id}`);
    await withController(kc, "nb-prefix", async (ns) => {
      await new ResourceClient<Cluster>(kc, resourceType(CLUSTER)).create(ns, cluster(ns, "c1"));
      await writeToken(k, ns, nb.token);
      await k.pools.create(
        ns,
        netBoxPool(
          ns,
          "p",
          { prefix: { cidr: prefix.cidr } },
          {
            gateway: `${hostOf(prefix.cidr).replace(/\.0$/, ".1")}`,
            tenantId: tenant,
            dnsNameTemplate: "{name}.{cluster}.example.com",
          },
        ),
      );
      await claims(ns, "p", ["m-0", "m-1", "m-2"], "c1");
      const bound = await Promise.all(["m-0", "m-1", "m-2"].map((n) => waitBound(asClaims(), ns, n, 60_000)));
      // The gateway NetBox offered first is kept as the pool's reservation, never a claim's.
      const records = (await ourRecordsIn(nb, prefix.cidr)).filter((r) => r.description.startsWith("IPAddressClaim"));
      expect(records).to.have.length(3);
      for (const [i, record] of bound.entries()) {
        const name = `m-${i}`;
        const key = await keyIn(kc, ns, name);
        const mine = records.filter((r) => r.description === key);
        expect(mine, `one NetBox record for ${name}`).to.have.length(1);
        expect(hostOf(mine[0]?.address ?? "")).to.equal(record.spec.address);
        expect(mine[0]?.dns_name).to.equal(`${name}.c1.example.com`);
        expect(mine[0]?.tenant?.id).to.equal(tenant);
        expect(mine[0]?.tags.map((t) => t.slug)).to.include(OWNER_TAG.slug);
        expect(record.spec.prefix).to.equal(24);
        expect(record.spec.gateway).to.equal(hostOf(prefix.cidr).replace(/\.0$/, ".1"));
      }
      // NetBox hands out the lowest free addresses (the network address excluded), the gateway (.1) never.
      expect(bound.map((r) => r.spec.address).sort()).to.deep.equal(
        [2, 3, 4].map((n) => hostOf(prefix.cidr).replace(/\.0$/, `.${n}`)),
      );
      const pool = await eventually("the pool's finalizer and NetBox's utilisation", async () => {
        const p = await k.pools.get(ns, "p");
        return p.metadata.finalizers?.includes(NETBOX_POOL_FINALIZER) && p.status?.ipAddresses?.used === 4
          ? p
          : undefined;
      });
      expect(pool.status?.netbox).to.deep.equal({
        kind: "prefix",
        id: prefix.id,
        display: `prefix ${prefix.cidr} (#${prefix.id})`,
      });
      expect((await k.claims.get(ns, "m-0")).metadata.finalizers).to.deep.equal([NETBOX_CLAIM_FINALIZER]);
      // Records made after the last full pass are their claims' (no drift), and stay so at the next full pass.
      await k.pools.patch(ns, "p", { metadata: { annotations: { touch: "1" } } });
      await sleep(1_000);
      const drift = await eventually("RecordsClaimed", async () =>
        (await k.pools.get(ns, "p")).status?.conditions?.find((x) => x.type === CLAIMED_CONDITION),
      );
      expect(drift.status, drift.message).to.equal("True");
    });
  });

  it("binds claims of a range pool inside the range, and never an address reserved by hand in NetBox", async () => {
    const range = await nb.admin.freshRange(10, 20);
    const base = hostOf(range.start).replace(/\.10$/, "");
    await nb.admin.reserveAddress(`${base}.10/24`);
    await nb.admin.reserveAddress(`${base}.12/24`);
    await withController(kc, "nb-range", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "r", { range: { id: range.id } }));
      await claims(ns, "r", ["a", "b", "c"]);
      const bound = await Promise.all(["a", "b", "c"].map((n) => waitBound(asClaims(), ns, n, 60_000)));
      expect(bound.map((r) => r.spec.address).sort()).to.deep.equal([`${base}.11`, `${base}.13`, `${base}.14`]);
      expect(bound.every((r) => r.spec.prefix === 24)).to.equal(true);
    });
  });

  it("without a gateway in the spec, writes the one NetBox records (the address tagged gateway in the subnet) on each IPAddress", async () => {
    await nb.admin.createTag(GATEWAY_TAG).catch(() => undefined);
    const prefix = await nb.admin.freshPrefix(24);
    const base = hostOf(prefix.cidr).replace(/\.0$/, "");
    await nb.admin.reserveAddress(`${base}.254/24`, { tags: [GATEWAY_TAG] });
    // A range pool looks in the prefix NetBox holds for the range's subnet.
    const range = await nb.admin.freshRange(10, 20);
    const rangeBase = hostOf(range.start).replace(/\.10$/, "");
    await nb.admin.createPrefix(range.cidr);
    await nb.admin.reserveAddress(`${rangeBase}.1/24`, { tags: [GATEWAY_TAG] });
    await withController(kc, "nb-gateway", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await k.pools.create(ns, netBoxPool(ns, "r", { range: { id: range.id } }));
      // The spec's gateway wins over NetBox's.
      await k.pools.create(ns, netBoxPool(ns, "s", { prefix: { id: prefix.id } }, { gateway: `${base}.253` }));
      await claims(ns, "p", ["a"]);
      await claims(ns, "r", ["b"]);
      await claims(ns, "s", ["c"]);
      const [a, b, c] = await Promise.all(["a", "b", "c"].map((n) => waitBound(asClaims(), ns, n, 60_000)));
      expect(a?.spec.gateway).to.equal(`${base}.254`);
      expect(b?.spec.gateway).to.equal(`${rangeBase}.1`);
      expect(b?.spec.address).to.equal(`${rangeBase}.10`);
      expect(c?.spec.gateway).to.equal(`${base}.253`);
    });
  });

  it("sets the pool's custom fields on each record; fields NetBox could not take fail the pool's claims, naming the field", async () => {
    const fields = { e2e_owner: "team-a", e2e_rack: 12, e2e_managed: true };
    for (const [name, type] of [
      ["e2e_owner", "text"],
      ["e2e_rack", "integer"],
      ["e2e_managed", "boolean"],
    ] as const)
      await nb.admin.createCustomField(name, type).catch(() => undefined);
    const prefix = await nb.admin.freshPrefix(24);
    await withController(kc, "nb-fields", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }, { customFields: fields }));
      await claims(ns, "p", ["a"]);
      await waitBound(asClaims(), ns, "a", 60_000);
      const [record] = await ourRecordsIn(nb, prefix.cidr);
      expect(record?.custom_fields).to.deep.include(fields);
      // More than 16: the API server refuses the pool.
      const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`f${i}`, i]));
      const err = await k.pools
        .create(ns, netBoxPool(ns, "many", { prefix: { id: prefix.id } }, { customFields: many }))
        .then(
          () => undefined,
          (e: unknown) => String(e),
        );
      expect(err).to.match(/must have at most 16 items|maxProperties/);
      // A name NetBox refuses: the claim says which field, and NetBox is not asked.
      const bad = { ...fields, "bad-name": "x" };
      await k.pools.create(ns, netBoxPool(ns, "bad", { prefix: { id: prefix.id } }, { customFields: bad }));
      await claims(ns, "bad", ["b"]);
      const waiting = await waitNotReady(asClaims(), ns, "b", "PoolNotReady");
      expect(waiting.message).to.include('"bad-name"');
      expect((await ourRecordsIn(nb, prefix.cidr)).map((r) => r.description)).to.deep.equal([await keyIn(kc, ns, "a")]);
    });
  });

  it("releases: the claim's deletion deletes its NetBox record, and the address is handed out again", async () => {
    const prefix = await nb.admin.freshPrefix(29);
    await withController(kc, "nb-release", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", ["a"]);
      const first = await waitBound(asClaims(), ns, "a", 60_000);
      expect(await ourRecordsIn(nb, prefix.cidr)).to.have.length(1);
      await k.claims.delete(ns, "a");
      await eventually(
        "claim and IPAddress gone",
        async () => (await gone(k.claims, ns, "a")) && (await gone(k.addresses, ns, first.metadata.name ?? "")),
      );
      expect(await ourRecordsIn(nb, prefix.cidr)).to.deep.equal([]);
      await claims(ns, "p", ["b"]);
      expect((await waitBound(asClaims(), ns, "b", 60_000)).spec.address).to.equal(first.spec.address);
    });
  });

  it("reuses the record NetBox already holds for a claim (a crash between NetBox's answer and the IPAddress): no second address", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const base = hostOf(prefix.cidr).replace(/\.0$/, "");
    await withController(kc, "nb-crash", async (ns) => {
      // What a controller killed right after NetBox answered leaves: our record for the claim, no IPAddress.
      await nb.admin
        .request("POST", "/api/extras/tags/", { name: OWNER_TAG.name, slug: OWNER_TAG.slug })
        .catch(() => undefined);
      await nb.admin.reserveAddress(`${base}.7/24`, {
        status: "active",
        description: await keyIn(kc, ns, "m"),
        tags: [OWNER_TAG.slug],
      });
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", ["m", "n"]);
      expect((await waitBound(asClaims(), ns, "m", 60_000)).spec.address).to.equal(`${base}.7`);
      expect((await waitBound(asClaims(), ns, "n", 60_000)).spec.address).to.equal(`${base}.1`);
      const records = await ourRecordsIn(nb, prefix.cidr);
      expect(records.map((r) => r.description).sort()).to.deep.equal(
        [await keyIn(kc, ns, "m"), await keyIn(kc, ns, "n")].sort(),
      );
    });
  });

  it("200 claims at once on one prefix: every claim bound, no address twice in NetBox or in Kubernetes", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const names = Array.from({ length: 200 }, (_, i) => `m-${i}`);
    await withController(kc, "nb-burst", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", names);
      await eventually(
        "200 claims bound",
        async () =>
          (await k.claims.list(ns)).items.filter((c) => readyOf(c as never)?.status === "True").length === 200,
        180_000,
      );
      const addresses = (await k.addresses.list(ns)).items.map((a) => a.spec.address);
      expect(addresses).to.have.length(200);
      expect(new Set(addresses).size).to.equal(200);
      const records = await ourRecordsIn(nb, prefix.cidr);
      expect(records).to.have.length(200);
      expect(new Set(records.map((r) => hostOf(r.address)))).to.deep.equal(new Set(addresses));
      expect(new Set(records.map((r) => r.description)).size).to.equal(200);
    });
  });

  it("NetBox stopped mid-burst: claims say NetBox is unreachable, and once it is back every claim is bound once, no orphan record", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const names = Array.from({ length: 40 }, (_, i) => `m-${i}`);
    await withController(kc, "nb-down", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", names.slice(0, 20));
      await nb.stopServer();
      try {
        await claims(ns, "p", names.slice(20));
        const waiting = await waitNotReady(asClaims(), ns, "m-39", "PoolNotReady");
        expect(waiting.message).to.match(/Unreachable|Timeout/);
        expect(waiting.message).to.not.include(nb.token);
        expect(await eventReasons(k as never, ns, "m-39")).to.include("PoolNotReady");
      } finally {
        await nb.startServer();
      }
      await eventually(
        "40 claims bound",
        async () => (await k.claims.list(ns)).items.filter((c) => readyOf(c as never)?.status === "True").length === 40,
        180_000,
      );
      const addresses = (await k.addresses.list(ns)).items.map((a) => a.spec.address);
      expect(new Set(addresses).size).to.equal(40);
      const records = await ourRecordsIn(nb, prefix.cidr);
      expect(records.map((r) => hostOf(r.address)).sort()).to.deep.equal([...addresses].sort());
    });
  });

  it("a revoked token: claims and the pool say Unauthorized (never the token), and a new token in the Secret heals them", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const token = await nb.admin.createToken();
    await withController(kc, "nb-token", async (ns) => {
      await writeToken(k, ns, token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", ["a"]);
      await waitBound(asClaims(), ns, "a", 60_000);
      await nb.admin.revokeToken(token);
      await claims(ns, "p", ["b"]);
      const refused = await waitNotReady(asClaims(), ns, "b", "PoolNotReady");
      expect(refused.message).to.match(/Unauthorized|Forbidden/);
      expect(refused.message).to.not.include(token);
      const pool = await eventually("the pool Ready=False", async () => {
        const p = await k.pools.get(ns, "p");
        const ready = p.status?.conditions?.find((c) => c.type === "Ready");
        return ready?.status === "False" ? ready : undefined;
      });
      expect(pool.message).to.match(/Unauthorized|Forbidden/);
      await writeToken(k, ns, nb.token);
      // NetBox refused the old token, so the controller reads the Secret again on its next try (backoff).
      expect((await waitBound(asClaims(), ns, "b", 45_000)).spec.address).to.be.a("string");
    });
  });

  it("a full prefix: the claim says PoolExhausted and is served once an address frees", async () => {
    const prefix = await nb.admin.freshPrefix(30); // two usable addresses
    await withController(kc, "nb-full", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", ["a", "b"]);
      await Promise.all(["a", "b"].map((n) => waitBound(asClaims(), ns, n, 60_000)));
      await sleep(200);
      await claims(ns, "p", ["c"]);
      const waiting = await waitNotReady(asClaims(), ns, "c", "PoolExhausted");
      expect(waiting.message).to.include("no free address");
      await k.claims.delete(ns, "a");
      expect((await waitBound(asClaims(), ns, "c", 60_000)).spec.address).to.be.a("string");
      expect(await ourRecordsIn(nb, prefix.cidr)).to.have.length(2);
    });
  });

  it("a record deleted in NetBox under a live claim is reported on the pool (condition and Event), never replaced", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    await withController(kc, "nb-deleted", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await claims(ns, "p", ["a"]);
      const bound = await waitBound(asClaims(), ns, "a", 60_000);
      const [record] = await ourRecordsIn(nb, prefix.cidr);
      await nb.admin.deleteRecord("ipam/ip-addresses", record?.id ?? 0);
      // A change of the pool's metadata makes its next pass a full one, which lists NetBox's records again.
      await k.pools.patch(ns, "p", { metadata: { annotations: { touch: "1" } } });
      const condition = await eventually("RecordsInNetBox=False", async () => {
        const p = await k.pools.get(ns, "p");
        const c = p.status?.conditions?.find((x) => x.type === RECORDS_CONDITION);
        return c?.status === "False" ? c : undefined;
      });
      expect(condition.reason).to.equal(RECORD_MISSING_REASON);
      expect(condition.message).to.include(`${ns}/a ${bound.spec.address}`);
      expect(await eventReasons(k as never, ns, "p")).to.include(RECORD_MISSING_REASON);
      // Not replaced: the claim keeps its address, and NetBox holds no new record of ours.
      expect((await k.addresses.get(ns, bound.metadata.name ?? "")).spec.address).to.equal(bound.spec.address);
      expect(await recordsIn(nb, prefix.cidr)).to.deep.equal([]);
    });
  });

  it("a claim gone without its release (finalizer removed by hand): its IPAddress goes, its NetBox record stays (it may be a moved claim's) and is reported as unclaimed", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    await withController(kc, "nb-orphan", async (ns) => {
      await writeToken(k, ns, nb.token);
      // Two pools on one prefix: the records of one are claimed by the other's claims, never drift of either.
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      await k.pools.create(ns, netBoxPool(ns, "q", { prefix: { id: prefix.id } }));
      await claims(ns, "p", ["a", "b"]);
      await claims(ns, "q", ["c"]);
      const [bound] = await Promise.all(["a", "b", "c"].map((n) => waitBound(asClaims(), ns, n, 60_000)));
      if (!bound) throw new Error("claim a not bound");
      // As a user clears a claim stuck in deletion: a finalizer of someone else's keeps our release waiting, then
      // every finalizer goes at once. Removed before the delete instead, ours would come back with the next pass.
      await k.claims.patch(ns, "a", { metadata: { finalizers: [NETBOX_CLAIM_FINALIZER, HOLD_FINALIZER] } });
      await k.claims.delete(ns, "a");
      await k.claims.patch(ns, "a", { metadata: { finalizers: null } });
      // A liveness bound: the pool's pass that releases it may first wait on NetBox, slow when other suites share it.
      await eventually(
        "the orphaned IPAddress released",
        async () => await gone(k.addresses, ns, bound.metadata.name ?? ""),
        90_000,
      );
      await k.pools.patch(ns, "p", { metadata: { annotations: { touch: "1" } } });
      const condition = await eventually("RecordsClaimed=False on p", async () => {
        const c = (await k.pools.get(ns, "p")).status?.conditions?.find((x) => x.type === CLAIMED_CONDITION);
        return c?.status === "False" ? c : undefined;
      });
      expect(condition.reason).to.equal(UNCLAIMED_REASON);
      expect(condition.message).to.match(/^1 NetBox record\(s\) of ours/);
      expect(condition.message).to.include(`${bound.spec.address}/24 "${await keyIn(kc, ns, "a")}"`);
      await k.pools.patch(ns, "q", { metadata: { annotations: { touch: "1" } } });
      const other = await eventually("RecordsClaimed=False on q", async () => {
        const c = (await k.pools.get(ns, "q")).status?.conditions?.find((x) => x.type === CLAIMED_CONDITION);
        return c?.status === "False" ? c : undefined;
      });
      // q's prefix holds a's record too: it is reported there as well, never b's (p's live claim) nor c's.
      expect(other.message).to.include(`/a @`).and.not.include(`/b @`).and.not.include(`/c @`);
      const records = await ourRecordsIn(nb, prefix.cidr);
      expect(records.map((r) => r.description).sort()).to.deep.equal(
        (await Promise.all(["a", "b", "c"].map((name) => keyIn(kc, ns, name)))).sort(),
      );
    });
  });

  it("a pool naming a prefix NetBox does not have: claims and the pool say NotFound, and are served by a pool made again on one", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    await withController(kc, "nb-404", async (ns) => {
      await writeToken(k, ns, nb.token);
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: 999_999 } }));
      await claims(ns, "p", ["a"]);
      const waiting = await waitNotReady(asClaims(), ns, "a", "PoolNotReady");
      expect(waiting.message).to.include("NotFound");
      const ready = await eventually("the pool Ready=False", async () => {
        const c = (await k.pools.get(ns, "p")).status?.conditions?.find((x) => x.type === "Ready");
        return c?.status === "False" ? c : undefined;
      });
      expect(ready.message).to.include("NotFound");
      // Where a pool takes its addresses from is immutable: it is made again.
      await k.pools.delete(ns, "p");
      await eventually("the pool gone", async () => await gone(k.pools, ns, "p"));
      await k.pools.create(ns, netBoxPool(ns, "p", { prefix: { id: prefix.id } }));
      expect((await waitBound(asClaims(), ns, "a", 60_000)).spec.address).to.equal(
        hostOf(prefix.cidr).replace(/\.0$/, ".1"),
      );
    });
  });
});
