import { expect } from "chai";
import { parseStat, treeCpuSecondsOf } from "./proctree.js";

const line = (pid: number, ppid: number, utime: number, stime: number, cutime = 0, cstime = 0): string =>
  `${pid} (post gres: x) S ${ppid} 1 1 0 -1 4194560 100 0 0 0 ${utime} ${stime} ${cutime} ${cstime} 20 0 1 0 5 0 0`;

describe("bench: CPU of process trees from /proc", () => {
  it("reads the parent and the ticks (own and reaped children's) of a stat line, spaces in the name included", () => {
    expect(parseStat(line(42, 7, 100, 50, 20, 5))).to.deep.equal({ pid: 42, ppid: 7, ticks: 175 });
    expect(parseStat("garbage")).to.equal(undefined);
  });

  it("sums a tree from its roots: descendants once, strangers never, gone roots as nothing", () => {
    const stats = [line(1, 0, 1000, 0), line(10, 1, 100, 0, 300), line(11, 10, 50, 50), line(12, 11, 10, 0)]
      .map(parseStat)
      .filter((s) => s !== undefined);
    expect(treeCpuSecondsOf(stats, [10])).to.equal(5.1);
    expect(treeCpuSecondsOf(stats, [10, 11, 99])).to.equal(5.1);
    expect(treeCpuSecondsOf(stats, [12])).to.equal(0.1);
  });
});
