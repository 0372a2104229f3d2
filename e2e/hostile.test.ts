/**
 * Objects the CRD schemas admit when no webhook runs (not installed, or failing open), created through a real API
 * server and served by a controller in this process, which runs no webhooks. The plane is this suite's own: its
 * IPClaim CRD is ours relaxed to what Metal3's admits (`spec.pool` without a required, non-empty `name`), and its
 * IPAddressClaims are created at Cluster API's v1beta1, whose `poolRef` may carry an empty name, group or kind. Each
 * such object must be told what is wrong on itself (a Ready=False condition and a Warning Event), once; the controller
 * must never make a request for an empty name (every call to one object this process makes through ResourceClient is
 * recorded) nor fail its passes over and over (its log shows no failed reconcile); and valid claims created afterwards
 * in the same namespace must still be bound.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dump } from "js-yaml";
import type { IPAddressClaim } from "../api/capi/types.js";
import { apiVersionOf, CAPI_IPADDRESSCLAIM, IPCLAIM, IPPOOL, resourceType } from "../api/registry.js";
import type { Condition, IPClaim, IPPool } from "../api/v1alpha1/types.js";
import { ResourceClient, type KubeObject } from "../src/kube/resource.js";
import { CAPI_CRDS, freshNamespace, OUR_CRDS } from "../hack/testkit/cluster.js";
import { loadCrds } from "../hack/testkit/crds.js";
import { startObservedController, type LogCapture } from "../hack/testkit/faults.js";
import { addressOf, capiClients, claim, clients, pool, type Clients } from "../hack/testkit/ipam.js";
import { LocalPlane } from "../hack/testkit/plane.js";
import { consistently, eventually } from "../hack/testkit/wait.js";

/** Our CRDs with IPClaim's `spec.pool.name` neither required nor non-empty, as Metal3's CRD has it. */
function metal3LikeCrds(dir: string): void {
  for (const crd of loadCrds([OUR_CRDS])) {
    if (crd.spec.names.kind === IPCLAIM.kind) {
      for (const version of crd.spec.versions) {
        const ref = version.schema?.openAPIV3Schema?.properties?.spec?.properties?.pool;
        if (!ref?.properties?.name) throw new Error("the IPClaim CRD has no spec.pool.name");
        delete ref.required;
        delete ref.properties.name.minLength;
      }
    }
    writeFileSync(join(dir, `${crd.metadata?.name ?? "crd"}.yaml`), dump(crd));
  }
}

/** The ResourceClient methods that name one object (their second argument). */
const NAMED = ["get", "replace", "patch", "patchJson", "patchStatus", "delete"] as const;

/**
 * Records `<method> <plural>/<name>` of every call this process makes through ResourceClient to one object, the
 * controller's included, before any guard of the client sees it; `stop` puts the methods back. The API server's
 * own counters cannot show such calls: it reads `ippools/` as the collection (a GET lists it) or answers a bare
 * 404 page no counter labels (a PATCH).
 */
function recordNamedCalls(): { calls: string[]; stop: () => void } {
  const calls: string[] = [];
  const proto = ResourceClient.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = NAMED.map((method) => [method, proto[method]] as const);
  for (const [method, original] of originals) {
    if (!original) throw new Error(`ResourceClient has no method ${method}`);
    proto[method] = function (this: ResourceClient<KubeObject>, ...args: unknown[]) {
      calls.push(`${method} ${this.type.plural}/${String(args[1])}`);
      return original.apply(this, args);
    };
  }
  return {
    calls,
    stop: () => {
      for (const [method, original] of originals) if (original) proto[method] = original;
    },
  };
}

/** The Ready condition of a claim of either API (metav1 conditions in status.conditions), if written. */
function readyOf(obj: { status?: { conditions?: unknown[] } }): Condition | undefined {
  return (obj.status?.conditions as Condition[] | undefined)?.find((c) => c.type === "Ready");
}

/** Warning Events on object `name`: reason, message and count of each. */
async function warnings(
  c: Clients,
  ns: string,
  name: string,
): Promise<{ reason: string; message: string; count: number }[]> {
  const list = await c.core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` });
  return list.items
    .filter((e) => e.type === "Warning")
    .map((e) => ({ reason: e.reason ?? "", message: e.message ?? "", count: e.count ?? 1 }));
}

describe("objects the CRD schemas admit with the webhooks off", function () {
  this.timeout(300_000);
  let plane: LocalPlane | undefined;
  let crdDir = "";
  let ctl: { logs: LogCapture; stop: () => Promise<void> } | undefined;
  let named: ReturnType<typeof recordNamedCalls> | undefined;

  before(async () => {
    crdDir = mkdtempSync(join(tmpdir(), "hostile-crds-"));
    metal3LikeCrds(crdDir);
    plane = await LocalPlane.start({ crdDirs: [crdDir, CAPI_CRDS], controllerManager: false });
  });

  after(async () => {
    named?.stop();
    await ctl?.stop();
    await plane?.stop();
    if (crdDir) rmSync(crdDir, { recursive: true, force: true });
  });

  it("tells each object what is wrong, once, never asks for an empty name, and still binds valid claims", async () => {
    const kc = plane!.kubeConfig;
    const c = clients(kc);
    const capi = capiClients(kc);
    const capiV1beta1 = new ResourceClient<IPAddressClaim>(kc, resourceType(CAPI_IPADDRESSCLAIM, "v1beta1"));
    const ns = await freshNamespace(kc, "hostile");
    const make = <T extends KubeObject>(client: ResourceClient<T>, obj: unknown): Promise<T> =>
      client.create(ns, obj as T);

    await c.pools.create(ns, pool(ns, "good", { pools: [{ start: "10.0.0.1", end: "10.0.0.20" }], prefix: 24 }));
    await make(c.pools, {
      apiVersion: apiVersionOf(IPPOOL),
      kind: IPPOOL.kind,
      metadata: { name: "nospec", namespace: ns },
    });
    await c.pools.create(ns, pool(ns, "reversed", { pools: [{ start: "10.0.1.9", end: "10.0.1.1" }] }));
    named = recordNamedCalls();
    ctl = await startObservedController(kc, ns);

    const ipClaim = (name: string, spec: unknown, meta: object = {}): Promise<IPClaim> =>
      make(c.claims, {
        apiVersion: apiVersionOf(IPCLAIM),
        kind: IPCLAIM.kind,
        metadata: { name, namespace: ns, ...meta },
        ...(spec === undefined ? {} : { spec }),
      });
    const capiClaim = (name: string, poolRef: object): Promise<IPAddressClaim> =>
      make(capiV1beta1, {
        apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM, "v1beta1"),
        kind: CAPI_IPADDRESSCLAIM.kind,
        metadata: { name, namespace: ns },
        spec: { poolRef },
      });

    /** [claim API, name, expected Ready reason, expected message]. */
    const expected: ["IPClaim" | "IPAddressClaim", string, string, string][] = [
      ["IPClaim", "no-spec", "AllocationFailed", "spec is missing: the claim names no IPPool (spec.pool.name)"],
      ["IPClaim", "no-name", "AllocationFailed", "spec.pool.name is empty: the claim names no IPPool"],
      ["IPClaim", "empty-name", "AllocationFailed", "spec.pool.name is empty: the claim names no IPPool"],
      ["IPClaim", "absent-pool", "PoolNotFound", "IPPool absent not found"],
      [
        "IPClaim",
        "v6-in-v4",
        "AllocationFailed",
        "Requested IP 2001:db8::1 is out of bounds: it lies in no range of the pool",
      ],
      [
        "IPClaim",
        "of-nospec",
        "PoolNotReady",
        "IPPool nospec has no usable address range: spec is missing: the pool has no namePrefix and no address ranges",
      ],
      [
        "IPClaim",
        "of-reversed",
        "PoolNotReady",
        'IPPool reversed has no usable address range: spec.pools[0].end: Invalid value: "10.0.1.1": end is before start',
      ],
      [
        "IPAddressClaim",
        "capi-empty-name",
        "AllocationFailed",
        "spec.poolRef.name is empty: the claim names no IPPool",
      ],
      [
        "IPAddressClaim",
        "capi-no-group",
        "AllocationFailed",
        "spec.poolRef.apiGroup is empty: IPPool pools are in group ipam.metal3.io",
      ],
      [
        "IPAddressClaim",
        "capi-no-kind",
        "AllocationFailed",
        "spec.poolRef.kind is empty: set the kind of pool in group ipam.metal3.io to allocate from",
      ],
      ["IPAddressClaim", "capi-absent-pool", "PoolNotReady", "IPPool absent not found"],
    ];
    await ipClaim("no-spec", undefined);
    await ipClaim("no-name", { pool: {} });
    await ipClaim("empty-name", { pool: { name: "" } });
    await ipClaim("absent-pool", { pool: { name: "absent" } });
    await ipClaim("v6-in-v4", { pool: { name: "good" } }, { annotations: { ipAddress: "2001:db8::1" } });
    await ipClaim("of-nospec", { pool: { name: "nospec" } });
    await ipClaim("of-reversed", { pool: { name: "reversed" } });
    const ours = { apiGroup: "ipam.metal3.io", kind: "IPPool" };
    await capiClaim("capi-empty-name", { ...ours, name: "" });
    await capiClaim("capi-no-group", { kind: "IPPool", name: "good" });
    await capiClaim("capi-no-kind", { apiGroup: "ipam.metal3.io", kind: "", name: "good" });
    await capiClaim("capi-absent-pool", { ...ours, name: "absent" });
    // Another provider's claim with an empty name: not ours to judge.
    await capiClaim("capi-other", { apiGroup: "ipam.example.com", kind: "IPPool", name: "" });

    const getClaim = async (
      api: string,
      name: string,
    ): Promise<KubeObject & { status?: { conditions?: unknown[] } }> =>
      api === "IPClaim" ? await c.claims.get(ns, name) : await capi.claims.get(ns, name);
    for (const [api, name, reason, message] of expected) {
      const ready = await eventually(`${api} ${name} to say ${reason}`, async () => {
        const r = readyOf(await getClaim(api, name));
        return r?.reason === reason ? r : undefined;
      });
      expect({ name, status: ready.status, message: ready.message }).to.deep.equal({ name, status: "False", message });
      const events = await eventually(`a Warning Event on ${name}`, async () => {
        const list = await warnings(c, ns, name);
        return list.length > 0 ? list : undefined;
      });
      expect(events, name).to.deep.equal([{ reason, message, count: 1 }]);
    }
    for (const name of ["nospec", "reversed"]) {
      const p = await eventually(`IPPool ${name} to report InvalidSpec`, async () => {
        const got: IPPool = await c.pools.get(ns, name);
        return readyOf(got)?.reason === "InvalidSpec" ? got : undefined;
      });
      expect(readyOf(p)?.status).to.equal("False");
      expect((await warnings(c, ns, name)).map((e) => e.reason)).to.deep.equal(["InvalidSpec"]);
    }

    // Valid claims made afterwards in the same namespace are served; the claim of the absent pool waited, and binds
    // once the pool exists.
    await c.claims.create(ns, claim(ns, "valid", "good"));
    await capi.claims.create(ns, {
      apiVersion: apiVersionOf(CAPI_IPADDRESSCLAIM),
      kind: CAPI_IPADDRESSCLAIM.kind,
      metadata: { name: "capi-valid", namespace: ns },
      spec: { poolRef: { ...ours, name: "good" } },
    });
    expect(await eventually("valid claim bound", () => addressOf(c, ns, "valid"))).to.match(/^10\.0\.0\.\d+$/);
    await eventually(
      "capi-valid bound",
      async () => (await capi.claims.get(ns, "capi-valid")).status?.addressRef?.name,
    );
    await c.pools.create(ns, pool(ns, "absent", { pools: [{ start: "10.0.2.1", end: "10.0.2.5" }], prefix: 24 }));
    expect(await eventually("absent-pool bound", () => addressOf(c, ns, "absent-pool"))).to.equal("10.0.2.1");
    await eventually("capi-absent-pool bound", async () =>
      readyOf(await capi.claims.get(ns, "capi-absent-pool"))?.status === "True" ? true : undefined,
    );

    // Reported once: the failed claims are not written again while nothing about them changes.
    const stillFailing = expected.filter(([, name]) => !name.includes("absent"));
    const versions = async (): Promise<string[]> =>
      Promise.all(stillFailing.map(async ([api, name]) => (await getClaim(api, name)).metadata.resourceVersion ?? ""));
    const settled = await versions();
    await consistently(
      "failed claims left as they are",
      async () => (await versions()).join() === settled.join(),
      3_000,
    );
    for (const [, name] of stillFailing)
      expect(
        (await warnings(c, ns, name)).map((e) => e.count),
        name,
      ).to.deep.equal([1]);
    const other = await capi.claims.get(ns, "capi-other");
    expect(other.status, "another provider's claim").to.equal(undefined);
    expect(await warnings(c, ns, "capi-other")).to.deep.equal([]);

    // Never a call for an empty name (the old code read and patched `ippools/`), and no pass failed.
    expect(
      named.calls.filter((call) => call.endsWith("/")),
      "calls naming no object",
    ).to.deep.equal([]);
    expect(
      named.calls.some((call) => call.startsWith("patchStatus ipclaims/")),
      "calls were recorded",
    ).to.equal(true);
    expect(ctl.logs.matching("Reconcile failed; retrying with backoff")).to.deep.equal([]);
  });
});
