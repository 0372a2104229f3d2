/**
 * The alerting rules and the Prometheus Operator manifests, checked by the real tools: promtool (built from Go modules
 * by `npm run binaries`) validates the rules and runs the unit tests of config/prometheus/test; mutated rules
 * prove that those tests catch an alert that always fires or never does; kubectl renders the kustomizations.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { loadAll } from "js-yaml";
import { resolveCachedTool } from "../testkit/binaries.js";
import { repoRoot } from "../testkit/cluster.js";
import {
  ALERT_TESTS_PATH,
  ALERTS_PATH,
  alertsOf,
  headingAnchor,
  loadRuleFile,
  mapAlerts,
  promtool,
  writeRuleFile,
  type RuleFile,
} from "./rules.js";

const REQUIRED = [
  "Metal3IPAMPoolNearlyFull",
  "Metal3IPAMPoolExhausted",
  "Metal3IPAMClaimsPending",
  "Metal3IPAMNetBoxDrift",
  "Metal3IPAMReconcileErrors",
  "Metal3IPAMNoLeader",
  "Metal3IPAMWebhookCertificateExpiring",
];
const POOL_ALERTS = [
  "Metal3IPAMPoolNearlyFull",
  "Metal3IPAMPoolExhausted",
  "Metal3IPAMClaimsPending",
  "Metal3IPAMNetBoxDrift",
];

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

/** `rules` and the promtool unit tests side by side in a fresh folder; returns the folder. */
function testFolder(rules: RuleFile): string {
  const dir = mkdtempSync(join(tmpdir(), "alerts-"));
  writeRuleFile(dir, rules);
  copyFileSync(join(repoRoot, ALERT_TESTS_PATH), join(dir, "alerts.test.yaml"));
  return dir;
}

function kustomize(dir: string): K8sObject[] {
  return loadAll(execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8" })) as K8sObject[];
}

describe("alerting rules (promtool) and Prometheus Operator manifests", function () {
  this.timeout(120_000);
  const rules = loadRuleFile(join(repoRoot, ALERTS_PATH));
  let tool = "";
  const dirs: string[] = [];
  const folder = (r: RuleFile): string => {
    const dir = testFolder(r);
    dirs.push(dir);
    return dir;
  };

  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("has the required alerts, each with a summary, a description naming the namespace (and pool) and a runbook section", () => {
    const alerts = alertsOf(rules);
    expect(alerts.map((a) => a.alert)).to.include.members(REQUIRED);
    const anchors = new Set(
      readFileSync(join(repoRoot, "docs", "runbooks.md"), "utf8")
        .split("\n")
        .filter((l) => l.startsWith("## "))
        .map((l) => headingAnchor(l.slice(3))),
    );
    for (const a of alerts) {
      const notes = a.annotations ?? {};
      expect(notes.summary, a.alert).to.be.a("string").and.not.equal("");
      expect(notes.description, a.alert).to.include("$labels.namespace");
      if (POOL_ALERTS.includes(a.alert))
        expect(`${notes.summary ?? ""} ${notes.description ?? ""}`, a.alert).to.include("$labels.pool");
      const anchor = /docs\/runbooks\.md#(.+)$/.exec(notes.runbook_url ?? "")?.[1];
      expect(anchor, `${a.alert} runbook_url`).to.equal(a.alert.toLowerCase());
      expect(anchors.has(anchor ?? ""), `docs/runbooks.md has a section for ${a.alert}`).to.equal(true);
      expect(a.labels?.severity, a.alert).to.be.oneOf(["warning", "critical"]);
    }
  });

  describe("promtool", () => {
    before(async () => {
      tool = await resolveCachedTool("promtool");
    });

    it("passes `promtool check rules`", () => {
      const dir = folder(rules);
      const res = promtool(tool, ["check", "rules", "rules.yaml"], dir);
      expect(res.output).to.include(`SUCCESS: ${alertsOf(rules).length} rules found`);
      expect(res.status).to.equal(0);
    });

    it("passes its `promtool test rules` unit tests", () => {
      const res = promtool(tool, ["test", "rules", "alerts.test.yaml"], folder(rules));
      expect(res.output).to.include("SUCCESS");
      expect(res.status, res.output).to.equal(0);
    });

    it("has unit tests that catch each alert firing when it should not, and staying silent when it should fire", () => {
      for (const name of alertsOf(rules).map((a) => a.alert)) {
        for (const [what, expr] of [
          ["always fires", "vector(1)"],
          ["never fires", "vector(1) < 0"],
        ] as const) {
          const mutated = mapAlerts(rules, (r) => (r.alert === name ? { ...r, expr, for: "0s" } : r));
          const res = promtool(tool, ["test", "rules", "alerts.test.yaml"], folder(mutated));
          expect(res.status, `${name} mutated to "${what}" still passes the unit tests`).to.not.equal(0);
          expect(res.output).to.include(name);
        }
      }
    });
  });

  describe("kustomize", function () {
    before(function () {
      if (spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status !== 0) this.skip();
    });

    it("config/prometheus renders the ServiceMonitor and the PrometheusRule whose spec the tests use", () => {
      const objs = kustomize(join(repoRoot, "config", "prometheus"));
      expect(objs.map((o) => o.kind).sort()).to.deep.equal(["PrometheusRule", "ServiceMonitor"]);
      expect(objs.find((o) => o.kind === "PrometheusRule")?.spec).to.deep.equal(rules);
    });

    it("is off in config/default, and once enabled its ServiceMonitor selects the metrics Service and port, honouring pool labels, over HTTPS with a token that metrics-reader authorizes", () => {
      const defaults = readFileSync(join(repoRoot, "config", "default", "kustomization.yaml"), "utf8");
      expect(defaults).to.match(/^\s*#\s*- \.\.\/prometheus\s*$/m);
      expect(kustomize(join(repoRoot, "config", "default")).map((o) => o.kind)).to.not.include("ServiceMonitor");
      const work = mkdtempSync(join(tmpdir(), "config-"));
      dirs.push(work);
      cpSync(join(repoRoot, "config"), work, { recursive: true });
      writeFileSync(
        join(work, "default", "kustomization.yaml"),
        defaults.replace(/^(\s*)#\s*(- \.\.\/prometheus)\s*$/m, "$1$2"),
      );
      const objs = kustomize(join(work, "default"));
      const monitor = objs.find((o) => o.kind === "ServiceMonitor");
      const service = objs.find((o) => o.kind === "Service" && o.metadata.name.endsWith("metrics-service"));
      expect(monitor?.metadata.namespace).to.equal(service?.metadata.namespace).and.equal("metal3-ipam-system");
      const spec = monitor?.spec as {
        selector: { matchLabels: Record<string, string> };
        endpoints: { port: string; honorLabels?: boolean; scheme?: string; bearerTokenFile?: string }[];
      };
      for (const [k, v] of Object.entries(spec.selector.matchLabels))
        expect(service?.metadata.labels?.[k], k).to.equal(v);
      const ports = (service?.spec as { ports: { name: string }[] }).ports.map((p) => p.name);
      expect(ports).to.include(spec.endpoints[0]?.port);
      expect(spec.endpoints[0]?.honorLabels).to.equal(true);
      expect(spec.endpoints[0]).to.deep.include({
        scheme: "https",
        bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
        tlsConfig: { insecureSkipVerify: true },
      });
      const reader = objs.find((o) => o.kind === "ClusterRole" && o.metadata.name === "metal3-ipam-metrics-reader");
      expect((reader as { rules?: unknown } | undefined)?.rules).to.deep.equal([
        { nonResourceURLs: ["/metrics"], verbs: ["get"] },
      ]);
      expect(objs.find((o) => o.kind === "PrometheusRule")?.metadata.namespace).to.equal("metal3-ipam-system");
    });
  });
});
