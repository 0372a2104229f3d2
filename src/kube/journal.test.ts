import { expect } from "chai";
import { IndexJournal, MAX_CHANGES } from "./journal.js";
import type { KubeObject } from "./resource.js";

type Obj = KubeObject & { spec: { pool: string } };
const obj = (name: string, pool: string, rv = "1"): Obj => ({
  metadata: { name, namespace: "ns", resourceVersion: rv },
  spec: { pool },
});

describe("IndexJournal: what changed in one index bucket since the last drain (pure)", () => {
  const journal = (): IndexJournal<Obj> => new IndexJournal<Obj>((o) => [o.spec.pool]);

  it("records entering, changing and leaving objects in order, with before and after", () => {
    const j = journal();
    const a1 = obj("a", "p", "1");
    const a2 = obj("a", "p", "2");
    j.record("ns/a", undefined, a1);
    j.record("ns/a", a1, a2);
    j.record("ns/a", a2, undefined);
    expect(j.drain("p")).to.deep.equal([
      { key: "ns/a", after: a1 },
      { key: "ns/a", before: a1, after: a2 },
      { key: "ns/a", before: a2 },
    ]);
  });

  it("a drain forgets: the next one has only what came after", () => {
    const j = journal();
    j.record("ns/a", undefined, obj("a", "p"));
    expect(j.drain("p")).to.have.length(1);
    expect(j.drain("p")).to.deep.equal([]);
    j.record("ns/b", undefined, obj("b", "p"));
    expect(j.drain("p")?.map((c) => c.key)).to.deep.equal(["ns/b"]);
  });

  it("an object moving between buckets leaves one and enters the other", () => {
    const j = journal();
    const before = obj("a", "p");
    const after = obj("a", "q");
    j.record("ns/a", before, after);
    expect(j.drain("p")).to.deep.equal([{ key: "ns/a", before }]);
    expect(j.drain("q")).to.deep.equal([{ key: "ns/a", after }]);
  });

  it("other buckets are untouched", () => {
    const j = journal();
    j.record("ns/a", undefined, obj("a", "p"));
    expect(j.drain("q")).to.deep.equal([]);
    expect(j.drain("p")).to.have.length(1);
  });

  it("overflows past MAX_CHANGES: the next drain says so (undefined), then the log starts over", () => {
    const j = journal();
    for (let i = 0; i <= MAX_CHANGES; i++) j.record(`ns/o${i}`, undefined, obj(`o${i}`, "p"));
    expect(j.drain("p")).to.equal(undefined);
    j.record("ns/x", undefined, obj("x", "p"));
    expect(j.drain("p")?.map((c) => c.key)).to.deep.equal(["ns/x"]);
  });

  it("paused, keeps nothing and answers undefined; resumed, each bucket's first drain is undefined, then changes", () => {
    const j = journal();
    j.record("ns/a", undefined, obj("a", "p"));
    j.pause();
    j.record("ns/b", undefined, obj("b", "p"));
    j.record("ns/c", undefined, obj("c", "q"));
    expect(j.drain("p")).to.equal(undefined);
    j.resume();
    j.record("ns/d", undefined, obj("d", "p"));
    // What changed while paused is unknown: a reader of either bucket must read it whole once.
    expect(j.drain("p")).to.equal(undefined);
    expect(j.drain("q")).to.equal(undefined);
    j.record("ns/e", undefined, obj("e", "p"));
    expect(j.drain("p")?.map((c) => c.key)).to.deep.equal(["ns/e"]);
    expect(j.drain("q")).to.deep.equal([]);
  });
});
