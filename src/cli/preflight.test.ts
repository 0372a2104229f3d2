import { expect } from "chai";
import { movedSet, preflight, preflightFails, renderPreflight, type MoveNode } from "./preflight.js";
import { capiAddress, capiClaim, inventory, ipClaim, m3Address, owner, pool } from "./fixtures.testutil.js";

const node = (uid: string, kind: string, owners: string[] = [], root = false): MoveNode => ({
  uid,
  apiVersion: "x/v1",
  kind,
  name: uid.replace(/^uid-/, ""),
  owners,
  hierarchyRoot: root,
  forceMove: root,
});

describe("cli/preflight", () => {
  it("moves what a Cluster's owner chains reach, and only once every owner moves", () => {
    const nodes = [
      node("c", "Cluster", [], true),
      node("m", "Machine", ["c"]),
      node("claim", "IPClaim", ["m"]),
      node("pool", "IPPool", ["c"]),
      node("loose", "IPPool"),
      node("addr", "IPAddress", ["pool", "claim"]),
      node("addr-loose", "IPAddress", ["loose", "claim"]),
      node("orphan", "IPAddress"),
      node("ghost-child", "IPClaim", ["ghost"]),
      node("half-ghost", "IPClaim", ["m", "ghost"]),
    ];
    expect([...movedSet(nodes)].sort()).to.deep.equal(["addr", "c", "claim", "m", "pool"]);
  });

  it("reports what stays and why, with fixes; fails only for what is left behind or blocks", () => {
    const cluster = owner("Cluster", "c1", "uid-c1", "cluster.x-k8s.io/v1beta2");
    const data = owner("Metal3Data", "d0", "uid-d0");
    const good = pool("good", { clusterName: "c1", pools: [{ start: "10.0.0.1", end: "10.0.0.9" }] }, "uid-good", [
      cluster,
    ]);
    const loose = pool("loose", { pools: [{ start: "10.1.0.1", end: "10.1.0.9" }] }, "uid-loose");
    const poolRef = (p: typeof good) => owner("IPPool", p.metadata.name!, p.metadata.uid!, "ipam.metal3.io/v1alpha1");
    const inv = inventory({
      pools: [good, loose],
      claims: [
        ipClaim("moved", "good", { metadata: { ownerReferences: [data] } }),
        ipClaim("lonely", "good", { metadata: { labels: { "cluster.x-k8s.io/cluster-name": "c1" } } }),
        ipClaim("dying", "good", {
          metadata: {
            ownerReferences: [data],
            deletionTimestamp: "2024-01-01T00:00:00Z",
            finalizers: ["metal3data.infrastructure.cluster.x-k8s.io", "ipclaim.ipam.metal3.io"],
          },
        }),
      ],
      capiClaims: [capiClaim("bm", "loose", { metadata: { ownerReferences: [data] } })],
      addresses: [
        m3Address("good", "10.0.0.1", "moved", [poolRef(good), owner("IPClaim", "moved", "uid-ipc-moved")]),
        m3Address("good", "10.0.0.5", "nobody"),
      ],
      capiAddresses: [
        capiAddress("loose", "10.1.0.1", "bm", [owner("IPAddressClaim", "bm", "uid-ipac-bm"), poolRef(loose)]),
      ],
    });
    const nodes: MoveNode[] = [
      node("uid-c1", "Cluster", [], true),
      node("uid-d0", "Metal3Data", ["uid-c1"]),
      ...[...inv.pools, ...inv.claims, ...inv.capiClaims, ...inv.addresses, ...inv.capiAddresses].map((o) =>
        node(
          o.metadata.uid!,
          o.kind ?? "x",
          (o.metadata.ownerReferences ?? []).map((r) => r.uid),
        ),
      ),
    ];
    const report = preflight({
      namespace: "ns1",
      nodes,
      inv,
      clusters: [{ name: "c1", uid: "uid-c1", paused: false }],
      unlabelledCrds: [],
    });
    expect(report.leftBehind).to.deep.equal([
      "IPPool/loose",
      "IPClaim/lonely",
      "IPAddress.ipam.metal3.io/good-10-0-0-5",
      "IPAddress.ipam.cluster.x-k8s.io/loose-10-1-0-1",
    ]);
    const byName = Object.fromEntries(report.findings.map((f) => [f.name, f]));
    expect(byName.loose!.fix).to.equal(
      `kubectl -n ns1 patch ippool loose --type merge -p '{"spec":{"clusterName":"c1"}}'`,
    );
    expect(byName.lonely!.problem).to.equal("is not tied to a Cluster: it has no owner, so no owner chain reaches one");
    expect(byName["good-10-0-0-5"]!.problem).to.match(
      /^10\.0\.0\.5 is a person-made reservation \(claim nobody does not exist\) outside the move graph and has no owners$/,
    );
    expect(byName["good-10-0-0-5"]!.fix).to.match(/^add an owner reference to IPPool good \(uid uid-good\)/);
    expect(byName["loose-10-1-0-1"]!.problem).to.equal("10.1.0.1 stays with its pool loose");
    expect(byName.dying).to.include({ severity: "warning" });
    expect(byName.dying!.problem).to.match(
      /^is being deleted but held by metal3data\.infrastructure\.cluster\.x-k8s\.io:/,
    );
    expect(preflightFails(report)).to.equal(true);
    expect(renderPreflight(report).split("\n").at(-1)).to.equal(
      "clusterctl move -n ns1 would leave 4 object(s) behind (1 warning(s))",
    );
  });

  it("blocks on paused Clusters and unlabelled CRDs, and passes a clean namespace with warnings only", () => {
    const blocked = preflight({
      namespace: "n",
      nodes: [],
      inv: inventory({}),
      clusters: [{ name: "c", uid: "u", paused: true }],
      unlabelledCrds: ["ippools.ipam.metal3.io"],
    });
    expect(blocked.findings.map((f) => `${f.severity} ${f.kind}/${f.name}`)).to.deep.equal([
      "blocker CustomResourceDefinition/ippools.ipam.metal3.io",
      "blocker Cluster/c",
    ]);
    expect(blocked.findings[1]!.fix).to.equal(
      `kubectl -n n patch cluster c --type merge -p '{"spec":{"paused":false}}'`,
    );
    expect(preflightFails(blocked)).to.equal(true);
    const clean = preflight({ namespace: "n", nodes: [], inv: inventory({}), clusters: [], unlabelledCrds: [] });
    expect(preflightFails(clean)).to.equal(false);
    expect(renderPreflight(clean)).to.equal(
      "clusterctl move -n n would take every pool, claim and address along (0 warning(s))",
    );
  });
});
