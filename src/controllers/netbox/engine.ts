/**
 * NetBox as the engine of the NetBox pool kinds (pools/kind.ts ExternalEngine): NetBox decides every address under its
 * own lock (`available-ips`), and every record we make there carries the claim's identity and this management
 * cluster's installation id (identity.ts), so asking again for a claim finds its record instead of taking a second
 * address, and records of other management clusters are never ours.
 *
 * What the engine keeps per pool, and why it is safe:
 * - the prefixes or ranges the pool names (its sources, sources.ts), resolved once per spec (ids do not change under a
 *   name in NetBox);
 * - the records of ours in them (tag + a description ending in our installation id), listed when unknown: at the first
 *   pass, after a call whose answer was lost (a timeout, a 5xx: NetBox may have created the records), and after any
 *   failure. Only the one leader allocates, so between listings the records it made itself are all there are; a
 *   record someone deletes in NetBox is found at the next listing (every full pass, see pools/state.ts).
 * Calls are batched: one `available-ips` POST creates up to {@link BATCH} records. A pass asks for its claims in
 * segments of a batch each (pools/external.ts), so the tag is checked once per pool until a failure or a full pass.
 * Sources are asked in order (sources.ts fillInOrder); one that ran out is skipped until the next full pass or release.
 * A claim's record is found by its description in every source (one exact listing per source), wherever it was made.
 */
import { Reasons } from "../../../api/v1alpha1/types.js";
import { GLOBAL_NETBOX_IPPOOL_KIND, NETBOX_IPPOOL_KIND, type NetBoxIPPool } from "../../../api/netbox/types.js";
import type {
  ClaimIdentity,
  ExternalAnswer,
  ExternalClaim,
  ExternalEngine,
  ExternalHolding,
  KindContext,
} from "../pools/kind.js";
import {
  isNetBoxError,
  NetBoxError,
  type AllocationRequest,
  type NetBoxAddress,
  type NetBoxClient,
} from "../../netbox/client.js";
import {
  dnsNameOf,
  keySuffix,
  mayTakeOver,
  ownerComments,
  OWNER_TAG,
  parseKey,
  RECORD_ID_ANNOTATION,
  recordIdOf,
  recordKey,
  splitCidr,
  type RecordOwner,
} from "./identity.js";
import { neverHandedOut, resolveParent, type ResolvedParent } from "./parent.js";
import { displayOf, fillInOrder, sourceHolding, sourcesProblem, sourceSpecsOf } from "./sources.js";
import { MAX_DESCRIPTION, unstorableReason } from "./storable.js";
import { canonicalAddress } from "../../ipam/address.js";
import { missingRecords, unclaimedRecords, type BoundRecord } from "./drift.js";
import { readGateway } from "./gateway.js";
import { customFieldsProblem } from "./customfields.js";

/** Records created per `available-ips` call (NetBox takes a list; one call holds its lock once). */
export const BATCH = 50;
/**
 * A full pass this long after the first listing of a pool by this process: a request of a predecessor killed mid-call
 * may commit in NetBox after that listing (NetBox finishes a request whose client went away), and only a second
 * listing sees it; the claim it was for then has two records, and the second pass keeps one (settle).
 */
export const RECHECK_AFTER_START_MS = 30_000;
/** While NetBox has no room for waiting claims, it is asked again this often (people free addresses in NetBox too). */
export const EXHAUSTED_RECHECK_MS = 15_000;
/** Failures this close together belong to one attempt (one pass) and raise the backoff once. */
const SAME_ATTEMPT_MS = 1_000;
/** Backoff after a failed call: doubles per consecutive failure of the pool, up to the maximum. */
const BACKOFF_MIN_MS = 2_000;
const BACKOFF_MAX_MS = 30_000;

/** Connects a pool to its NetBox (URL, the token from its Secret, CA bundle): see connect.ts. */
export interface NetBoxConnector {
  connect(pool: NetBoxIPPool, ctx: KindContext): Promise<NetBoxClient>;
  /** NetBox refused the pool's token, or the Secret its URL: read the Secret again on the next call. */
  tokenRejected(pool: NetBoxIPPool): void;
  /** The pool is gone: its client is closed and dropped when no other pool uses it. */
  forget(pool: { namespace: string; name: string }): void;
}

/** The installation id of this management cluster (installation.ts). */
export type InstallationSource = (ctx: KindContext) => Promise<string>;

interface PoolEngineState {
  /** The pool object this state is of: a pool deleted and made again under its name starts afresh. */
  uid: string;
  /** The spec the sources were resolved from (re-resolved when it changes). */
  specKey: string;
  /** The pool's sources in order (sources.ts), resolved. */
  parents?: ResolvedParent[];
  /** Sources that ran out since the last full pass or release: skipped when asking. */
  full: Set<number>;
  /** Our records in the sources by description; undefined when they must be listed before they are trusted. */
  owned?: Map<string, NetBoxAddress[]>;
  /** The last failure, until a call succeeds (status condition). */
  failure?: NetBoxError;
  /**
   * Set once our tag is known to exist in NetBox (checked, or made), so the pass's later calls skip the check; cleared
   * by a full pass and by any failure (a tag deleted in NetBox fails the next allocation, and is made again after).
   */
  tagEnsured?: boolean;
  /** Consecutive failed passes (backoff). */
  failures: number;
  /** Set while the last call failed: when to try again. */
  retryAfterMs?: number;
  /** When a call last failed. */
  failedAt?: number;
  /** Whether this process has listed the pool's records yet. */
  opened?: boolean;
  /** When a full pass should list the records again though nothing failed (see {@link RECHECK_AFTER_START_MS}). */
  recheckAt?: number;
  /** The NetBox objects the sources are (Secret, kind, id), once resolved: pools that share one share its records. */
  parentKeys?: Set<string>;
  /** Descriptions of the pool's live claims at the last full pass (settle); undefined before it. */
  claimed?: Set<string>;
  /** Each source's gateway (the spec's, or read from NetBox: gateway.ts) and the pool generation they are for. */
  gateways?: { generation: number; addresses: (string | undefined)[] };
}

/** The claim a pass asks for, as NetBox will record it. */
interface Asked {
  holder: string;
  owner: RecordOwner;
  description: string;
}

/** Releases of one pool made together: the claims' descriptions, and the shared outcome. */
interface ReleaseBatch {
  descriptions: Set<string>;
  done: Promise<void>;
}

/** A pool's releases: the batch taking claims until it starts, and the one in flight. */
interface ReleaseLine {
  waiting?: ReleaseBatch;
  inFlight?: Promise<void>;
}

export class NetBoxEngine implements ExternalEngine<NetBoxIPPool> {
  /** By pool (see {@link poolKey}); dropped when the pool is gone (forget). */
  private readonly pools = new Map<string, PoolEngineState>();
  /** Each pool's releases (by pool id), while any is waiting or in flight. */
  private readonly releasing = new Map<string, ReleaseLine>();
  /** Set once the installation id is known: every key of ours ends with it. */
  private installation: string | undefined;

  constructor(
    private readonly connector: NetBoxConnector,
    private readonly installationOf: InstallationSource,
  ) {}

  private async installationId(ctx: KindContext): Promise<string> {
    this.installation ??= await this.installationOf(ctx);
    return this.installation;
  }

  private async connect(pool: NetBoxIPPool, ctx: KindContext): Promise<NetBoxClient> {
    return await this.connector.connect(pool, ctx);
  }

  /**
   * The sources of `pool` in order (resolved in NetBox when not known for its spec). Throws NetBox's errors, and a
   * BadRequest when the sources may not be used (sources.ts sourcesProblem).
   */
  async sourcesOf(pool: NetBoxIPPool, ctx: KindContext): Promise<ResolvedParent[]> {
    const state = this.stateOf(pool);
    if (state.parents) return state.parents;
    const api = await this.connect(pool, ctx);
    const resolved: ResolvedParent[] = [];
    for (const source of sourceSpecsOf(pool.spec))
      resolved.push(await this.recording(state, () => resolveParent(api, source)));
    const problem = sourcesProblem(pool.status, resolved);
    if (problem) throw new NetBoxError(problem, "BadRequest");
    state.parents = resolved;
    const secret = [pool.spec.netbox.credentialsRef.name, pool.spec.netbox.url ?? ""];
    state.parentKeys = new Set(resolved.map((p) => JSON.stringify([...secret, p.parent.kind, p.parent.id])));
    return resolved;
  }

  /**
   * The gateway of each source's IPAddresses: the source's own (the spec's `gateway` for the first), else the one
   * NetBox records for its subnet (gateway.ts), read once per generation of the pool. Throws NetBox's errors.
   */
  async gatewaysOf(pool: NetBoxIPPool, ctx: KindContext): Promise<(string | undefined)[]> {
    const state = this.stateOf(pool);
    const generation = pool.metadata.generation ?? 0;
    const parents = await this.sourcesOf(pool, ctx);
    if (state.gateways?.generation === generation && state.gateways.addresses.length === parents.length)
      return state.gateways.addresses;
    const specs = sourceSpecsOf(pool.spec);
    const addresses: (string | undefined)[] = [];
    for (const [i, parent] of parents.entries()) {
      const given = specs[i]?.gateway;
      if (given) addresses.push(given);
      else {
        const api = await this.connect(pool, ctx);
        addresses.push(await this.recording(state, () => readGateway(api, parent)));
      }
    }
    state.gateways = { generation, addresses };
    return addresses;
  }

  /** What NetBox last said of the pool: its sources (with utilisation) and the failure, if the last call failed. */
  view(pool: NetBoxIPPool): { parents?: ResolvedParent[]; failure?: NetBoxError } {
    const state = this.kept(pool);
    return {
      ...(state?.parents ? { parents: state.parents } : {}),
      ...(state?.failure ? { failure: state.failure } : {}),
    };
  }

  async obtain(
    pool: NetBoxIPPool,
    claims: readonly ExternalClaim[],
    ctx: KindContext,
  ): Promise<Map<string, ExternalAnswer>> {
    const state = this.stateOf(pool);
    const installation = await this.installationId(ctx);
    const asked = claims.map((c) => askedOf(c, installation));
    for (const a of asked) state.claimed?.add(a.description);
    try {
      const api = await this.connect(pool, ctx);
      const parents = await this.sourcesOf(pool, ctx);
      const owned = await this.ownedOf(api, state, parents, installation);
      await this.keepOneEach(api, state, asked, ctx);
      // A claim NetBox could not store would fail the whole list it is sent with: it fails alone, before any call.
      const refused = new Map<string, string>();
      for (const a of asked) {
        const why = owned.has(a.description) ? undefined : unstorableReason(requestOf(pool, a));
        if (why) refused.set(a.holder, why);
      }
      const missing = uniqueBy(
        asked.filter((a) => !owned.has(a.description) && !refused.has(a.holder)),
        (a) => a.description,
      );
      const exhausted = await this.allocate(api, state, pool, parents, missing);
      this.succeeded(state);
      const answers = new Map(
        asked.map((a) => [a.holder, refusedAnswer(refused.get(a.holder)) ?? answerOf(owned, a, parents, exhausted)]),
      );
      // Full: records NetBox committed after our last listing (a request of a killed controller) may take the room,
      // and people free addresses in NetBox: list again soon.
      if (exhausted) state.recheckAt = Date.now() + EXHAUSTED_RECHECK_MS;
      return answers;
    } catch (err) {
      if (!isNetBoxError(err)) throw err;
      const failure = err;
      const retryAfterMs = this.failed(pool, failure);
      ctx.log.warn("NetBox call failed", { reason: failure.reason, message: failure.message, retryAfterMs });
      const answer = failedAnswer(pool, failure);
      return new Map(asked.map((a) => [a.holder, answer]));
    }
  }

  /**
   * A full pass's putting in order of the records of the pool's live claims:
   * - a bound claim whose address no record of ours holds takes over the record that does, when identity.ts
   *   `mayTakeOver` allows it (a moved claim's record, named by its IPAddress; a record of the key used before
   *   installations): the record is re-keyed to our installation;
   * - duplicates are deleted: a request of a controller killed mid-call can commit in NetBox after the next controller
   *   listed the records and asked again, leaving a claim two records. For each live claim the record it is bound to
   *   (its IPAddress's address), or the oldest when it is not bound yet, is kept.
   * Records of claims that do not exist here, and records of other installations no IPAddress here names, are never
   * touched (they are another management cluster's, or someone's).
   */
  async settle(pool: NetBoxIPPool, claims: readonly ExternalHolding[], ctx: KindContext): Promise<void> {
    const state = this.stateOf(pool);
    const installation = await this.installationId(ctx);
    state.claimed = new Set(claims.map((c) => recordKey(c, installation)));
    const parents = state.parents;
    if (!state.owned || !parents) return;
    try {
      const api = await this.connect(pool, ctx);
      await this.takeOver(api, state, parents, claims, installation, ctx);
      const asked = claims.map((c) => ({ description: recordKey(c, installation), address: c.address }));
      await this.keepOneEach(api, state, asked, ctx);
    } catch (err) {
      if (!isNetBoxError(err)) throw err;
      const failure = err;
      this.failed(pool, failure);
    }
  }

  /**
   * Re-keys to our installation the records bound claims hold without a record of ours at their address (see
   * settle), looked up by those addresses (exact: `parent=<host>/32` with our tag) in the source holding each, a batch
   * at a time.
   */
  private async takeOver(
    api: NetBoxClient,
    state: PoolEngineState,
    parents: readonly ResolvedParent[],
    claims: readonly ExternalHolding[],
    installation: string,
    ctx: KindContext,
  ): Promise<void> {
    const owned = state.owned;
    if (!owned) return;
    const strays = claims.flatMap((c) => {
      const address = c.address;
      if (address === undefined) return [];
      const mine = owned.get(recordKey(c, installation)) ?? [];
      return mine.some((r) => splitCidr(r.address).address === address) ? [] : [{ ...c, address }];
    });
    for (let i = 0; i < strays.length; i += BATCH) {
      const batch = strays.slice(i, i + BATCH);
      const found: NetBoxAddress[] = [];
      for (const [i, source] of parents.entries()) {
        const hosts = [...new Set(batch.map((c) => c.address))].filter((h) => sourceHolding(parents, h) === i);
        if (hosts.length > 0)
          found.push(...(await this.recording(state, () => api.listOwned(source.parent, OWNER_TAG.slug, { hosts }))));
      }
      for (const claim of batch) {
        const recordId = recordIdOf(claim.annotations);
        const record = found.find((r) => mayTakeOver(r, { ...claim, recordId }, installation));
        if (!record) continue;
        const key = recordKey(claim, installation);
        const rekeyed = await this.recording(state, () => api.setDescription(record.id, key));
        owned.set(
          key,
          [...(owned.get(key) ?? []), rekeyed].sort((a, b) => a.id - b.id),
        );
        ctx.log.info("Took over the NetBox record of a claim", {
          description: key,
          was: record.description,
          address: record.address,
          id: record.id,
        });
      }
    }
  }

  /** Deletes all but one record of each claim (see settle); `address` names the one to keep when the claim is bound. */
  private async keepOneEach(
    api: NetBoxClient,
    state: PoolEngineState,
    claims: readonly { description: string; address?: string | undefined }[],
    ctx: KindContext,
  ): Promise<void> {
    const owned = state.owned;
    if (!owned) return;
    for (const claim of claims) {
      const mine = owned.get(claim.description) ?? [];
      const keep =
        claim.address === undefined ? mine[0] : mine.find((r) => splitCidr(r.address).address === claim.address);
      // A bound claim whose record is gone is reported (RecordsInNetBox), never repaired here.
      if (!keep || mine.length < 2) continue;
      for (const extra of mine.filter((r) => r !== keep)) {
        await this.recording(state, () => api.deleteAddress(extra.id));
        this.freed(state, extra.address);
        ctx.log.warn("Deleted a second NetBox record of a claim", {
          description: claim.description,
          kept: keep.address,
          deleted: extra.address,
        });
      }
      owned.set(claim.description, [keep]);
    }
  }

  /**
   * Deletes every record of the claim in NetBox. One release of a pool is in flight at a time; releases asked for
   * meanwhile (a pass's writes run side by side) wait and then share one listing and one bulk delete, so a burst of
   * releases costs a few NetBox calls per round, not two per claim.
   */
  async release(pool: NetBoxIPPool, claim: ClaimIdentity, ctx: KindContext): Promise<void> {
    const key = recordKey(claim, await this.installationId(ctx));
    const id = poolKey(pool.metadata);
    let line = this.releasing.get(id);
    if (!line) {
      line = {};
      this.releasing.set(id, line);
    }
    const batch = line.waiting ?? this.nextRelease(id, line, pool, ctx);
    batch.descriptions.add(key);
    await batch.done;
  }

  /** The batch that runs once the pool's release in flight (if any) is done. */
  private nextRelease(id: string, line: ReleaseLine, pool: NetBoxIPPool, ctx: KindContext): ReleaseBatch {
    const batch: ReleaseBatch = { descriptions: new Set(), done: Promise.resolve() };
    const before = line.inFlight ?? Promise.resolve();
    batch.done = before
      .catch(() => undefined)
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(async () => {
        if (line.waiting === batch) delete line.waiting;
        const run = this.releaseNow(pool, [...batch.descriptions], ctx);
        line.inFlight = run;
        try {
          await run;
        } finally {
          if (line.inFlight === run) delete line.inFlight;
          if (!line.waiting && !line.inFlight && this.releasing.get(id) === line) this.releasing.delete(id);
        }
      });
    line.waiting = batch;
    return batch;
  }

  private async releaseNow(pool: NetBoxIPPool, descriptions: readonly string[], ctx: KindContext): Promise<void> {
    const state = this.stateOf(pool);
    const api = await this.connect(pool, ctx);
    const parents = await this.sourcesOf(pool, ctx);
    // Listed from NetBox (not the kept view), in every source: the release must see every record of the claims,
    // duplicates included, wherever they were made. Only records of our keys: another management cluster's claim of
    // the same name keeps its record.
    const wanted = new Set(descriptions);
    const records = (await this.listAcross(api, state, parents, { descriptions })).filter((r) =>
      wanted.has(r.description),
    );
    if (records.length > 0) await this.recording(state, () => api.deleteAddresses(records.map((r) => r.id)));
    // Room was made (here or, for all we know, by people in NetBox): full sources are asked again.
    state.full.clear();
    for (const record of records) {
      this.freed(state, record.address);
      ctx.log.info("Released the NetBox record of a claim", {
        description: record.description,
        address: record.address,
        id: record.id,
      });
    }
    for (const description of descriptions) state.owned?.delete(description);
  }

  /**
   * Records of the pool in Kubernetes (claim namespace, claim name, address) whose NetBox record is gone or holds
   * another address: someone deleted or changed it in NetBox while the claim lives. Undefined while the engine does
   * not know the pool's records (they are listed on the next pass).
   */
  missingRecords(pool: NetBoxIPPool, records: readonly BoundRecord[]): BoundRecord[] | undefined {
    const owned = this.kept(pool)?.owned;
    const installation = this.installation;
    if (!owned || installation === undefined) return undefined;
    return missingRecords(owned, records, (namespace, name) => recordKey({ namespace, name }, installation));
  }

  /**
   * Records of ours in the pool's sources that no live claim holds, of this pool or of any other pool of this
   * process naming one of those NetBox objects (their records there look alike). Undefined until the pool's records
   * are listed and its claims known (a full pass).
   */
  unclaimedRecords(pool: NetBoxIPPool): NetBoxAddress[] | undefined {
    const state = this.kept(pool);
    const keys = state?.parentKeys;
    if (!state?.owned || !state.claimed || !keys) return undefined;
    const claimed = new Set<string>();
    for (const other of this.pools.values())
      if ([...(other.parentKeys ?? [])].some((k) => keys.has(k))) for (const d of other.claimed ?? []) claimed.add(d);
    return unclaimedRecords(state.owned, claimed);
  }

  /**
   * A full pass's start: resolves the pool's sources afresh (NetBox's utilisation with them) and lists the pool's
   * records in NetBox, so records deleted or changed there since are seen; full sources are asked again. Throws
   * NetBox's errors.
   */
  async open(pool: NetBoxIPPool, ctx: KindContext): Promise<ResolvedParent[]> {
    const state = this.stateOf(pool);
    delete state.parents;
    delete state.owned;
    delete state.tagEnsured;
    state.full.clear();
    const installation = await this.installationId(ctx);
    const parents = await this.sourcesOf(pool, ctx);
    await this.ownedOf(await this.connect(pool, ctx), state, parents, installation);
    this.succeeded(state);
    if (!state.opened) state.recheckAt = Date.now() + RECHECK_AFTER_START_MS;
    else if (state.recheckAt !== undefined && state.recheckAt <= Date.now()) delete state.recheckAt;
    state.opened = true;
    return parents;
  }

  /** A record at `address` is gone: NetBox's count of the source holding it drops (until the next resolve). */
  private freed(state: PoolEngineState, address: string): void {
    const parents = state.parents ?? [];
    const source = parents[sourceHolding(parents, address) ?? -1];
    if (source) source.used = Math.max(0, source.used - 1);
  }

  /** Our records (our tag, `match`) in every source, each once (sources may overlap). */
  private async listAcross(
    api: NetBoxClient,
    state: PoolEngineState,
    parents: readonly ResolvedParent[],
    match: Parameters<NetBoxClient["listOwned"]>[2],
  ): Promise<NetBoxAddress[]> {
    const found = new Map<number, NetBoxAddress>();
    for (const source of parents)
      for (const r of await this.recording(state, () => api.listOwned(source.parent, OWNER_TAG.slug, match)))
        found.set(r.id, r);
    return [...found.values()];
  }

  /** The engine answered: no failure to report, no retry to schedule. */
  private succeeded(state: PoolEngineState): void {
    state.failures = 0;
    delete state.failure;
    delete state.retryAfterMs;
  }

  private stateOf(pool: NetBoxIPPool): PoolEngineState {
    const uid = pool.metadata.uid ?? "";
    const specKey = JSON.stringify([pool.spec.netbox.url, sourceSpecsOf(pool.spec).map((s) => [s.prefix, s.range])]);
    let state = this.kept(pool);
    if (!state || state.specKey !== specKey) {
      state = { uid, specKey, failures: 0, full: new Set() };
      this.pools.set(poolKey(pool.metadata), state);
    }
    return state;
  }

  /** What is kept of this pool object (not of an earlier pool of its name). */
  private kept(pool: NetBoxIPPool): PoolEngineState | undefined {
    const state = this.pools.get(poolKey(pool.metadata));
    return state?.uid === (pool.metadata.uid ?? "") ? state : undefined;
  }

  /** The pool is gone: its state and its hold on a connection go with it. */
  forget(ref: { namespace: string; name: string }): void {
    this.pools.delete(poolKey(ref));
    this.connector.forget(ref);
  }

  /**
   * Our records in the sources, listed from NetBox when not known: our tag and a description ending in our
   * installation id (NetBox's filter is case-insensitive; the key is checked exactly here), so other installations'
   * records are neither read nor kept.
   */
  private async ownedOf(
    api: NetBoxClient,
    state: PoolEngineState,
    parents: readonly ResolvedParent[],
    installation: string,
  ): Promise<Map<string, NetBoxAddress[]>> {
    if (state.owned) return state.owned;
    const match = { descriptionEndsWith: keySuffix(installation) };
    const listed = await this.listAcross(api, state, parents, match);
    const records = listed.filter((r) => parseKey(r.description)?.installation === installation);
    const owned = new Map<string, NetBoxAddress[]>();
    for (const record of records.sort((a, b) => a.id - b.id)) {
      owned.set(record.description, [...(owned.get(record.description) ?? []), record]);
    }
    state.owned = owned;
    return owned;
  }

  /**
   * Creates records for `missing`, in batches, of the first source with room (sources.ts fillInOrder: a batch a
   * source cannot fill whole is asked again one claim at a time, so the addresses left there go to the first claims,
   * and the rest go on to the next source). A record NetBox made on an address no claim may get (neverHandedOut, with
   * the source's gateway: NetBox offers the gateway when it has no record of it) is kept as a reservation of the pool,
   * so NetBox never offers it again, and its claim is asked for again. Returns whether every source ran out.
   */
  private async allocate(
    api: NetBoxClient,
    state: PoolEngineState,
    pool: NetBoxIPPool,
    parents: readonly ResolvedParent[],
    missing: readonly Asked[],
  ): Promise<boolean> {
    // The schema bounds only the count of custom fields: the rest is checked here, before NetBox is called.
    const problem = missing.length > 0 ? customFieldsProblem(pool.spec.customFields) : undefined;
    if (problem) throw new NetBoxError(`spec: ${problem}`, "BadRequest");
    if (missing.length > 0 && !state.tagEnsured) {
      await this.recording(state, () => api.ensureTag(OWNER_TAG.slug, OWNER_TAG.name));
      state.tagEnsured = true;
    }
    // A gateway NetBox records is never offered (it holds the address): the spec's may not be recorded there.
    const specs = sourceSpecsOf(pool.spec);
    const forbidden = parents.map((p, i) => neverHandedOut(p, specs[i]?.gateway));
    const reserved = parents.map(() => 0);
    return await fillInOrder(
      missing,
      parents.length,
      state.full,
      async (i, batch) => {
        const parent = parents[i] as ResolvedParent;
        const never = forbidden[i] as Set<string>;
        const again = await this.allocateBatch(api, state, pool, parent, batch, never);
        // Each address is reserved once, and NetBox never offers a reserved one: more would be a NetBox gone wrong.
        reserved[i] = (reserved[i] ?? 0) + (again?.length ?? 0);
        if ((reserved[i] ?? 0) > never.size)
          throw new NetBoxError(
            `NetBox kept offering addresses ${[...never].join(", ")} after they were reserved`,
            "ServerError",
          );
        return again;
      },
      BATCH,
    );
  }

  /**
   * One `available-ips` call: undefined when NetBox has fewer addresses left than asked, else the claims whose new
   * record was on a forbidden address (now the pool's reservation) and must be asked for again.
   */
  private async allocateBatch(
    api: NetBoxClient,
    state: PoolEngineState,
    pool: NetBoxIPPool,
    parent: ResolvedParent,
    batch: readonly Asked[],
    forbidden: ReadonlySet<string>,
  ): Promise<Asked[] | undefined> {
    const requests = batch.map((a) => requestOf(pool, a));
    let created: NetBoxAddress[];
    try {
      created = await api.allocate(parent.parent, requests);
    } catch (err) {
      if (isNetBoxError(err, "Exhausted")) return undefined;
      // The answer may be lost while NetBox created the records: list them before deciding again.
      delete state.owned;
      throw err;
    }
    const owned = state.owned ?? new Map<string, NetBoxAddress[]>();
    state.owned = owned;
    parent.used += created.length;
    const again: Asked[] = [];
    for (const [i, record] of created.entries()) {
      const asked = batch[i];
      if (asked && forbidden.has(canonicalAddress(splitCidr(record.address).address) ?? "")) {
        const description = reservationDescription(pool);
        await this.recording(state, () => api.updateAddress(record.id, { status: "reserved", description }));
        again.push(asked);
      } else owned.set(record.description, [...(owned.get(record.description) ?? []), record]);
    }
    return again;
  }

  /**
   * The pool is going and no claim holds an address of it any more: the reservations it made (neverHandedOut) are
   * given back. False when NetBox failed (recorded as the pool's failure: the pass is retried after the backoff).
   */
  async releasePool(pool: NetBoxIPPool, ctx: KindContext): Promise<boolean> {
    // A pool that never served (no parent in its status) reserved nothing.
    if (!pool.status?.netbox) return true;
    const state = this.stateOf(pool);
    const description = reservationDescription(pool);
    try {
      const api = await this.connect(pool, ctx);
      const parents = await this.sourcesOf(pool, ctx);
      const records = await this.listAcross(api, state, parents, { descriptions: [description] });
      for (const record of records.filter((r) => r.status === "reserved")) {
        await this.recording(state, () => api.deleteAddress(record.id));
        ctx.log.info("Released an address the pool had reserved in NetBox", { description, address: record.address });
      }
      return true;
    } catch (err) {
      if (!isNetBoxError(err)) throw err;
      // The prefix or range is gone from NetBox (or the spec no longer names it): nothing of ours can be found there.
      const gone = err.reason === "NotFound" || err.reason === "BadRequest";
      const retryAfterMs = gone ? undefined : this.failed(pool, err);
      ctx.log.warn("NetBox call failed", { reason: err.reason, message: err.message, retryAfterMs });
      return gone;
    }
  }

  /** Runs one NetBox call; a failure makes the kept records untrusted (the next pass lists them). */
  private async recording<T>(state: PoolEngineState, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (isNetBoxError(err) && err.reason !== "Exhausted") delete state.owned;
      throw err;
    }
  }

  /** Records a failed call of the pool's; returns how long to wait before the next pass. */
  failed(pool: NetBoxIPPool, failure: NetBoxError): number {
    const state = this.stateOf(pool);
    // A refused token or URL: read the Secret again on the next try (it may have been rotated or corrected).
    if (failure.reason === "Unauthorized" || failure.reason === "NotAllowed") this.connector.tokenRejected(pool);
    // One failing pass can fail twice (opening the pool, then asking for its claims): the backoff counts passes.
    const sameAttempt = state.failedAt !== undefined && Date.now() - state.failedAt < SAME_ATTEMPT_MS;
    state.failedAt = Date.now();
    state.failure = failure;
    if (!sameAttempt || state.failures === 0) state.failures++;
    delete state.parents;
    delete state.tagEnsured;
    state.retryAfterMs = backoffOf(state.failures, failure);
    return state.retryAfterMs;
  }

  retryAfterMs(pool: NetBoxIPPool): number | undefined {
    const state = this.kept(pool);
    if (state?.retryAfterMs !== undefined) return state.retryAfterMs;
    return state?.recheckAt !== undefined ? Math.max(1, state.recheckAt - Date.now()) : undefined;
  }
}

/**
 * The description of an address the pool reserved in NetBox (its gateway, say): it names the pool, so the pool's
 * deletion finds it, cut to what NetBox stores.
 */
export function reservationDescription(pool: NetBoxIPPool): string {
  const { namespace, name } = pool.metadata;
  const which = namespace
    ? `${NETBOX_IPPOOL_KIND} ${namespace}/${name ?? ""}`
    : `${GLOBAL_NETBOX_IPPOOL_KIND} ${name ?? ""}`;
  const text = `Reserved by metal3-ipam-ts for ${which}: its gateway, or a network or broadcast address; never handed out`;
  return [...text].slice(0, MAX_DESCRIPTION).join("");
}

/** Doubles per consecutive failure from the minimum to the maximum; a Retry-After NetBox sent is honoured. */
function backoffOf(failures: number, failure: NetBoxError): number {
  const backoff = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(10, failures - 1));
  const asked = (failure.retryAfterSeconds ?? 0) * 1000;
  return Math.max(backoff, Math.min(asked, BACKOFF_MAX_MS));
}

/**
 * The key of a pool of either NetBox kind: `<namespace>/<name>`, a global pool's namespace being empty, so the two
 * kinds never share one.
 */
export function poolKey(pool: { namespace?: string | undefined; name?: string | undefined }): string {
  return `${pool.namespace ?? ""}/${pool.name ?? ""}`;
}

function askedOf(c: ExternalClaim, installation: string): Asked {
  const owner: RecordOwner = {
    namespace: c.claim.metadata.namespace ?? "",
    name: c.claim.metadata.name ?? "",
    cluster: c.cluster,
  };
  return { holder: c.holder, owner, description: recordKey(owner, installation) };
}

function requestOf(pool: NetBoxIPPool, a: Asked): AllocationRequest {
  const { spec } = pool;
  const dnsName = dnsNameOf(spec.dnsNameTemplate, a.owner);
  return {
    description: a.description,
    tags: [OWNER_TAG.slug, ...(spec.tags ?? [])],
    comments: ownerComments(a.owner, `${pool.kind ?? NETBOX_IPPOOL_KIND} ${pool.metadata.name ?? ""}`),
    ...(spec.tenantId !== undefined ? { tenantId: spec.tenantId } : {}),
    ...(dnsName ? { dnsName } : {}),
    ...(spec.customFields ? { customFields: spec.customFields } : {}),
  };
}

function answerOf(
  owned: ReadonlyMap<string, NetBoxAddress[]>,
  a: Asked,
  parents: readonly ResolvedParent[],
  exhausted: boolean,
): ExternalAnswer {
  const record = owned.get(a.description)?.[0];
  // The IPAddress names its record: what lets another management cluster take it over after `clusterctl move`.
  if (record)
    return {
      ok: true,
      address: splitCidr(record.address).address,
      annotations: { [RECORD_ID_ANNOTATION]: String(record.id) },
    };
  return {
    ok: false,
    reason: Reasons.PoolExhausted,
    message: exhausted
      ? `NetBox ${displayOf(parents)} has no free address left`
      : "NetBox did not record an address for this claim; will ask again",
  };
}

/** The answer of a claim NetBox cannot store, saying why; undefined for the others. */
function refusedAnswer(why: string | undefined): ExternalAnswer | undefined {
  return why === undefined
    ? undefined
    : { ok: false, reason: Reasons.AllocationFailed, message: `NetBox cannot record this claim: ${why}` };
}

function failedAnswer(pool: NetBoxIPPool, failure: NetBoxError): ExternalAnswer {
  return {
    ok: false,
    reason: Reasons.PoolNotReady,
    message: `NetBox (Secret ${pool.spec.netbox.credentialsRef.name}): ${failure.reason}: ${failure.message}`,
  };
}

function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => !seen.has(key(item)) && seen.add(key(item)));
}
