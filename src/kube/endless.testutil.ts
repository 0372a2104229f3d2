/** Test help for the answer bound: a body that never ends, as a hostile or broken server could send. */
import type { Writable } from "node:stream";

/** Writes 16 KiB chunks to `out` as fast as the reader takes them, until `out` is destroyed. */
export function writeEndlessly(out: Writable): void {
  const chunk = Buffer.alloc(16 * 1024, "x");
  const more = (): void => {
    while (!out.destroyed && out.write(chunk));
    if (!out.destroyed) out.once("drain", more);
  };
  more();
}
