import { expect } from "chai";
import { GROWTH_FLOOR_BYTES, memoryTrend, type MemorySample } from "./trend.js";

const MiB = 1024 * 1024;
/** The warm-up of a 10-minute soak before it had one of its own (a fifth of the run). */
const TWO_MINUTES = 2 * 60_000;

/** A reading every 15 s for `minutes`, `bytesAt(minute)` plus deterministic noise of ±`noiseMiB`. */
function series(minutes: number, bytesAt: (minute: number) => number, noiseMiB = 1): MemorySample[] {
  const out: MemorySample[] = [];
  for (let atMs = 0; atMs <= minutes * 60_000; atMs += 15_000) {
    // A fixed zig-zag, not Math.random: the test must give the same verdict on every run.
    const noise = (((atMs / 15_000) * 7) % 5) / 2 - 1;
    out.push({ atMs, bytes: bytesAt(atMs / 60_000) + noise * noiseMiB * MiB });
  }
  return out;
}

describe("soak memory trend", () => {
  it("calls a noisy series around a constant flat, with the noise band measured", () => {
    const trend = memoryTrend(
      series(10, () => 100 * MiB, 3),
      TWO_MINUTES,
    );
    expect(trend.verdict).to.equal("flat");
    expect(trend.noiseBytes)
      .to.be.greaterThan(2 * MiB)
      .and.lessThan(7 * MiB);
    expect(Math.abs(trend.growthBytes)).to.be.lessThan(trend.noiseBytes);
  });

  it("calls +1 MiB a minute over 10 minutes growing, with the slope it has", () => {
    const trend = memoryTrend(
      series(10, (m) => 100 * MiB + m * MiB),
      TWO_MINUTES,
    );
    expect(trend.verdict).to.equal("growing");
    expect(trend.bytesPerMinute / MiB).to.be.closeTo(1, 0.15);
    // The first 2 minutes are warm-up: the line spans the last 8.
    expect(trend.growthBytes / MiB).to.be.closeTo(8, 1.2);
  });

  it("calls a steady decline shrinking", () => {
    expect(
      memoryTrend(
        series(10, (m) => 150 * MiB - 2 * m * MiB),
        TWO_MINUTES,
      ).verdict,
    ).to.equal("shrinking");
  });

  it("leaves the warm-up out: a jump in the first minute then a plateau is flat", () => {
    const trend = memoryTrend(
      series(10, (m) => (m < 1 ? 80 * MiB : 120 * MiB)),
      TWO_MINUTES,
    );
    expect(trend.verdict).to.equal("flat");
    expect(trend.minBytes).to.be.greaterThan(110 * MiB);
    expect(trend.warmupMs).to.equal(120_000);
  });

  it("leaves out the warm-up it is given: a climb over the first 5 minutes, then a plateau", () => {
    // What the controller's RSS does under churn: malloc and compiled code grow to a steady state, then hold.
    const climbThenPlateau = (m: number): number => 100 * MiB + Math.min(m, 5) * 1.5 * MiB;
    const tenMinutes = memoryTrend(series(10, climbThenPlateau, 0.5), TWO_MINUTES);
    expect(tenMinutes.verdict, "10 minutes, 2 of them warm-up").to.equal("growing");
    const trend = memoryTrend(series(15, climbThenPlateau, 0.5), 5 * 60_000);
    expect(trend.verdict).to.equal("flat");
    expect(trend.warmupMs).to.equal(300_000);
    expect(trend.samples).to.equal(41);
  });

  it("counts the warm-up from the start it is given, not from a series' own first reading", () => {
    // A series read once a minute from minute 1 on (RSS after each memory release), in a soak whose churn began at 0.
    const everyMinute = series(15, (m) => 100 * MiB + Math.min(m, 5) * 1.5 * MiB, 0.5).filter(
      (s) => s.atMs >= 60_000 && s.atMs % 60_000 === 0,
    );
    const fromChurn = memoryTrend(everyMinute, 5 * 60_000, 0);
    expect(fromChurn.samples, "minutes 5 to 15").to.equal(11);
    expect(fromChurn.verdict).to.equal("flat");
    expect(memoryTrend(everyMinute, 5 * 60_000).samples, "minutes 6 to 15").to.equal(10);
  });

  it("still calls a steady climb growing after the warm-up it is given", () => {
    const leak = memoryTrend(
      series(15, (m) => 100 * MiB + m * 0.4 * MiB, 0.5),
      5 * 60_000,
    );
    expect(leak.verdict).to.equal("growing");
    expect(leak.growthBytes / MiB).to.be.closeTo(4, 0.6);
  });

  it("needs more than growth within the 2 MiB floor to call a quiet series growing", () => {
    const quiet = memoryTrend(
      series(10, (m) => 100 * MiB + (m * 1.5 * MiB) / 10, 0),
      TWO_MINUTES,
    );
    expect(quiet.noiseBytes).to.equal(0);
    expect(quiet.growthBytes).to.be.greaterThan(0).and.lessThan(GROWTH_FLOOR_BYTES);
    expect(quiet.verdict).to.equal("flat");
  });

  it("gives no verdict on too few samples, in any order", () => {
    const few = series(1, () => 100 * MiB)
      .slice(0, 5)
      .reverse();
    const trend = memoryTrend(few, 0);
    expect(trend.verdict).to.equal("too few samples");
    expect(trend.bytesPerMinute).to.be.NaN;
    expect(memoryTrend([], 0).verdict).to.equal("too few samples");
  });
});
