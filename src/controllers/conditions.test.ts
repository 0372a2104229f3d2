import { expect } from "chai";
import type { Condition } from "../../api/v1alpha1/types.js";
import {
  conditionUnchanged,
  getCondition,
  MAX_CONDITION_MESSAGE,
  setCondition,
  type ConditionInput,
} from "./conditions.js";

const EARLIER = "2026-11-01T00:00:00Z";
const NOW = new Date("2026-11-23T10:20:30.456Z");
/** What `setCondition` stamps at NOW: whole seconds, as metav1.Time serialises. */
const NOW_STAMP = "2026-11-23T10:20:30Z";

const ready = (status: Condition["status"], reason = "PoolReady", message = "Pool is ready"): Condition => ({
  type: "Ready",
  status,
  reason,
  message,
  lastTransitionTime: EARLIER,
});
const other: Condition = { type: "Other", status: "True", reason: "Fine", message: "", lastTransitionTime: EARLIER };

describe("setCondition (pure)", () => {
  const rows: [string, readonly Condition[] | undefined, ConditionInput, Condition[]][] = [
    [
      "adds to an absent list, stamped now",
      undefined,
      { type: "Ready", status: "True", reason: "PoolReady", message: "ok" },
      [{ type: "Ready", status: "True", reason: "PoolReady", message: "ok", lastTransitionTime: NOW_STAMP }],
    ],
    [
      "same status, new reason and message: the transition time stays",
      [ready("False", "InvalidSpec", "bad")],
      { type: "Ready", status: "False", reason: "NameCollision", message: "taken" },
      [{ ...ready("False", "NameCollision", "taken") }],
    ],
    [
      "a status flip moves the transition time",
      [ready("False", "InvalidSpec", "bad")],
      { type: "Ready", status: "True", reason: "PoolReady", message: "Pool is ready" },
      [{ ...ready("True"), lastTransitionTime: NOW_STAMP }],
    ],
    [
      "True to Unknown is a flip too",
      [ready("True")],
      { type: "Ready", status: "Unknown", reason: "PoolReady", message: "Pool is ready" },
      [{ ...ready("Unknown"), lastTransitionTime: NOW_STAMP }],
    ],
    [
      "an empty reason becomes Unknown (the CRDs require one)",
      undefined,
      { type: "Ready", status: "False", reason: "", message: "m" },
      [{ type: "Ready", status: "False", reason: "Unknown", message: "m", lastTransitionTime: NOW_STAMP }],
    ],
    [
      "other types keep their place and values",
      [other, ready("True")],
      { type: "Ready", status: "False", reason: "InvalidSpec", message: "bad" },
      [other, { ...ready("False", "InvalidSpec", "bad"), lastTransitionTime: NOW_STAMP }],
    ],
    [
      "a new type is appended after the others",
      [other],
      { type: "Ready", status: "True", reason: "PoolReady", message: "Pool is ready" },
      [other, { ...ready("True"), lastTransitionTime: NOW_STAMP }],
    ],
  ];
  for (const [what, conditions, input, expected] of rows)
    it(what, () => expect(setCondition(conditions, input, NOW)).to.deep.equal(expected));

  it("never changes the list it was given", () => {
    const conditions = [ready("True")];
    const frozen = structuredClone(conditions);
    setCondition(conditions, { type: "Ready", status: "False", reason: "InvalidSpec", message: "bad" }, NOW);
    expect(conditions).to.deep.equal(frozen);
  });

  it("is idempotent: setting the same input twice yields equal lists (a repeated pass writes nothing)", () => {
    const input: ConditionInput = { type: "Ready", status: "False", reason: "InvalidSpec", message: "bad" };
    const once = setCondition(undefined, input, NOW);
    expect(setCondition(once, input, new Date("2026-12-01T00:00:00Z"))).to.deep.equal(once);
  });
});

describe("conditionUnchanged and getCondition (pure)", () => {
  const list = [other, ready("True")];
  const rows: [string, readonly Condition[] | undefined, ConditionInput, boolean][] = [
    ["no list", undefined, { type: "Ready", status: "True", reason: "PoolReady", message: "Pool is ready" }, false],
    [
      "no condition of that type",
      [other],
      { type: "Ready", status: "True", reason: "PoolReady", message: "Pool is ready" },
      false,
    ],
    [
      "same status, reason and message",
      list,
      { type: "Ready", status: "True", reason: "PoolReady", message: "Pool is ready" },
      true,
    ],
    ["status differs", list, { type: "Ready", status: "False", reason: "PoolReady", message: "Pool is ready" }, false],
    ["reason differs", list, { type: "Ready", status: "True", reason: "Allocated", message: "Pool is ready" }, false],
    ["message differs", list, { type: "Ready", status: "True", reason: "PoolReady", message: "other" }, false],
  ];
  for (const [what, conditions, input, expected] of rows)
    it(what, () => expect(conditionUnchanged(conditions, input)).to.equal(expected));

  it("agrees with setCondition on an empty reason: what was set is unchanged", () => {
    const input: ConditionInput = { type: "Ready", status: "False", reason: "", message: "m" };
    expect(conditionUnchanged(setCondition(undefined, input, NOW), input)).to.equal(true);
  });

  it("cuts a message longer than the schema allows, and then finds it unchanged (one write, not one per pass)", () => {
    const input: ConditionInput = {
      type: "Ready",
      status: "False",
      reason: "InvalidSpec",
      message: "e; ".repeat(20_000),
    };
    const set = setCondition(undefined, input, NOW);
    const stored = set[0]?.message ?? "";
    expect(stored).to.have.length(MAX_CONDITION_MESSAGE);
    expect(stored.endsWith(" …")).to.equal(true);
    expect(input.message.startsWith(stored.slice(0, -2))).to.equal(true);
    expect(conditionUnchanged(set, input)).to.equal(true);
    expect(conditionUnchanged(set, { ...input, message: `${input.message}x` })).to.equal(true);
    expect(conditionUnchanged(set, { ...input, message: "e; " })).to.equal(false);
  });

  it("finds a condition by type", () => {
    expect(getCondition(list, "Ready")).to.equal(list[1]);
    expect(getCondition(list, "Missing")).to.equal(undefined);
    expect(getCondition(undefined, "Ready")).to.equal(undefined);
  });
});
