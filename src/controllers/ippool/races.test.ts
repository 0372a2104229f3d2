/**
 * The IPClaim lifecycle's race paths, in memory: the real decisions and writes (IPClaimApi, planClaim,
 * applyClaimAction), the real Store and informers, over an API server kept in maps. The server is what every writer
 * sees; the informers see only what our own writes and reads put in them until the watch catches up (`sync`), so
 * another replica's or a person's write (`put`) stays unseen, as it is between a write and its watch event. Each row
 * runs three full passes over one pool (a lost race makes the reconciler's next pass a full one): one, another on what
 * the first left in the cache, a third after the watch caught up. After each: what the pass asked of the next
 * (`requeue` is LOST_RACE_REQUEUE_MS), each claim's address (its errorMessage, or `-`), each record's address and
 * claim, and the addresses the pass's allocator still held at its end.
 */
import { expect } from "chai";
import type { Kube } from "../../kube/access.js";
import { IPADDRESS, IPCLAIM } from "../../../api/registry.js";
import {
  API_VERSION,
  IPADDRESS_FINALIZER,
  IPCLAIM_FINALIZER,
  IPCLAIM_KIND,
  type IPAddress,
  type IPClaim,
  type IPPool,
  type ObjectMeta,
} from "../../../api/v1alpha1/types.js";
import { ApiError } from "../../kube/errors.js";
import { Informer, keyOf } from "../../kube/informer.js";
import type { KubeObject, ResourceClient, ResourceType } from "../../kube/resource.js";
import { silentLogger } from "../../runtime/logger.js";
import { noMetrics } from "../../runtime/metrics.js";
import { PoolAllocator } from "../../ipam/allocator.js";
import { holdersOf } from "../pools/barrier.js";
import type { PassOutcome } from "../pools/outcome.js";
import type { ApplyContext, Pass } from "../pools/pass.js";
import { LOST_RACE_REQUEUE_MS, requeueOf } from "../pools/reconciler.js";
import { WriteRunner } from "../pools/writes.js";
import { Store } from "../store.js";
import { IPClaimApi } from "./api.js";
import { attachMetal3Caches } from "./caches.js";
import { holderOf } from "./claims.js";
import { ipPoolKey } from "./indexes.js";
import { METAL3_POOL_KIND } from "./kind.js";

/** A write the server answers with `error`, once; `commit`: it is carried out first (an answer lost on the way). */
interface Fault {
  verb: "create" | "patch" | "patchStatus" | "delete";
  error: ApiError;
  commit?: boolean;
}

/** RFC 7386 merge patch: null deletes a field, objects merge, anything else replaces. */
function merge<T extends object>(target: T, patch: object): T {
  const out: Record<string, unknown> = { ...(target as Record<string, unknown>) };
  for (const [k, v] of Object.entries(patch) as [string, unknown][]) {
    if (v === null) delete out[k];
    else if (typeof v === "object" && !Array.isArray(v)) out[k] = merge(out[k] ?? {}, v);
    else out[k] = v;
  }
  return out as T;
}

/** An answer in a later microtask, as from a server (a throw becomes a rejection). */
const later = <R>(answer: () => R): Promise<R> => Promise.resolve().then(answer);

/** One API server's objects of every type, by plural and cache key, with resourceVersions and uids as etcd gives. */
class MemoryApi {
  readonly objects = new Map<string, Map<string, KubeObject>>();
  readonly faults: Fault[] = [];
  private rv = 0;

  of(plural: string): Map<string, KubeObject> {
    const map = this.objects.get(plural) ?? new Map<string, KubeObject>();
    this.objects.set(plural, map);
    return map;
  }

  /** Stores `obj` as a write of someone else would (a new resourceVersion; a uid unless it has one). */
  store(plural: string, obj: KubeObject): KubeObject {
    const meta = { uid: `uid-${obj.metadata.name ?? ""}`, ...obj.metadata, resourceVersion: String(++this.rv) };
    const stored = structuredClone({ ...obj, metadata: meta });
    this.of(plural).set(keyOf(stored), stored);
    return structuredClone(stored);
  }

  client<T extends KubeObject>(type: ResourceType): ResourceClient<T> {
    const objects = this.of(type.plural);
    const existing = (namespace: string, name: string): KubeObject => {
      const obj = objects.get(`${namespace}/${name}`);
      if (!obj) throw new ApiError(`${name} not found`, 404, { reason: "NotFound" });
      return obj;
    };
    const write = (verb: Fault["verb"], apply: () => KubeObject | undefined): Promise<T> =>
      later(() => {
        const index = this.faults.findIndex((f) => f.verb === verb);
        const fault = index >= 0 ? this.faults.splice(index, 1)[0] : undefined;
        if (fault && !fault.commit) throw fault.error;
        const result = apply();
        if (fault) throw fault.error;
        return result as T;
      });
    const client = {
      filtersField: () => Promise.resolve(true),
      get: (namespace: string, name: string) => later(() => structuredClone(existing(namespace, name)) as T),
      create: (_namespace: string, body: T) =>
        write("create", () => {
          if (objects.has(keyOf(body))) throw new ApiError("exists", 409, { reason: "AlreadyExists" });
          return this.store(type.plural, body);
        }),
      patch: (namespace: string, name: string, patch: { metadata: ObjectMeta }) =>
        write("patch", () => {
          const current = existing(namespace, name);
          const precondition = patch.metadata.resourceVersion;
          if (precondition && precondition !== current.metadata.resourceVersion)
            throw new ApiError("changed", 409, { reason: "Conflict" });
          const patched = merge(current, patch);
          if (!patched.metadata.deletionTimestamp || patched.metadata.finalizers?.length)
            return this.store(type.plural, patched);
          objects.delete(keyOf(current));
          return patched;
        }),
      patchStatus: (namespace: string, name: string, patch: object) =>
        write("patchStatus", () => this.store(type.plural, merge(existing(namespace, name), patch))),
      delete: async (namespace: string, name: string, uid?: string) => {
        await write("delete", () => {
          const current = existing(namespace, name);
          if (uid && uid !== current.metadata.uid) throw new ApiError("uid", 409, { reason: "Conflict" });
          if (current.metadata.finalizers?.length)
            return this.store(type.plural, merge(current, { metadata: { deletionTimestamp: "now" } }));
          objects.delete(keyOf(current));
          return undefined;
        });
      },
    };
    return client as unknown as ResourceClient<T>;
  }
}

const KUBE = {} as Kube;
const NS = "ns";
const POOL: IPPool = {
  metadata: { name: "p", namespace: NS, uid: "uid-p" },
  spec: { namePrefix: "p", pools: [{ start: "10.0.0.1", end: "10.0.0.3" }], prefix: 24 },
};
const ADDRESSES = ["10.0.0.1", "10.0.0.2", "10.0.0.3"];
const KEY = ipPoolKey(NS, "p");

const claim = (name: string, meta: Partial<ObjectMeta> = {}): IPClaim => ({
  metadata: { name, namespace: NS, uid: `uid-${name}`, ...meta },
  spec: { pool: { name: "p" } },
});

/** The IPAddress this controller makes for `claimName` at `address`, owned by the claim's incarnation `ownerUid`. */
function record(address: string, claimName: string, ownerUid = `uid-${claimName}`): IPAddress {
  const owner = { apiVersion: API_VERSION, kind: IPCLAIM_KIND, name: claimName, uid: ownerUid };
  const base = byHand(address, claimName);
  const name = `p-${address.replaceAll(".", "-")}`;
  return { ...base, metadata: { ...base.metadata, name, ownerReferences: [owner] } };
}

/** An IPAddress a person wrote (a reservation): no owner; it may name a claim, which need not exist. */
function byHand(address: string, claimName = ""): IPAddress {
  return {
    metadata: {
      name: "kept-by-hand",
      namespace: NS,
      finalizers: [IPADDRESS_FINALIZER],
    },
    spec: { address, prefix: 24, pool: { name: "p", namespace: NS }, claim: { name: claimName, namespace: NS } },
  };
}

const isRecord = (obj: IPClaim | IPAddress): obj is IPAddress => "address" in obj.spec;

class World {
  readonly server = new MemoryApi();
  readonly store: Store;
  readonly caches;
  readonly api: IPClaimApi;
  pool = POOL;
  /** The confirmation of new records (ApplyContext.confirm), when the pass could not show the caches fresh. */
  confirm?: ApplyContext["confirm"];
  /** The last pass's allocator. */
  allocator = new PoolAllocator(POOL.spec);

  constructor() {
    const server = this.server;
    const Memory = class extends Store {
      override informerFor<T extends KubeObject>(type: ResourceType): Informer<T> {
        return new Informer<T>(KUBE, server.client<T>(type), { logger: silentLogger() });
      }
    };
    this.store = new Memory(KUBE, { clusterVersion: "v1beta1", logger: silentLogger() });
    this.caches = attachMetal3Caches(this.store);
    this.api = new IPClaimApi(this.store, this.caches);
  }

  /** Objects on the server and in the caches (the watch delivered them). */
  seed(...objects: (IPClaim | IPAddress)[]): void {
    for (const obj of objects) {
      const stored = this.put(obj);
      if (isRecord(stored)) this.caches.addresses.upsert(stored);
      else this.caches.claims.upsert(stored);
    }
  }

  /** A write by someone else: on the server, not yet in our caches. */
  put<T extends IPClaim | IPAddress>(obj: T): T {
    return this.server.store(isRecord(obj) ? IPADDRESS.plural : IPCLAIM.plural, obj) as T;
  }

  /** The watch catches up: the caches hold what the server holds. */
  sync(): void {
    for (const [plural, informer] of [
      [IPCLAIM.plural, this.caches.claims],
      [IPADDRESS.plural, this.caches.addresses],
    ] as const) {
      const live = this.server.of(plural);
      for (const cached of informer.list()) if (!live.has(keyOf(cached))) informer.remove(cached as never);
      for (const obj of live.values()) informer.upsert(structuredClone(obj) as never);
    }
  }

  /**
   * The barrier's confirmation, as pools/barrier.ts gives it: once the record's own event has come (the watch
   * caught up), it holds its address alone.
   */
  confirmAfterWatch(): void {
    this.confirm = (_kind, created) => {
      this.sync();
      return Promise.resolve(this.holders(created.spec.address).every((r) => r.metadata.uid === created.metadata.uid));
    };
  }

  private holders(address: string): KubeObject[] {
    return holdersOf([this.api], KEY, address);
  }

  /** One full pass, as the reconciler runs it: every record reserved, claims decided in order, writes, orphans. */
  async pass(): Promise<PassOutcome> {
    const allocator = new PoolAllocator(this.pool.spec);
    for (const r of this.api.index.recordsOf(KEY)) allocator.reserve(r.spec.address, holderOf(r));
    this.allocator = allocator;
    const ctx: ApplyContext = {
      store: this.store,
      events: { record: () => undefined },
      log: silentLogger(),
      allocator,
      now: new Date("2026-11-30T00:00:00Z"),
      metrics: noMetrics,
      ...(this.confirm ? { confirm: this.confirm } : {}),
    };
    const pass: Pass = {
      ctx,
      kind: METAL3_POOL_KIND,
      ref: {
        group: METAL3_POOL_KIND.descriptor.group,
        kind: METAL3_POOL_KIND.descriptor.kind,
        namespace: NS,
        name: "p",
      },
      key: KEY,
      pool: this.pool,
      collisions: [],
      onCollision: () => undefined,
      heldByAnother: (r) => this.holders(r.spec.address).some((o) => o.metadata.uid !== r.metadata.uid),
    };
    const writes = new WriteRunner(4);
    const claims = [...this.api.index.claimsOf(KEY)].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    for (const c of claims) writes.add(this.api.work(pass, c).decide().write);
    const outcome = await writes.drain();
    await this.api.cleanupOrphans(pass);
    return outcome;
  }

  /** The server's state in a few words: each claim's address (or error), each record, the allocator's holds. */
  view(): string {
    const records = [...this.server.of(IPADDRESS.plural).values()] as IPAddress[];
    const claims = ([...this.server.of(IPCLAIM.plural).values()] as IPClaim[]).map((c) => {
      const bound = records.find((r) => r.metadata.name === c.status?.address?.name)?.spec.address;
      return `${c.metadata.name ?? ""}=${bound ?? (c.status?.errorMessage ? `"${c.status.errorMessage}"` : "-")}`;
    });
    const held = ADDRESSES.filter((a) => this.allocator.holdersOf(a).length > 0);
    return [
      `claims ${claims.join(" ") || "-"}`,
      `records ${records.map((r) => `${r.spec.address}:${r.spec.claim.name || "(none)"}`).join(" ") || "-"}`,
      `held ${held.join(" ") || "-"}`,
    ].join(" | ");
  }
}

/** A pass's outcome and the world after it. */
async function step(world: World): Promise<string> {
  let outcome: string;
  try {
    const after = requeueOf(await world.pass())?.requeueAfterMs;
    outcome = after === undefined ? "done" : after === LOST_RACE_REQUEUE_MS ? "requeue" : `wake ${after}`;
  } catch (err) {
    outcome = `error ${(err as ApiError).code}`;
  }
  return `${outcome} | ${world.view()}`;
}

/** Pass, pass again on the caches as the first left them, then pass after the watch caught up. */
async function threePasses(arrange: (w: World) => void): Promise<string[]> {
  const world = new World();
  arrange(world);
  const first = await step(world);
  const second = await step(world);
  world.sync();
  return [first, second, await step(world)];
}

/** Claim x bound to `address` by someone else (another replica): on the server, none of it in our caches yet. */
function unseenRecordOfX(w: World, address: string): void {
  const name = `p-${address.replaceAll(".", "-")}`;
  w.put({ ...claim("x", { finalizers: [IPCLAIM_FINALIZER] }), status: { address: { name, namespace: NS } } });
  w.put(record(address, "x"));
}
const fault = (verb: Fault["verb"], code: number, commit = false): Fault => ({
  verb,
  error: new ApiError("refused", code, undefined),
  commit,
});
const requests = (address: string): Partial<ObjectMeta> => ({ annotations: { ipAddress: address } });

describe("the IPClaim lifecycle's races, three passes over an API server in memory", () => {
  const rows: [string, (w: World) => void, string[]][] = [
    [
      "nothing in the way: bound in one pass, nothing asked of the next",
      (w) => w.seed(claim("a")),
      [
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
      ],
    ],
    // Lost races: a write the server refuses because someone else wrote first.
    [
      "another replica made the record of the chosen address, unseen: AlreadyExists, a requeue, the next address",
      (w) => {
        unseenRecordOfX(w, "10.0.0.1");
        w.seed(claim("a"));
      },
      [
        "requeue | claims x=10.0.0.1 a=- | records 10.0.0.1:x | held 10.0.0.1",
        "done | claims x=10.0.0.1 a=10.0.0.2 | records 10.0.0.1:x 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims x=10.0.0.1 a=10.0.0.2 | records 10.0.0.1:x 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
      ],
    ],
    [
      "two claims, one of them losing its race: the other binds in the same pass, the loser gets the third address",
      (w) => {
        unseenRecordOfX(w, "10.0.0.1");
        w.seed(claim("a"), claim("b"));
      },
      [
        "requeue | claims x=10.0.0.1 a=- b=10.0.0.2 | records 10.0.0.1:x 10.0.0.2:b | held 10.0.0.1 10.0.0.2",
        "done | claims x=10.0.0.1 a=10.0.0.3 b=10.0.0.2 | records 10.0.0.1:x 10.0.0.2:b 10.0.0.3:a | held 10.0.0.1 10.0.0.2 10.0.0.3",
        "done | claims x=10.0.0.1 a=10.0.0.3 b=10.0.0.2 | records 10.0.0.1:x 10.0.0.2:b 10.0.0.3:a | held 10.0.0.1 10.0.0.2 10.0.0.3",
      ],
    ],
    [
      "the claim changed since it was read (its finalizer write conflicts): a requeue, no record, the address freed",
      (w) => {
        w.seed(claim("a"));
        w.put(claim("a", { labels: { changed: "yes" } }));
      },
      [
        "requeue | claims a=- | records - | held -",
        "requeue | claims a=- | records - | held -",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
      ],
    ],
    [
      "the claim is gone before its finalizer is written: a requeue, nothing made",
      (w) => {
        w.seed(claim("a"));
        w.server.of(IPCLAIM.plural).clear();
      },
      [
        "requeue | claims - | records - | held -",
        "requeue | claims - | records - | held -",
        "done | claims - | records - | held -",
      ],
    ],
    [
      "a create refused otherwise: the pass fails (the queue backs off), the address freed, nothing bound",
      (w) => {
        w.seed(claim("a"));
        w.server.faults.push(fault("create", 500));
      },
      [
        "error 500 | claims a=- | records - | held -",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
      ],
    ],
    [
      "a create whose answer is lost (the record made): the record is found by its name and bound, never a second",
      (w) => {
        w.seed(claim("a"));
        w.server.faults.push(fault("create", 504, true));
      },
      [
        "error 504 | claims a=- | records 10.0.0.1:a | held -",
        "requeue | claims a=- | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
      ],
    ],
    [
      "two records made for one claim (a lost answer redone): the one its status names is kept, the other released",
      (w) =>
        w.seed(
          { ...claim("a", { finalizers: [IPCLAIM_FINALIZER] }), status: { address: { name: "p-10-0-0-3" } } },
          record("10.0.0.1", "a"),
          record("10.0.0.3", "a"),
        ),
      [
        "done | claims a=10.0.0.3 | records 10.0.0.3:a | held 10.0.0.3",
        "done | claims a=10.0.0.3 | records 10.0.0.3:a | held 10.0.0.3",
        "done | claims a=10.0.0.3 | records 10.0.0.3:a | held 10.0.0.3",
      ],
    ],
    [
      "the claim changed while its record is adopted (its finalizer write conflicts): a requeue, the record kept, then bound",
      (w) => {
        w.seed(record("10.0.0.1", "a"), claim("a"));
        w.put(claim("a", { labels: { changed: "yes" } }));
      },
      [
        "requeue | claims a=- | records 10.0.0.1:a | held 10.0.0.1",
        "requeue | claims a=- | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
      ],
    ],
    [
      "the claim is gone while its record is adopted (its finalizer write is not found): a requeue, then released",
      (w) => {
        w.seed(record("10.0.0.1", "a"), claim("a"));
        w.server.of(IPCLAIM.plural).clear();
      },
      [
        "requeue | claims - | records 10.0.0.1:a | held 10.0.0.1",
        "requeue | claims - | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims - | records - | held -",
      ],
    ],
    [
      "the status write of an adopting claim conflicts: a requeue, the record kept, then bound",
      (w) => {
        w.seed(record("10.0.0.1", "a"), claim("a", { finalizers: [IPCLAIM_FINALIZER] }));
        w.server.faults.push(fault("patchStatus", 409));
      },
      [
        "requeue | claims a=- | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
      ],
    ],
    // Unconfirmed records: made on a view that lacked a record holding the same address.
    [
      "a new record whose address a reservation the cache lacked holds: not confirmed, released unbound, a requeue",
      (w) => {
        w.seed(claim("a"));
        w.put(byHand("10.0.0.1"));
        w.confirmAfterWatch();
      },
      [
        "requeue | claims a=- | records 10.0.0.1:(none) | held -",
        "done | claims a=10.0.0.2 | records 10.0.0.1:(none) 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.1:(none) 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
      ],
    ],
    [
      "an unconfirmed record of one claim: the other claim of the pass binds its own address, not that one",
      (w) => {
        w.seed(claim("a"), claim("b"));
        w.put(byHand("10.0.0.1"));
        w.confirmAfterWatch();
      },
      [
        "requeue | claims a=- b=10.0.0.2 | records 10.0.0.1:(none) 10.0.0.2:b | held 10.0.0.2",
        "done | claims a=10.0.0.3 b=10.0.0.2 | records 10.0.0.1:(none) 10.0.0.2:b 10.0.0.3:a | held 10.0.0.1 10.0.0.2 10.0.0.3",
        "done | claims a=10.0.0.3 b=10.0.0.2 | records 10.0.0.1:(none) 10.0.0.2:b 10.0.0.3:a | held 10.0.0.1 10.0.0.2 10.0.0.3",
      ],
    ],
    [
      "a confirmed record: bound once",
      (w) => {
        w.seed(claim("a"));
        w.confirmAfterWatch();
      },
      [
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
        "done | claims a=10.0.0.1 | records 10.0.0.1:a | held 10.0.0.1",
      ],
    ],
    [
      "our record left unconfirmed by a stop, its address held by another record: redone, not bound",
      (w) => w.seed(claim("a", { finalizers: [IPCLAIM_FINALIZER] }), record("10.0.0.1", "a"), byHand("10.0.0.1")),
      [
        "requeue | claims a=- | records 10.0.0.1:(none) | held 10.0.0.1",
        "done | claims a=10.0.0.2 | records 10.0.0.1:(none) 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.1:(none) 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
      ],
    ],
    // Records of claims that are gone, or of other claims.
    [
      "the record of a claim that is gone: released, and its address not given out in the pass that finds it",
      (w) => w.seed(record("10.0.0.1", "gone"), claim("a")),
      [
        "done | claims a=10.0.0.2 | records 10.0.0.2:a | held 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.2:a | held 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.2:a | held 10.0.0.2",
      ],
    ],
    [
      "the record of a claim our cache lacks but the server has: kept, its address not given out",
      (w) => {
        w.seed(record("10.0.0.1", "x"), claim("a"));
        w.put({ ...claim("x", { finalizers: [IPCLAIM_FINALIZER] }), status: { address: { name: "p-10-0-0-1" } } });
      },
      [
        "done | claims a=10.0.0.2 x=10.0.0.1 | records 10.0.0.1:x 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 x=10.0.0.1 | records 10.0.0.1:x 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 x=10.0.0.1 | records 10.0.0.1:x 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
      ],
    ],
    [
      "a record naming the claim but made for its previous incarnation: not bound, released as an orphan",
      (w) => w.seed(record("10.0.0.1", "a", "uid-before"), claim("a")),
      [
        "done | claims a=10.0.0.2 | records 10.0.0.2:a | held 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.2:a | held 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.2:a | held 10.0.0.2",
      ],
    ],
    [
      "a reservation made by hand naming a claim that does not exist: never released, never given out",
      (w) => w.seed(byHand("10.0.0.1", "someone"), claim("a")),
      [
        "done | claims a=10.0.0.2 | records 10.0.0.1:someone 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.1:someone 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.1:someone 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
      ],
    ],
    [
      "the record of a claim clusterctl move took away: kept, its address not given out",
      (w) => {
        w.seed(record("10.0.0.1", "moved"), claim("a"));
        w.store.movedAway.add("uid-moved");
      },
      [
        "done | claims a=10.0.0.2 | records 10.0.0.1:moved 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.1:moved 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
        "done | claims a=10.0.0.2 | records 10.0.0.1:moved 10.0.0.2:a | held 10.0.0.1 10.0.0.2",
      ],
    ],
    // Requests and preallocations under conflict.
    [
      "a requested address another replica's unseen record holds: a requeue, then the claim is told",
      (w) => {
        unseenRecordOfX(w, "10.0.0.3");
        w.seed(claim("a", requests("10.0.0.3")));
      },
      [
        "requeue | claims x=10.0.0.3 a=- | records 10.0.0.3:x | held 10.0.0.3",
        'done | claims x=10.0.0.3 a="Requested IP not available" | records 10.0.0.3:x | held 10.0.0.3',
        'done | claims x=10.0.0.3 a="Requested IP not available" | records 10.0.0.3:x | held 10.0.0.3',
      ],
    ],
    [
      "a preallocated address another replica's unseen record holds: a requeue, then the claim is told",
      (w) => {
        w.pool = { ...POOL, spec: { ...POOL.spec, preAllocations: { a: "10.0.0.2" } } };
        unseenRecordOfX(w, "10.0.0.2");
        w.seed(claim("a"));
      },
      [
        "requeue | claims x=10.0.0.2 a=- | records 10.0.0.2:x | held 10.0.0.2",
        'done | claims x=10.0.0.2 a="Pre-allocated IP 10.0.0.2 is held by IPClaim "x"" | records 10.0.0.2:x | held 10.0.0.2',
        'done | claims x=10.0.0.2 a="Pre-allocated IP 10.0.0.2 is held by IPClaim "x"" | records 10.0.0.2:x | held 10.0.0.2',
      ],
    ],
    [
      "a preallocated claim whose finalizer write conflicts: its own address once the watch caught up",
      (w) => {
        w.pool = { ...POOL, spec: { ...POOL.spec, preAllocations: { a: "10.0.0.3" } } };
        w.seed(claim("a"));
        w.put(claim("a", { labels: { changed: "yes" } }));
      },
      [
        "requeue | claims a=- | records - | held -",
        "requeue | claims a=- | records - | held -",
        "done | claims a=10.0.0.3 | records 10.0.0.3:a | held 10.0.0.3",
      ],
    ],
    [
      "a requested address a reservation the cache lacked holds: not confirmed, then the claim is told",
      (w) => {
        w.seed(claim("a", requests("10.0.0.2")));
        w.put(byHand("10.0.0.2"));
        w.confirmAfterWatch();
      },
      [
        "requeue | claims a=- | records 10.0.0.2:(none) | held -",
        'done | claims a="Requested IP not available" | records 10.0.0.2:(none) | held 10.0.0.2',
        'done | claims a="Requested IP not available" | records 10.0.0.2:(none) | held 10.0.0.2',
      ],
    ],
  ];
  for (const [what, arrange, expected] of rows)
    it(what, async () => expect(await threePasses(arrange)).to.deep.equal(expected));
});
