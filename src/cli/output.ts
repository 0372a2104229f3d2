/**
 * Text output for people and machine output for scripts. Text adapts to where it goes: on a terminal, bars and
 * colour; piped, plain columns (no escape codes), so `grep` and golden files see stable text.
 */
import { dump } from "js-yaml";

/** Output format chosen with -o. */
export type Format = "text" | "json" | "yaml";

/** How text may be decorated. */
export interface Style {
  /** Draw bars (a terminal is wide and read by eye). */
  bars: boolean;
  /** Use ANSI colour. */
  color: boolean;
}

/** Plain: what a pipe gets. */
export const PLAIN: Style = { bars: false, color: false };

/**
 * The style for a stream: bars and colour on a TTY; colour off when NO_COLOR is set (no-color.org) or TERM is
 * "dumb"; FORCE_COLOR forces both (useful to record a terminal session).
 */
export function styleFor(isTTY: boolean, env: NodeJS.ProcessEnv = process.env): Style {
  if (env.FORCE_COLOR && env.FORCE_COLOR !== "0") return { bars: true, color: true };
  if (!isTTY) return PLAIN;
  return { bars: true, color: !env.NO_COLOR && env.TERM !== "dumb" };
}

const ANSI = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof ANSI;

/** `text` in `colour` when the style allows it. */
export function paint(style: Style, colour: Colour, text: string): string {
  return style.color ? `\u001b[${ANSI[colour]}m${text}\u001b[0m` : text;
}

// eslint-disable-next-line no-control-regex
const ESCAPES = /\u001b\[[0-9;]*m/g;

/** Printable width of `text` (escape codes take no room). */
export function visibleWidth(text: string): number {
  return [...text.replace(ESCAPES, "")].length;
}

/** Columns padded to the widest cell, two spaces apart, trailing blanks trimmed. `right` lists right-aligned columns. */
export function table(rows: readonly (readonly string[])[], right: readonly number[] = []): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleWidth(cell))));
  const pad = (cell: string, i: number): string => {
    const gap = " ".repeat((widths[i] ?? 0) - visibleWidth(cell));
    return right.includes(i) ? gap + cell : cell + gap;
  };
  return rows.map((row) => row.map(pad).join("  ").trimEnd()).join("\n");
}

/** Fraction `part/whole` as a percentage with one decimal, exact for bigints of any size ("0.0%" for an empty whole). */
export function percent(part: bigint, whole: bigint): string {
  if (whole <= 0n) return "0.0%";
  const tenths = (part * 1000n + whole / 2n) / whole;
  return `${tenths / 10n}.${tenths % 10n}%`;
}

/** A bar of `width` cells for `part/whole`; a non-zero part always shows at least one cell. */
export function bar(part: bigint, whole: bigint, width = 20): string {
  let filled = whole > 0n ? Number((part * BigInt(width)) / whole) : 0;
  if (part > 0n && filled === 0) filled = 1;
  return "█".repeat(filled) + "░".repeat(width - filled);
}

/** Colour for a fill level: green, then yellow from 70 %, red from 90 % (and for a full pool). */
export function levelColour(part: bigint, whole: bigint): Colour {
  if (whole <= 0n || part * 10n >= whole * 9n) return "red";
  return part * 10n >= whole * 7n ? "yellow" : "green";
}

/**
 * A bigint count for JSON: a number while it is exact in JavaScript (up to 2^53-1), else a decimal string, so a /64
 * pool's size is neither rounded nor an overflow.
 */
export function jsonCount(n: bigint): number | string {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

/** A document in the machine format (JSON with two-space indent, or YAML); ends with a newline. */
export function machine(format: Exclude<Format, "text">, doc: unknown): string {
  return format === "json" ? `${JSON.stringify(doc, null, 2)}\n` : dump(doc, { lineWidth: -1, noRefs: true });
}

/** Where output goes. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  isTTY: boolean;
  env: NodeJS.ProcessEnv;
}
