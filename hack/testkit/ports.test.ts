import { expect } from "chai";
import { claimPort, claimPorts } from "./ports.js";

describe("test kit: loopback ports", () => {
  it("picks ports that are all different, each held while the next is picked", async () => {
    for (let round = 0; round < 20; round++) {
      const ports = await claimPorts([0, 0, 0]);
      expect(new Set(ports).size, ports.join(",")).to.equal(3);
    }
    // Held, not merely probed: asking for one chosen port twice in one call finds it taken the second time.
    const free = await claimPort();
    const twice = await claimPorts([free, free]).then(
      () => "both bound",
      (err: unknown) => String(err),
    );
    expect(twice).to.include(`port 127.0.0.1:${free} is already in use`);
  });
});
