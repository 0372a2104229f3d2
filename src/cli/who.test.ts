import { expect } from "chai";
import {
  parseClaimQuery,
  poolsWithFree,
  renderWho,
  targetsForAddress,
  targetsForClaim,
  whoDocument,
  type WhoReport,
} from "./who.js";
import { capiAddress, capiClaim, inventory, ipClaim, m3Address, pool } from "./fixtures.testutil.js";

describe("cli/who", () => {
  const p = pool("p", { pools: [{ subnet: "2001:db8::/120" }, { start: "10.0.0.1", end: "10.0.0.9" }] });
  const inv = inventory({
    pools: [p],
    claims: [
      ipClaim("m0", "p", {
        metadata: { labels: { "cluster.x-k8s.io/cluster-name": "c1" } },
        status: { address: { name: "p-10-0-0-5" } },
      }),
    ],
    addresses: [m3Address("p", "10.0.0.5", "m0"), m3Address("p", "2001:db8::5", "gone")],
    capiClaims: [capiClaim("m0", "p", { status: { addressRef: { name: "p-10-0-0-6" } } })],
    capiAddresses: [capiAddress("p", "10.0.0.6", "m0")],
  });

  it("finds the holder of an address in any spelling, in either API", () => {
    expect(
      targetsForAddress("10.0.0.5", inv).map((t) => [t.claimKind, t.claimName, t.claimState, t.clusterByName]),
    ).to.deep.equal([["IPClaim", "m0", "bound", "c1"]]);
    expect(targetsForAddress("10.0.0.6", inv).map((t) => [t.claimKind, t.holding?.api])).to.deep.equal([
      ["IPAddressClaim", "ipam.cluster.x-k8s.io"],
    ]);
    const v6 = targetsForAddress("2001:DB8:0::0005", inv);
    expect(v6.map((t) => [t.claimName, t.claimState])).to.deep.equal([["gone", undefined]]);
    expect(targetsForAddress("10.0.0.7", inv)).to.deep.equal([]);
    expect(poolsWithFree("10.0.0.7", inv)).to.deep.equal([{ namespace: "ns1", pool: "p", poolKind: "IPPool" }]);
    expect(poolsWithFree("10.0.1.7", inv)).to.deep.equal([]);
  });

  it("finds claims of both kinds by name, or one kind by prefix", () => {
    expect(targetsForClaim("m0", inv).map((t) => `${t.claimKind} ${t.holding?.address}`)).to.deep.equal([
      "IPClaim 10.0.0.5",
      "IPAddressClaim 10.0.0.6",
    ]);
    expect(targetsForClaim("ipaddressclaim/m0", inv).map((t) => t.claimKind)).to.deep.equal(["IPAddressClaim"]);
    expect(parseClaimQuery("ipc/x")).to.deep.equal({ kind: "IPClaim", name: "x" });
    expect(parseClaimQuery("weird/x")).to.deep.equal({ name: "weird/x" });
  });

  it("renders the chain up to the Cluster with the host CAPM3 recorded", () => {
    const [t] = targetsForAddress("10.0.0.5", inv);
    const report: WhoReport = {
      query: "10.0.0.5",
      by: "address",
      freeIn: [],
      entries: [
        {
          ...t!,
          owners: [
            { apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3Data", name: "d0" },
            {
              apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
              kind: "Metal3Machine",
              name: "m0",
              host: "ns1/bmh-0",
            },
            { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name: "m0", node: "node-0" },
            { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: "c1" },
          ],
        },
      ],
    };
    expect(renderWho(report)).to.equal(
      [
        "address    10.0.0.5",
        "pool       ns1/p",
        "IPAddress  p-10-0-0-5 (ipam.metal3.io)",
        "claim      IPClaim m0 (bound)",
        "owners     Metal3Data d0 → Metal3Machine m0 → Machine m0 → Cluster c1",
        "host       ns1/bmh-0",
        "node       node-0",
      ].join("\n"),
    );
    expect(whoDocument(report)).to.deep.include({ query: "10.0.0.5", by: "address" });
    expect((whoDocument(report) as { holders: { cluster: string; host: string }[] }).holders[0]).to.include({
      cluster: "c1",
      host: "ns1/bmh-0",
    });
  });

  it("says when an address is free and when a chain stops short", () => {
    expect(
      renderWho({
        query: "10.0.0.7",
        by: "address",
        entries: [],
        freeIn: [{ namespace: "ns1", pool: "p", poolKind: "IPPool" }],
      }),
    ).to.equal("10.0.0.7 is free: nobody holds it (in the ranges of ns1/p)");
    const [t] = targetsForAddress("10.0.0.5", inv);
    const text = renderWho({
      query: "m0",
      by: "claim",
      freeIn: [],
      entries: [{ ...t!, owners: [{ apiVersion: "x/v1", kind: "Metal3Data", name: "d0", missing: true }] }],
    });
    expect(text).to.include("owners     Metal3Data d0 (missing) → (Cluster c1 by label)");
  });

  it("names the claim's namespace for a holder on any global pool, a NetBox one too", () => {
    const entry = {
      namespace: "other",
      pool: "shared",
      poolKind: "GlobalNetBoxIPPool" as const,
      claimKind: "IPAddressClaim" as const,
      claimName: "m-1",
      claimState: "bound" as const,
      owners: [],
    };
    const text = renderWho({ query: "10.84.0.9", by: "address", entries: [entry], freeIn: [] });
    expect(text).to.match(/^pool +GlobalNetBoxIPPool shared$/m);
    expect(text).to.match(/^claim +IPAddressClaim other\/m-1 \(bound\)$/m);
    const namespaced = renderWho({
      query: "10.83.0.2",
      by: "address",
      entries: [{ ...entry, namespace: "ns1", pool: "nb", poolKind: "NetBoxIPPool" }],
      freeIn: [],
    });
    expect(namespaced).to.match(/^pool +NetBoxIPPool ns1\/nb$/m);
    expect(namespaced).to.match(/^claim +IPAddressClaim m-1 \(bound\)$/m);
  });
});
