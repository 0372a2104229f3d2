import { expect } from "chai";
import { Slots } from "./slots.js";

const soon = (ms: number): number => performance.now() + ms;

describe("large review slots (slots.ts)", () => {
  it("gives a freed slot to the first in line, before a review arriving later", async () => {
    const slots = new Slots(1, 2);
    const order: string[] = [];
    const first = await slots.take(soon(5_000));
    if ("refused" in first) throw new Error("no slot");
    const waiting = ["a", "b"].map((name) =>
      slots.take(soon(5_000)).then((s) => {
        order.push(name);
        return s;
      }),
    );
    expect([slots.inUse, slots.waiting]).to.deep.equal([1, 2]);
    first.release();
    // A review arriving now finds the slot given away and waits (the line has room again).
    const late = slots.take(soon(5_000)).then((s) => {
      order.push("late");
      return s;
    });
    const a = await waiting[0];
    if (!a || "refused" in a) throw new Error("no slot for a");
    a.release();
    a.release();
    const b = await waiting[1];
    if (!b || "refused" in b) throw new Error("no slot for b");
    b.release();
    const l = await late;
    if ("refused" in l) throw new Error("no slot for late");
    l.release();
    expect(order).to.deep.equal(["a", "b", "late"]);
    expect([slots.inUse, slots.waiting]).to.deep.equal([0, 0]);
  });

  it("refuses when the line is full, and a review still waiting at its deadline", async () => {
    const slots = new Slots(1, 1);
    const held = await slots.take(soon(5_000));
    const waiting = slots.take(soon(30));
    expect(await slots.take(soon(5_000))).to.deep.equal({ refused: "line full" });
    expect(await waiting).to.deep.equal({ refused: "deadline" });
    expect([slots.inUse, slots.waiting]).to.deep.equal([1, 0]);
    if (!("refused" in held)) held.release();
    expect(slots.inUse).to.equal(0);
  });
});
