/**
 * The install commands README.md gives users, read from its "Installing" section (every `kubectl apply -k DIR` line of
 * its `sh` blocks), so tests run exactly those: e2e/ship.test.ts builds and dry-runs each, the node suite applies
 * them. A README edit that renames a folder or drops a command fails those tests instead of going stale.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "./cluster.js";

export interface InstallCommand {
  /** The line as README shows it, its trailing comment dropped. */
  line: string;
  argv: string[];
  /** The kustomization it applies, relative to the repository. */
  dir: string;
}

const COMMAND = /^kubectl apply -k (\S+)$/;

/** The install commands of `readme`'s "## Installing" section, in order. */
export function installCommands(readme = readFileSync(join(repoRoot, "README.md"), "utf8")): InstallCommand[] {
  const start = readme.indexOf("\n## Installing\n");
  if (start < 0) throw new Error('README.md has no "## Installing" section');
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const commands: InstallCommand[] = [];
  for (const block of section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    for (const raw of (block[1] ?? "").split("\n")) {
      const line = raw.replace(/\s+#.*$/, "").trim();
      const dir = COMMAND.exec(line)?.[1];
      if (dir) commands.push({ line, argv: line.split(/\s+/), dir });
    }
  }
  return commands;
}

/** The command README gives for `dir`; throws when it gives none. */
export function installCommand(dir: string): InstallCommand {
  const found = installCommands().find((c) => c.dir === dir);
  if (!found) throw new Error(`README.md's "Installing" section has no \`kubectl apply -k ${dir}\``);
  return found;
}

/** Runs `command` as written, from the repository's root, against `kubeconfigPath`, plus `extraArgs`; its stdout. */
export async function runInstallCommand(
  command: InstallCommand,
  kubeconfigPath: string,
  extraArgs: string[] = [],
): Promise<string> {
  const [program = "", ...args] = command.argv;
  const { stdout } = await promisify(execFile)(program, [...args, ...extraArgs], {
    cwd: repoRoot,
    env: { ...process.env, KUBECONFIG: kubeconfigPath },
  });
  return stdout;
}
