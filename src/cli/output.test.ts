import { expect } from "chai";
import { bar, jsonCount, levelColour, paint, percent, PLAIN, styleFor, table, visibleWidth } from "./output.js";

describe("cli/output", () => {
  it("computes percentages exactly, also for pools beyond 2^64", () => {
    const cases: [bigint, bigint, string][] = [
      [0n, 10n, "0.0%"],
      [1n, 3n, "33.3%"],
      [2n, 3n, "66.7%"],
      [10n, 10n, "100.0%"],
      [5n, 0n, "0.0%"],
      [1n << 63n, 1n << 64n, "50.0%"],
      [3n, 1n << 64n, "0.0%"],
    ];
    for (const [part, whole, want] of cases) expect(percent(part, whole), `${part}/${whole}`).to.equal(want);
  });

  it("draws bars that show any use and never overflow", () => {
    expect(bar(0n, 100n, 10)).to.equal("░".repeat(10));
    expect(bar(1n, 1n << 64n, 10)).to.equal("█" + "░".repeat(9));
    expect(bar(5n, 10n, 10)).to.equal("█".repeat(5) + "░".repeat(5));
    expect(bar(10n, 10n, 10)).to.equal("█".repeat(10));
  });

  it("colours by level: green, yellow from 70 %, red from 90 %", () => {
    expect([levelColour(69n, 100n), levelColour(70n, 100n), levelColour(90n, 100n), levelColour(0n, 0n)]).to.deep.equal(
      ["green", "yellow", "red", "red"],
    );
  });

  it("keeps JSON counts exact: numbers while safe, decimal strings beyond", () => {
    expect(jsonCount(27n)).to.equal(27);
    expect(jsonCount(BigInt(Number.MAX_SAFE_INTEGER))).to.equal(Number.MAX_SAFE_INTEGER);
    expect(jsonCount(1n << 64n)).to.equal("18446744073709551616");
  });

  it("pads columns by visible width, so colour does not shift them", () => {
    const red = paint({ bars: true, color: true }, "red", "9");
    expect(visibleWidth(red)).to.equal(1);
    expect(
      table(
        [
          ["A", "BB"],
          [red, "1"],
        ],
        [1],
      ),
    ).to.equal(`A  BB\n${red}   1`);
  });

  it("decorates only terminals, honouring NO_COLOR and FORCE_COLOR", () => {
    expect(styleFor(false, {})).to.deep.equal(PLAIN);
    expect(styleFor(true, {})).to.deep.equal({ bars: true, color: true });
    expect(styleFor(true, { NO_COLOR: "1" })).to.deep.equal({ bars: true, color: false });
    expect(styleFor(false, { FORCE_COLOR: "1" })).to.deep.equal({ bars: true, color: true });
  });
});
