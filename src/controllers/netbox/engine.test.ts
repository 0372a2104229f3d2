import { expect } from "chai";
import type { NetBoxIPPool } from "../../../api/netbox/types.js";
import { NetBoxError, type NetBoxAddress, type NetBoxClient } from "../../netbox/client.js";
import type { KindContext } from "../pools/kind.js";
import { NetBoxEngine } from "./engine.js";
import { OWNER_TAG, recordKey } from "./identity.js";

/** The installation the engine under test keys its records with. */
const INSTALLATION = "test";
const installation = (): Promise<string> => Promise.resolve(INSTALLATION);

/** A NetBox in memory holding our records of one prefix; it counts the calls a release makes. */
function fakeNetBox(claims: number): { client: NetBoxClient; records: Map<number, NetBoxAddress>; calls: string[] } {
  const records = new Map<number, NetBoxAddress>();
  for (let i = 0; i < claims; i++)
    records.set(i + 1, {
      id: i + 1,
      address: `10.0.0.${i + 1}/24`,
      description: recordKey({ namespace: "ns", name: `c-${i}` }, INSTALLATION),
      dnsName: "",
      tags: [OWNER_TAG.slug],
      status: "active",
    });
  const calls: string[] = [];
  let failNext = false;
  const client = {
    findPrefix: () => Promise.resolve({ id: 7, cidr: "10.0.0.0/24", size: 254, used: records.size }),
    async listOwned(_parent, _tag, match) {
      calls.push("list");
      await new Promise((resolve) => setTimeout(resolve, 5));
      const wanted = new Set(match?.descriptions ?? []);
      return [...records.values()].filter((r) => wanted.has(r.description));
    },
    async deleteAddresses(ids) {
      calls.push("delete");
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (failNext) throw new NetBoxError("NetBox DELETE: 503 ServerError", "ServerError", 503);
      for (const id of ids) records.delete(id);
    },
  } as Partial<NetBoxClient> as NetBoxClient;
  return Object.assign({ client, records, calls }, { failNext: () => (failNext = true) });
}

const pool: NetBoxIPPool = {
  metadata: { name: "p", namespace: "ns", uid: "u" },
  spec: { netbox: { url: "https://netbox.example", credentialsRef: { name: "s" } }, prefix: { id: 7 } },
};
const silent = { info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined };
const ctx = { log: silent } as unknown as KindContext;

describe("NetBoxEngine.release", () => {
  it("releases claims asked for together in a few rounds of one listing and one bulk delete", async () => {
    const nb = fakeNetBox(40);
    const engine = new NetBoxEngine(
      { connect: () => Promise.resolve(nb.client), tokenRejected: () => undefined, forget: () => undefined },
      installation,
    );
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => engine.release(pool, { namespace: "ns", name: `c-${i}`, cluster: "" }, ctx)),
    );
    expect(nb.records.size).to.equal(0);
    expect(nb.calls.filter((c) => c === "list")).to.have.length(1);
    expect(nb.calls.filter((c) => c === "delete")).to.have.length(1);
  });

  it("releases only records of its installation: another cluster's and a legacy one of the same claim stay", async () => {
    const nb = fakeNetBox(1);
    const others = ["IPAddressClaim ns/c-0 @other", "IPAddressClaim ns/c-0"];
    for (const [i, description] of others.entries())
      nb.records.set(100 + i, { ...nb.records.get(1)!, id: 100 + i, address: `10.0.0.${100 + i}/24`, description });
    const engine = new NetBoxEngine(
      { connect: () => Promise.resolve(nb.client), tokenRejected: () => undefined, forget: () => undefined },
      installation,
    );
    await engine.release(pool, { namespace: "ns", name: "c-0", cluster: "" }, ctx);
    expect([...nb.records.values()].map((r) => r.description)).to.deep.equal(others);
  });

  it("takes releases asked for while one is in flight into the next round, and fails every claim of a failed round", async () => {
    const nb = fakeNetBox(30);
    const engine = new NetBoxEngine(
      { connect: () => Promise.resolve(nb.client), tokenRejected: () => undefined, forget: () => undefined },
      installation,
    );
    const release = (i: number): Promise<void> =>
      engine.release(pool, { namespace: "ns", name: `c-${i}`, cluster: "" }, ctx);
    const first = release(0);
    while (!nb.calls.includes("list")) await new Promise((resolve) => setTimeout(resolve, 1)); // the first round is in flight
    const rest = Array.from({ length: 19 }, (_, i) => release(i + 1));
    await Promise.all([first, ...rest]);
    expect(nb.records.size).to.equal(10);
    expect(nb.calls).to.deep.equal(["list", "delete", "list", "delete"]);
    (nb as unknown as { failNext: () => void }).failNext();
    const failed = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => release(i + 20)));
    expect(failed.map((f) => f.status)).to.deep.equal(Array<string>(10).fill("rejected"));
    expect(nb.records.size).to.equal(10);
  });
});

describe("NetBoxEngine with fallbacks", () => {
  it("releases each claim's record in whichever source holds it: one listing per source, one bulk delete", async () => {
    const nb = fakeNetBox(0);
    const subnet = (id: number): string => (id === 7 ? "10.0.0" : "10.0.1");
    for (let i = 0; i < 6; i++)
      nb.records.set(i + 1, {
        id: i + 1,
        address: `${subnet(i < 3 ? 7 : 8)}.${i + 1}/24`,
        description: recordKey({ namespace: "ns", name: `c-${i}` }, INSTALLATION),
        dnsName: "",
        tags: [OWNER_TAG.slug],
        status: "active",
      });
    const lists: number[] = [];
    const client: NetBoxClient = {
      ...nb.client,
      findPrefix: (q) => Promise.resolve({ id: q.id ?? 0, cidr: `${subnet(q.id ?? 0)}.0/24`, size: 254, used: 3 }),
      listOwned(parent, _tag, match) {
        lists.push(parent.id);
        const wanted = new Set(match?.descriptions ?? []);
        const inside = (r: NetBoxAddress): boolean => r.address.startsWith(`${subnet(parent.id)}.`);
        return Promise.resolve([...nb.records.values()].filter((r) => inside(r) && wanted.has(r.description)));
      },
    };
    const engine = new NetBoxEngine(
      { connect: () => Promise.resolve(client), tokenRejected: () => undefined, forget: () => undefined },
      installation,
    );
    const withFallback: NetBoxIPPool = { ...pool, spec: { ...pool.spec, fallbacks: [{ prefix: { id: 8 } }] } };
    await Promise.all(
      [0, 1, 4, 5].map((i) => engine.release(withFallback, { namespace: "ns", name: `c-${i}`, cluster: "" }, ctx)),
    );
    expect([...nb.records.keys()].sort()).to.deep.equal([3, 4]);
    expect(lists).to.deep.equal([7, 8]);
    expect(nb.calls.filter((c) => c === "delete")).to.have.length(1);
  });
});
