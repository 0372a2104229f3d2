import { expect } from "chai";
import { DELETE_FOR_MOVE_ANNOTATION, PAUSED_ANNOTATION, type ObjectMeta } from "../../api/v1alpha1/types.js";
import {
  byCreationThenName,
  hasFinalizer,
  hasPausedAnnotation,
  isDeletedForMove,
  isDeleting,
  onlyOurFinalizers,
} from "./meta.js";

const OURS = ["ipclaim.ipam.metal3.io", "ipam.metal3.io/ipaddressclaim"];
const DELETED = "2026-11-23T00:00:00Z";

describe("onlyOurFinalizers (pure)", () => {
  const rows: [string, ObjectMeta, boolean][] = [
    ["no finalizers list: ours to release", {}, true],
    ["an empty list", { finalizers: [] }, true],
    ["one of ours", { finalizers: ["ipclaim.ipam.metal3.io"] }, true],
    ["both of ours", { finalizers: [...OURS] }, true],
    [
      "ours and CAPM3's: not yet",
      { finalizers: ["ipclaim.ipam.metal3.io", "metal3data.infrastructure.cluster.x-k8s.io"] },
      false,
    ],
    ["only a foreign one", { finalizers: ["foregroundDeletion"] }, false],
    ["a prefix of ours is not ours", { finalizers: ["ipclaim.ipam.metal3"] }, false],
  ];
  for (const [what, meta, expected] of rows) it(what, () => expect(onlyOurFinalizers(meta, OURS)).to.equal(expected));

  it("hasFinalizer looks for the exact name", () => {
    expect(hasFinalizer({ finalizers: [...OURS] }, "ipclaim.ipam.metal3.io")).to.equal(true);
    expect(hasFinalizer({ finalizers: ["ipclaim.ipam.metal3.io.x"] }, "ipclaim.ipam.metal3.io")).to.equal(false);
    expect(hasFinalizer({}, "ipclaim.ipam.metal3.io")).to.equal(false);
  });
});

describe("deletion, move and pause markers (pure)", () => {
  const rows: [string, ObjectMeta, { deleting: boolean; forMove: boolean; paused: boolean }][] = [
    ["a live object", {}, { deleting: false, forMove: false, paused: false }],
    ["being deleted", { deletionTimestamp: DELETED }, { deleting: true, forMove: false, paused: false }],
    [
      "being deleted by clusterctl move",
      { deletionTimestamp: DELETED, annotations: { [DELETE_FOR_MOVE_ANNOTATION]: "" } },
      { deleting: true, forMove: true, paused: false },
    ],
    // clusterctl annotates before it deletes: until the delete lands, the object is live and released normally later.
    [
      "annotated for move, not yet deleted",
      { annotations: { [DELETE_FOR_MOVE_ANNOTATION]: "" } },
      { deleting: false, forMove: false, paused: false },
    ],
    [
      "paused by an empty annotation (presence counts, as in Cluster API)",
      { annotations: { [PAUSED_ANNOTATION]: "" } },
      { deleting: false, forMove: false, paused: true },
    ],
    [
      "paused by a false-looking value",
      { annotations: { [PAUSED_ANNOTATION]: "false" } },
      { deleting: false, forMove: false, paused: true },
    ],
    [
      "other annotations mean nothing",
      { annotations: { "example.com/paused": "true" } },
      { deleting: false, forMove: false, paused: false },
    ],
  ];
  for (const [what, meta, expected] of rows) {
    it(what, () =>
      expect({
        deleting: isDeleting(meta),
        forMove: isDeletedForMove(meta),
        paused: hasPausedAnnotation(meta),
      }).to.deep.equal(expected),
    );
  }
});

describe("byCreationThenName (spec §3.4, pure)", () => {
  const obj = (name: string | undefined, creationTimestamp?: string): { metadata: ObjectMeta } => ({
    metadata: { ...(name === undefined ? {} : { name }), ...(creationTimestamp ? { creationTimestamp } : {}) },
  });
  const names = (list: { metadata: ObjectMeta }[]): (string | undefined)[] => list.map((o) => o.metadata.name);

  const rows: [string, { metadata: ObjectMeta }[], (string | undefined)[]][] = [
    [
      "older first, whatever the names",
      [obj("a", "2026-01-01T00:00:02Z"), obj("b", "2026-01-01T00:00:01Z")],
      ["b", "a"],
    ],
    [
      "same second: by name",
      [obj("c-2", "2026-01-01T00:00:00Z"), obj("c-10", "2026-01-01T00:00:00Z"), obj("c-1", "2026-01-01T00:00:00Z")],
      ["c-1", "c-10", "c-2"],
    ],
    [
      "across a minute boundary (string order is time order)",
      [obj("x", "2026-01-01T00:01:00Z"), obj("y", "2026-01-01T00:00:59Z")],
      ["y", "x"],
    ],
    ["without a creation time (not yet stored): first", [obj("b", "2026-01-01T00:00:00Z"), obj("a")], ["a", "b"]],
    [
      "without a name: first among equals",
      [obj("a", "2026-01-01T00:00:00Z"), obj(undefined, "2026-01-01T00:00:00Z")],
      [undefined, "a"],
    ],
  ];
  for (const [what, list, expected] of rows)
    it(what, () => expect(names([...list].sort(byCreationThenName))).to.deep.equal(expected));

  it("gives one order for every permutation of the input", () => {
    const list = [
      obj("d", "2026-01-01T00:00:01Z"),
      obj("a", "2026-01-01T00:00:02Z"),
      obj("c", "2026-01-01T00:00:01Z"),
      obj("b"),
      obj("e", "2026-01-01T00:00:00Z"),
    ];
    const orders = new Set(permutations(list).map((p) => names(p.sort(byCreationThenName)).join(",")));
    expect([...orders]).to.deep.equal(["b,e,c,d,a"]);
  });

  it("is a consistent comparator: antisymmetric, and 0 only for the same time and name", () => {
    const a = obj("a", "2026-01-01T00:00:00Z");
    const b = obj("b", "2026-01-01T00:00:00Z");
    expect(byCreationThenName(a, b)).to.equal(-1);
    expect(byCreationThenName(b, a)).to.equal(1);
    expect(byCreationThenName(a, obj("a", "2026-01-01T00:00:00Z"))).to.equal(0);
  });
});

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}
