/**
 * `kubectl ipam pools --watch`: keeps the inventory current from watches (no polling) and redraws the table when it
 * changes. On a terminal the screen is redrawn in place; piped, each new state is printed after a blank line, and
 * only when the text differs from the last one printed.
 */
import type { CapiIPAddress, IPAddressClaim } from "../../api/capi/types.js";
import type { InClusterIPPool } from "../../api/incluster/types.js";
import type { NetBoxIPPool } from "../../api/netbox/types.js";
import { CAPI_IPADDRESS, CAPI_IPADDRESSCLAIM, isGlobalKind, poolKindOfRef } from "../../api/registry.js";
import type { IPAddress, IPClaim, IPPool } from "../../api/v1alpha1/types.js";
import { ExitCode } from "./errors.js";
import type { Inventory } from "./inventory.js";
import { objectKey, watch, type Change, type Obj, type ResourceKind, type WatchHandle } from "./kube.js";
import { styleFor, type Io } from "./output.js";
import { poolRows, renderPools } from "./pools.js";
import {
  capiKind,
  GLOBAL_NETBOX_POOLS,
  GLOBAL_POOLS,
  INCLUSTER_POOLS,
  NETBOX_POOLS,
  IPADDRESSES,
  IPCLAIMS,
  IPPOOLS,
  ifServed,
  readInventory,
} from "./read.js";

/** Objects of one kind by namespace/name: a first read, then kept current from a watch. */
export class Mirror<T extends Obj> {
  private readonly items = new Map<string, T>();

  constructor(initial: readonly T[]) {
    for (const o of initial) this.items.set(objectKey(o), o);
  }

  apply(change: Change<T>): void {
    if (change.type === "listed") {
      // Deleted between the first read and the watch's list: no event will ever say so.
      for (const key of this.items.keys()) if (!change.keys.has(key)) this.items.delete(key);
    } else if (change.type === "delete") this.items.delete(objectKey(change.object));
    else this.items.set(objectKey(change.object), change.object);
  }

  get values(): T[] {
    return [...this.items.values()];
  }
}

const CLEAR = "\u001b[H\u001b[2J";

const namesGlobalPool = (o: IPAddressClaim | CapiIPAddress): boolean => {
  const kind = poolKindOfRef(o.spec.poolRef);
  return kind !== undefined && isGlobalKind(kind);
};

/** Watches until SIGINT/SIGTERM; resolves to the exit code. */
export async function watchPools(namespace: string | undefined, io: Io, withNamespace: boolean): Promise<number> {
  // Listen for the signal before anything is awaited: a SIGINT that arrives while the watches are still connecting
  // must end the watch cleanly (exit 0), not kill the process with Node's default handler.
  const interrupted = new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  const first = await readInventory(namespace, (message) => io.err(`warning: ${message}\n`));
  const mirrors = {
    pools: new Mirror<IPPool & Obj>(first.pools),
    inClusterPools: new Mirror<InClusterIPPool & Obj>(first.inClusterPools),
    globalPools: new Mirror<InClusterIPPool & Obj>(first.globalPools),
    netBoxPools: new Mirror<NetBoxIPPool & Obj>(first.netBoxPools),
    globalNetBoxPools: new Mirror<NetBoxIPPool & Obj>(first.globalNetBoxPools),
    claims: new Mirror<IPClaim & Obj>(first.claims),
    addresses: new Mirror<IPAddress & Obj>(first.addresses),
    capiClaims: new Mirror<IPAddressClaim & Obj>(first.capiClaims),
    capiAddresses: new Mirror<CapiIPAddress & Obj>(first.capiAddresses),
    globalClaims: new Mirror<IPAddressClaim & Obj>(first.globalRecords.claims),
    globalAddresses: new Mirror<CapiIPAddress & Obj>(first.globalRecords.addresses),
  };
  // Global pools count the records of every namespace: watched across namespaces when the first read found global
  // pools (a pool made later counts the namespace looked at until the next start); with -A the watches below see all.
  const acrossNamespaces = namespace !== undefined && first.globalPools.length + first.globalNetBoxPools.length > 0;
  const style = styleFor(io.isTTY, io.env);
  let last = "";
  let timer: NodeJS.Timeout | undefined;
  const draw = (): void => {
    timer = undefined;
    const inv: Inventory = {
      pools: mirrors.pools.values,
      inClusterPools: mirrors.inClusterPools.values,
      globalPools: mirrors.globalPools.values,
      netBoxPools: mirrors.netBoxPools.values,
      globalNetBoxPools: mirrors.globalNetBoxPools.values,
      claims: mirrors.claims.values,
      addresses: mirrors.addresses.values,
      capiClaims: mirrors.capiClaims.values,
      capiAddresses: mirrors.capiAddresses.values,
      globalRecords: {
        claims: (acrossNamespaces ? mirrors.globalClaims : mirrors.capiClaims).values.filter(namesGlobalPool),
        addresses: (acrossNamespaces ? mirrors.globalAddresses : mirrors.capiAddresses).values.filter(namesGlobalPool),
      },
    };
    const text = renderPools(poolRows(inv), style, withNamespace);
    if (text === last) return;
    io.out(io.isTTY ? `${CLEAR}${text}\n` : `${last ? "\n" : ""}${text}\n`);
    last = text;
  };
  // A burst of events (a claim, its address, the pool status) draws once.
  const changed = (): void => {
    timer ??= setTimeout(draw, 150);
  };
  draw();
  const handles: WatchHandle[] = [];
  /** Watches `kind` into `mirror`, in the namespace looked at, or in all of them when `everywhere`. */
  const start = async <T extends Obj>(
    kind: ResourceKind | undefined,
    mirror: Mirror<T>,
    everywhere = false,
  ): Promise<void> => {
    if (!kind) return;
    handles.push(
      await watch<T>(
        kind,
        everywhere ? undefined : namespace,
        (c) => {
          mirror.apply(c);
          changed();
        },
        (message) => io.err(`warning: ${message}\n`),
      ),
    );
  };
  await start(IPPOOLS, mirrors.pools);
  await start(IPCLAIMS, mirrors.claims);
  await start(IPADDRESSES, mirrors.addresses);
  await start(await capiKind(CAPI_IPADDRESSCLAIM), mirrors.capiClaims);
  await start(await capiKind(CAPI_IPADDRESS), mirrors.capiAddresses);
  // An optional kind whose CRD is missing gets no watch (rather than a stream of its errors).
  await start(await ifServed(INCLUSTER_POOLS), mirrors.inClusterPools);
  await start(await ifServed(GLOBAL_POOLS), mirrors.globalPools, true);
  await start(await ifServed(NETBOX_POOLS), mirrors.netBoxPools);
  await start(await ifServed(GLOBAL_NETBOX_POOLS), mirrors.globalNetBoxPools, true);
  if (acrossNamespaces) {
    await start(await capiKind(CAPI_IPADDRESSCLAIM), mirrors.globalClaims, true);
    await start(await capiKind(CAPI_IPADDRESS), mirrors.globalAddresses, true);
  }
  await interrupted;
  for (const h of handles) h.close();
  if (timer) clearTimeout(timer);
  return ExitCode.ok;
}
