/**
 * Helpers for reliability suites: a controller in this process whose log can be inspected, a TCP proxy that can freeze
 * connections (a watch that hangs without an error), claim creation that rides out API server restarts, and an audit
 * of the allocations a namespace ends up with. The controller as a child process that can be SIGKILLed is
 * controller.ts.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { Writable } from "node:stream";
import { KubeConfig } from "@kubernetes/client-node";
import type { Kube } from "../../src/kube/access.js";
import { Manager, type ManagerOptions } from "../../src/controllers/manager.js";
import type { Store } from "../../src/controllers/store.js";
import { describeError, isAlreadyExists } from "../../src/kube/errors.js";
import { createLogger, type Logger } from "../../src/runtime/logger.js";
import type { CapiIPAddress, IPAddressClaim, PoolRef } from "../../api/capi/types.js";
import type { IPAddress, IPClaim, ObjectMeta } from "../../api/v1alpha1/types.js";
import { claim, type CapiClients, type Clients } from "./ipam.js";
import { sleep } from "./wait.js";

/** A JSON logger whose records are kept for assertions (and echoed to stderr when E2E_LOG is set). */
export class LogCapture {
  readonly records: Record<string, unknown>[] = [];
  readonly logger: Logger;

  constructor(level = "debug") {
    const echo = Boolean(process.env.E2E_LOG);
    const sink = new Writable({
      write: (chunk: Buffer | string, _encoding, done) => {
        for (const line of String(chunk).split("\n")) {
          if (!line.trim()) continue;
          if (echo) process.stderr.write(`${line}\n`);
          try {
            this.records.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            // not a record
          }
        }
        done();
      },
    });
    this.logger = createLogger({ level, format: "json", stream: sink });
  }

  /** Records whose `msg` is `msg` and whose fields include `fields`. */
  matching(msg: string, fields: Record<string, unknown> = {}): Record<string, unknown>[] {
    return this.records.filter((r) => r.msg === msg && Object.entries(fields).every(([k, v]) => r[k] === v));
  }
}

/**
 * A controller in this process with a capturing logger; `options` override the Manager's. It serves the in-cluster
 * pools unless told not to, as config/manager's Deployment does.
 */
export async function startObservedController(
  kc: Kube,
  namespace: string,
  options: Partial<Omit<ManagerOptions, "logger">> = {},
): Promise<{ manager: Manager; logs: LogCapture; stop: () => Promise<void> }> {
  const logs = new LogCapture();
  const manager = new Manager(kc, {
    namespace,
    poolConcurrency: 4,
    logger: logs.logger,
    serveInClusterPools: true,
    ...options,
  });
  await manager.start();
  return { manager, logs, stop: () => manager.stop() };
}

/**
 * Delays every event of one of a controller's watches by `ms`, keeping their order: a busy API server or a slow link,
 * where the event of a claim arrives before the event of a record made just before it (the freshness barrier's case,
 * spec §3.4). `pick` chooses the informer among the store's; this reaches into a controller in this process.
 */
export function lagWatch(manager: Manager, pick: (store: Store) => object | undefined, ms: number): void {
  const store = (manager as unknown as { store?: Store }).store;
  const informer = store && (pick(store) as { onEvent: (watch: unknown, event: unknown) => void } | undefined);
  if (!informer) throw new Error("the controller has no such informer (not started, or its kind not served)");
  const deliver = informer.onEvent.bind(informer);
  informer.onEvent = (watch, event) => void setTimeout(() => deliver(watch, event), ms);
}

/**
 * A TCP proxy in front of the API server. `freeze()` turns every connection open at that moment into a silent one:
 * nothing is forwarded either way and neither side learns of a close, as with a NAT entry that died or a peer that
 * vanished without a reset. Connections made afterwards are forwarded normally. With `requestDelayMs`, every byte
 * towards the API server is held that long (in order), as on a slow link: each request reaches the server that much
 * later, and bytes still held when the client's connection closes (a killed process) never reach it.
 */
export class FaultProxy {
  private readonly sockets = new Set<Socket>();
  private readonly frozen = new WeakSet<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly requestDelayMs: number,
  ) {}

  /** Listens on a free loopback port and forwards to `target` (host:port of the API server). */
  static async start(
    targetHost: string,
    targetPort: number,
    options: { requestDelayMs?: number } = {},
  ): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("proxy has no TCP address");
    const proxy = new FaultProxy(server, address.port, options.requestDelayMs ?? 0);
    server.on("connection", (client: Socket) => proxy.accept(client, targetHost, targetPort));
    return proxy;
  }

  /** A copy of `kc` whose current cluster is reached through this proxy (TLS passes through untouched). */
  kubeConfigFor(kc: KubeConfig): KubeConfig {
    const current = kc.getCurrentCluster();
    if (!current) throw new Error("kubeconfig has no current cluster");
    const copy = new KubeConfig();
    copy.loadFromOptions({
      clusters: kc.clusters.map((c) =>
        c.name === current.name ? { ...c, server: `https://127.0.0.1:${this.port}` } : c,
      ),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
    return copy;
  }

  /** Freezes every open connection; returns how many. */
  freeze(): number {
    for (const s of this.sockets) this.frozen.add(s);
    return this.sockets.size / 2;
  }

  /** Destroys every connection and stops listening. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    const upstream = createConnection({ host, port });
    this.sockets.add(client);
    this.sockets.add(upstream);
    const link = (from: Socket, to: Socket, delayMs: number): void => {
      // Timers of one duration fire in the order they were set, so held bytes keep their order.
      const later = (forward: () => void): void => {
        if (delayMs > 0)
          setTimeout(() => {
            if (!to.destroyed) forward();
          }, delayMs);
        else forward();
      };
      from.on("data", (chunk: Buffer) => {
        if (!this.frozen.has(from)) later(() => to.write(chunk));
      });
      from.on("end", () => {
        if (!this.frozen.has(from)) later(() => to.end());
      });
      from.on("close", () => {
        this.sockets.delete(from);
        if (!this.frozen.has(from)) to.destroy();
      });
      from.on("error", () => undefined);
    };
    link(client, upstream, this.requestDelayMs);
    link(upstream, client, 0);
  }
}

/** Options of {@link createClaimsRetrying}. */
export interface CreateClaimsOptions {
  /** Creates in flight at once. Default 25. */
  concurrency?: number;
  /** Give up on a claim that cannot be created for this long. Default 180 s. */
  deadlineMs?: number;
  /** Counts the claims created so far, for callers that act at some point of the burst. */
  progress?: { created: number };
}

/**
 * Creates the claims `names` in `namespace` for `poolName`, riding out an API server that restarts meanwhile: failed
 * creates are retried; AlreadyExists after a retry means an earlier attempt got through.
 */
export async function createClaimsRetrying(
  c: Clients,
  namespace: string,
  poolName: string,
  names: readonly string[],
  options: CreateClaimsOptions = {},
): Promise<void> {
  const create = (name: string): Promise<unknown> => c.claims.create(namespace, claim(namespace, name, poolName));
  await createAllRetrying(names, create, (name) => `claim ${name}`, options);
}

/**
 * Creates one object per item of `items` with `create`, as {@link createClaimsRetrying} does (any kind of claim, in any
 * namespace): failed creates are retried until the deadline; AlreadyExists after a retry means an earlier attempt got
 * through. `describe` names an item in the error of one that could not be created.
 */
export async function createAllRetrying<T>(
  items: readonly T[],
  create: (item: T) => Promise<unknown>,
  describe: (item: T) => string,
  options: CreateClaimsOptions = {},
): Promise<void> {
  const deadline = Date.now() + (options.deadlineMs ?? 180_000);
  const progress = options.progress ?? { created: 0 };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      for (;;) {
        try {
          await create(item);
          progress.created++;
          break;
        } catch (err) {
          if (isAlreadyExists(err)) {
            progress.created++;
            break;
          }
          if (Date.now() > deadline) throw new Error(`could not create ${describe(item)}: ${describeError(err)}`);
          await sleep(250);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 25 }, worker));
}

/** What a namespace's claims and IPAddresses add up to; every list should be empty in a healthy end state. */
export interface AllocationAudit {
  /** Claims not being deleted. */
  claims: number;
  /** IPAddresses, all. */
  addresses: number;
  /** Live claims whose status names an IPAddress that names them back. */
  bound: number;
  /** Live claims without such a binding. */
  unbound: string[];
  /** `pool/address` held by more than one IPAddress (IPAddressClaims: with the holders, `<namespace>/<name>`). */
  duplicateAddresses: string[];
  /** Claims named by more than one IPAddress. */
  claimsWithSeveral: string[];
  /** IPAddresses made for a claim (IPClaim owner) that is gone or is another incarnation: leaks. */
  orphans: string[];
  /** IPAddresses no live claim's status names (orphans included; person-made reservations would count too). */
  strayAddresses: string[];
  /** Claims still being deleted. */
  deleting: string[];
}

/** Reads every claim and IPAddress of `namespace` and checks the invariants of spec §3.4 and §3.5. */
export async function auditAllocations(c: Clients, namespace: string): Promise<AllocationAudit> {
  const [claims, addresses] = await Promise.all([c.claims.list(namespace), c.addresses.list(namespace)]);
  const { named, ...byClaims } = auditClaims(
    claims.items,
    new Map(addresses.items.map((a) => [a.metadata.name ?? "", a])),
  );
  return { ...byClaims, ...auditAddresses(addresses.items, claims.items, named) };
}

/** The claims' side: which are bound (their status names an IPAddress that names them back), which not. */
function auditClaims(
  claims: readonly IPClaim[],
  addressByName: ReadonlyMap<string, IPAddress>,
): Pick<AllocationAudit, "claims" | "bound" | "unbound" | "deleting"> & { named: Set<string> } {
  const unbound: string[] = [];
  const deleting: string[] = [];
  const named = new Set<string>();
  for (const cl of claims) {
    const name = cl.metadata.name ?? "";
    const ref = cl.status?.address?.name ?? "";
    if (cl.metadata.deletionTimestamp) deleting.push(name);
    else if (addressByName.get(ref)?.spec.claim?.name === name) named.add(ref);
    else unbound.push(name);
  }
  return { claims: claims.length - deleting.length, bound: named.size, unbound, deleting, named };
}

/** The addresses' side: addresses held twice, claims named twice, orphans and strays. */
function auditAddresses(
  addresses: readonly IPAddress[],
  claims: readonly IPClaim[],
  named: ReadonlySet<string>,
): Pick<AllocationAudit, "addresses" | "duplicateAddresses" | "claimsWithSeveral" | "orphans" | "strayAddresses"> {
  const claimByName = new Map(claims.map((cl) => [cl.metadata.name ?? "", cl]));
  const holders = new Map<string, number>();
  const namedBy = new Map<string, number>();
  const orphans: string[] = [];
  for (const a of addresses) {
    const slot = `${a.spec.pool.name}/${a.spec.address}`;
    holders.set(slot, (holders.get(slot) ?? 0) + 1);
    const claimName = a.spec.claim?.name;
    if (!claimName) continue;
    namedBy.set(claimName, (namedBy.get(claimName) ?? 0) + 1);
    const owner = (a.metadata.ownerReferences ?? []).find((o) => o.kind === "IPClaim");
    const live = claimByName.get(claimName);
    if (owner && (!live || live.metadata.uid !== owner.uid)) orphans.push(a.metadata.name ?? "");
  }
  const several = (counts: Map<string, number>): string[] => [...counts].filter(([, n]) => n > 1).map(([key]) => key);
  return {
    addresses: addresses.length,
    duplicateAddresses: several(holders),
    claimsWithSeveral: several(namedBy),
    orphans,
    strayAddresses: addresses.map((a) => a.metadata.name ?? "").filter((name) => !named.has(name)),
  };
}

/** {@link AllocationAudit} of IPAddressClaims, plus the finalizers the pool's kind puts on claims and records. */
export interface ClaimAllocationAudit extends AllocationAudit {
  /** Records without the kind's record finalizer and bound claims without its claim finalizer (`<Kind> ns/name`). */
  unfinalized: string[];
}

/**
 * The audit of {@link auditAllocations} for the Cluster API IPAddressClaims of the pool `poolRef` names, whose claims
 * and IPAddresses live in `namespaces` (a cluster-scoped pool serves several): claims and records are keyed
 * `<namespace>/<name>`, so same-named claims of two namespaces are two claims, and addresses are compared across
 * every namespace. A claim is bound when it says Ready and its `status.addressRef` names an IPAddress of its namespace
 * whose `claimRef` names it back.
 */
export async function auditClaimAllocations(
  capi: CapiClients,
  namespaces: readonly string[],
  poolRef: PoolRef,
  finalizers: { claim: string; record: string },
): Promise<ClaimAllocationAudit> {
  const lists = await Promise.all(
    namespaces.map(async (ns) => {
      const [claims, records] = await Promise.all([capi.claims.list(ns), capi.addresses.list(ns)]);
      return { claims: claims.items, records: records.items };
    }),
  );
  const ofPool = (ref: PoolRef | undefined): boolean =>
    ref?.name === poolRef.name && ref.kind === poolRef.kind && (ref.apiGroup ?? "") === (poolRef.apiGroup ?? "");
  const claims = lists.flatMap((l) => l.claims).filter((cl) => ofPool(cl.spec?.poolRef));
  const records = lists.flatMap((l) => l.records).filter((r) => ofPool(r.spec?.poolRef));
  const { named, unfinalized, ...byClaims } = auditAddressClaims(claims, records, finalizers.claim);
  const byRecords = auditCapiAddresses(records, claims, finalizers.record);
  return {
    ...byClaims,
    ...byRecords,
    duplicateAddresses: byRecords.duplicateAddresses.map(
      (address) =>
        `${poolRef.name}/${address} (${records
          .filter((r) => r.spec.address === address)
          .map((r) => keyIn(r.metadata))
          .join(", ")})`,
    ),
    strayAddresses: records.map((r) => keyIn(r.metadata)).filter((key) => !named.has(key)),
    unfinalized: [...unfinalized, ...byRecords.unfinalized],
  };
}

/** The claims' side: which are bound (Ready, and named back by the IPAddress their status names), which not. */
function auditAddressClaims(
  claims: readonly IPAddressClaim[],
  records: readonly CapiIPAddress[],
  finalizer: string,
): Pick<AllocationAudit, "claims" | "bound" | "unbound" | "deleting"> & { named: Set<string>; unfinalized: string[] } {
  const recordByKey = new Map(records.map((r) => [keyIn(r.metadata), r]));
  const unbound: string[] = [];
  const deleting: string[] = [];
  const unfinalized: string[] = [];
  const named = new Set<string>();
  for (const cl of claims) {
    const key = keyIn(cl.metadata);
    const ref = cl.status?.addressRef?.name;
    const record = ref ? recordByKey.get(keyIn(cl.metadata, ref)) : undefined;
    const ready = (cl.status?.conditions ?? []).find((c) => c.type === "Ready")?.status === "True";
    if (cl.metadata.deletionTimestamp) deleting.push(key);
    else if (!record || record.spec.claimRef?.name !== cl.metadata.name || !ready) unbound.push(key);
    else {
      named.add(keyIn(record.metadata));
      if (!(cl.metadata.finalizers ?? []).includes(finalizer)) unfinalized.push(`IPAddressClaim ${key}`);
    }
  }
  return { claims: claims.length - deleting.length, bound: named.size, unbound, deleting, named, unfinalized };
}

/** The records' side: addresses held twice (across namespaces), claims named twice, orphans, missing finalizers. */
function auditCapiAddresses(
  records: readonly CapiIPAddress[],
  claims: readonly IPAddressClaim[],
  finalizer: string,
): Pick<AllocationAudit, "addresses" | "duplicateAddresses" | "claimsWithSeveral" | "orphans"> & {
  unfinalized: string[];
} {
  const claimByKey = new Map(claims.map((cl) => [keyIn(cl.metadata), cl]));
  const holders = new Map<string, number>();
  const namedBy = new Map<string, number>();
  const orphans: string[] = [];
  const unfinalized: string[] = [];
  for (const r of records) {
    const key = keyIn(r.metadata);
    holders.set(r.spec.address, (holders.get(r.spec.address) ?? 0) + 1);
    if (!(r.metadata.finalizers ?? []).includes(finalizer)) unfinalized.push(`IPAddress ${key}`);
    const claimKey = keyIn(r.metadata, r.spec.claimRef?.name);
    namedBy.set(claimKey, (namedBy.get(claimKey) ?? 0) + 1);
    const owner = (r.metadata.ownerReferences ?? []).find((o) => o.kind === "IPAddressClaim");
    const live = claimByKey.get(claimKey);
    if (owner && (!live || live.metadata.uid !== owner.uid)) orphans.push(key);
  }
  const several = (counts: Map<string, number>): string[] => [...counts].filter(([, n]) => n > 1).map(([key]) => key);
  return {
    addresses: records.length,
    duplicateAddresses: several(holders),
    claimsWithSeveral: several(namedBy),
    orphans,
    unfinalized,
  };
}

/** `<namespace>/<name>` of an object, or of another name in its namespace. */
function keyIn(meta: ObjectMeta, name = meta.name): string {
  return `${meta.namespace ?? ""}/${name ?? ""}`;
}
