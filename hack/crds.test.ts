import { expect } from "chai";
import yaml from "js-yaml";
import { isIPv4, isIPv6 } from "node:net";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import {
  CRD_BASES_DIR,
  CRD_KUSTOMIZATION,
  INCLUSTER_COMPONENT,
  INCLUSTER_CRD_DIR,
  INCLUSTER_CRD_LABELS,
  renderCrds,
} from "./crds.js";
import { DEFAULT_CONTROLLER_NAMESPACE } from "../api/install.js";
import { NETBOX_CRDS } from "../api/netbox/schema.js";
import { NETBOX_GROUP } from "../api/netbox/types.js";
import { GLOBAL_INCLUSTER_IPPOOL_CRD, INCLUSTER_CRDS, INCLUSTER_IPPOOL_CRD } from "../api/incluster/schema.js";
import { INCLUSTER_DEPRECATED_VERSION, INCLUSTER_GROUP, INCLUSTER_VERSION } from "../api/incluster/types.js";
import { CONVERSION_PATH } from "../src/webhooks/conversion.js";
import { GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL } from "../api/registry.js";
import type { CrdDefinition, JSONSchemaProps } from "../api/v1alpha1/schema.js";
import {
  CRDS,
  IP_ADDRESS_PATTERN,
  IPADDRESS_CRD,
  IPCLAIM_CRD,
  IPPOOL_CRD,
  IPV4_REGEX_SOURCE,
  IPV6_REGEX_SOURCE,
  SUBNET_PATTERN,
} from "../api/v1alpha1/schema.js";
import { CLUSTERCTL_LABEL, GROUP, PROVIDER_LABEL, PROVIDER_NAME } from "../api/v1alpha1/types.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const ip = new RegExp(IP_ADDRESS_PATTERN);
const subnet = new RegExp(SUBNET_PATTERN);
const ipv4Only = new RegExp(`^${IPV4_REGEX_SOURCE}$`);
const ipv6Only = new RegExp(`^${IPV6_REGEX_SOURCE}$`);

// ---------------------------------------------------------------------------------------------------------------
// Helpers: an independent IPv6 text checker (the oracle), a deterministic PRNG, and a small structural validator.
// ---------------------------------------------------------------------------------------------------------------

/** RFC 4291 §2.2 forms 1 and 2, by counting groups instead of by regular expression. */
function isIpv6TextOracle(s: string): boolean {
  const group = /^[0-9a-fA-F]{1,4}$/;
  const split = (h: string): string[] => (h === "" ? [] : h.split(":"));
  const halves = s.split("::");
  if (halves.length > 2) return false;
  if (halves.length === 1) {
    const groups = split(s);
    return groups.length === 8 && groups.every((g) => group.test(g));
  }
  const groups = [...split(halves[0] ?? ""), ...split(halves[1] ?? "")];
  return groups.length <= 7 && groups.every((g) => group.test(g));
}

/** Small deterministic linear congruential generator: the fuzz tests must be reproducible. */
function prng(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n: number): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return Math.floor((state / 2 ** 32) * n);
  };
}

/** A random IPv6 spelling: random groups, padding, case, and (usually) one compressed run. */
function randomIpv6(rand: (n: number) => number): string {
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) {
    let g = rand(3) === 0 ? "0" : rand(0x10000).toString(16);
    if (rand(4) === 0) g = g.padStart(4, "0");
    if (rand(3) === 0) g = g.toUpperCase();
    groups.push(g);
  }
  if (rand(5) === 0) return groups.join(":");
  const from = rand(8);
  const to = from + 1 + rand(8 - from);
  return `${groups.slice(0, from).join(":")}::${groups.slice(to).join(":")}`;
}

/** Breaks a string in one of several ways (most results are invalid, some stay valid). */
function mutate(s: string, rand: (n: number) => number): string {
  const at = rand(s.length + 1);
  const insert = [":", "::", "g", ".", "0", "12345", "%eth0", "1.2.3.4"];
  switch (rand(4)) {
    case 0:
      return s.slice(0, at) + s.slice(at + 1);
    case 1:
      return s.slice(0, at) + (insert[rand(insert.length)] ?? "") + s.slice(at);
    case 2:
      return `${s}:${rand(0x10000).toString(16)}`;
    default:
      return `${rand(0x10000).toString(16)}:${s}`;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function typeMatches(value: unknown, type: JSONSchemaProps["type"]): boolean {
  switch (type) {
    case "object":
      return isPlainObject(value);
    case "array":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
  }
}

/**
 * Validates like the API server's structural schema check (without CEL, formats or defaulting). Unknown fields are
 * reported too: the API server would prune them silently, which in a sample is always a mistake.
 */
function validate(value: unknown, schema: JSONSchemaProps, path: string): string[] {
  if (!typeMatches(value, schema.type)) return [`${path}: expected ${schema.type}`];
  const errors: string[] = [];
  if (typeof value === "string") {
    if (schema.enum && !schema.enum.includes(value)) errors.push(`${path}: not in enum`);
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) errors.push(`${path}: pattern mismatch`);
    if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${path}: too short`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) errors.push(`${path}: too long`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: below minimum`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${path}: above maximum`);
  }
  if (Array.isArray(value) && schema.items) {
    const items = schema.items;
    value.forEach((v, i) => errors.push(...validate(v, items, `${path}[${i}]`)));
  }
  if (isPlainObject(value)) errors.push(...validateObject(value, schema, path));
  return errors;
}

function validateObject(value: Record<string, unknown>, schema: JSONSchemaProps, path: string): string[] {
  const errors: string[] = [];
  for (const key of schema.required ?? []) {
    if (!(key in value)) errors.push(`${path}.${key}: required`);
  }
  if (!schema.properties && !schema.additionalProperties) return errors; // e.g. metadata: validated elsewhere
  for (const [key, v] of Object.entries(value)) {
    const sub = schema.properties?.[key] ?? schema.additionalProperties;
    if (sub) errors.push(...validate(v, sub, `${path}.${key}`));
    else errors.push(`${path}.${key}: unknown field`);
  }
  return errors;
}

/** Every schema node with its path and whether it sits under a list item (where transition rules are forbidden). */
function walk(
  schema: JSONSchemaProps,
  path: string,
  visit: (node: JSONSchemaProps, path: string, inList: boolean) => void,
  inList = false,
): void {
  visit(schema, path, inList);
  for (const [key, sub] of Object.entries(schema.properties ?? {})) walk(sub, `${path}.${key}`, visit, inList);
  if (schema.additionalProperties) walk(schema.additionalProperties, `${path}.*`, visit, inList);
  if (schema.items) walk(schema.items, `${path}[]`, visit, true);
}

function crdForKind(kind: unknown): CrdDefinition {
  const def = [...CRDS, ...NETBOX_CRDS].find((d) => d.kind === kind);
  if (!def) throw new Error(`no CRD for kind ${String(kind)}`);
  return def;
}

// ---------------------------------------------------------------------------------------------------------------

describe("api/v1alpha1 CRDs", () => {
  describe("generated files", () => {
    it("are up to date (run `npm run generate` if this fails)", async () => {
      for (const [relPath, expected] of renderCrds()) {
        let actual: string | undefined;
        try {
          actual = await readFile(join(repoRoot, relPath), "utf8");
        } catch {
          actual = undefined;
        }
        expect(actual, `${relPath} is missing: run \`npm run generate\``).to.be.a("string");
        expect(actual === expected, `${relPath} is stale: run \`npm run generate\` and commit the result`).to.equal(
          true,
        );
      }
    });

    it("leave no stale manifests of our group in config/crd/bases", async () => {
      const rendered = renderCrds();
      const names = await readdir(join(repoRoot, CRD_BASES_DIR));
      const ours = names.filter((n) => n.startsWith(`${GROUP}_`));
      for (const n of ours) {
        expect(rendered.has(`${CRD_BASES_DIR}/${n}`), `${n} is not generated: run \`npm run generate\``).to.equal(true);
      }
    });

    it("render deterministically", () => {
      expect([...renderCrds()]).to.deep.equal([...renderCrds()]);
    });

    it("carry the clusterctl and provider labels, names and subresources", () => {
      for (const [relPath, text] of renderCrds()) {
        if (!relPath.startsWith(CRD_BASES_DIR)) continue;
        expect(text.startsWith("# Code generated by `npm run generate`")).to.equal(true);
        const crd = yaml.load(text) as {
          metadata: { name: string; labels: Record<string, string> };
          spec: { names: { plural: string; kind: string }; versions: { subresources: object }[] };
        };
        // The NetBox pools are roots of a move, as the in-cluster pools are (hack/crds.ts NETBOX_CRD_LABELS).
        const netbox = relPath.includes(`/${NETBOX_GROUP}_`);
        expect(crd.metadata.labels).to.deep.equal({
          [CLUSTERCTL_LABEL]: "",
          [PROVIDER_LABEL]: PROVIDER_NAME,
          // Cluster API's provider-contract labels: contract version → our CRD versions implementing it.
          "cluster.x-k8s.io/v1beta1": "v1alpha1",
          "cluster.x-k8s.io/v1beta2": "v1alpha1",
          ...(netbox ? { [`${CLUSTERCTL_LABEL}/move-hierarchy`]: "" } : {}),
        });
        const group = netbox ? NETBOX_GROUP : GROUP;
        expect(crd.metadata.name).to.equal(`${crd.spec.names.plural}.${group}`);
        expect(relPath).to.equal(`${CRD_BASES_DIR}/${group}_${crd.spec.names.plural}.yaml`);
        const def = crdForKind(crd.spec.names.kind);
        expect(crd.spec.versions[0]?.subresources).to.deep.equal(def.statusSubresource ? { status: {} } : {});
      }
    });

    it("list every manifest in the kustomization", () => {
      const rendered = renderCrds();
      const kustomization = yaml.load(rendered.get("config/crd/kustomization.yaml") ?? "") as { resources: string[] };
      const bases = [...rendered.keys()].filter((k) => k.startsWith(CRD_BASES_DIR)).map((k) => k.slice(11));
      expect(kustomization.resources).to.deep.equal(bases);
    });
  });

  describe("metadata", () => {
    it("has the names of spec §1: exactly Metal3's eight short names per kind and its categories", () => {
      expect([IPPOOL_CRD.plural, IPPOOL_CRD.singular, IPPOOL_CRD.categories]).to.deep.equal([
        "ippools",
        "ippool",
        ["cluster-api"],
      ]);
      expect(IPPOOL_CRD.shortNames).to.deep.equal([
        "ipp",
        "ippool",
        "m3ipp",
        "m3ippool",
        "m3ippools",
        "metal3ipp",
        "metal3ippool",
        "metal3ippools",
      ]);
      expect([IPCLAIM_CRD.plural, IPCLAIM_CRD.singular, IPCLAIM_CRD.categories]).to.deep.equal([
        "ipclaims",
        "ipclaim",
        ["cluster-api"],
      ]);
      expect(IPCLAIM_CRD.shortNames).to.deep.equal([
        "ipc",
        "ipclaim",
        "m3ipc",
        "m3ipclaim",
        "m3ipclaims",
        "metal3ipc",
        "metal3ipclaim",
        "metal3ipclaims",
      ]);
      // Metal3 files IPAddress under `metal3`, not `cluster-api` (its kubebuilder marker says categories=metal3).
      expect([IPADDRESS_CRD.plural, IPADDRESS_CRD.singular, IPADDRESS_CRD.categories]).to.deep.equal([
        "ipaddresses",
        "ipaddress",
        ["metal3"],
      ]);
      expect(IPADDRESS_CRD.shortNames).to.deep.equal([
        "ipa",
        "ipaddress",
        "m3ipa",
        "m3ipaddress",
        "m3ipaddresses",
        "metal3ipa",
        "metal3ipaddress",
        "metal3ipaddresses",
      ]);
      expect(CRDS.map((d) => d.statusSubresource)).to.deep.equal([true, true, false]);
    });

    it("render the short names and categories into the manifests", () => {
      for (const def of CRDS) {
        const text = renderCrds().get(`${CRD_BASES_DIR}/${def.group}_${def.plural}.yaml`) ?? "";
        const crd = yaml.load(text) as { spec: { names: { shortNames: string[]; categories: string[] } } };
        expect(crd.spec.names.shortNames, def.kind).to.deep.equal(def.shortNames);
        expect(crd.spec.names.categories, def.kind).to.deep.equal(def.categories);
      }
    });

    it("has the printer columns", () => {
      expect(IPPOOL_CRD.printerColumns.map((c) => c.name)).to.deep.equal([
        "Cluster",
        "Strategy",
        "Total",
        "Used",
        "Free",
        "Age",
      ]);
      expect(IPCLAIM_CRD.printerColumns.map((c) => c.name)).to.deep.equal(["Pool", "Address", "Ready", "Error", "Age"]);
      expect(IPCLAIM_CRD.printerColumns.find((c) => c.name === "Error")?.priority).to.equal(1);
      expect(IPADDRESS_CRD.printerColumns.map((c) => c.name)).to.deep.equal(["Address", "Pool", "Claim", "Age"]);
    });
  });

  describe("schemas", () => {
    it("are structural and use only RE2-compatible patterns", () => {
      for (const def of CRDS) {
        walk(def.schema, def.kind, (node, path) => {
          expect(node.type, `${path} has no type`).to.be.a("string");
          if (node.pattern === undefined) return;
          expect(() => new RegExp(node.pattern ?? ""), path).not.to.throw();
          // RE2 (Go regexp) has no lookaround, backreferences or atomic groups.
          expect(node.pattern, path).not.to.match(/\(\?[=!<>]|\\[1-9]/);
        });
      }
    });

    it("put transition rules (oldSelf) only where the API server allows them", () => {
      const rules: string[] = [];
      for (const def of CRDS) {
        walk(def.schema, def.kind, (node, path, inList) => {
          for (const r of node["x-kubernetes-validations"] ?? []) {
            if (r.rule.includes("oldSelf")) expect(inList, `${path}: transition rule under a list`).to.equal(false);
            rules.push(`${path}: ${r.rule}`);
          }
        });
      }
      expect(rules).to.include("IPPool.spec.namePrefix: self == oldSelf");
      expect(rules).to.include("IPAddress.spec.address: self == oldSelf");
    });

    /** The transition rules of `def`, keyed by the path of the node that carries them. */
    function rulesByPath(def: CrdDefinition): Map<string, string[]> {
      const out = new Map<string, string[]>();
      walk(def.schema, def.kind, (node, path) => {
        const rules = (node["x-kubernetes-validations"] ?? []).map((r) => r.rule).filter((r) => r.includes("oldSelf"));
        if (rules.length > 0) out.set(path, rules);
      });
      return out;
    }

    it("make IPAddress immutable exactly where Metal3's webhook does: address, pool and claim only", () => {
      const rules = rulesByPath(IPADDRESS_CRD);
      // Nothing on spec as a whole, prefix, gateway or dnsServers: they may change, and a full update from a Go client
      // that omits a zero prefix or an empty list must never be refused.
      expect([...rules.keys()].sort()).to.deep.equal([
        "IPAddress.spec.address",
        "IPAddress.spec.claim",
        "IPAddress.spec.pool",
      ]);
      const pool = rules.get("IPAddress.spec.pool")?.join(" ") ?? "";
      const claim = rules.get("IPAddress.spec.claim")?.join(" ") ?? "";
      for (const f of ["name", "namespace", "kind"]) expect(pool, `pool.${f}`).to.include(`self.${f}`);
      for (const f of ["name", "namespace"]) expect(claim, `claim.${f}`).to.include(`self.${f}`);
      expect(claim).not.to.include("self.kind");
      for (const f of ["apiVersion", "uid", "resourceVersion", "fieldPath"])
        expect(pool + claim, f).not.to.include(`.${f}`);
    });

    it('compare references with absent and "" equal (Go clients omit empty strings)', () => {
      const refRules = [
        ...(rulesByPath(IPCLAIM_CRD).get("IPClaim.spec.pool") ?? []),
        ...(rulesByPath(IPADDRESS_CRD).get("IPAddress.spec.pool") ?? []),
        ...(rulesByPath(IPADDRESS_CRD).get("IPAddress.spec.claim") ?? []),
      ];
      expect(refRules).to.have.length(3);
      for (const rule of refRules) {
        expect(rule).not.to.equal("self == oldSelf");
        // Every field read from self or oldSelf is guarded by has(), with "" as the absent value.
        const reads = rule.match(/(?:old)?[sS]elf\.[a-zA-Z]+/g) ?? [];
        for (const read of new Set(reads)) expect(rule, read).to.include(`has(${read}) ? ${read} : ''`);
      }
    });

    it('allow "" as allocation strategy next to sequential and random', () => {
      const strategy = IPPOOL_CRD.schema.properties?.spec?.properties?.allocationStrategy;
      expect(strategy?.enum).to.have.members(["sequential", "random", ""]);
      expect(strategy?.default).to.equal("sequential");
    });

    it("add nothing to any spec beyond Metal3's fields", () => {
      const keys = (def: CrdDefinition): string[] => Object.keys(def.schema.properties?.spec?.properties ?? {});
      expect(keys(IPPOOL_CRD)).to.have.members([
        "allocationStrategy",
        "clusterName",
        "dnsServers",
        "gateway",
        "namePrefix",
        "pools",
        "preAllocations",
        "prefix",
      ]);
      expect(keys(IPCLAIM_CRD)).to.have.members(["pool"]);
      expect(keys(IPADDRESS_CRD)).to.have.members(["address", "claim", "dnsServers", "gateway", "pool", "prefix"]);
      const entry = IPPOOL_CRD.schema.properties?.spec?.properties?.pools?.items?.properties ?? {};
      expect(Object.keys(entry)).to.have.members(["dnsServers", "end", "gateway", "prefix", "start", "subnet"]);
    });

    it("accept Metal3-style objects, full object references included", () => {
      const pool = {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: "IPPool",
        metadata: { name: "p", namespace: "default" },
        spec: {
          clusterName: "c1",
          namePrefix: "p",
          pools: [{ start: "192.168.0.10", end: "192.168.0.15", subnet: "192.168.0.0/24", gateway: "192.168.0.1" }],
          prefix: 24,
          gateway: "192.168.1.1",
          dnsServers: ["8.8.8.8"],
          preAllocations: { "RenderedData-10": "192.168.0.9" },
        },
        status: { indexes: { "RenderedData-10": "192.168.0.9" }, lastUpdated: "2024-01-01T00:00:00Z" },
      };
      expect(validate(pool, IPPOOL_CRD.schema, "IPPool")).to.deep.equal([]);
      const ref = { apiVersion: `${GROUP}/v1alpha1`, kind: "IPPool", name: "p", namespace: "default", uid: "u" };
      const claim = { kind: "IPClaim", metadata: {}, spec: { pool: ref }, status: { address: { name: "a" } } };
      expect(validate(claim, IPCLAIM_CRD.schema, "IPClaim")).to.deep.equal([]);
      const address = {
        kind: "IPAddress",
        metadata: {},
        spec: { address: "2001:db8::5", prefix: 64, pool: ref, claim: { name: "c", kind: "IPClaim" } },
      };
      expect(validate(address, IPADDRESS_CRD.schema, "IPAddress")).to.deep.equal([]);
    });

    it("reject what spec §1 rules out", () => {
      const pool = (spec: object): string[] => validate({ spec }, IPPOOL_CRD.schema, "IPPool");
      expect(pool({})).to.deep.equal(["IPPool.spec.namePrefix: required"]);
      expect(pool({ namePrefix: "" })).to.deep.equal(["IPPool.spec.namePrefix: too short"]);
      expect(pool({ namePrefix: "p", allocationStrategy: "roundrobin" })).to.have.length(1);
      expect(pool({ namePrefix: "p", prefix: 129 })).to.have.length(1);
      expect(pool({ namePrefix: "p", pools: [{ subnet: "10.0.0.0/33" }] })).to.have.length(1);
      expect(pool({ namePrefix: "p", preAllocations: { a: "fe80::1%eth0" } })).to.have.length(1);
      expect(validate({ spec: { pool: {} } }, IPCLAIM_CRD.schema, "IPClaim")).to.deep.equal([
        "IPClaim.spec.pool.name: required",
      ]);
      expect(validate({ spec: { pool: { name: "p" } } }, IPADDRESS_CRD.schema, "IPAddress")).to.have.members([
        "IPAddress.spec.address: required",
        "IPAddress.spec.claim: required",
      ]);
    });
  });

  describe("address patterns", () => {
    const validV4 = ["0.0.0.0", "192.168.0.1", "10.0.0.255", "255.255.255.255", "1.2.3.4", "100.64.0.199"];
    const invalidV4 = ["256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.04", "1.2.3.-1", "1..2.3", " 1.2.3.4"];
    const validV6 = [
      "::",
      "::1",
      "1::",
      "2001:db8::5",
      "2001:db8::0005",
      "2001:DB8::A",
      "fe80::1",
      "2001:db8:0:0:0:0:0:1",
      "2001:0db8:0000:0000:0000:0000:0000:0001",
      "1:2:3:4:5:6:7:8",
      "1::2:3:4:5:6:7",
      "1:2:3:4:5:6:7::",
      "::2:3:4:5:6:7:8",
      "1:2:3::6:7:8",
      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    ];
    const invalidV6 = [
      "fe80::1%eth0",
      "::ffff:1.2.3.4",
      "::1.2.3.4",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3:4:5:6:7",
      "1:2:3:4:5:6::7:8",
      "1::2::3",
      ":::",
      "2001:db8:::1",
      "12345::1",
      "g::1",
      ":1:2:3:4:5:6:7",
      "1:2:3:4:5:6:7:",
      "[2001:db8::1]",
      "2001:db8::1/64",
      "",
    ];

    it("accept IPv4 dotted quads and reject the rest", () => {
      for (const a of validV4) expect(ip.test(a), a).to.equal(true);
      for (const a of invalidV4) expect(ip.test(a), a).to.equal(false);
    });

    it("accept IPv6 text in any valid spelling", () => {
      for (const a of validV6) expect(ip.test(a), a).to.equal(true);
    });

    it("reject IPv6 with zones, embedded IPv4 or wrong group counts", () => {
      for (const a of invalidV6) expect(ip.test(a), a).to.equal(false);
    });

    it("agree with an independent IPv6 checker and with node:net on random spellings", () => {
      const rand = prng(0x1ee7);
      let valid = 0;
      for (let i = 0; i < 20000; i++) {
        let s = randomIpv6(rand);
        if (rand(2) === 0) s = mutate(s, rand);
        const expected = isIpv6TextOracle(s);
        if (expected) valid++;
        expect(ipv6Only.test(s), s).to.equal(expected);
        if (!s.includes("%") && !s.includes(".")) expect(isIPv6(s), `node:net ${s}`).to.equal(expected);
      }
      expect(valid).to.be.greaterThan(5000); // both outcomes are well represented
      expect(valid).to.be.lessThan(19000);
    });

    it("agree with node:net on random IPv4 spellings", () => {
      const rand = prng(42);
      for (let i = 0; i < 5000; i++) {
        const parts: string[] = [];
        const n = 3 + rand(3);
        for (let p = 0; p < n; p++) parts.push(rand(6) === 0 ? `0${rand(100)}` : String(rand(300)));
        const s = parts.join(".");
        expect(ipv4Only.test(s), s).to.equal(isIPv4(s));
      }
    });

    it("accept subnets with /0..32 and /0..128", () => {
      const valid = ["192.168.0.0/24", "0.0.0.0/0", "10.0.0.1/32", "2001:db8::/64", "::/0", "::1/128", "fe80::/10"];
      for (const s of valid) expect(subnet.test(s), s).to.equal(true);
      // Metal3's pattern takes a two-digit IPv6 length with a leading zero; so do we, to accept what it accepts.
      expect(subnet.test("2001:db8::/05")).to.equal(true);
    });

    it("reject bad subnets", () => {
      const invalid = [
        "192.168.0.0",
        "192.168.0.0/",
        "192.168.0.0/33",
        "192.168.0.0/05",
        "256.0.0.0/8",
        "2001:db8::/129",
        "2001:db8::/0128",
        "fe80::%eth0/64",
        "::ffff:1.2.3.0/120",
        "2001:db8::",
        "192.168.0.0/24/24",
      ];
      for (const s of invalid) expect(subnet.test(s), s).to.equal(false);
    });

    it("do not accept subnets as addresses", () => {
      expect(ip.test("192.168.0.0/24")).to.equal(false);
      expect(ip.test("2001:db8::/64")).to.equal(false);
    });
  });

  describe("samples", () => {
    it("validate against the schemas and are listed in their kustomization", async () => {
      const dir = join(repoRoot, "config/samples");
      const kustomization = yaml.load(await readFile(join(dir, "kustomization.yaml"), "utf8")) as {
        resources: string[];
      };
      const files = (await readdir(dir)).filter((f) => f.startsWith("ipam_v1alpha1_"));
      expect(kustomization.resources).to.have.members(files);
      const claims: string[] = [];
      for (const f of files) {
        for (const doc of yaml.loadAll(await readFile(join(dir, f), "utf8"))) {
          if (!isPlainObject(doc)) continue;
          const def = crdForKind(doc.kind);
          expect(doc.apiVersion, f).to.equal(`${def.group}/${def.version}`);
          expect(validate(doc, def.schema, `${f}:${def.kind}`)).to.deep.equal([]);
          const meta = doc.metadata as { name: string; namespace?: string };
          expect(meta.namespace, f).to.equal("default");
          if (def.kind === "IPClaim") claims.push(meta.name);
          if (def.kind === "IPPool") expect((doc.spec as { clusterName?: string }).clusterName, f).to.equal(undefined);
        }
      }
      expect(claims).to.include("node-prealloc");
      expect(claims.filter((c) => c.startsWith("small-"))).to.have.length(4);
    });
  });
});

describe("the in-cluster provider's pool CRDs (optional component)", () => {
  const manifest = (def: CrdDefinition): Record<string, unknown> =>
    yaml.load(renderCrds().get(`${INCLUSTER_CRD_DIR}/${INCLUSTER_GROUP}_${def.plural}.yaml`) ?? "") as Record<
      string,
      unknown
    >;

  it("leave no stale manifests of the in-cluster group in their folder", async () => {
    const rendered = renderCrds();
    for (const n of (await readdir(join(repoRoot, INCLUSTER_CRD_DIR))).filter((f) => f.startsWith(INCLUSTER_GROUP))) {
      expect(rendered.has(`${INCLUSTER_CRD_DIR}/${n}`), `${n} is not generated: run \`npm run generate\``).to.equal(
        true,
      );
    }
  });

  it("ship as a component of their own, outside config/crd's kustomization and off by default", async () => {
    const rendered = renderCrds();
    const crdKustomization = yaml.load(rendered.get(CRD_KUSTOMIZATION) ?? "") as { resources: string[] };
    expect(crdKustomization.resources.filter((r) => r.startsWith(`bases/${INCLUSTER_GROUP}_`))).to.deep.equal([]);
    const own = yaml.load(rendered.get(`${INCLUSTER_CRD_DIR}/kustomization.yaml`) ?? "") as { resources: string[] };
    expect(own.resources).to.deep.equal(INCLUSTER_CRDS.map((d) => `${INCLUSTER_GROUP}_${d.plural}.yaml`));
    const component = yaml.load(rendered.get(INCLUSTER_COMPONENT) ?? "") as { kind: string; resources: string[] };
    expect(component).to.deep.include({ kind: "Component", resources: ["../../crd/incluster"] });
    const defaults = yaml.load(await readFile(join(repoRoot, "config/default/kustomization.yaml"), "utf8")) as {
      components?: unknown;
    };
    expect(defaults.components, "config/default enables the in-cluster CRDs").to.equal(undefined);
  });

  it("once the [INCLUSTER] lines of config/default are enabled, add both CRDs, unprefixed, with our provider label, conversion webhook and CA injection", function () {
    if (spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status !== 0) this.skip();
    type Obj = {
      kind: string;
      metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: { conversion?: { webhook?: { clientConfig?: { service?: unknown } } } };
    };
    const crdsOf = (dir: string): Obj[] =>
      (yaml.loadAll(execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8" })) as Obj[]).filter(
        (o) => o.kind === "CustomResourceDefinition",
      );
    const defaults = readFileSync(join(repoRoot, "config", "default", "kustomization.yaml"), "utf8");
    expect(crdsOf(join(repoRoot, "config", "default")).map((o) => o.metadata.name)).to.have.length(
      CRDS.length + NETBOX_CRDS.length,
    );
    const work = mkdtempSync(join(tmpdir(), "config-"));
    try {
      cpSync(join(repoRoot, "config"), work, { recursive: true });
      const enabled = defaults
        .replace(/^#(components:)$/m, "$1")
        .replace(/^#(\s+- \.\.\/components\/incluster)$/m, "$1");
      expect(enabled).to.not.equal(defaults);
      writeFileSync(join(work, "default", "kustomization.yaml"), enabled);
      const theirs = crdsOf(join(work, "default")).filter(
        (o) => o.metadata.name.split(".").slice(1).join(".") === INCLUSTER_GROUP,
      );
      expect(theirs.map((o) => o.metadata.name)).to.have.members(
        INCLUSTER_CRDS.map((d) => `${d.plural}.${INCLUSTER_GROUP}`),
      );
      for (const o of theirs) {
        expect(o.metadata.labels).to.deep.equal({ ...INCLUSTER_CRD_LABELS, [PROVIDER_LABEL]: PROVIDER_NAME });
        // The conversion webhook follows config/webhook's Service through namePrefix and namespace, and its CA comes
        // from cert-manager's serving certificate, as for the webhook configurations.
        expect(o.spec?.conversion?.webhook?.clientConfig?.service).to.deep.equal({
          name: "metal3-ipam-webhook-service",
          namespace: "metal3-ipam-system",
          path: CONVERSION_PATH,
        });
        expect(o.metadata.annotations).to.deep.equal({
          "cert-manager.io/inject-ca-from": "metal3-ipam-system/metal3-ipam-serving-cert",
        });
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it("carry the clusterctl labels the provider's CRDs carry, and no provider or contract label", () => {
    expect(INCLUSTER_CRD_LABELS).to.deep.equal({
      "clusterctl.cluster.x-k8s.io": "",
      "clusterctl.cluster.x-k8s.io/move-hierarchy": "",
    });
    for (const def of INCLUSTER_CRDS) {
      const crd = manifest(def) as { metadata: { name: string; labels: Record<string, string> } };
      expect(crd.metadata).to.deep.equal({ name: `${def.plural}.${INCLUSTER_GROUP}`, labels: INCLUSTER_CRD_LABELS });
    }
  });

  it("match the registry, the provider's names, scopes, category, columns and status subresource", () => {
    for (const [def, descriptor] of [
      [INCLUSTER_IPPOOL_CRD, INCLUSTER_IPPOOL],
      [GLOBAL_INCLUSTER_IPPOOL_CRD, GLOBAL_INCLUSTER_IPPOOL],
    ] as const) {
      const crd = manifest(def) as {
        spec: { names: Record<string, unknown>; scope: string; versions: Record<string, unknown>[] };
      };
      expect(crd.spec.names).to.deep.equal({
        categories: ["cluster-api"],
        kind: descriptor.kind,
        listKind: `${descriptor.kind}List`,
        plural: descriptor.plural,
        singular: descriptor.kind.toLowerCase(),
      });
      expect(crd.spec.scope).to.equal(descriptor.namespaced ? "Namespaced" : "Cluster");
      const version = crd.spec.versions.find((v) => v.name === INCLUSTER_VERSION);
      expect(crd.spec.versions.map((v) => v.name)).to.deep.equal([INCLUSTER_DEPRECATED_VERSION, INCLUSTER_VERSION]);
      expect(version).to.deep.include({ name: INCLUSTER_VERSION, served: true, storage: true });
      expect(version).to.not.have.any.keys("deprecated", "deprecationWarning");
      expect(version?.subresources).to.deep.equal({ status: {} });
      const columns = version?.additionalPrinterColumns as { name: string; jsonPath: string }[];
      expect(columns.map((c) => [c.name, c.jsonPath])).to.deep.equal([
        ["Addresses", ".spec.addresses"],
        ["Total", ".status.ipAddresses.total"],
        ["Free", ".status.ipAddresses.free"],
        ["Used", ".status.ipAddresses.used"],
      ]);
    }
    expect([INCLUSTER_IPPOOL.namespaced, GLOBAL_INCLUSTER_IPPOOL.namespaced]).to.deep.equal([true, false]);
  });

  it("serve the deprecated v1alpha1 (not stored, with a warning) with the provider's fields, converted by our webhook", () => {
    for (const def of INCLUSTER_CRDS) {
      const crd = manifest(def) as {
        spec: { versions: Record<string, unknown>[]; conversion: unknown };
      };
      const old = crd.spec.versions.find((v) => v.name === INCLUSTER_DEPRECATED_VERSION);
      expect(old).to.deep.include({ served: true, storage: false, deprecated: true, subresources: { status: {} } });
      expect(old?.deprecationWarning).to.be.a("string").and.include(`${INCLUSTER_GROUP}/${INCLUSTER_VERSION}`);
      const schema = (old?.schema as { openAPIV3Schema: JSONSchemaProps }).openAPIV3Schema;
      walk(schema, def.kind, (node, path) => expect(node.type, `${path} has no type`).to.be.a("string"));
      walk(schema, def.kind, (node, path) => expect(node.default, path).to.equal(undefined));
      const spec = schema.properties?.spec;
      expect(Object.keys(spec?.properties ?? {})).to.have.members([
        "addresses",
        "subnet",
        "start",
        "end",
        "prefix",
        "gateway",
      ]);
      expect(spec?.required).to.equal(undefined);
      expect(spec?.properties?.prefix).to.deep.include({ type: "integer", maximum: 128 });
      expect(schema.properties?.status).to.deep.equal(def.schema.properties?.status);
      expect(crd.spec.conversion).to.deep.equal({
        strategy: "Webhook",
        webhook: {
          clientConfig: { service: { name: "webhook-service", namespace: "system", path: CONVERSION_PATH } },
          conversionReviewVersions: ["v1"],
        },
      });
    }
  });

  it("have structural schemas with the provider's fields and bounds, and no defaults", () => {
    for (const def of INCLUSTER_CRDS) {
      walk(def.schema, def.kind, (node, path) => expect(node.type, `${path} has no type`).to.be.a("string"));
      const spec = def.schema.properties?.spec;
      expect(Object.keys(spec?.properties ?? {})).to.have.members([
        "addressReuseGracePeriodSeconds",
        "addresses",
        "allocateReservedIPAddresses",
        "excludedAddresses",
        "gateway",
        "prefix",
      ]);
      expect(spec?.required).to.deep.equal(["addresses", "prefix"]);
      expect(spec?.properties?.prefix).to.deep.include({ type: "integer", minimum: 0, maximum: 128 });
      expect(spec?.properties?.addressReuseGracePeriodSeconds).to.deep.include({ format: "int32", minimum: 0 });
      expect(spec?.properties?.allocateReservedIPAddresses?.type).to.equal("boolean");
      // No schema default anywhere, as in the provider's CRDs: objects read back are what was applied.
      walk(def.schema, def.kind, (node, path) => expect(node.default, path).to.equal(undefined));
      const counts = def.schema.properties?.status?.properties?.ipAddresses;
      expect(counts?.required).to.have.members(["free", "outOfRange", "total", "used"]);
    }
  });

  it("accept the provider's pools and refuse what its schema refuses (addresses are left to the webhook)", () => {
    const check = (spec: object): string[] => validate({ spec }, INCLUSTER_IPPOOL_CRD.schema, "InClusterIPPool");
    const pool = {
      apiVersion: `${INCLUSTER_GROUP}/${INCLUSTER_VERSION}`,
      kind: "GlobalInClusterIPPool",
      metadata: { name: "p" },
      spec: {
        addresses: ["10.0.0.10-10.0.0.20", "10.0.0.64/28", "10.0.0.5"],
        prefix: 24,
        gateway: "10.0.0.1",
        allocateReservedIPAddresses: false,
        excludedAddresses: ["10.0.0.12"],
        addressReuseGracePeriodSeconds: 60,
      },
      status: { ipAddresses: { total: 27, used: 1, free: 26, outOfRange: 0 } },
    };
    expect(validate(pool, GLOBAL_INCLUSTER_IPPOOL_CRD.schema, "GlobalInClusterIPPool")).to.deep.equal([]);
    expect(check({ addresses: ["garbage"], prefix: 0 })).to.deep.equal([]);
    expect(check({})).to.have.members([
      "InClusterIPPool.spec.addresses: required",
      "InClusterIPPool.spec.prefix: required",
    ]);
    expect(check({ addresses: [], prefix: 129 })).to.deep.equal(["InClusterIPPool.spec.prefix: above maximum"]);
    expect(check({ addresses: [], prefix: -1 })).to.deep.equal(["InClusterIPPool.spec.prefix: below minimum"]);
    expect(check({ addresses: [], prefix: 24, addressReuseGracePeriodSeconds: -1 })).to.deep.equal([
      "InClusterIPPool.spec.addressReuseGracePeriodSeconds: below minimum",
    ]);
  });
});

describe("config/default's namespace", () => {
  it("is the one the controller, the CLI and the generated RBAC assume when none is given", () => {
    const defaults = yaml.load(readFileSync(join(repoRoot, "config", "default", "kustomization.yaml"), "utf8")) as {
      namespace?: string;
    };
    expect(defaults.namespace).to.equal(DEFAULT_CONTROLLER_NAMESPACE);
  });
});
