/**
 * The alerting rules as Prometheus reads them. config/prometheus/alerts.yaml (a PrometheusRule) is their one source;
 * Prometheus and promtool want a plain rules file, which is its `spec`.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dump, load } from "js-yaml";

/** One alerting rule as written in the PrometheusRule (recording rules are not used here). */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A PrometheusRule's `spec`: exactly the layout of a Prometheus rules file. */
export interface RuleFile {
  groups: { name: string; interval?: string; rules: AlertRule[] }[];
}

export const ALERTS_PATH = join("config", "prometheus", "alerts.yaml");
export const ALERT_TESTS_PATH = join("config", "prometheus", "test", "alerts.test.yaml");

/** Reads the PrometheusRule at `path` and returns its `spec`. Throws when it is not a PrometheusRule with groups. */
export function loadRuleFile(path: string): RuleFile {
  const doc = load(readFileSync(path, "utf8")) as { kind?: string; spec?: RuleFile } | null;
  if (doc?.kind !== "PrometheusRule" || !Array.isArray(doc.spec?.groups))
    throw new Error(`${path} is not a PrometheusRule with spec.groups`);
  return doc.spec;
}

/** Every alerting rule of `rules`, in file order. */
export function alertsOf(rules: RuleFile): AlertRule[] {
  return rules.groups.flatMap((g) => g.rules);
}

/** A copy of `rules` with each rule changed by `change` (which returns a new rule). */
export function mapAlerts(rules: RuleFile, change: (rule: AlertRule) => AlertRule): RuleFile {
  return { groups: rules.groups.map((g) => ({ ...g, rules: g.rules.map(change) })) };
}

/** Writes `rules` as `dir/rules.yaml` (the name the promtool test file refers to); returns the path. */
export function writeRuleFile(dir: string, rules: RuleFile): string {
  const path = join(dir, "rules.yaml");
  writeFileSync(path, dump(rules, { lineWidth: -1 }));
  return path;
}

/** Runs promtool with `args` in `cwd`; returns its exit code and combined output. */
export function promtool(binary: string, args: string[], cwd: string): { status: number | null; output: string } {
  const res = spawnSync(binary, args, { cwd, encoding: "utf8" });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

/** GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as dashes. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}
