/**
 * The NetBox client (src/netbox) against a real NetBox 4.7 (hack/testkit/netbox.ts): allocation lowest first, one
 * and several at once, exhaustion, our records found by tag and description, a reservation never offered, delete
 * and hand out again, lookups and utilisation, a wrong or revoked token, and NetBox going down and coming back. The
 * run's shared NetBox; every test takes fresh prefixes and ranges of its own.
 */
import { expect } from "chai";
import { inspect } from "node:util";
import { sharedNetBox, type NetBoxServer } from "../hack/testkit/netbox.js";
import { NETBOX_TOOL } from "../hack/testkit/netboxinstall.js";
import { skipWithout } from "../hack/testkit/skips.js";
import {
  netBoxClient,
  NetBoxError,
  type NetBoxClient,
  type NetBoxObservation,
  type NetBoxParent,
} from "../src/netbox/client.js";

const TAG = "metal3-ipam-ts";
const OPTIONS = { timeoutMs: 15_000, userAgent: "metal3-ipam-ts/e2e" };

async function failure(promise: Promise<unknown>): Promise<NetBoxError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(NetBoxError);
    return err as NetBoxError;
  }
  throw new Error("expected a NetBoxError");
}

const hosts = (addresses: { address: string }[]): string[] => addresses.map((a) => a.address);

describe("NetBox client against a real NetBox", function () {
  let nb: NetBoxServer;
  let client: NetBoxClient & { close(): void };
  const observed: NetBoxObservation[] = [];

  before(async function () {
    // The first run on a machine installs NetBox and migrates its database: minutes, once.
    this.timeout(20 * 60_000);
    skipWithout(this, NETBOX_TOOL);
    nb = await sharedNetBox();
    client = netBoxClient({ url: nb.url, token: nb.token }, { ...OPTIONS, observe: (o) => observed.push(o) });
    await client.ensureTag(TAG, "metal3-ipam-ts");
  });
  after(() => client?.close());

  it("creates a tag once, however often and concurrently it is ensured", async () => {
    await Promise.all([1, 2, 3].map(() => client.ensureTag("e2e-ensured", "e2e ensured")));
    await client.ensureTag("e2e-ensured", "e2e ensured");
    const tags = (await nb.admin.request("GET", "/api/extras/tags/?slug=e2e-ensured")) as { count: number };
    expect(tags.count).to.equal(1);
  });

  it("hands out the lowest free address, one and a list in one call, with what each request carries", async () => {
    const prefix = await nb.admin.freshPrefix(28);
    const base = prefix.cidr.replace(/\.0\/28$/, "");
    const tenantId = await nb.admin.createTenant(`tenant-${prefix.id}`);
    const parent: NetBoxParent = { kind: "prefix", id: prefix.id };
    const [one] = await client.allocate(parent, [{ description: "claim-a", tags: [TAG], dnsName: "a.example.com" }]);
    expect(one).to.deep.include({
      address: `${base}.1/28`,
      description: "claim-a",
      dnsName: "a.example.com",
      tags: [TAG],
      status: "active",
    });
    const list = await client.allocate(parent, [
      { description: "claim-b", tags: [TAG], tenantId },
      { description: "claim-c", tags: [TAG] },
      { description: "claim-d", tags: [TAG] },
    ]);
    expect(hosts(list)).to.deep.equal([`${base}.2/28`, `${base}.3/28`, `${base}.4/28`]);
    expect(list.map((a) => a.description)).to.deep.equal(["claim-b", "claim-c", "claim-d"]);
    expect(list[0]?.tenantId).to.equal(tenantId);
    expect(await client.getAddress(one!.id)).to.deep.equal(one);
    expect(observed.some((o) => o.route === "/api/ipam/prefixes/{id}/available-ips/" && o.status === 201)).to.equal(
      true,
    );
  });

  it("says Exhausted when fewer are free than asked for, and then creates none of the list", async () => {
    const prefix = await nb.admin.freshPrefix(29); // 6 usable
    const parent: NetBoxParent = { kind: "prefix", id: prefix.id };
    await client.allocate(
      parent,
      [1, 2, 3, 4].map((i) => ({ description: `x-${i}`, tags: [TAG] })),
    );
    const err = await failure(
      client.allocate(
        parent,
        [1, 2, 3].map((i) => ({ description: `y-${i}`, tags: [TAG] })),
      ),
    );
    expect(err.reason).to.equal("Exhausted");
    expect(err.status).to.equal(409);
    expect((await client.findPrefix({ id: prefix.id })).used).to.equal(4);
    await client.allocate(parent, [{ description: "y-1" }, { description: "y-2" }]);
    expect((await failure(client.allocate(parent, [{ description: "z" }]))).reason).to.equal("Exhausted");
  });

  it("never offers an address an administrator reserved", async () => {
    const prefix = await nb.admin.freshPrefix(28);
    const base = prefix.cidr.replace(/\.0\/28$/, "");
    await nb.admin.reserveAddress(`${base}.1/28`);
    await nb.admin.reserveAddress(`${base}.3/28`, { status: "active", description: "a router" });
    const got = await client.allocate(
      { kind: "prefix", id: prefix.id },
      [1, 2, 3].map((i) => ({ description: `r-${i}` })),
    );
    expect(hosts(got)).to.deep.equal([`${base}.2/28`, `${base}.4/28`, `${base}.5/28`]);
  });

  it("lists only our tagged records in the parent, every page, and by exact description", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const other = await nb.admin.freshPrefix(24);
    const base = prefix.cidr.replace(/\.0\/24$/, "");
    const parent: NetBoxParent = { kind: "prefix", id: prefix.id };
    await nb.admin.reserveAddress(`${base}.1/24`, { description: "claim-1" }); // not ours: no tag
    await nb.admin.createTag("someone-else");
    await client.allocate(parent, [{ description: "claim-1", tags: ["someone-else"] }]); // another owner's tag
    const ours = await client.allocate(
      parent,
      Array.from({ length: 12 }, (_, i) => ({ description: `claim-${i + 1}`, tags: [TAG] })),
    );
    await client.allocate({ kind: "prefix", id: other.id }, [{ description: "claim-1", tags: [TAG] }]); // elsewhere
    const paged = netBoxClient({ url: nb.url, token: nb.token }, { ...OPTIONS, pageSize: 5 });
    const all = await paged.listOwned(parent, TAG);
    paged.close();
    expect(all.map((a) => a.id).sort((a, b) => a - b)).to.deep.equal(ours.map((a) => a.id).sort((a, b) => a - b));
    const one = await client.listOwned(parent, TAG, { descriptions: ["claim-1"] });
    expect(one.map((a) => a.id)).to.deep.equal([ours[0]?.id]); // not claim-10, -11, -12
    const two = await client.listOwned(parent, TAG, { descriptions: ["claim-2", "claim-12"] });
    expect(two.map((a) => a.id)).to.deep.equal([ours[1]?.id, ours[11]?.id]); // a list is an OR
    expect(await client.listOwned(parent, TAG, { descriptions: ["claim-99"] })).to.deep.equal([]);
    expect(await client.listOwned(parent, "a-tag-nobody-made")).to.deep.equal([]); // NetBox: 400 on the filter
  });

  it("lists by description ending and by host address, and changes a record's description", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const base = prefix.cidr.replace(/\.0\/24$/, "");
    const parent: NetBoxParent = { kind: "prefix", id: prefix.id };
    const made = await client.allocate(parent, [
      { description: "IPAddressClaim ns/a @aaa", tags: [TAG] },
      { description: "IPAddressClaim ns/a @bbb", tags: [TAG] },
      { description: "IPAddressClaim ns/a", tags: [TAG] },
      { description: "IPAddressClaim ns/b @aaa", tags: [TAG] },
    ]);
    const ids = (records: { id: number }[]): number[] => records.map((r) => r.id);
    expect(ids(await client.listOwned(parent, TAG, { descriptionEndsWith: " @aaa" }))).to.deep.equal([
      made[0]!.id,
      made[3]!.id,
    ]);
    // Hosts narrow the parent to those addresses (not the /24 of each record's mask).
    expect(ids(await client.listOwned(parent, TAG, { hosts: [`${base}.2`, `${base}.3`] }))).to.deep.equal([
      made[1]!.id,
      made[2]!.id,
    ]);
    expect(await client.listOwned(parent, TAG, { hosts: [`${base}.200`] })).to.deep.equal([]);
    const changed = await client.setDescription(made[2]!.id, "IPAddressClaim ns/a @ccc");
    expect(changed).to.include({ id: made[2]!.id, address: made[2]!.address, description: "IPAddressClaim ns/a @ccc" });
    expect(ids(await client.listOwned(parent, TAG, { descriptions: ["IPAddressClaim ns/a @ccc"] }))).to.deep.equal([
      made[2]!.id,
    ]);
    expect((await failure(client.setDescription(999_999_999, "x"))).reason).to.equal("NotFound");
  });

  it("hands a deleted address out again, lowest first; a record already gone is deleted", async () => {
    const prefix = await nb.admin.freshPrefix(28);
    const base = prefix.cidr.replace(/\.0\/28$/, "");
    const parent: NetBoxParent = { kind: "prefix", id: prefix.id };
    const got = await client.allocate(
      parent,
      [1, 2, 3].map((i) => ({ description: `d-${i}`, tags: [TAG] })),
    );
    await client.deleteAddress(got[1]!.id);
    expect(await client.getAddress(got[1]!.id)).to.equal(undefined);
    await client.deleteAddress(got[1]!.id);
    const [again] = await client.allocate(parent, [{ description: "d-4", tags: [TAG] }]);
    expect(again?.address).to.equal(`${base}.2/28`);
    expect(hosts(await client.listOwned(parent, TAG))).to.have.members([
      `${base}.1/28`,
      `${base}.2/28`,
      `${base}.3/28`,
    ]);
  });

  it("lists by any of many descriptions and deletes in bulk, records already gone included", async () => {
    const prefix = await nb.admin.freshPrefix(24);
    const parent: NetBoxParent = { kind: "prefix", id: prefix.id };
    // Long descriptions: the list is asked in several queries, each within a server's request line.
    const description = (i: number): string => `IPAddressClaim bulk/${"n".repeat(150)}-${i}`;
    const got = await client.allocate(
      parent,
      Array.from({ length: 30 }, (_, i) => ({ description: description(i), tags: [TAG] })),
    );
    const asked = [0, 3, 17, 29].map(description).concat(["IPAddressClaim bulk/nobody"]);
    const found = await client.listOwned(parent, TAG, { descriptions: asked });
    expect(found.map((a) => a.description).sort()).to.deep.equal([0, 3, 17, 29].map(description).sort());
    const many = await client.listOwned(parent, TAG, {
      descriptions: Array.from({ length: 30 }, (_, i) => description(i)),
    });
    expect(many).to.have.length(30);
    expect(await client.listOwned(parent, TAG, { descriptions: [] })).to.deep.equal([]);
    await client.deleteAddress(found[0]!.id);
    await client.deleteAddresses(found.map((a) => a.id));
    const left = await client.listOwned(parent, TAG);
    expect(left).to.have.length(26);
    expect(left.map((a) => a.id)).to.not.include.members(found.map((a) => a.id));
    await client.deleteAddresses(got.map((a) => a.id));
    expect(await client.listOwned(parent, TAG)).to.deep.equal([]);
  });

  it("finds prefixes by id and by CIDR in a VRF or the global table, with their utilisation", async () => {
    const prefix = await nb.admin.freshPrefix(28);
    const vrfId = await nb.admin.createVrf(`vrf-${prefix.id}`);
    const inVrf = await nb.admin.createPrefix(prefix.cidr, { vrfId });
    await client.allocate({ kind: "prefix", id: prefix.id }, [{ description: "u-1" }, { description: "u-2" }]);
    await nb.admin.reserveAddress(prefix.cidr.replace(/0\/28$/, "9/28"));
    expect(await client.findPrefix({ id: prefix.id })).to.deep.equal({
      id: prefix.id,
      cidr: prefix.cidr,
      size: 14,
      used: 3,
    });
    expect(await client.findPrefix({ cidr: prefix.cidr })).to.deep.equal({
      id: prefix.id,
      cidr: prefix.cidr,
      size: 14,
      used: 3,
    });
    expect(await client.findPrefix({ cidr: prefix.cidr, vrfId })).to.deep.equal({
      id: inVrf.id,
      cidr: prefix.cidr,
      vrfId,
      size: 14,
      used: 0,
    });
    const pool = await nb.admin.freshPrefix(30, { isPool: true });
    expect((await client.findPrefix({ id: pool.id })).size).to.equal(4);
    expect((await failure(client.findPrefix({ id: 999_999 }))).reason).to.equal("NotFound");
    expect((await failure(client.findPrefix({ cidr: "192.0.2.0/24" }))).reason).to.equal("NotFound");
  });

  it("allocates from an IP range lowest first, lists only what lies inside it, and finds it by bounds", async () => {
    const range = await nb.admin.freshRange(10, 14);
    const base = range.cidr.replace(/\.0\/24$/, "");
    const parent: NetBoxParent = { kind: "ip-range", id: range.id };
    const got = await client.allocate(
      parent,
      [1, 2, 3].map((i) => ({ description: `g-${i}`, tags: [TAG] })),
    );
    expect(hosts(got)).to.deep.equal([`${base}.10/24`, `${base}.11/24`, `${base}.12/24`]);
    await nb.admin.reserveAddress(`${base}.20/24`, { tags: [TAG], description: "g-1" }); // same /24, outside
    expect(hosts(await client.listOwned(parent, TAG))).to.have.members(hosts(got));
    expect(hosts(await client.listOwned(parent, TAG, { descriptions: ["g-1"] }))).to.deep.equal([`${base}.10/24`]);
    const info = { id: range.id, start: range.start, end: range.end, size: 5, used: 3 };
    expect(await client.findRange({ id: range.id })).to.deep.equal(info);
    expect(await client.findRange({ start: `${base}.10`, end: `${base}.14` })).to.deep.equal(info);
    const err = await failure(
      client.allocate(
        parent,
        [1, 2, 3].map((i) => ({ description: `h-${i}` })),
      ),
    );
    expect(err.reason).to.equal("Exhausted");
    expect((await failure(client.findRange({ start: `${base}.10`, end: `${base}.15` }))).reason).to.equal("NotFound");
  });

  it("says Unauthorized for a wrong or revoked token, and never shows the token", async () => {
    const token = await nb.admin.createToken();
    const secret = token.slice(token.indexOf(".") + 1);
    const prefix = await nb.admin.freshPrefix(28);
    const own = netBoxClient({ url: nb.url, token }, OPTIONS);
    await own.findPrefix({ id: prefix.id });
    const wrong = netBoxClient({ url: nb.url, token: `${token.slice(0, -4)}zzzz` }, OPTIONS);
    const err = await failure(wrong.allocate({ kind: "prefix", id: prefix.id }, [{ description: "w" }]));
    expect(err.reason).to.equal("Unauthorized");
    await nb.admin.revokeToken(token);
    const revoked = await failure(own.findPrefix({ id: prefix.id }));
    expect(revoked.reason).to.equal("Unauthorized");
    for (const e of [err, revoked]) {
      const shown = [String(e), e.stack ?? "", inspect(e, { showHidden: true, depth: 10 }), JSON.stringify(e)].join();
      expect(shown).not.to.include(secret);
    }
    own.close();
    wrong.close();
  });

  it("says Unreachable while NetBox is down, and works again once it is back", async function () {
    this.timeout(180_000);
    const prefix = await nb.admin.freshPrefix(28);
    const parent: NetBoxParent = { kind: "prefix", id: prefix.id };
    await client.allocate(parent, [{ description: "before", tags: [TAG] }]);
    await nb.stopServer();
    try {
      const err = await failure(client.allocate(parent, [{ description: "during", tags: [TAG] }]));
      expect(err.reason).to.equal("Unreachable");
      expect(err.message).to.include("ECONNREFUSED");
    } finally {
      await nb.startServer();
    }
    const [after] = await client.allocate(parent, [{ description: "after", tags: [TAG] }]);
    expect(after?.address).to.equal(prefix.cidr.replace(/0\/28$/, "2/28"));
  });
});
