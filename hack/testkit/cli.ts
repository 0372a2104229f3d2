/**
 * `kubectl-ipam` as users run it: the bin launcher in a child process with its output piped. Here rather than in
 * e2e/cli so every suite (the CLI's own, the pivot's) can run it without e2e folders importing each other.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./cluster.js";

const BIN = join(repoRoot, "bin", "kubectl-ipam.mjs");

/** What one run printed and how it ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with `args`; `env` is added to this process's environment. */
export async function runCli(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  return await new Promise<CliRun>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: "", FORCE_COLOR: "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
