/**
 * Tests that need a tool this project cannot build itself (a Debian package such as shellcheck) skip without it, and
 * say so once at the end of the run, one line per tool, with the command that installs it: mocha's own summary only
 * counts them as pending. The root hook (hooks.ts) prints the lines right above mocha's passing/pending counts.
 */
import { spawnSync } from "node:child_process";

/** A tool some tests need, and the one command that adds it. */
export interface ExternalTool {
  command: string;
  /** What the skipped tests check, e.g. "hack/*.sh and .ci/run pass shellcheck". */
  checks: string;
  install: string;
  /**
   * Why the tool cannot run here, undefined when it can; for tools that are more than one command (a NetBox needs
   * Python 3.12, PostgreSQL and Redis). Without it, the tool is missing when `command --version` fails.
   */
  missing?: () => string | undefined;
}

export const SHELLCHECK: ExternalTool = {
  command: "shellcheck",
  checks: "hack/*.sh and .ci/run pass shellcheck",
  install: "apt-get install shellcheck",
};

// Mocha loads the root hook file and the spec files through different module loaders, so this module is evaluated
// twice in one run: the list lives on globalThis, where both copies find the same one.
type Skipped = Map<string, { tool: ExternalTool; tests: number; why: string }>;
const KEY = Symbol.for("metal3-ipam-ts.skippedTools");
const store = globalThis as typeof globalThis & { [KEY]?: Skipped };
const skipped: Skipped = (store[KEY] ??= new Map() as Skipped);

/** Whether `command --version` runs. */
export function installed(command: string): boolean {
  return spawnSync(command, ["--version"], { stdio: "ignore" }).status === 0;
}

/** Skips the running test (or hook's suite) when `tool` is not installed, and remembers it for the summary. */
export function skipWithout(ctx: Mocha.Context, tool: ExternalTool): void {
  const why = tool.missing ? tool.missing() : installed(tool.command) ? undefined : `${tool.command} is not installed`;
  if (why === undefined) return;
  const seen = skipped.get(tool.command) ?? { tool, tests: 0, why };
  seen.tests += 1;
  skipped.set(tool.command, seen);
  ctx.skip();
}

/** One line per missing tool: what was skipped and the command that adds it. */
export function skippedToolLines(): string[] {
  return [...skipped.values()].map(
    ({ tool, tests, why }) =>
      `skipped ${tests} test${tests === 1 ? "" : "s"} (${tool.checks}): ${why}; add it with: ${tool.install}`,
  );
}
