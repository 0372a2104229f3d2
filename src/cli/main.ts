#!/usr/bin/env node
/**
 * `kubectl-ipam`: entry point. kubectl runs any `kubectl-<name>` on the PATH as `kubectl <name>`; npm links this
 * file's compiled form (dist/src/cli/main.js) as the package's `kubectl-ipam` bin.
 */
import { run } from "./commands.js";

const code = await run(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  isTTY: process.stdout.isTTY === true,
  env: process.env,
});
// The fluent client keeps HTTP connections alive for minutes; exit explicitly, once stdout has taken everything.
process.stdout.write("", () => process.exit(code));
