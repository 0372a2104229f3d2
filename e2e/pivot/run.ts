/**
 * Runs the pivot suites (e2e/pivot/pivot.test.ts, e2e/pivot/incluster.test.ts) against two existing management
 * clusters, e.g. two kind clusters, instead of two local planes:
 *
 *   npx tsx e2e/pivot/run.ts --from <kubeconfig> --to <kubeconfig> [options]
 *
 * Options: --from-context / --to-context (default: each file's current context), --clusterctl <path> (default: the
 * clusterctl that `npm run binaries` builds), --keep (leave the suite's namespaces behind), --external-controller
 * (our controller is deployed in both clusters: do not start one in this process). Exit status: mocha's.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { repoRoot } from "../../hack/testkit/cluster.js";

const USAGE = `usage: npx tsx e2e/pivot/run.ts --from <kubeconfig> --to <kubeconfig>
         [--from-context <name>] [--to-context <name>] [--clusterctl <path>] [--keep] [--external-controller]

Moves three test workload clusters (100 claims) from --from to --to with the real clusterctl, checks every address,
moves them back, then runs the negative cases. The cases of control-plane endpoints from a pool are skipped here: they
need our webhooks served from this process, which only local planes can call. The two clusters must be different, reachable, and must not run Cluster
API's own controllers (fresh kind clusters are right). CRDs are installed when missing and left in place afterwards.`;

interface Options {
  from: string;
  to: string;
  env: Record<string, string>;
}

function parse(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      from: { type: "string" },
      to: { type: "string" },
      "from-context": { type: "string" },
      "to-context": { type: "string" },
      clusterctl: { type: "string" },
      keep: { type: "boolean", default: false },
      "external-controller": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (!values.from || !values.to) throw new Error("both --from and --to are required");
  const from = resolve(values.from);
  const to = resolve(values.to);
  for (const file of [from, to, ...(values.clusterctl ? [resolve(values.clusterctl)] : [])]) {
    if (!existsSync(file)) throw new Error(`${file} does not exist`);
  }
  if (from === to && (values["from-context"] ?? "") === (values["to-context"] ?? ""))
    throw new Error("--from and --to name the same cluster");
  const env: Record<string, string> = { PIVOT_FROM_KUBECONFIG: from, PIVOT_TO_KUBECONFIG: to };
  if (values["from-context"]) env.PIVOT_FROM_CONTEXT = values["from-context"];
  if (values["to-context"]) env.PIVOT_TO_CONTEXT = values["to-context"];
  if (values.clusterctl) env.PIVOT_CLUSTERCTL = resolve(values.clusterctl);
  if (values.keep) env.PIVOT_KEEP = "true";
  if (values["external-controller"]) env.E2E_EXTERNAL_CONTROLLER = "true";
  return { from, to, env };
}

function main(): void {
  let options: Options;
  try {
    options = parse(process.argv.slice(2));
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    process.exit(2);
  }
  console.log(`pivot suite: ${options.from} → ${options.to}`);
  const mocha = join(repoRoot, "node_modules", ".bin", "mocha");
  const suites = ["pivot.test.ts", "incluster.test.ts"].map((f) => join(repoRoot, "e2e", "pivot", f));
  const child = spawn(mocha, suites, {
    cwd: repoRoot,
    env: { ...process.env, ...options.env },
    stdio: "inherit",
  });
  child.on("error", (err) => {
    console.error(`cannot run mocha: ${err.message}`);
    process.exit(2);
  });
  child.on("close", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

main();
