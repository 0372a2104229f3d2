import { expect } from "chai";
import type { Obj } from "./kube.js";
import { Mirror } from "./watch.js";

const obj = (namespace: string, name: string, rv = "1"): Obj =>
  ({ metadata: { namespace, name, resourceVersion: rv } }) as Obj;
const names = (m: Mirror<Obj>): string[] => m.values.map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort();

describe("kubectl ipam pools --watch: the mirror of one kind", () => {
  it("drops what a watch's complete list no longer names (deleted between the first read and the watch's start)", () => {
    const mirror = new Mirror<Obj>([obj("a", "g-1"), obj("a", "g-4"), obj("b", "g-2")]);
    // The fluent client's first list: "added" for each object that exists, nothing about a-g-4, deleted meanwhile.
    mirror.apply({ type: "listed", keys: new Set(["a/g-1", "b/g-2"]) });
    mirror.apply({ type: "upsert", object: obj("a", "g-1", "2") });
    mirror.apply({ type: "upsert", object: obj("b", "g-2", "2") });
    expect(names(mirror)).to.deep.equal(["a/g-1", "b/g-2"]);
  });

  it("keeps what it names, new or old, and still applies deletions and upserts", () => {
    const mirror = new Mirror<Obj>([obj("a", "x")]);
    mirror.apply({ type: "listed", keys: new Set(["a/x", "a/y"]) });
    mirror.apply({ type: "upsert", object: obj("a", "y") });
    mirror.apply({ type: "delete", object: obj("a", "x") });
    expect(names(mirror)).to.deep.equal(["a/y"]);
  });
});
