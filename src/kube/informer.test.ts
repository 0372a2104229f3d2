/**
 * The informer against a scripted fake API server (plain HTTP): 410 Gone, silent watches, hung connects, failed
 * lists and relists racing our own writes. The real API server versions of these live in e2e/resilience.test.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { KubeConfig } from "@kubernetes/client-node";
import { Informer, type InformerLogger, type InformerOptions } from "./informer.js";
import { ListPacer } from "./pacer.js";
import { RequestTimeoutError, ResourceClient, type KubeObject } from "./resource.js";

/** Drops every message (src/runtime's silentLogger would make src/kube depend on the layer above it). */
const SILENT: InformerLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

const TYPE = { group: "test.io", version: "v1", plural: "things", kind: "Thing", namespaced: true };

const thing = (name: string, rv: number): KubeObject => ({
  metadata: { name, namespace: "ns", resourceVersion: String(rv), uid: name },
});

interface WatchCall {
  resourceVersion: string | null;
  res: ServerResponse;
  req: IncomingMessage;
}

/** A fake API server: lists answer from `listing` (or fail), watches are handed to the test to script. */
class FakeApi {
  listing: { items: KubeObject[]; resourceVersion: number } | "fail" | "hang" = { items: [], resourceVersion: 1 };
  /** "hang": watch requests get no response headers at all. */
  watchMode: "stream" | "hang" = "stream";
  lists = 0;
  /** Objects per list page (all on one page when unset); the continue token is the next page's offset. */
  pageSize?: number;
  /** Called as each list request arrives, with its continue token (null for a list's first page). */
  onListRequest?: (continueToken: string | null) => void;
  /** How long each list page's answer is held back. */
  listDelayMs = 0;
  readonly watches: WatchCall[] = [];
  private server?: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "fake", server: `http://127.0.0.1:${this.port}`, skipTLSVerify: true }],
      users: [{ name: "u" }],
      contexts: [{ name: "c", cluster: "fake", user: "u" }],
      currentContext: "c",
    });
    return kc;
  }

  /** Sends one watch event on the newest watch. */
  send(type: string, object: unknown): void {
    this.latest().res.write(`${JSON.stringify({ type, object })}\n`);
  }

  latest(): WatchCall {
    const w = this.watches.at(-1);
    if (!w) throw new Error("no watch yet");
    return w;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.searchParams.get("watch") === "true") {
      this.watches.push({ resourceVersion: url.searchParams.get("resourceVersion"), res, req });
      if (this.watchMode === "stream") res.writeHead(200, { "Content-Type": "application/json" }).flushHeaders();
      return;
    }
    const continueToken = url.searchParams.get("continue");
    this.onListRequest?.(continueToken);
    if (continueToken === null) this.lists++;
    if (this.listing === "hang") return;
    if (this.listing === "fail") {
      res
        .writeHead(503, { "Content-Type": "application/json" })
        .end(JSON.stringify({ kind: "Status", code: 503, message: "unavailable" }));
      return;
    }
    if (this.listDelayMs > 0) {
      const listing = this.listing;
      setTimeout(() => this.answerPage(res, listing, continueToken), this.listDelayMs);
      return;
    }
    this.answerPage(res, this.listing, continueToken);
  }

  private answerPage(
    res: ServerResponse,
    listing: { items: KubeObject[]; resourceVersion: number },
    continueToken: string | null,
  ): void {
    const offset = Number(continueToken ?? 0);
    const end = this.pageSize === undefined ? listing.items.length : offset + this.pageSize;
    const body = {
      kind: "ThingList",
      items: listing.items.slice(offset, end),
      metadata: {
        resourceVersion: String(listing.resourceVersion),
        ...(end < listing.items.length ? { continue: String(end) } : {}),
      },
    };
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(body));
  }
}

async function until(what: string, probe: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("Informer (fake API server)", function () {
  this.timeout(20_000);
  let api: FakeApi;
  let informer: Informer<KubeObject> | undefined;

  beforeEach(async () => {
    api = new FakeApi();
    await api.start();
  });

  afterEach(async () => {
    informer?.stop();
    informer = undefined;
    await api.stop();
  });

  function makeInformer(options: Partial<InformerOptions> = {}): Informer<KubeObject> {
    const kc = api.kubeConfig();
    informer = new Informer<KubeObject>(kc, new ResourceClient<KubeObject>(kc, TYPE), {
      namespace: "ns",
      resyncMs: 0,
      logger: SILENT,
      ...options,
    });
    return informer;
  }

  const names = (i: Informer<KubeObject>): string[] =>
    i
      .list()
      .map((o) => o.metadata.name ?? "")
      .sort();

  it("resumes an ended watch from the last resourceVersion, and relists after 410 Gone in the stream", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    expect(api.latest().resourceVersion).to.equal("10");
    api.send("ADDED", thing("b", 11));
    await until("b cached", () => inf.get("ns", "b") !== undefined);
    api.latest().res.end();
    await until("a second watch", () => api.watches.length === 2);
    expect(api.latest().resourceVersion).to.equal("11");
    expect(api.lists).to.equal(1);

    api.listing = { items: [thing("a", 10), thing("c", 20)], resourceVersion: 20 };
    api.send("ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old resource version: 11 (15)" });
    await until("the relist", () => api.lists === 2 && api.watches.length === 3);
    expect(names(inf)).to.deep.equal(["a", "c"]);
    expect(api.latest().resourceVersion).to.equal("20");
    expect(inf.stats.expired).to.equal(1);
    expect(inf.synced).to.equal(true);
  });

  it("covers each namespace its first list went past, page by page in key order, and every one once listed", async () => {
    const at = (namespace: string, name: string): KubeObject => ({
      metadata: { name, namespace, resourceVersion: "10", uid: `${namespace}-${name}` },
    });
    // The API server's key order: "b-x/…" sorts before "b/…" ('-' before '/').
    api.listing = {
      items: [at("a", "1"), at("b-x", "1"), at("b", "1"), at("b", "2"), at("c", "1")],
      resourceVersion: 10,
    };
    api.pageSize = 2;
    const probe = ["a", "b-x", "b", "c", ""];
    const covered: string[][] = [];
    const observed: string[][] = [];
    api.onListRequest = (token) => {
      const inf = informer;
      if (token === null || !inf) return;
      covered.push(probe.filter((ns) => inf.covers(ns)));
      observed.push(probe.map((ns) => inf.observedIn(ns)));
    };
    const inf = makeInformer({ namespace: undefined });
    let progress = 0;
    inf.onListProgress(() => progress++);
    expect(
      probe.filter((ns) => inf.covers(ns)),
      "before the list",
    ).to.deep.equal([]);
    await inf.start();
    expect(covered, "before each later page").to.deep.equal([["a"], ["a", "b-x"]]);
    // A covered namespace is held as of the list's snapshot; the rest, and every namespace at once, as of nothing yet.
    expect(observed, "fresh as of, before each later page").to.deep.equal([
      ["10", "", "", "", ""],
      ["10", "10", "", "", ""],
    ]);
    expect(
      probe.filter((ns) => inf.covers(ns)),
      "listed",
    ).to.deep.equal(probe);
    expect(progress, "three pages, then done").to.equal(4);
  });

  it("holds a first list past a namespace someone waits on until a slower list sharing its pacer goes past it", async () => {
    const at = (namespace: string, name: string): KubeObject => ({
      metadata: { name, namespace, resourceVersion: "10", uid: `${namespace}-${name}` },
    });
    const slowApi = new FakeApi();
    await slowApi.start();
    const pacer = new ListPacer();
    const slowKc = slowApi.kubeConfig();
    const fast = makeInformer({ namespace: undefined, pacer });
    const slow = new Informer<KubeObject>(slowKc, new ResourceClient<KubeObject>(slowKc, TYPE), {
      resyncMs: 0,
      logger: SILENT,
      pacer,
    });
    try {
      api.listing = { items: ["a", "b", "c", "d"].flatMap((ns) => [at(ns, "1"), at(ns, "2")]), resourceVersion: 10 };
      api.pageSize = 1;
      slowApi.listing = { items: ["a", "b", "c", "d"].map((ns) => at(ns, "1")), resourceVersion: 10 };
      slowApi.pageSize = 1;
      slowApi.listDelayMs = 50;
      // Claims wait in "a" and "c": the fast list must not go past either before the slow one does; it may run
      // ahead through "b" and "d".
      pacer.waitOn("a");
      pacer.waitOn("c");
      const namespaces = ["a", "c"];
      const ahead: string[] = [];
      api.onListRequest = (token) => {
        // Every waited-on namespace the fast list covers when it asks for a page, the slow one must cover too.
        const fastCovers = namespaces.filter((ns) => fast.covers(ns));
        const missing = fastCovers.filter((ns) => !slow.covers(ns));
        if (token !== null && missing.length > 0) ahead.push(`page ${token}: ${missing.join(",")}`);
      };
      await Promise.all([fast.start(), slow.start()]);
      expect(ahead, "pages the fast list asked for ahead of the slow one").to.deep.equal([]);
      expect(names(fast)).to.have.length(8);
      expect(slow.list()).to.have.length(4);
    } finally {
      slow.stop();
      await slowApi.stop();
    }
  });

  it("covers nothing more in a first list once a page broke the key order", async () => {
    const at = (namespace: string): KubeObject => ({
      metadata: { name: "x", namespace, resourceVersion: "10", uid: namespace },
    });
    api.listing = { items: [at("b"), at("a"), at("c"), at("d")], resourceVersion: 10 };
    api.pageSize = 1;
    const covered: string[][] = [];
    api.onListRequest = (token) => {
      const inf = informer;
      if (token !== null && inf) covered.push(["a", "b", "c"].filter((ns) => inf.covers(ns)));
    };
    const inf = makeInformer({ namespace: undefined });
    await inf.start();
    expect(covered).to.deep.equal([["a"], [], []]);
    expect(inf.covers("c"), "listed").to.equal(true);
  });

  it("folds each list page into the cache as it arrives, and drops what the list lacks only after the last page", async () => {
    api.pageSize = 2;
    const cachedAtPage: string[][] = [];
    api.onListRequest = (token) => {
      if (token !== null && informer) cachedAtPage.push(names(informer));
    };
    api.listing = { items: ["a", "b", "c", "d", "e"].map((n) => thing(n, 10)), resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    expect(cachedAtPage, "the first list: pages folded before the next is asked for").to.deep.equal([
      ["a", "b"],
      ["a", "b", "c", "d"],
    ]);
    expect(names(inf)).to.deep.equal(["a", "b", "c", "d", "e"]);
    await until("a watch", () => api.watches.length === 1);

    cachedAtPage.length = 0;
    api.listing = { items: ["c", "d", "f"].map((n) => thing(n, 20)), resourceVersion: 20 };
    api.send("ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" });
    await until("the relist", () => api.watches.length === 2);
    expect(cachedAtPage, "a relist: nothing dropped before its last page").to.deep.equal([["a", "b", "c", "d", "e"]]);
    expect(names(inf)).to.deep.equal(["c", "d", "f"]);
    expect([inf.countIn("ns"), inf.countIn(), inf.countIn("other")], "counts after the relist").to.deep.equal([
      3, 3, 0,
    ]);
    expect(inf.get("ns", "c")?.metadata.resourceVersion).to.equal("20");
    expect(inf.synced).to.equal(true);
  });

  it("finds objects by index through buckets growing from one object to several and back to none", async () => {
    const tagged = (name: string, tag: string, rv: number): KubeObject => ({
      metadata: { ...thing(name, rv).metadata, labels: { tag } },
    });
    const inf = makeInformer();
    inf.addIndex("tag", (o) => [o.metadata.labels?.["tag"] ?? ""]);
    await inf.start();
    const byTag = (tag: string): string[] =>
      inf
        .byIndex("tag", tag)
        .map((o) => o.metadata.name ?? "")
        .sort();
    inf.upsert(tagged("a", "x", 2));
    inf.upsert(tagged("a", "x", 3));
    expect(byTag("x"), "one object, written twice").to.deep.equal(["a"]);
    expect(inf.countIn("ns"), "one object, counted once").to.equal(1);
    inf.upsert(tagged("b", "x", 4));
    inf.upsert(tagged("c", "x", 5));
    expect(byTag("x")).to.deep.equal(["a", "b", "c"]);
    inf.upsert(tagged("b", "y", 6));
    inf.remove(tagged("c", "x", 7));
    expect(byTag("x"), "back to one").to.deep.equal(["a"]);
    expect(byTag("y")).to.deep.equal(["b"]);
    inf.upsert(tagged("a", "y", 8));
    expect(byTag("x"), "none left").to.deep.equal([]);
    expect(byTag("y")).to.deep.equal(["a", "b"]);
    inf.remove(tagged("b", "y", 9));
    inf.remove(tagged("a", "y", 10));
    expect(byTag("y")).to.deep.equal([]);
    expect([inf.countIn("ns"), inf.countIn()], "none left").to.deep.equal([0, 0]);
  });

  it("keeps no change log while its journals are paused, a journal made then included, and reads whole once resumed", async () => {
    const tagged = (name: string, tag: string, rv: number): KubeObject => ({
      metadata: { ...thing(name, rv).metadata, labels: { tag } },
    });
    const inf = makeInformer();
    inf.addIndex("tag", (o) => [o.metadata.labels?.["tag"] ?? ""]);
    inf.pauseJournals();
    inf.journal("tag");
    await inf.start();
    inf.upsert(tagged("a", "x", 2));
    expect(inf.changesIn("tag", "x"), "paused").to.equal(undefined);
    inf.resumeJournals();
    inf.upsert(tagged("b", "x", 3));
    expect(inf.changesIn("tag", "x"), "first read after the resume").to.equal(undefined);
    inf.upsert(tagged("c", "x", 4));
    expect(inf.changesIn("tag", "x")?.map((c) => c.key)).to.deep.equal(["ns/c"]);
  });

  it("tells a writer when its watch has delivered as far as a resourceVersion (our own upserts do not count)", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    expect(await inf.waitObserved("9", 1_000), "already past").to.equal(true);
    const reached = inf.waitObserved("12", 5_000);
    // Our own write's answer goes into the cache at once, but says nothing of the events before it.
    inf.upsert(thing("mine", 12));
    api.send("ADDED", thing("b", 11));
    await until("b cached", () => inf.get("ns", "b") !== undefined);
    let settled = false;
    void reached.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled, "not yet at 12").to.equal(false);
    api.send("MODIFIED", thing("mine", 12));
    expect(await reached).to.equal(true);
    // 100 sorts after 99 as a number, not as text.
    api.send("BOOKMARK", { metadata: { resourceVersion: "100" } });
    expect(await inf.waitObserved("99", 1_000)).to.equal(true);
    expect(await inf.waitObserved("101", 100), "never delivered").to.equal(false);
  });

  it("caches objects without managedFields, from lists, watch events and our own writes alike", async () => {
    const managed = (name: string, rv: number): KubeObject => ({
      metadata: {
        ...thing(name, rv).metadata,
        managedFields: [{ manager: "kubectl", operation: "Update" }],
      } as KubeObject["metadata"],
    });
    api.listing = { items: [managed("a", 10)], resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    api.send("ADDED", managed("b", 11));
    await until("b cached", () => inf.get("ns", "b") !== undefined);
    const written = managed("c", 12);
    inf.upsert(written);
    for (const name of ["a", "b", "c"])
      expect(inf.get("ns", name)?.metadata, name).to.not.have.property("managedFields");
    expect(written.metadata, "the caller's object is left as it was").to.have.property("managedFields");
  });

  it("keeps only what its projection takes, from lists and watch events alike, and indexes that", async () => {
    const big = (name: string, rv: number): KubeObject =>
      ({ ...thing(name, rv), spec: { address: `10.0.0.${rv}`, bulk: "x".repeat(1000) } }) as KubeObject;
    api.listing = { items: [big("a", 10)], resourceVersion: 10 };
    const keep = (o: KubeObject): KubeObject => {
      const { name, namespace, resourceVersion } = o.metadata;
      const spec = (o as KubeObject & { spec: { address: string } }).spec;
      return { metadata: { name, namespace, resourceVersion }, address: spec.address } as KubeObject;
    };
    const inf = makeInformer({ keep });
    inf.addIndex("address", (o) => [(o as KubeObject & { address: string }).address]);
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    api.send("ADDED", big("b", 11));
    await until("b cached", () => inf.get("ns", "b") !== undefined);
    expect(inf.get("ns", "a")).to.deep.equal({
      metadata: { name: "a", namespace: "ns", resourceVersion: "10" },
      address: "10.0.0.10",
    });
    expect(inf.byIndex("address", "10.0.0.11").map((o) => o.metadata.name)).to.deep.equal(["b"]);
    expect(inf.get("ns", "b")).to.not.have.property("spec");
  });

  it("aborts a silent watch through its watchdog and resumes it without relisting", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    const inf = makeInformer({ watchdogMs: 300 });
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    await until("the watchdog to replace it", () => api.watches.length === 2, 3_000);
    expect(api.latest().resourceVersion).to.equal("10");
    expect(api.lists).to.equal(1);
    expect(inf.stats.watchdogAborts).to.be.greaterThan(0);
    // The replacement works: events flow again.
    api.send("ADDED", thing("b", 12));
    await until("b cached", () => inf.get("ns", "b") !== undefined);
  });

  it("keeps an informer's watchdog running when another informer sharing its timer stops", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    const inf = makeInformer({ watchdogMs: 300 });
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    const kc = api.kubeConfig();
    const other = new Informer<KubeObject>(kc, new ResourceClient<KubeObject>(kc, TYPE), {
      namespace: "ns",
      resyncMs: 0,
      logger: SILENT,
      watchdogMs: 300,
    });
    await other.start();
    other.stop();
    const aborted = inf.stats.watchdogAborts;
    await until(
      "the first informer's watchdog to abort its silent watch",
      () => inf.stats.watchdogAborts > aborted,
      3_000,
    );
  });

  it("gives up on a watch whose response never starts (a hung server) and relists", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    api.watchMode = "hang";
    const inf = makeInformer({ watchdogMs: 300 });
    await inf.start();
    await until("a relist after the hung watch", () => api.lists >= 2, 5_000);
    expect(inf.stats.watchFailures).to.be.greaterThan(0);
    expect(inf.synced).to.equal(true);
  });

  it("reports not synced after a failed relist and synced again after the next successful one", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    expect(inf.synced).to.equal(true);
    await until("a watch", () => api.watches.length === 1);
    api.listing = "fail";
    api.latest().res.destroy(); // the connection breaks: the informer relists, and that fails
    await until("synced to turn false", () => !inf.synced);
    expect(inf.stats.listFailures).to.be.greaterThan(0);
    expect(names(inf)).to.deep.equal(["a"]); // the cache is kept meanwhile
    api.listing = { items: [thing("a", 10), thing("b", 30)], resourceVersion: 30 };
    await until("synced to turn true", () => inf.synced, 10_000);
    expect(names(inf)).to.deep.equal(["a", "b"]);
  });

  it("keeps on a relist the objects it wrote after the list's snapshot (read-your-writes), and drops older ones", async () => {
    api.listing = { items: [thing("a", 10), thing("old", 5)], resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    inf.upsert(thing("mine", 15));
    inf.upsert(thing("a", 14));
    // A list taken at 12: it cannot show "mine" (15) yet, and shows "a" older than we know it; "old" is gone.
    api.listing = { items: [thing("a", 10)], resourceVersion: 12 };
    api.send("ERROR", { kind: "Status", code: 410, message: "too old resource version" });
    await until("the relist", () => api.lists === 2 && api.watches.length === 2);
    expect(names(inf)).to.deep.equal(["a", "mine"]);
    expect(inf.get("ns", "a")?.metadata.resourceVersion).to.equal("14");
    // A later list without "mine" means it is really gone.
    api.listing = { items: [thing("a", 16)], resourceVersion: 20 };
    api.send("ERROR", { kind: "Status", code: 410, message: "too old resource version" });
    await until("the second relist", () => api.lists === 3 && api.watches.length === 3);
    expect(names(inf)).to.deep.equal(["a"]);
  });

  it("does not bring back an object deleted meanwhile when a late write answer is upserted", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    // The patch removing the last finalizer answers with version 11; the watch reports the deletion (12) first.
    api.send("DELETED", thing("a", 12));
    await until("a dropped", () => inf.get("ns", "a") === undefined);
    inf.upsert(thing("a", 11));
    expect(inf.get("ns", "a")).to.equal(undefined);
    // A new object of the same name is newer than the deletion and is kept.
    inf.upsert(thing("a", 13));
    expect(inf.get("ns", "a")?.metadata.resourceVersion).to.equal("13");
    // remove() buries too: an older answer arriving after our own delete stays out.
    inf.remove(thing("a", 13));
    inf.upsert(thing("a", 13));
    expect(inf.get("ns", "a")).to.equal(undefined);
  });

  it("wakes handlers once per version: the watch's echo of a write already upserted is no change", async () => {
    api.listing = { items: [], resourceVersion: 10 };
    const inf = makeInformer();
    const seen: string[] = [];
    inf.on((kind, obj) => seen.push(`${kind} ${obj.metadata.name ?? ""}@${obj.metadata.resourceVersion ?? ""}`));
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    inf.upsert(thing("mine", 11));
    api.send("ADDED", thing("mine", 11));
    api.send("MODIFIED", thing("mine", 12));
    await until("the later version", () => inf.get("ns", "mine")?.metadata.resourceVersion === "12");
    inf.upsert(thing("mine", 12));
    expect(seen).to.deep.equal(["add mine@11", "update mine@12"]);
  });

  it("treats an HTTP 410 answer to the watch request as expiry, not as a failure", async () => {
    api.listing = { items: [thing("a", 10)], resourceVersion: 10 };
    const inf = makeInformer();
    await inf.start();
    await until("a watch", () => api.watches.length === 1);
    const { res } = api.latest();
    // The first watch was answered 200 already; make the next one answer 410 by ending this one.
    api.watchMode = "hang";
    res.end();
    await until("a second watch", () => api.watches.length === 2);
    api
      .latest()
      .res.writeHead(410, { "Content-Type": "application/json" })
      .end(JSON.stringify({ kind: "Status", code: 410, message: "too old resource version" }));
    await until("the relist", () => api.lists === 2);
    expect(inf.stats.expired).to.equal(1);
    expect(inf.stats.watchFailures).to.equal(0);
  });

  it("fails a request the server never answers with a RequestTimeoutError, instead of waiting forever", async () => {
    api.listing = "hang";
    const kc = api.kubeConfig();
    const client = new ResourceClient<KubeObject>(kc, TYPE, { requestTimeoutMs: 200 });
    const started = Date.now();
    let failure: unknown;
    try {
      await client.list("ns");
    } catch (err) {
      failure = err;
    }
    expect(failure).to.be.instanceOf(RequestTimeoutError);
    expect(Date.now() - started).to.be.lessThan(5_000);
  });
});
