import { expect } from "chai";
import { setCurrentTest, stopLeftRunning, tracked } from "./leaks.js";

describe("test kit: controllers a test leaves running", () => {
  afterEach(() => setCurrentTest(undefined));

  it("stops only what the ending test started and left running, and counts it", async () => {
    const stopped: string[] = [];
    const stopOf = (name: string) => () => {
      stopped.push(name);
      return Promise.resolve();
    };
    setCurrentTest(undefined);
    const suiteLevel = tracked(stopOf("suite"));
    setCurrentTest("t1");
    const left = tracked(stopOf("left"));
    const stoppedByTest = tracked(stopOf("stopped"));
    await stoppedByTest();
    expect(await stopLeftRunning()).to.equal(1);
    expect(stopped).to.deep.equal(["stopped", "left"]);
    // Stopped once, whoever asks again.
    await left();
    await stoppedByTest();
    setCurrentTest("t2");
    expect(await stopLeftRunning()).to.equal(0);
    await suiteLevel();
    expect(stopped).to.deep.equal(["stopped", "left", "suite"]);
  });

  it("counts a controller whose stop fails, so the test still fails", async () => {
    setCurrentTest("t3");
    tracked(() => Promise.reject(new Error("stuck")));
    expect(await stopLeftRunning()).to.equal(1);
  });
});
