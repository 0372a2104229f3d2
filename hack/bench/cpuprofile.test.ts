import { expect } from "chai";
import { summarizeProfile, type CpuProfile } from "./cpuprofile.js";

const frame = (functionName: string, url = "", lineNumber = 0): CpuProfile["nodes"][number]["callFrame"] => ({
  functionName,
  url,
  lineNumber,
});

// (root) → pass (dist/src/pass.js:10) → parse (JSON, native) and (root) → (idle), (root) → (garbage collector).
const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)"), children: [2, 4, 5] },
    { id: 2, callFrame: frame("pass", "file:///app/dist/src/pass.js", 9), children: [3] },
    { id: 3, callFrame: frame("parse") },
    { id: 4, callFrame: frame("(idle)") },
    { id: 5, callFrame: frame("(garbage collector)") },
  ],
  // One sample every 1 ms (the median interval), but the fourth came 40 ms late (the process waited for a core): it
  // counts for 1 ms too. pass 1, parse 3, garbage collector 1, idle 1 (left out).
  startTime: 0,
  samples: [2, 3, 3, 3, 5, 4],
  timeDeltas: [0, 1000, 1000, 40_000, 1000, 1000],
};

describe("cpuprofile summary", () => {
  it("adds self time by function and line, total time through callers, and leaves idle out of the CPU", () => {
    const s = summarizeProfile(PROFILE);
    expect(s.cpuMs).to.equal(1 + 3 + 1);
    const self = Object.fromEntries(s.bySelf.map((e) => [e.key, e.selfMs]));
    expect(self).to.deep.equal({ parse: 3, "(garbage collector)": 1, "pass dist/src/pass.js:10": 1 });
    expect(s.byTotal[0]).to.deep.equal({ key: "pass dist/src/pass.js:10", selfMs: 1, totalMs: 4 });
    expect(s.paths[0]).to.deep.equal({ path: ["pass dist/src/pass.js:10", "parse"], ms: 3 });
  });

  it("with a window, counts only the samples taken in it (a trickle's start-up left out)", () => {
    // Samples at 5.000 s (pass), 5.001, 5.002 and 5.042 (parse), 5.043 (gc), 5.044 (idle).
    const at = { ...PROFILE, startTime: 5_000_000 };
    expect(summarizeProfile(at, 6, [5_001, 5_043]).bySelf.filter((e) => e.selfMs > 0)).to.deep.equal([
      { key: "parse", selfMs: 3, totalMs: 3 },
    ]);
    expect(summarizeProfile(at, 6, [5_000, 5_100]).cpuMs).to.equal(5);
  });
});
