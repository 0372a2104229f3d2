/**
 * Hostile admission: two controller processes with leader election and webhooks, as the Deployment runs
 * them, while for a minute the largest pools the API server stores are sent, several at a time, through the API
 * server (creates the webhook denies, updates it admits) and straight to the leader's webhook port as raw
 * AdmissionReviews, as any pod that reaches the port could send them (`curl -k`). Meanwhile the leader must keep its
 * Lease, claims created on a small pool of each kind must be bound, every hostile request must be answered (allowed,
 * denied, 413, or a 500 "busy" refusal) within the API server's webhook timeout, and a body over the limit must get
 * 413 without waiting for the validations in progress.
 *
 * The traffic runs once, in before(); each it() checks one of those promises against what was recorded, so a
 * failure names every promise broken. HOSTILE_ADMISSION_SECONDS sets how long the traffic lasts (default 60).
 *
 * Isolation: the webhook configurations select this suite's namespace by label and are deleted in after(); the
 * in-cluster entry for the cluster-scoped GlobalInClusterIPPool is left out (see scopedWebhookConfigurations).
 *
 * What the promises rest on, none of them a loosened bound: large reviews take their turn in order of arrival
 * (src/webhooks/slots.ts), so senders posting again at once cannot lock the API server's reviews out; the validation
 * worker refuses at once a job that could not finish by its deadline behind others, rather than stop it mid-job; the
 * controller compiles a newly admitted pool of the largest size in steps that let its event loop run
 * (src/ipam/steps.ts); the in-cluster webhooks read the stored pool's uid as metadata only. Every answer through the
 * API server counts as the webhooks' own: a write the API server fails for itself (a 504 from a loaded machine) fails
 * this suite too, with no allowance.
 *
 * It runs by default. The traffic lasts several lease durations, which is what the Lease promise needs; a shorter
 * HOSTILE_ADMISSION_SECONDS is for iterating only.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { AdmissionregistrationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import type { IPAddressClaim } from "../api/capi/types.js";
import { INCLUSTER_GROUP, INCLUSTER_VERSION, type InClusterIPPool } from "../api/incluster/types.js";
import { apiVersionOf, INCLUSTER_IPPOOL } from "../api/registry.js";
import type { KubeObject } from "../src/kube/resource.js";
import { GROUP, VERSION, type IPPool } from "../api/v1alpha1/types.js";
import { DEFAULT_MAX_BODY_BYTES, WEBHOOK_PATHS } from "../src/webhooks/server.js";
import { loopbackPki, writeCertDir } from "../src/webhooks/https.testutil.js";
import { freshNamespace, sharedCluster, usingExistingCluster } from "../hack/testkit/cluster.js";
import { deploymentNodeFlags, startControllerProcess, type ControllerProcess } from "../hack/testkit/controller.js";
import {
  admissionReview,
  apiServerCall,
  largeInClusterSpec,
  largeIPPoolSpec,
  postInsecure,
  recordLease,
  scopedWebhookConfigurations,
  type LeaseSample,
  type Timed,
} from "../hack/testkit/hostile.js";
import { addressClaim, claim, clients, pool, type Clients } from "../hack/testkit/ipam.js";
import { metricSample, scrapeMetrics } from "../hack/testkit/metrics.js";
import { claimPort } from "../hack/testkit/ports.js";
import { CONTROLLER_NAMESPACE, serviceAccountKubeconfigFile } from "../hack/testkit/serviceaccount.js";
import { eventually, sleep } from "../hack/testkit/wait.js";
import { inClusterClients, inClusterPool, ref, IN, type InClusterClients } from "../hack/testkit/incluster.js";

/** How long the hostile traffic lasts. */
const HOSTILE_MS = Number(process.env.HOSTILE_ADMISSION_SECONDS ?? "60") * 1_000;
/** The API server's wait for a webhook (`timeoutSeconds` of every shipped entry): the webhook's contract. */
const WEBHOOK_TIMEOUT_MS = 10_000;
/** The Deployment's lease duration (the controller's default): a Lease older than this is taken over. */
const LEASE_DURATION_MS = 15_000;
/**
 * JSON bytes of the large specs: the largest the API server stores (etcd refuses requests over 1.5 MiB) with the
 * object's metadata. before() checks that 3% more is refused.
 */
const IPPOOL_SPEC_BYTES = 1_540_000;
const INCLUSTER_SPEC_BYTES = 1_540_000;
/** Client-side deadline of one raw review: long enough to measure an answer that breaks the contract. */
const REQUEST_DEADLINE_MS = 30_000;
/** Client-side deadline of one write through the API server, which ends a request itself after 60 s. */
const API_DEADLINE_MS = 65_000;
/** Raw AdmissionReviews sent at once to the leader's port, besides one lane per kind through the API server. */
const RAW_LANES = 4;
/** Claims of each kind created during the traffic, evenly spaced. */
const CLAIMS = 5;
/** Longest wait from a claim's creation to its binding: the leader reconciles on, it does not stall. */
const BIND_MS = 30_000;

const SCOPE_LABEL = "e2e.ipam.metal3.io/hostile-admission";
const FIELD_MANAGER = "hostile-admission-e2e";
const JSON_TYPE = "application/json";
const JSON_PATCH = "application/json-patch+json";
const IPPOOL_KIND = { group: GROUP, version: VERSION, kind: "IPPool" };
const INCLUSTER_KIND = { group: INCLUSTER_GROUP, version: INCLUSTER_VERSION, kind: IN };
/** What the validation worker's refusals say (src/webhooks/offload.ts): a 500 that means "busy, retry". */
const BUSY = /retry later|did not finish within|validation worker|is stopping/;

/** How one hostile request ended. Anything but "failed" keeps the webhook's contract with the API server. */
type Outcome = "allowed" | "denied" | "busy" | "too large" | "failed";

interface Sent {
  lane: string;
  what: string;
  outcome: Outcome;
  ms: number;
  /** The status and the start of the message, for failures. */
  detail: string;
}

interface Replica {
  name: string;
  proc: ControllerProcess;
  metricsPort: number;
  webhookPort: number;
}

interface ClaimRecord {
  kind: string;
  name: string;
  createdAt: number;
  boundAt?: number;
  error?: string;
}

function messageOf(body: string): { message: string; response?: { allowed?: boolean; status?: { code?: number } } } {
  try {
    const json = JSON.parse(body) as {
      message?: string;
      response?: { allowed?: boolean; status?: { code?: number; message?: string } };
    };
    return { message: json.message ?? json.response?.status?.message ?? "", response: json.response };
  } catch {
    return { message: body.slice(0, 200) };
  }
}

/** A raw AdmissionReview's answer. */
function webhookOutcome(t: Timed): Outcome {
  if (t.error) return "failed";
  if (t.status === 413) return "too large";
  const { message, response } = messageOf(t.body);
  if (t.status !== 200 || !response) return "failed";
  if (response.allowed) return "allowed";
  const code = response.status?.code ?? 0;
  if (code >= 500) return BUSY.test(message) ? "busy" : "failed";
  return "denied";
}

/** The API server's answer to a write: admitted, or refused by the webhook (a webhook call that failed is not). */
function apiOutcome(t: Timed): Outcome {
  if (t.error) return "failed";
  if (t.status === 200 || t.status === 201) return "allowed";
  const { message } = messageOf(t.body);
  if (!message.includes("denied the request")) return "failed";
  if (t.status >= 500) return BUSY.test(message) ? "busy" : "failed";
  return "denied";
}

function detailOf(t: Timed): string {
  return `${t.status} ${t.error ?? messageOf(t.body).message.slice(0, 160)}`;
}

/** Counts and slowest answer per lane and outcome, one line each: the failure messages show it. */
function summary(sent: readonly Sent[]): string {
  const groups = new Map<string, { n: number; maxMs: number }>();
  for (const s of sent) {
    const key = `${s.lane} ${s.what} ${s.outcome}`;
    const g = groups.get(key) ?? { n: 0, maxMs: 0 };
    groups.set(key, { n: g.n + 1, maxMs: Math.max(g.maxMs, s.ms) });
  }
  return [...groups].map(([k, g]) => `${k}: ${g.n}, slowest ${(g.maxMs / 1000).toFixed(1)} s`).join("\n");
}

describe("hostile admission: the largest pools against two replicas' webhooks (controller processes)", function () {
  this.timeout(HOSTILE_MS + 240_000);
  const pki = loopbackPki();
  const configuration = `hostile-admission-${process.pid}`;
  let admin: KubeConfig;
  let c: Clients;
  let k: InClusterClients;
  let dir: string;
  let ns: string;
  let lease: string;
  const replicas: Replica[] = [];
  let leader: Replica;
  let follower: Replica;
  let leaderIdentity: string;
  const sent: Sent[] = [];
  const claims: ClaimRecord[] = [];
  let leaseSamples: LeaseSample[] = [];
  let tooLarge: Timed | undefined;
  /** The leader's longest event-loop delay between two scrapes of its /metrics, in seconds (NaN: no answer). */
  const loopLag: number[] = [];

  async function isLeader(r: Replica): Promise<boolean> {
    try {
      return metricSample(await scrapeMetrics(r.metricsPort), "metal3_ipam_leader") === 1;
    } catch {
      return false;
    }
  }

  function startReplica(name: string, kubeconfig: string, certDir: string): Promise<Replica> {
    return (async () => {
      const [metricsPort, webhookPort] = [await claimPort(), await claimPort()];
      const proc = startControllerProcess({
        name: `replica ${name}`,
        kubeconfigPath: kubeconfig,
        namespace: ns,
        logDir: dir,
        logName: `${name}.log`,
        logLevel: "warn",
        diagnosticsAddress: `127.0.0.1:${metricsPort}`,
        insecureDiagnostics: true,
        // The Deployment's heap settings: large reviews must fit in what a pod has.
        nodeFlags: deploymentNodeFlags(),
        flags: [
          "--leader-elect",
          `--leader-election-namespace=${CONTROLLER_NAMESPACE}`,
          `--leader-election-id=${lease}`,
          `--webhook-port=${webhookPort}`,
          `--webhook-cert-dir=${certDir}`,
        ],
      });
      const replica = { name, proc, metricsPort, webhookPort };
      replicas.push(replica);
      await proc.guard(
        eventually(
          `${name} to serve /metrics`,
          async () => (await scrapeMetrics(metricsPort)).includes("metal3_ipam_leader"),
          60_000,
          250,
        ),
      );
      return replica;
    })();
  }

  /** An InClusterIPPool of this suite's namespace, with its kind (the API server needs it; the webhook does not). */
  const icPool = (name: string, spec: InClusterIPPool["spec"]): InClusterIPPool => ({
    apiVersion: apiVersionOf(INCLUSTER_IPPOOL),
    kind: INCLUSTER_IPPOOL.kind,
    ...inClusterPool(ns, name, spec),
  });

  /** A create or JSON-patch of `path` with the test's field manager (one managed-fields entry, however many writes). */
  const write = (method: string, path: string, body: Buffer, type: string): Promise<Timed> =>
    apiServerCall(admin, method, `${path}?fieldManager=${FIELD_MANAGER}`, body, type, API_DEADLINE_MS);

  const replaceSpec = (spec: object): Buffer =>
    Buffer.from(JSON.stringify([{ op: "replace", path: "/spec", value: spec }]));

  /**
   * A create of a large object before the traffic (no webhook registered yet): a 504 from a loaded API server is
   * retried, and after one, 409 means the timed-out write was stored after all. Setup, not a promise under test.
   */
  async function storeLarge(path: string, body: Buffer): Promise<Timed> {
    for (let attempt = 1; ; attempt++) {
      const t = await write("POST", path, body, JSON_TYPE);
      if (t.status !== 504 || attempt === 5) return t;
    }
  }

  before(async function () {
    if (usingExistingCluster()) this.skip();
    admin = (await sharedCluster()).kubeConfig;
    c = clients(admin);
    k = inClusterClients(admin);
    dir = mkdtempSync(join(tmpdir(), "hostile-admission-"));
    ns = await freshNamespace(admin, "hostile");
    await admin
      .makeApiClient(CoreV1Api)
      .patchNamespace(
        { name: ns, body: { metadata: { labels: { [SCOPE_LABEL]: ns } } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    lease = `hostile-${ns}`;

    // The large pools that the updates change, stored before the webhooks are registered; 3% more is refused.
    const body = (o: KubeObject): Buffer => Buffer.from(JSON.stringify(o));
    const [ipPools, icPools] = [c.pools.collectionPath(ns), k.pools.collectionPath(ns)];
    for (const [path, object] of [
      [ipPools, pool(ns, "big", largeIPPoolSpec(IPPOOL_SPEC_BYTES))],
      [icPools, icPool("big", largeInClusterSpec(INCLUSTER_SPEC_BYTES))],
    ] as const) {
      const t = await storeLarge(path, body(object));
      expect(t.status, detailOf(t)).to.be.oneOf([201, 409]);
    }
    for (const [path, object] of [
      [ipPools, pool(ns, "over", largeIPPoolSpec(IPPOOL_SPEC_BYTES * 1.03))],
      [icPools, icPool("over", largeInClusterSpec(INCLUSTER_SPEC_BYTES * 1.03))],
    ] as const) {
      const t = await storeLarge(path, body(object));
      expect(messageOf(t.body).message, detailOf(t)).to.match(/too large/i);
    }

    // The claims' pools, valid, stored before the webhooks too: setup, not traffic.
    await c.pools.create(ns, pool(ns, "small", { pools: [{ subnet: "192.168.77.0/24" }] }));
    await k.pools.create(ns, icPool("small", { addresses: ["192.168.78.0/24"], prefix: 24 }));
    const kubeconfig = await serviceAccountKubeconfigFile(admin, dir);
    const certDir = writeCertDir(pki.serving, mkdtempSync(join(dir, "certs-")));
    const [a, b] = await Promise.all([startReplica("a", kubeconfig, certDir), startReplica("b", kubeconfig, certDir)]);
    leader = await eventually(
      "one leader",
      async () => {
        const flags = await Promise.all([isLeader(a), isLeader(b)]);
        return flags.filter(Boolean).length === 1 ? (flags[0] ? a : b) : undefined;
      },
      60_000,
      250,
    );
    follower = leader === a ? b : a;
    const leases = await recordLease(admin, CONTROLLER_NAMESPACE, lease, 0).stop();
    leaderIdentity = leases.find((s) => s.holder)?.holder ?? "";
    expect(leaderIdentity, "the Lease's holder").to.not.equal("");

    // The API server calls the leader: the replica whose event loop renews the Lease takes the hostile reviews.
    const configs = scopedWebhookConfigurations(
      configuration,
      `https://127.0.0.1:${leader.webhookPort}`,
      pki.ca.certPem,
      SCOPE_LABEL,
      ns,
    );
    const registration = admin.makeApiClient(AdmissionregistrationV1Api);
    await registration.createMutatingWebhookConfiguration({ body: configs.mutating });
    await registration.createValidatingWebhookConfiguration({ body: configs.validating });
    await eventually(
      "the webhooks to serve the namespace",
      async () => {
        const probe = pool(ns, "probe", { pools: [{ start: "10.0.0.9", end: "10.0.0.1" }] });
        const t = await apiServerCall(
          admin,
          "POST",
          `${ipPools}?dryRun=All`,
          Buffer.from(JSON.stringify(probe)),
          JSON_TYPE,
          10_000,
        );
        return messageOf(t.body).message.includes("denied the request");
      },
      60_000,
      250,
    );

    await hostileTraffic();
  });

  after(async () => {
    const registration = admin?.makeApiClient(AdmissionregistrationV1Api);
    await registration
      ?.deleteMutatingWebhookConfiguration({ name: `${configuration}-mutating` })
      .catch(() => undefined);
    await registration
      ?.deleteValidatingWebhookConfiguration({ name: `${configuration}-validating` })
      .catch(() => undefined);
    for (const r of replicas.splice(0)) await r.proc.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The minute of traffic: every lane until the deadline, the claims, the Lease readings, the oversized body. */
  async function hostileTraffic(): Promise<void> {
    const ipA = largeIPPoolSpec(IPPOOL_SPEC_BYTES);
    const ipB = largeIPPoolSpec(IPPOOL_SPEC_BYTES, 1);
    const icA = largeInClusterSpec(INCLUSTER_SPEC_BYTES);
    const icB = largeInClusterSpec(INCLUSTER_SPEC_BYTES, 1);
    const ipPools = c.pools.collectionPath(ns);
    const icPools = k.pools.collectionPath(ns);
    // Through the API server: creates denied for one error found after every item was read, updates admitted.
    const ipDenied = Buffer.from(JSON.stringify(pool(ns, "denied", largeIPPoolSpec(IPPOOL_SPEC_BYTES, 0, 1))));
    const icDenied = Buffer.from(
      JSON.stringify(icPool("denied", largeInClusterSpec(INCLUSTER_SPEC_BYTES, 0, "2001:db8::1"))),
    );
    const ipUpdates = [replaceSpec(ipB), replaceSpec(ipA)];
    const icUpdates = [replaceSpec(icB), replaceSpec(icA)];
    // Straight to the port: an object and its old version (the largest review the API server sends), and a create
    // with an error for every preallocation.
    const bigIP = (spec: ReturnType<typeof largeIPPoolSpec>): IPPool => pool(ns, "big", spec);
    const bigIC = (spec: InClusterIPPool["spec"]): InClusterIPPool => icPool("big", spec);
    const raw: Array<{ what: string; path: string; body: Buffer }> = [
      {
        what: "IPPool update",
        path: WEBHOOK_PATHS.validateIPPool,
        body: admissionReview("u1", IPPOOL_KIND, "UPDATE", bigIP(ipB), bigIP(ipA)),
      },
      {
        what: "IPPool create, every preallocation wrong",
        path: WEBHOOK_PATHS.validateIPPool,
        body: admissionReview("u2", IPPOOL_KIND, "CREATE", bigIP(largeIPPoolSpec(IPPOOL_SPEC_BYTES, 0, Infinity))),
      },
      {
        what: "InClusterIPPool update",
        path: WEBHOOK_PATHS.validateInClusterIPPool,
        body: admissionReview("u3", INCLUSTER_KIND, "UPDATE", bigIC(icB), bigIC(icA)),
      },
      {
        what: "InClusterIPPool create, wrong gateway",
        path: WEBHOOK_PATHS.validateInClusterIPPool,
        body: admissionReview(
          "u4",
          INCLUSTER_KIND,
          "CREATE",
          bigIC(largeInClusterSpec(INCLUSTER_SPEC_BYTES, 0, "2001:db8::1")),
        ),
      },
    ];
    for (const r of raw) expect(r.body.length, r.what).to.be.below(DEFAULT_MAX_BODY_BYTES);

    const until = Date.now() + HOSTILE_MS;
    const record = (lane: string, what: string, t: Timed, outcome: Outcome): void => {
      sent.push({ lane, what, outcome, ms: t.ms, detail: detailOf(t) });
    };
    const apiLane = async (lane: string, collection: string, denied: Buffer, updates: Buffer[]): Promise<void> => {
      for (let i = 0; Date.now() < until; i++) {
        const t =
          i % 2 === 0
            ? await write("POST", collection, denied, JSON_TYPE)
            : await write("PATCH", `${collection}/big`, updates[(i >> 1) % 2] ?? Buffer.alloc(0), JSON_PATCH);
        record(lane, i % 2 === 0 ? "create" : "update", t, apiOutcome(t));
      }
    };
    const rawLane = async (lane: number): Promise<void> => {
      for (let i = lane; Date.now() < until; i++) {
        const r = raw[i % raw.length];
        if (!r) continue;
        const t = await postInsecure(leader.webhookPort, r.path, r.body, REQUEST_DEADLINE_MS);
        record(`raw ${lane}`, r.what, t, webhookOutcome(t));
      }
    };
    const oversized = async (): Promise<void> => {
      await sleep(HOSTILE_MS / 2);
      const body = Buffer.alloc(DEFAULT_MAX_BODY_BYTES + 64 * 1024, " ");
      tooLarge = await postInsecure(leader.webhookPort, WEBHOOK_PATHS.validateIPPool, body, REQUEST_DEADLINE_MS);
    };

    const leaseRecorder = recordLease(admin, CONTROLLER_NAMESPACE, lease, 1_000);
    const lagging = (async () => {
      while (Date.now() < until) {
        const text = await scrapeMetrics(leader.metricsPort).catch(() => "");
        loopLag.push(metricSample(text, "metal3_ipam_nodejs_eventloop_lag_max_seconds") ?? NaN);
        await sleep(2_000);
      }
    })();
    const claiming = claimDuringTraffic(until);
    await Promise.all([
      apiLane("API IPPool", ipPools, ipDenied, ipUpdates),
      apiLane("API InClusterIPPool", icPools, icDenied, icUpdates),
      ...Array.from({ length: RAW_LANES }, (_, i) => rawLane(i)),
      oversized(),
    ]);
    leaseSamples = await leaseRecorder.stop();
    await lagging;
    await claiming;
  }

  /** Creates CLAIMS claims of each kind spread over the traffic, and notes when each is bound. */
  async function claimDuringTraffic(until: number): Promise<void> {
    const spacing = HOSTILE_MS / CLAIMS;
    const creating = (async () => {
      for (let i = 0; i < CLAIMS; i++) {
        await sleep(Math.max(0, until - HOSTILE_MS + i * spacing - Date.now()));
        for (const kind of ["IPClaim", "IPAddressClaim"]) {
          const rec: ClaimRecord = { kind, name: `during-${i}`, createdAt: Date.now() };
          try {
            if (kind === "IPClaim") await c.claims.create(ns, claim(ns, rec.name, "small"));
            else await k.claims.create(ns, addressClaim(ns, rec.name, ref(IN, "small")));
          } catch (err) {
            rec.error = err instanceof Error ? err.message : String(err);
          }
          claims.push(rec);
        }
      }
    })();
    // Bound: the claim names its address (status.address of an IPClaim, status.addressRef of an IPAddressClaim).
    const waiting = (): ClaimRecord[] => claims.filter((r) => !r.error && r.boundAt === undefined);
    while (Date.now() < until + BIND_MS && (Date.now() < until || waiting().length > 0)) {
      for (const r of waiting()) {
        const bound =
          r.kind === "IPClaim"
            ? (await c.claims.get(ns, r.name).catch(() => undefined))?.status?.address?.name
            : (await k.claims.get(ns, r.name).catch(() => undefined as IPAddressClaim | undefined))?.status?.addressRef
                ?.name;
        if (bound) r.boundAt = Date.now();
      }
      await sleep(500);
    }
    await creating;
  }

  it("answers every raw review within the webhook timeout, and the API server never fails calling the webhooks", () => {
    const report = summary(sent);
    expect(sent.length, report).to.be.greaterThan(0);
    // Through the API server the webhook's timeout is the API server's own: a webhook over it is "failed calling
    // webhook". The end-to-end time of such a write also counts the API server's own work on a 1.5 MB object.
    const failed = sent.filter((s) => s.outcome === "failed");
    expect(failed.map((s) => `${s.lane} ${s.what}: ${s.detail}`).slice(0, 5), report).to.deep.equal([]);
    const slow = sent.filter((s) => s.lane.startsWith("raw") && s.ms >= WEBHOOK_TIMEOUT_MS);
    expect(slow.map((s) => `${s.lane} ${s.what}: ${(s.ms / 1000).toFixed(1)} s`).slice(0, 5), report).to.deep.equal([]);
    // The traffic reached the validations: both paths saw pools admitted and pools denied.
    for (const path of ["API", "raw"]) {
      const outcomes = new Set(sent.filter((s) => s.lane.startsWith(path)).map((s) => s.outcome));
      expect([...outcomes], `${path}\n${report}`).to.include.members(["allowed", "denied"]);
    }
  });
  it("keeps the leader's Lease: the same holder throughout, renewed before it could expire", async () => {
    const read = leaseSamples.filter((s) => !s.error);
    const lags = `the leader's event-loop delays (s, every 2 s): ${loopLag.map((x) => x.toFixed(1)).join(" ")}`;
    const timeline = [
      lags,
      ...leaseSamples.map((s) => `${new Date(s.at).toISOString()} ${s.holder ?? s.error} ${s.renewTime ?? ""}`),
    ];
    expect(read.length, timeline.join("\n")).to.be.at.least(HOSTILE_MS / 1_000 / 2);
    expect([...new Set(read.map((s) => s.holder))], timeline.join("\n")).to.deep.equal([leaderIdentity]);
    const stale = read.filter((s) => s.at - Date.parse(s.renewTime ?? "") >= LEASE_DURATION_MS);
    expect(
      stale.map((s) => `${new Date(s.at).toISOString()} renewed ${s.renewTime}`),
      timeline.join("\n"),
    ).to.deep.equal([]);
    // Renewed every retry period (2 s): at least one new renewTime in two of those.
    expect(new Set(read.map((s) => s.renewTime)).size, timeline.join("\n")).to.be.at.least(HOSTILE_MS / 4_000);
    expect(await isLeader(leader)).to.equal(true);
    expect(await isLeader(follower)).to.equal(false);
  });

  it("binds the claims created during the traffic", () => {
    const lines = claims.map(
      (r) =>
        `${r.kind} ${r.name}: ${r.error ?? (r.boundAt === undefined ? "not bound" : `bound in ${((r.boundAt - r.createdAt) / 1000).toFixed(1)} s`)}`,
    );
    expect(claims).to.have.length(2 * CLAIMS);
    expect(
      claims.filter((r) => r.error || r.boundAt === undefined || r.boundAt - r.createdAt > BIND_MS),
      lines.join("\n"),
    ).to.deep.equal([]);
  });

  it("answers a body over the limit with 413 at once, while the large reviews are validated", () => {
    expect(tooLarge, "the oversized request was sent").to.not.equal(undefined);
    expect(tooLarge?.status, detailOf(tooLarge ?? { status: 0, body: "", ms: 0 })).to.equal(413);
    expect(tooLarge?.ms ?? Infinity).to.be.below(2_000);
  });
});
