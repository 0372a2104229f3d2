/** The demo's two tables as text: one row per claim (what it got from which pool), one per pool (its counts). */
import type { DemoResult } from "./run.js";

/** Columns padded to their widest cell, two spaces apart. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** Both tables, separated by a blank line, and a line per sample kind that was skipped. */
export function renderDemo(result: DemoResult): string {
  const claims = table([
    ["NAMESPACE", "CLAIM", "POOL", "ADDRESS", "PREFIX", "GATEWAY", "RESULT"],
    ...result.claims.map((c) => [
      c.namespace,
      `${c.kind}/${c.name}`,
      `${c.poolKind}/${c.pool}`,
      c.address,
      c.prefix,
      c.gateway,
      c.result,
    ]),
  ]);
  const pools = table([
    ["NAMESPACE", "POOL", "TOTAL", "USED", "FREE"],
    ...result.pools.map((p) => [p.namespace, `${p.kind}/${p.name}`, p.total, p.used, p.free]),
  ]);
  const skipped = result.skipped.map(
    (k) => `\n${k} samples skipped: Cluster API's CRDs are not cached (run \`npm run binaries\`).`,
  );
  return `${claims}\n\n${pools}${skipped.join("")}`;
}
