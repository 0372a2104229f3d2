import { expect } from "chai";
import { PAUSED_ANNOTATION, type ObjectMeta } from "../../api/v1alpha1/types.js";
import { clusterPaused, pauseState, type Cluster, type PauseState } from "./clusters.js";

function cluster(name: string, paused?: { field?: boolean; annotation?: string }, namespace = "ns"): Cluster {
  return {
    metadata: {
      name,
      namespace,
      ...(paused?.annotation !== undefined ? { annotations: { [PAUSED_ANNOTATION]: paused.annotation } } : {}),
    },
    ...(paused?.field !== undefined ? { spec: { paused: paused.field } } : {}),
  };
}

describe("clusterPaused (spec §4, pure)", () => {
  const rows: [string, Cluster, boolean][] = [
    ["no spec, no annotation", cluster("wl"), false],
    ["spec.paused false", cluster("wl", { field: false }), false],
    ["spec.paused true", cluster("wl", { field: true }), true],
    ["the paused annotation, empty value", cluster("wl", { annotation: "" }), true],
    ["the paused annotation wins over spec.paused false", cluster("wl", { field: false, annotation: "true" }), true],
    ["an unrelated annotation", { metadata: { name: "wl", annotations: { "example.com/paused": "true" } } }, false],
  ];
  for (const [what, c, expected] of rows) it(what, () => expect(clusterPaused(c)).to.equal(expected));
});

describe("pauseState (spec §4, pure)", () => {
  const clusters = [
    cluster("live"),
    cluster("frozen", { field: true }),
    cluster("tagged", { annotation: "" }),
    cluster("elsewhere", undefined, "other"),
  ];
  const lookup = (ns: string, name: string): Cluster | undefined =>
    clusters.find((c) => c.metadata.namespace === ns && c.metadata.name === name);
  const meta = (annotations?: Record<string, string>): ObjectMeta => ({
    name: "p",
    namespace: "ns",
    ...(annotations ? { annotations } : {}),
  });

  const rows: [string, ObjectMeta, string | undefined, PauseState][] = [
    ["no cluster name: not paused, no Cluster asked for", meta(), undefined, { paused: false }],
    ["an empty cluster name is no cluster", meta(), "", { paused: false }],
    [
      "the object's own annotation",
      meta({ [PAUSED_ANNOTATION]: "" }),
      undefined,
      { paused: true, why: `the object carries ${PAUSED_ANNOTATION}` },
    ],
    [
      "the object's annotation wins over a live Cluster",
      meta({ [PAUSED_ANNOTATION]: "" }),
      "live",
      { paused: true, why: `the object carries ${PAUSED_ANNOTATION}` },
    ],
    [
      "the object's annotation wins over a missing Cluster",
      meta({ [PAUSED_ANNOTATION]: "" }),
      "ghost",
      { paused: true, why: `the object carries ${PAUSED_ANNOTATION}` },
    ],
    ["a Cluster paused by its field", meta(), "frozen", { paused: true, why: "Cluster frozen is paused" }],
    ["a Cluster paused by its annotation", meta(), "tagged", { paused: true, why: "Cluster tagged is paused" }],
    ["a live Cluster is returned (owner references need it)", meta(), "live", { paused: false, cluster: clusters[0]! }],
    ["a missing Cluster", meta(), "ghost", { paused: false, clusterMissing: "ghost" }],
    [
      "a Cluster of another namespace is missing here",
      meta(),
      "elsewhere",
      { paused: false, clusterMissing: "elsewhere" },
    ],
  ];
  for (const [what, m, clusterName, expected] of rows)
    it(what, () => expect(pauseState(m, clusterName, lookup)).to.deep.equal(expected));

  it("looks the Cluster up in the object's namespace, by the given name", () => {
    const asked: string[] = [];
    pauseState({ name: "p", namespace: "team-a" }, "wl", (ns, name) => {
      asked.push(`${ns}/${name}`);
      return undefined;
    });
    expect(asked).to.deep.equal(["team-a/wl"]);
  });
});
