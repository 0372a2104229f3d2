/**
 * Plain-text rendering of the benchmark's figures. A section is either a list of (metric, value, detail) rows, or a
 * grid with a header line; columns are aligned within a section.
 */

/** One line of a list section. */
export interface Row {
  metric: string;
  value: string;
  detail?: string;
}

/** A titled group of rows, or a grid when `header` is given (then `cells` holds the lines). */
export type Section = { title: string; rows: Row[] } | { title: string; header: string[]; cells: string[][] };

const RULE_WIDTH = 118;

function renderRows(rows: readonly Row[]): string[] {
  const metricWidth = Math.max(6, ...rows.map((r) => r.metric.length));
  const valueWidth = Math.max(5, ...rows.map((r) => r.value.length));
  return rows.map(
    (r) => `  ${r.metric.padEnd(metricWidth)}  ${r.value.padStart(valueWidth)}${r.detail ? `   ${r.detail}` : ""}`,
  );
}

function renderGrid(header: readonly string[], cells: readonly string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((line) => (line[i] ?? "").length)));
  // First column left-aligned (labels), the others right-aligned (numbers).
  const line = (values: readonly string[]): string =>
    "  " + widths.map((w, i) => (i === 0 ? (values[i] ?? "").padEnd(w) : (values[i] ?? "").padStart(w))).join("  ");
  return [line(header), "  " + widths.map((w) => "·".repeat(w)).join("  "), ...cells.map(line)];
}

/** Renders `sections` one after the other, each under its title between rules. */
export function renderTable(sections: readonly Section[]): string {
  const rule = "─".repeat(RULE_WIDTH);
  const lines: string[] = [];
  for (const section of sections) {
    lines.push(rule, section.title, rule);
    lines.push(...("header" in section ? renderGrid(section.header, section.cells) : renderRows(section.rows)));
  }
  lines.push(rule);
  return lines.join("\n");
}
