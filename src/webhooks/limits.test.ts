/**
 * The pool webhooks refuse lists longer than MAX_ITEMS before validating anything, with the API server's own
 * `Too many` error, and take lists of exactly MAX_ITEMS.
 */
import { expect } from "chai";
import { silentLogger } from "../runtime/logger.js";
import type { AdmissionRequest, AdmissionResponse } from "./admission.js";
import { validateIPPoolRoute } from "./handlers.js";
import { validateInClusterIPPoolRoute } from "./incluster.js";
import { MAX_ITEMS } from "./limits.js";
import { staticLookup } from "./lookup.js";
import type { Route } from "./route.js";

function ten(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

function create(group: string, kind: string, spec: unknown): AdmissionRequest {
  return {
    uid: "uid-1",
    kind: { group, version: "v1", kind },
    operation: "CREATE",
    namespace: "ns",
    name: "big",
    object: { metadata: { name: "big", namespace: "ns" }, spec },
  };
}

function ipPool(spec: Record<string, unknown>): AdmissionRequest {
  return create("ipam.metal3.io", "IPPool", { namePrefix: "big", ...spec });
}

function inCluster(spec: Record<string, unknown>): AdmissionRequest {
  return create("ipam.cluster.x-k8s.io", "InClusterIPPool", { prefix: 8, ...spec });
}

async function run(route: Route, req: AdmissionRequest): Promise<AdmissionResponse> {
  return await route.handle(req, { lookup: staticLookup([]), logger: silentLogger() });
}

const TOO_MANY = MAX_ITEMS + 1;
const singles = (n: number): string[] => Array.from({ length: n }, (_, i) => ten(i + 1));

describe("admission limits", () => {
  it("IPPool: more entries, preallocations or DNS servers than the limit are refused as the API server does", async () => {
    const pools = Array.from({ length: TOO_MANY }, (_, i) => ({ start: ten(i + 1) }));
    const preAllocations = Object.fromEntries(singles(TOO_MANY).map((a, i) => [`c${i}`, a]));
    const res = await run(validateIPPoolRoute, ipPool({ pools, preAllocations, dnsServers: singles(TOO_MANY) }));
    expect(res.allowed).to.equal(false);
    expect(res.status?.code).to.equal(422);
    expect(res.status?.message).to.equal(
      'IPPool.ipam.metal3.io "big" is invalid: [' +
        `spec.pools: Too many: ${TOO_MANY}: must have at most ${MAX_ITEMS} items, ` +
        `spec.preAllocations: Too many: ${TOO_MANY}: must have at most ${MAX_ITEMS} items, ` +
        `spec.dnsServers: Too many: ${TOO_MANY}: must have at most ${MAX_ITEMS} items]`,
    );
    expect(res.status?.details?.causes?.[0]?.type).to.equal("FieldValueTooMany");
  });

  it("IPPool: an entry's DNS servers count too; exactly the limit of entries is validated", async () => {
    const res = await run(
      validateIPPoolRoute,
      ipPool({ pools: [{ subnet: "10.0.0.0/24", dnsServers: singles(TOO_MANY) }] }),
    );
    expect(res.status?.message).to.equal(
      `IPPool.ipam.metal3.io "big" is invalid: spec.pools[0].dnsServers: Too many: ${TOO_MANY}: must have at most ${MAX_ITEMS} items`,
    );
    const atLimit = Array.from({ length: MAX_ITEMS }, (_, i) => ({ start: ten(i * 2 + 1), end: ten(i * 2 + 1) }));
    expect((await run(validateIPPoolRoute, ipPool({ pools: atLimit }))).allowed).to.equal(true);
  });

  it("InClusterIPPool: more addresses or excluded addresses than the limit are refused", async () => {
    const res = await run(
      validateInClusterIPPoolRoute,
      inCluster({ addresses: singles(TOO_MANY), excludedAddresses: singles(TOO_MANY) }),
    );
    expect(res.status?.code).to.equal(422);
    expect(res.status?.message).to.equal(
      'InClusterIPPool.ipam.cluster.x-k8s.io "big" is invalid: [' +
        `spec.addresses: Too many: ${TOO_MANY}: must have at most ${MAX_ITEMS} items, ` +
        `spec.excludedAddresses: Too many: ${TOO_MANY}: must have at most ${MAX_ITEMS} items]`,
    );
    const atLimit = inCluster({ addresses: singles(MAX_ITEMS), excludedAddresses: singles(MAX_ITEMS) });
    expect((await run(validateInClusterIPPoolRoute, atLimit)).allowed).to.equal(true);
  });
});
