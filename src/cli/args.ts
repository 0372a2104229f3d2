/** Command-line parsing with node's util.parseArgs, kubectl's flag names. */
import { parseArgs } from "node:util";
import { CliError, ExitCode } from "./errors.js";
import type { Format } from "./output.js";
import { parsePoolArgument } from "./poolkind.js";

/** The subcommands. */
export const COMMANDS = ["pools", "who", "free", "preflight-move", "reserve", "release"] as const;
export type Command = (typeof COMMANDS)[number];

/** Parsed invocation. */
export interface Invocation {
  command: Command | "help";
  args: string[];
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  /** preflight-move: the target management cluster, to check the global pools (in-cluster and NetBox) it has. */
  toKubeconfig?: string;
  toContext?: string;
  /** reserve: the pool (POOL as `free` takes it), the owner (`KIND/NAME`), the address asked for. */
  pool?: string;
  owner?: string;
  address?: string;
  allNamespaces: boolean;
  output: Format;
  watch: boolean;
}

export const USAGE = `kubectl ipam: views of Metal3 IP pools (ipam.metal3.io), the in-cluster provider's
InClusterIPPools and GlobalInClusterIPPools (ipam.cluster.x-k8s.io), NetBoxIPPools and GlobalNetBoxIPPools
(netbox.ipam.cluster.x-k8s.io), and Cluster API IP claims

Usage:
  kubectl ipam pools [-A] [--watch]        fill of each pool (every kind), pending and failed claims
  kubectl ipam who ADDRESS|CLAIM           who holds an address, or what a claim holds, with its owners
  kubectl ipam free POOL                   free ranges and the address the next claim would get
  kubectl ipam preflight-move [-n NS]      what clusterctl move would leave behind (exit 1 if anything)
      [--to-kubeconfig FILE] [--to-kubeconfig-context NAME]   the target, to check its global pools
  kubectl ipam reserve NAME --pool POOL    hold an address outside machines (a VIP, a DNS server): creates
      [--owner KIND/NAME] [--address A]    IPAddressClaim NAME, waits until it is bound, prints the address
  kubectl ipam release NAME                deletes a reservation reserve made (IPAddressClaim NAME)

POOL is NAME for a Metal3 IPPool, inclusterippool/NAME for an InClusterIPPool, globalinclusterippool/NAME for a
GlobalInClusterIPPool (cluster-scoped: -n does not apply), netboxippool/NAME or globalnetboxippool/NAME for a NetBox
pool. pools shows global pools in every namespace. A reservation with --owner is released when its owner (an object
of the namespace, or a cluster-scoped one) is deleted; without, it is held until released. --address is honoured
by IPPool pools only. reserve and release are the only subcommands that write. NetBox pools' counts are NetBox's, as the controller wrote them to
the pool's status: kubectl ipam reads only the Kubernetes API, never NetBox, and never sees the NetBox token.

Flags:
  -n, --namespace NS       namespace (default: the context's, else "default")
  -A, --all-namespaces     pools and who: look in every namespace
  -o, --output FORMAT      text (default), json or yaml
  -w, --watch              pools: redraw as allocations happen
      --kubeconfig FILE    kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME       kubeconfig context to use
  -h, --help               this help

Exit codes: 0 ok; 1 preflight-move found something; 2 usage error; 3 cluster error (unreachable, forbidden,
CRDs missing, unknown pool or address).`;

function usage(message: string): CliError {
  return new CliError(`${message}\n\nRun "kubectl ipam --help" for usage.`, ExitCode.usage);
}

const ARITY: Record<Command, number> = { pools: 0, who: 1, free: 1, "preflight-move": 0, reserve: 1, release: 1 };

/** The flags only `reserve` takes, and the one it needs. */
function checkReserveFlags(inv: Invocation): void {
  if ((inv.pool || inv.owner || inv.address) && inv.command !== "reserve")
    throw usage("--pool, --owner and --address only apply to reserve");
  if (inv.command === "reserve" && !inv.pool) throw usage("reserve needs --pool POOL");
  if (inv.pool !== undefined && !parsePoolArgument(inv.pool)) throw usage(`unknown pool kind in --pool "${inv.pool}"`);
}

function checkCombination(inv: Invocation): void {
  if (inv.command === "help") return;
  const arity = ARITY[inv.command];
  if (inv.args.length !== arity) {
    throw usage(arity === 0 ? `${inv.command} takes no arguments` : `${inv.command} needs exactly one argument`);
  }
  if (inv.command === "free" && !parsePoolArgument(inv.args[0] ?? ""))
    throw usage(
      `unknown pool kind in "${inv.args[0] ?? ""}": use NAME (an IPPool), inclusterippool/NAME, globalinclusterippool/NAME, netboxippool/NAME or globalnetboxippool/NAME`,
    );
  if (inv.watch && inv.command !== "pools") throw usage("--watch only applies to pools");
  checkReserveFlags(inv);
  if (inv.watch && inv.output !== "text") throw usage("--watch draws text; it cannot be combined with -o");
  if (inv.allNamespaces && ["free", "preflight-move", "reserve", "release"].includes(inv.command)) {
    throw usage(`${inv.command} works on one namespace: use -n instead of -A`);
  }
  if (inv.allNamespaces && inv.namespace) throw usage("-A and -n exclude each other");
  if ((inv.toKubeconfig || inv.toContext) && inv.command !== "preflight-move")
    throw usage("--to-kubeconfig and --to-kubeconfig-context only apply to preflight-move");
}

function reserveFlags(values: { pool?: string; owner?: string; address?: string }): Partial<Invocation> {
  const { pool, owner, address } = values;
  return { ...(pool ? { pool } : {}), ...(owner ? { owner } : {}), ...(address ? { address } : {}) };
}

/** Parses argv (without node and script). @throws CliError (usage) on bad input. */
export function parseInvocation(argv: readonly string[]): Invocation {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        kubeconfig: { type: "string" },
        context: { type: "string" },
        "to-kubeconfig": { type: "string" },
        "to-kubeconfig-context": { type: "string" },
        namespace: { type: "string", short: "n" },
        "all-namespaces": { type: "boolean", short: "A", default: false },
        output: { type: "string", short: "o", default: "text" },
        watch: { type: "boolean", short: "w", default: false },
        pool: { type: "string" },
        owner: { type: "string" },
        address: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (err) {
    throw usage(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  const output = values.output ?? "text";
  if (output !== "text" && output !== "json" && output !== "yaml")
    throw usage(`unknown output format "${output}": use text, json or yaml`);
  const [first, ...rest] = positionals;
  if (values.help || first === undefined || first === "help")
    return { command: "help", args: [], allNamespaces: false, output, watch: false };
  if (!(COMMANDS as readonly string[]).includes(first)) throw usage(`unknown command "${first}"`);
  const inv: Invocation = {
    command: first as Command,
    args: rest,
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
    ...(values.context ? { context: values.context } : {}),
    ...(values.namespace ? { namespace: values.namespace } : {}),
    ...(values["to-kubeconfig"] ? { toKubeconfig: values["to-kubeconfig"] } : {}),
    ...(values["to-kubeconfig-context"] ? { toContext: values["to-kubeconfig-context"] } : {}),
    ...reserveFlags(values),
    allNamespaces: values["all-namespaces"] ?? false,
    output,
    watch: values.watch ?? false,
  };
  checkCombination(inv);
  return inv;
}
