/**
 * Reads the Grafana dashboard (config/grafana/metal3-ipam.json) the way a test needs it: every panel query and
 * template-variable query, with Grafana's variables replaced by the values they take when "All" is selected.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const DASHBOARD_PATH = join("config", "grafana", "metal3-ipam.json");

interface Target {
  refId?: string;
  expr?: string;
}

interface Panel {
  id?: number;
  type?: string;
  title?: string;
  targets?: Target[];
  panels?: Panel[];
  datasource?: { type?: string; uid?: string };
  gridPos?: { x: number; y: number; w: number; h: number };
}

interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
  allValue?: string;
}

/** The parts of a dashboard the tests read. */
export interface Dashboard {
  title: string;
  uid: string;
  panels: Panel[];
  templating?: { list?: Variable[] };
}

/** One PromQL query of a panel. */
export interface PanelQuery {
  panel: string;
  refId: string;
  expr: string;
}

export function loadDashboard(path: string): Dashboard {
  return JSON.parse(readFileSync(path, "utf8")) as Dashboard;
}

/** Every panel, rows' nested panels included. */
export function allPanels(dashboard: Dashboard): Panel[] {
  return dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** Every PromQL expression of every panel. */
export function panelQueries(dashboard: Dashboard): PanelQuery[] {
  return allPanels(dashboard).flatMap((p) =>
    (p.targets ?? [])
      .filter((t) => t.expr)
      .map((t) => ({ panel: p.title ?? `panel ${p.id ?? "?"}`, refId: t.refId ?? "?", expr: t.expr ?? "" })),
  );
}

/** The query of each `query` variable (e.g. `label_values(metric, label)`). */
export function variableQueries(dashboard: Dashboard): { name: string; query: string }[] {
  return (dashboard.templating?.list ?? [])
    .filter((v) => v.type === "query")
    .map((v) => ({ name: v.name, query: typeof v.query === "string" ? v.query : (v.query?.query ?? "") }));
}

/**
 * `expr` with Grafana's variables replaced: multi-value variables by their "All" value, `$__rate_interval` (and
 * `$__interval`, `$__range`) by `rateInterval`. Every `$name`, `${name}` and `[[name]]` form is replaced.
 */
export function substituteVariables(dashboard: Dashboard, expr: string, rateInterval: string): string {
  const values = new Map<string, string>([
    ["__rate_interval", rateInterval],
    ["__interval", rateInterval],
    ["__range", rateInterval],
  ]);
  for (const v of dashboard.templating?.list ?? []) if (v.allValue !== undefined) values.set(v.name, v.allValue);
  return expr.replace(
    /\$\{(\w+)\}|\[\[(\w+)\]\]|\$(\w+)/g,
    (whole, a?: string, b?: string, c?: string) => values.get(a ?? b ?? c ?? "") ?? whole,
  );
}

/** `label_values(selector, label)` as a PromQL query that has a result exactly when the variable has values. */
export function labelValuesAsQuery(query: string): string | undefined {
  const m = /^label_values\((.+),\s*(\w+)\)$/.exec(query.trim());
  return m ? `count by (${m[2]}) (${m[1]})` : undefined;
}
