/**
 * The last lines a controller started in this process logged, kept in memory so that a failing test can print what
 * its controller did without every passing test printing it too (E2E_LOG=<level> prints everything as it happens).
 */
import { Writable } from "node:stream";

/** How many lines a ring keeps: enough for the passes of one test's pools, bounded for long suites. */
export const LOG_RING_LINES = 400;

export class LogRing extends Writable {
  private readonly lines: string[] = [];

  constructor(private readonly capacity = LOG_RING_LINES) {
    super({ decodeStrings: false });
  }

  override _write(chunk: unknown, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    const text = typeof chunk === "string" ? chunk : String(chunk);
    for (const line of text.split("\n")) if (line) this.lines.push(line);
    if (this.lines.length > this.capacity) this.lines.splice(0, this.lines.length - this.capacity);
    done();
  }

  /** The kept lines, oldest first. */
  text(): string {
    return this.lines.join("\n");
  }
}
