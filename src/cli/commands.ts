/** Runs one invocation: connection flags, the reads, then the pure analysis and rendering of the subcommand. */
import { isGlobalKind, type PoolKindName } from "../../api/registry.js";
import { parseInvocation, USAGE, type Invocation } from "./args.js";
import { CliError, ExitCode, explainReadError } from "./errors.js";
import { freeDocument, freeReport, renderFree } from "./free.js";
import { allPools, distinct, type Inventory } from "./inventory.js";
import { connect } from "./kubeconfig.js";
import { crdMissing, useServer, type Obj } from "./kube.js";
import { machine, styleFor, type Format, type Io } from "./output.js";
import { idOf, parsePoolArgument } from "./poolkind.js";
import { poolRows, poolsDocument, renderPools } from "./pools.js";
import { preflight, preflightDocument, preflightFails, renderPreflight } from "./preflight.js";
import { ifServed, OPTIONAL_POOL_RESOURCES, ownerChain, readInventory, readMoveGraph, type Warn } from "./read.js";
import { readGlobalPoolUse, readTargetGlobalPools } from "./read-global.js";
import { readNetBoxPoolUse, readTargetNetBoxPools } from "./read-netbox.js";
import { release, reserve } from "./commands-reserve.js";
import { watchPools } from "./watch.js";
import {
  isAddressQuery,
  poolsWithFree,
  renderWho,
  targetsForAddress,
  targetsForClaim,
  whoDocument,
  type Target,
  type WhoEntry,
  type WhoReport,
} from "./who.js";

function emit(io: Io, format: Format, doc: () => object, text: () => string): void {
  io.out(format === "text" ? `${text()}\n` : machine(format, doc()));
}

/** What the reads left out, as warning lines on stderr (the output itself stays parseable). */
const warnTo =
  (io: Io): Warn =>
  (message) =>
    io.err(`warning: ${message}\n`);

async function pools(inv: Invocation, namespace: string | undefined, io: Io): Promise<number> {
  if (inv.watch) return await watchPools(namespace, io, inv.allNamespaces);
  const rows = poolRows(await readInventory(namespace, warnTo(io)));
  emit(
    io,
    inv.output,
    () => poolsDocument(rows),
    () => renderPools(rows, styleFor(io.isTTY, io.env), inv.allNamespaces),
  );
  return ExitCode.ok;
}

async function free(inv: Invocation, namespace: string, io: Io): Promise<number> {
  const arg = inv.args[0] ?? "";
  const wanted = parsePoolArgument(arg);
  // parseInvocation refused other arguments already.
  if (!wanted) throw new CliError(`unknown pool kind in "${arg}"`, ExitCode.usage);
  const inventory = await readInventory(namespace, warnTo(io));
  const pool = allPools(inventory).find((p) => {
    const id = idOf(p);
    return id.kind === wanted.kind && id.name === wanted.name && (isGlobalKind(id.kind) || id.namespace === namespace);
  });
  if (!pool) {
    // An optional kind's pool asked for on a cluster without its CRD: say that, not "not found".
    const k = OPTIONAL_POOL_RESOURCES.get(wanted.kind);
    if (k && !(await ifServed(k))) throw new CliError(crdMissing(k));
    throw unknownPool(wanted.kind, wanted.name, namespace, inventory);
  }
  const report = freeReport(pool, inventory);
  emit(
    io,
    inv.output,
    () => freeDocument(report),
    () => renderFree(report),
  );
  return ExitCode.ok;
}

/** Not found: names the kind, where it was looked for, and the pools of that kind there (kubectl's spelling). */
function unknownPool(kind: PoolKindName, name: string, namespace: string, inventory: Inventory): CliError {
  const ids = allPools(inventory)
    .map(idOf)
    .filter((id) => id.kind === kind && (isGlobalKind(kind) || id.namespace === namespace));
  const known = ids.map((id) => id.name).join(", ");
  if (isGlobalKind(kind))
    return new CliError(`${kind} "${name}" not found${known ? ` (there are: ${known})` : " (there are none)"}`);
  return new CliError(
    `${kind} "${name}" not found in namespace "${namespace}"${known ? ` (pools there: ${known})` : " (it has no pools)"}`,
  );
}

function claimObject(t: Target, inventory: Inventory): Obj | undefined {
  const all: Obj[] =
    t.claimKind === "IPClaim" ? inventory.claims : distinct(inventory.capiClaims, inventory.globalRecords.claims);
  return all.find((c) => c.metadata.namespace === t.namespace && c.metadata.name === t.claimName);
}

async function who(inv: Invocation, namespace: string | undefined, io: Io): Promise<number> {
  const query = inv.args[0] ?? "";
  const inventory = await readInventory(namespace, warnTo(io));
  const byAddress = isAddressQuery(query);
  const targets = byAddress ? targetsForAddress(query, inventory) : targetsForClaim(query, inventory);
  const freeIn = byAddress && targets.length === 0 ? poolsWithFree(query, inventory) : [];
  const scope = namespace ? `namespace "${namespace}"` : "any namespace";
  if (targets.length === 0 && freeIn.length === 0) {
    throw new CliError(
      byAddress
        ? `no pool in ${scope} holds or contains address ${query}`
        : `no IPClaim or IPAddressClaim named "${query}" in ${scope}`,
    );
  }
  const entries: WhoEntry[] = [];
  for (const t of targets) {
    const claim = claimObject(t, inventory);
    entries.push({ ...t, owners: claim ? await ownerChain(claim, t.namespace) : [] });
  }
  const report: WhoReport = { query, by: byAddress ? "address" : "claim", entries, freeIn };
  emit(
    io,
    inv.output,
    () => whoDocument(report),
    () => renderWho(report),
  );
  return ExitCode.ok;
}

/**
 * What `read` finds on the target, read through a second connection (clusterctl's --to-kubeconfig and
 * --to-kubeconfig-context); the source connection is restored afterwards. Undefined when no target was given.
 */
async function onTarget<T>(
  inv: Invocation,
  io: Io,
  source: { server: string },
  read: () => Promise<T>,
): Promise<T | undefined> {
  if (!(inv.toKubeconfig || inv.toContext)) return undefined;
  const sourceKubeconfig = io.env.KUBECONFIG;
  try {
    const flags = {
      ...(inv.toKubeconfig ? { kubeconfig: inv.toKubeconfig } : {}),
      ...(inv.toContext ? { context: inv.toContext } : {}),
    };
    useServer((await connect(flags, io.env)).server);
    return await read();
  } finally {
    if (sourceKubeconfig === undefined) delete io.env.KUBECONFIG;
    else io.env.KUBECONFIG = sourceKubeconfig;
    useServer(source.server);
  }
}

async function preflightMove(inv: Invocation, namespace: string, io: Io, source: { server: string }): Promise<number> {
  const inventory = await readInventory(namespace);
  const graph = await readMoveGraph(namespace);
  const globalPools = await readGlobalPoolUse(namespace, inventory);
  const names = globalPools.map((u) => u.name);
  const netBoxPools = await readNetBoxPoolUse(namespace, inventory);
  const netBoxGlobals = netBoxPools.filter((u) => isGlobalKind(u.kind)).map((u) => u.name);
  const target = names.length > 0 ? await onTarget(inv, io, source, () => readTargetGlobalPools(names)) : undefined;
  const targetNetBox =
    netBoxGlobals.length > 0 ? await onTarget(inv, io, source, () => readTargetNetBoxPools(netBoxGlobals)) : undefined;
  const report = preflight({
    namespace,
    inv: inventory,
    ...graph,
    globalPools,
    ...(target ? { targetGlobalPools: target } : {}),
    netBoxPools,
    ...(targetNetBox ? { targetNetBoxPools: targetNetBox } : {}),
  });
  emit(
    io,
    inv.output,
    () => preflightDocument(report),
    () => renderPreflight(report),
  );
  return preflightFails(report) ? ExitCode.findings : ExitCode.ok;
}

async function dispatch(inv: Invocation, io: Io): Promise<number> {
  const connection = await connect(
    { ...(inv.kubeconfig ? { kubeconfig: inv.kubeconfig } : {}), ...(inv.context ? { context: inv.context } : {}) },
    io.env,
  );
  useServer(connection.server);
  const namespace = inv.namespace ?? connection.defaultNamespace;
  try {
    switch (inv.command) {
      case "pools":
        return await pools(inv, inv.allNamespaces ? undefined : namespace, io);
      case "who":
        return await who(inv, inv.allNamespaces ? undefined : namespace, io);
      case "free":
        return await free(inv, namespace, io);
      case "preflight-move":
        return await preflightMove(inv, namespace, io, connection);
      case "reserve":
        return await reserve(inv, namespace, io);
      case "release":
        return await release(inv, namespace, io);
      default:
        return ExitCode.ok;
    }
  } catch (err) {
    // Anything a read did not classify still deserves one line naming the server.
    throw explainReadError(err, { verb: "get", resource: "the API" }, connection.server);
  }
}

/** Runs `kubectl ipam` with `argv`; resolves to the exit code. Never throws. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  try {
    const inv = parseInvocation(argv);
    if (inv.command === "help") {
      io.out(`${USAGE}\n`);
      return ExitCode.ok;
    }
    return await dispatch(inv, io);
  } catch (err) {
    const e = err instanceof CliError ? err : new CliError(err instanceof Error ? err.message : String(err));
    io.err(`error: ${e.message}\n`);
    return e.exitCode;
  }
}
