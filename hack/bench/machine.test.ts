import { expect } from "chai";
import { machineReading, machineSection, parseCpuTimes, type CpuTimes } from "./machine.js";

const row = (section: ReturnType<typeof machineSection>, metric: string): { value: string; detail?: string } => {
  const found = "rows" in section ? section.rows.find((r) => r.metric.startsWith(metric)) : undefined;
  if (!found) throw new Error(`no row ${metric}`);
  return found;
};

describe("bench: the machine a run was measured on (pure)", () => {
  it("reads the cpu line of /proc/stat: idle with iowait, steal apart, guest time not counted twice", () => {
    const stat = "cpu  6287967 860 948588 7564994 31519 0 75525 126333 5 7\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n";
    expect(parseCpuTimes(stat)).to.deep.equal({
      total: 6287967 + 860 + 948588 + 7564994 + 31519 + 0 + 75525 + 126333,
      idle: 7564994 + 31519,
      steal: 126333,
    });
    expect(parseCpuTimes("intr 1\n")).to.equal(undefined);
    expect(parseCpuTimes("cpu  1 2 x 4 5 6 7 8\n")).to.equal(undefined);
  });

  it("shares of the run's CPU time between two samples: busy and stolen", () => {
    const start: CpuTimes = { total: 1_000, idle: 400, steal: 10 };
    const end: CpuTimes = { total: 2_000, idle: 700, steal: 70 };
    expect(machineReading(2, [1, 1, 1], start, end)).to.deep.equal({
      cpus: 2,
      loadAverageAtStart: [1, 1, 1],
      stealShare: 0.06,
      busyShare: 0.64,
    });
    expect(machineReading(2, [1, 1, 1], undefined, end)).to.deep.equal({ cpus: 2, loadAverageAtStart: [1, 1, 1] });
  });

  const cases: { name: string; stealShare?: number; load: number; comparable: string; detail?: RegExp }[] = [
    { name: "a quiet machine", stealShare: 0.005, load: 0.4, comparable: "yes" },
    { name: "a hypervisor taking 6%", stealShare: 0.06, load: 0.4, comparable: "NO", detail: /took 6\.0% of the CPU/ },
    { name: "a busy start", stealShare: 0, load: 1.5, comparable: "NO", detail: /busy at the start \(load 1\.50\)/ },
    { name: "no /proc/stat, quiet start", load: 0.2, comparable: "yes" },
  ];
  for (const c of cases)
    it(`says whether the figures are a quiet machine's: ${c.name}`, () => {
      const section = machineSection({
        cpus: 2,
        loadAverageAtStart: [c.load, 0, 0],
        ...(c.stealShare === undefined ? {} : { stealShare: c.stealShare, busyShare: 0.5 }),
      });
      const verdict = row(section, "comparable");
      expect(verdict.value).to.equal(c.comparable);
      if (c.detail) expect(verdict.detail).to.match(c.detail);
      else expect(verdict.detail).to.equal(undefined);
      expect(row(section, "CPU time").value).to.equal(
        c.stealShare === undefined ? "-" : `50.0%, ${(c.stealShare * 100).toFixed(1)}%`,
      );
    });
});
