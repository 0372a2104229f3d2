import { expect } from "chai";
import { createLogger } from "../../src/runtime/logger.js";
import { LogRing } from "./logring.js";

describe("test kit: a controller's recent log kept in memory", () => {
  it("keeps the last lines a logger wrote, oldest first, and drops the older ones", async () => {
    const ring = new LogRing(3);
    const logger = createLogger({ level: "info", format: "text", stream: ring });
    for (const n of [1, 2, 3, 4, 5]) logger.info(`line ${n}`);
    logger.debug("below the level");
    await new Promise((resolve) => setImmediate(resolve));
    const lines = ring.text().split("\n");
    expect(lines).to.have.length(3);
    expect(lines.map((l) => l.replace(/^\S+ INFO /, ""))).to.deep.equal(["line 3", "line 4", "line 5"]);
  });
});
