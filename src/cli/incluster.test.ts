import { expect } from "chai";
import { parseInvocation } from "./args.js";
import { freeDocument, freeReport, renderFree } from "./free.js";
import { allPools } from "./inventory.js";
import { PLAIN } from "./output.js";
import { parsePoolArgument } from "./poolkind.js";
import { poolRows, poolsDocument, renderPools } from "./pools.js";
import { poolsWithFree, renderWho, targetsForAddress, whoDocument } from "./who.js";
import {
  inClusterAddress,
  inClusterClaim,
  inClusterPool,
  inventory,
  m3Address,
  NS,
  pool,
} from "./fixtures.testutil.js";

const IN = "InClusterIPPool";
const GLOBAL = "GlobalInClusterIPPool";

describe("cli: the in-cluster provider's pools beside Metal3's", () => {
  // A Metal3 IPPool, an InClusterIPPool and a GlobalInClusterIPPool all named "nodes".
  const m3 = pool("nodes", { pools: [{ start: "10.0.0.1", end: "10.0.0.10" }] });
  const local = inClusterPool("nodes", { addresses: ["10.1.0.0/29"], prefix: 24, gateway: "10.1.0.1" });
  const global = inClusterPool("nodes", { addresses: ["10.2.0.1-10.2.0.4"], prefix: 24 }, true);
  const inv = inventory({
    pools: [m3],
    inClusterPools: [local],
    globalPools: [global],
    addresses: [m3Address("nodes", "10.0.0.1", "m")],
    capiClaims: [
      inClusterClaim("ic-bound", IN, "nodes", { status: { addressRef: { name: "ic-bound" } } }),
      inClusterClaim("ic-waiting", IN, "nodes"),
      inClusterClaim("g-bound", GLOBAL, "nodes", { status: { addressRef: { name: "g-bound" } } }),
    ],
    capiAddresses: [
      inClusterAddress(IN, "nodes", "10.1.0.2", "ic-bound"),
      inClusterAddress(GLOBAL, "nodes", "10.2.0.1", "g-bound"),
    ],
    // The global pool's records from every namespace: one more in another namespace, one repeated from ours.
    globalRecords: {
      claims: [
        inClusterClaim("g-bound", GLOBAL, "nodes", { status: { addressRef: { name: "g-bound" } } }),
        inClusterClaim("elsewhere", GLOBAL, "nodes", { status: { addressRef: { name: "elsewhere" } } }, "other"),
        inClusterClaim("waiting-elsewhere", GLOBAL, "nodes", {}, "other"),
      ],
      addresses: [
        inClusterAddress(GLOBAL, "nodes", "10.2.0.1", "g-bound"),
        inClusterAddress(GLOBAL, "nodes", "10.2.0.2", "elsewhere", "other"),
      ],
    },
  });

  it("lists every kind, global pools first (no namespace), each counted from its own records", () => {
    const rows = poolRows(inv);
    expect(rows.map((r) => [r.kind, r.namespace, r.name, r.used, r.total, r.free])).to.deep.equal([
      [GLOBAL, "", "nodes", 2n, 4n, 2n],
      ["IPPool", NS, "nodes", 1n, 10n, 9n],
      // 10.1.0.0/29 less the network address of 10.1.0.0/24 and the gateway (allocateReservedIPAddresses unset).
      [IN, NS, "nodes", 1n, 6n, 5n],
    ]);
    expect(rows[0]!.pending).to.deep.equal({ ipClaims: 0, ipAddressClaims: 1 });
    expect(rows[2]!.pending).to.deep.equal({ ipClaims: 0, ipAddressClaims: 1 });
    expect(rows[1]!.pending).to.deep.equal({ ipClaims: 0, ipAddressClaims: 0 });
  });

  it("shows a KIND column only when kinds mix, and a global pool's namespace as -", () => {
    const text = renderPools(poolRows(inv), PLAIN, true).split("\n");
    expect(text[0]).to.match(/^NAMESPACE +KIND +NAME +CLUSTER +STRATEGY +USED\/TOTAL/);
    expect(text[1]).to.match(/^- +GlobalInClusterIPPool +nodes +- +sequential +2\/4 +50\.0% +1 \(1 capi\)/);
    expect(text[3]).to.match(new RegExp(`^${NS} +InClusterIPPool +nodes +`));
    const metal3Only = renderPools(poolRows(inventory({ pools: [m3] })), PLAIN, false);
    expect(metal3Only.split("\n")[0]).to.match(/^NAME +CLUSTER/);
    const doc = poolsDocument(poolRows(inv)) as { pools: Record<string, unknown>[] };
    expect(doc.pools.map((p) => [p.kind, p.namespace])).to.deep.equal([
      [GLOBAL, null],
      [undefined, NS],
      [IN, NS],
    ]);
    expect(doc.pools[1]).to.not.have.property("kind");
  });

  it("free: an in-cluster pool's free ranges skip reserved and gateway addresses; the next is the lowest free", () => {
    const [globalPool, , localPool] = allPools(inv);
    const r = freeReport(localPool!, inv);
    expect(renderFree(r)).to.equal(
      [
        `pool InClusterIPPool ${NS}/nodes (sequential): 5 free of 6, 1 used`,
        "  10.1.0.3-10.1.0.7  5",
        "next claim gets: 10.1.0.3",
      ].join("\n"),
    );
    const g = freeReport(globalPool!, inv);
    expect(renderFree(g).split("\n")[0]).to.equal("pool GlobalInClusterIPPool nodes (sequential): 2 free of 4, 2 used");
    expect(freeDocument(g)).to.deep.include({ kind: GLOBAL, namespace: null, pool: "nodes", free: 2 });
    expect(freeDocument(g)).to.have.nested.property("next.address", "10.2.0.3");
  });

  it("who: holders on in-cluster pools, a global pool's in any namespace; free addresses name the pool's kind", () => {
    const [local] = targetsForAddress("10.1.0.2", inv);
    expect(local).to.deep.include({ poolKind: IN, pool: "nodes", claimName: "ic-bound", claimState: "bound" });
    const [elsewhere] = targetsForAddress("10.2.0.2", inv);
    expect(elsewhere).to.deep.include({ poolKind: GLOBAL, namespace: "other", claimName: "elsewhere" });
    const text = renderWho({ query: "10.2.0.2", by: "address", entries: [{ ...elsewhere!, owners: [] }], freeIn: [] });
    expect(text).to.match(/^pool +GlobalInClusterIPPool nodes$/m);
    expect(text).to.match(/^claim +IPAddressClaim other\/elsewhere \(bound\)$/m);
    const doc = whoDocument({ query: "10.2.0.2", by: "address", entries: [{ ...elsewhere!, owners: [] }], freeIn: [] });
    expect(doc).to.have.nested.property("holders[0].poolKind", GLOBAL);
    const free = poolsWithFree("10.2.0.3", inv);
    expect(free).to.deep.equal([{ namespace: "", pool: "nodes", poolKind: GLOBAL }]);
    expect(renderWho({ query: "10.2.0.3", by: "address", entries: [], freeIn: free })).to.equal(
      "10.2.0.3 is free: nobody holds it (in the ranges of GlobalInClusterIPPool nodes)",
    );
    // The gateway is in the network but not in the pool's allocatable set.
    expect(poolsWithFree("10.1.0.1", inv)).to.deep.equal([]);
  });

  it("names pools as KIND/NAME on the command line; a bare NAME is a Metal3 IPPool", () => {
    expect(parsePoolArgument("nodes")).to.deep.equal({ kind: "IPPool", name: "nodes" });
    expect(parsePoolArgument("ippool/nodes")).to.deep.equal({ kind: "IPPool", name: "nodes" });
    expect(parsePoolArgument("InClusterIPPool/nodes")).to.deep.equal({ kind: IN, name: "nodes" });
    expect(parsePoolArgument("inclusterippools.ipam.cluster.x-k8s.io/nodes")).to.deep.equal({
      kind: IN,
      name: "nodes",
    });
    expect(parsePoolArgument("globalinclusterippool/nodes")).to.deep.equal({ kind: GLOBAL, name: "nodes" });
    expect(parsePoolArgument("pod/nodes")).to.equal(undefined);
    expect(() => parseInvocation(["free", "pod/nodes"])).to.throw(/unknown pool kind in "pod\/nodes"/);
    expect(parseInvocation(["free", "globalinclusterippool/nodes"]).args).to.deep.equal([
      "globalinclusterippool/nodes",
    ]);
  });
});
