import { expect } from "chai";
import type { InClusterIPPoolSpec } from "../../api/incluster/types.js";
import { globalPoolFindings, type GlobalPoolUse } from "./preflight-global.js";

const SOURCE: InClusterIPPoolSpec = { addresses: ["10.70.0.10-10.70.0.20"], prefix: 24 };

const use = (elsewhere: GlobalPoolUse["elsewhere"] = []): GlobalPoolUse => ({
  name: "g",
  spec: SOURCE,
  moving: ["10.70.0.12", "10.70.0.13"],
  elsewhere,
});
const STAYING = [
  { namespace: "b", claim: "b1", address: "10.70.0.10" },
  { namespace: "a", claim: "a1", address: "10.70.0.11" },
  { namespace: "a", claim: "a2", address: "" },
];
const brief = (u: GlobalPoolUse, target?: Map<string, InClusterIPPoolSpec | null>): string[] =>
  globalPoolFindings([u], target).map((f) => `${f.severity} ${f.kind}/${f.name}`);

describe("cli/preflight-global", () => {
  it("warns that a pool used by the moved namespace alone is copied and its records stay reserved here", () => {
    const [f] = globalPoolFindings([use()], undefined);
    expect(f).to.include({ severity: "warning", kind: "GlobalInClusterIPPool", name: "g" });
    expect(f!.problem).to.equal(
      "is cluster-scoped: clusterctl copies it to the target unless the target has one of that name (the target was " +
        "not checked: pass --to-kubeconfig), and leaves it here; the 2 IPAddress(es) of this namespace's claims on it " +
        "are copied and also stay here, reserved",
    );
  });

  it("blocks a pool shared with namespaces that stay, whether the target lacks it or was not checked", () => {
    expect(brief(use(STAYING))).to.deep.equal(["blocker GlobalInClusterIPPool/g"]);
    const [missing] = globalPoolFindings([use(STAYING)], new Map([["g", null]]));
    expect(missing!.problem).to.match(
      /^is missing on the target: clusterctl copies it there, and leaves it here; it is shared with 3 claim\(s\) in namespace\(s\) a, b that stay/,
    );
    expect(missing!.fix).to.match(/^create it on the target before the move, and split the range/);
  });

  it("blocks when the target's pool overlaps what the source hands out or holds, naming the contested addresses", () => {
    // Only the source's held addresses are excluded: the rest of its range is still handed out on both sides.
    const excludedOnly = new Map([["g", { ...SOURCE, excludedAddresses: ["10.70.0.10", "10.70.0.11"] }]]);
    const [f] = globalPoolFindings([use(STAYING)], excludedOnly);
    expect(f!.severity).to.equal("blocker");
    expect(f!.problem).to.include("can hand out 10.70.0.14-10.70.0.20, which the source's can hand out or holds");
    // A stale record elsewhere outside the source's range still counts as held.
    const outside = new Map([["g", { addresses: ["10.70.1.0/24"], prefix: 16 }]]);
    const stale = use([{ namespace: "old", claim: "gone", address: "10.70.1.9" }]);
    expect(globalPoolFindings([stale], outside)[0]!.problem).to.include("can hand out 10.70.1.9,");
  });

  it("passes a target pool with a range of its own (the moved addresses may be anywhere), and a pool only moved", () => {
    const own = new Map([["g", { addresses: ["10.70.1.10-10.70.1.50"], prefix: 16 }]]);
    expect(brief(use(STAYING), own)).to.deep.equal(["warning GlobalInClusterIPPool/g"]);
    // The moved claims' own addresses are held on both sides by the same claims: no conflict.
    const withMoved = new Map([["g", { addresses: ["10.70.0.12-10.70.0.13", "10.70.1.0/24"], prefix: 16 }]]);
    expect(brief(use(STAYING), withMoved)).to.deep.equal(["warning GlobalInClusterIPPool/g"]);
    expect(globalPoolFindings([use(STAYING)], own)[0]!.problem).to.match(
      /^exists on the target, which clusterctl keeps/,
    );
    expect(brief(use(), new Map([["g", null]]))).to.deep.equal(["warning GlobalInClusterIPPool/g"]);
  });
});
