import { expect } from "chai";
import { PassThrough } from "node:stream";
import { setImmediate as nextMacrotask } from "node:timers/promises";
import type { LogFormat } from "./logger.js";
import { createLogger, silentLogger } from "./logger.js";

/** A logger writing into memory, and a way to read the lines written so far. */
function capture(format: LogFormat, level = "info") {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
  const logger = createLogger({ level, format, stream });
  const lines = async (): Promise<string[]> => {
    for (let i = 0; i < 3; i++) await nextMacrotask();
    return chunks
      .join("")
      .split("\n")
      .filter((line) => line !== "");
  };
  return { logger, lines };
}

describe("createLogger", () => {
  it("writes JSON records with timestamp, level, msg and child fields first", async () => {
    const { logger, lines } = capture("json");
    logger.child({ controller: "ippool", namespace: "default", name: "pool-a" }).info("Allocated IPAddress", {
      address: 10n,
    });
    const [line] = await lines();
    const record = JSON.parse(line!) as Record<string, unknown>;
    expect(Object.keys(record).slice(0, 3)).to.deep.equal(["timestamp", "level", "msg"]);
    expect(record).to.include({
      level: "info",
      msg: "Allocated IPAddress",
      controller: "ippool",
      namespace: "default",
      name: "pool-a",
      address: "10",
    });
    expect(record).not.to.have.property("message");
    expect(Number.isNaN(Date.parse(String(record.timestamp)))).to.equal(false);
  });

  it("never throws on errors and cycles in fields", async () => {
    const { logger, lines } = capture("json");
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    logger.error("Reconciler error", { error: new Error("conflict"), cyclic });
    const record = JSON.parse((await lines())[0]!) as Record<string, unknown>;
    expect(record.error).to.equal("conflict");
    expect(record.cyclic).to.deep.equal({ a: 1, self: "[Circular]" });
  });

  it("filters by level", async () => {
    const { logger, lines } = capture("json", "warn");
    logger.info("hidden");
    logger.warn("shown");
    expect((await lines()).map((l) => (JSON.parse(l) as { msg: string }).msg)).to.deep.equal(["shown"]);
  });

  it("does not render records of the levels it filters, in children either", async () => {
    const { logger, lines } = capture("json", "info");
    let rendered = 0;
    const field = { toJSON: () => ++rendered };
    logger.debug("hidden", { field });
    logger.child({ controller: "ippool" }).debug("hidden too", { field });
    logger.child({ controller: "ippool" }).info("shown", { field });
    const written = (await lines()).map((l) => JSON.parse(l) as { msg: string; field: number });
    expect(written.map((r) => r.msg)).to.deep.equal(["shown"]);
    expect(rendered, "records rendered").to.equal(1);
  });

  it("writes text lines with key=value fields", async () => {
    const { logger, lines } = capture("text");
    logger.child({ name: "pool-a" }).info("Released IPAddress", { reason: "claim deleted" });
    expect((await lines())[0]).to.match(/^\S+ INFO Released IPAddress name=pool-a reason="claim deleted"$/);
  });

  it("leaves out fields whose value is undefined, in text as in JSON", async () => {
    for (const format of ["text", "json"] as const) {
      const { logger, lines } = capture(format);
      logger.warn("Left a record", { pool: "p", cluster: undefined });
      const [line = ""] = await lines();
      expect(line, format).to.include("p").and.not.include("cluster");
    }
  });

  it("rejects unknown levels and formats", () => {
    expect(() => createLogger({ level: "loud", format: "json" })).to.throw(RangeError, /loud/);
    expect(() => createLogger({ level: "info", format: "yaml" as LogFormat })).to.throw(RangeError, /yaml/);
  });
});

describe("silentLogger", () => {
  it("accepts every call, children included", () => {
    const logger = silentLogger();
    logger.error("nothing", { error: new Error("x") });
    logger.child({ controller: "c" }).info("nothing");
  });
});
