import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parser } from "@prometheus-io/lezer-promql";
import { Histogram, type Registry, Summary } from "prom-client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse as parseYaml } from "yaml";
import { shippedOrder } from "../helpers/orders.ts";
import { type Pipeline, startPipeline } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * The Grafana dashboard and the Prometheus alert rules name the connector's metrics and their
 * labels in PromQL. A metric renamed in src/metrics/ (or a label dropped) would leave a panel
 * empty and an alert that never fires, silently: every metric and label they use must be in
 * the registry of a running connector (the web and worker roles' metrics).
 */
const ROOT = resolve(import.meta.dirname, "../..");
const DASHBOARD = "monitoring/grafana/connector-dashboard.json";
const RULES = "monitoring/prometheus/connector-alerts.yml";

type SyntaxNode = ReturnType<typeof parser.parse>["topNode"];

/** Metric name → the label names its series carry. */
type Catalogue = Map<string, Set<string>>;

/** Every series name the registry exposes, a histogram's `_bucket`, `_sum` and `_count` too. */
function catalogueOf(registry: Registry): Catalogue {
  const catalogue: Catalogue = new Map();
  for (const metric of registry.getMetricsAsArray()) {
    const { name, labelNames = [] } = metric as unknown as { name: string; labelNames?: string[] };
    const labels = new Set(labelNames);
    if (metric instanceof Histogram) {
      catalogue.set(`${name}_bucket`, new Set([...labels, "le"]));
      catalogue.set(`${name}_sum`, labels);
      catalogue.set(`${name}_count`, labels);
    } else if (metric instanceof Summary) {
      catalogue.set(name, new Set([...labels, "quantile"]));
      catalogue.set(`${name}_sum`, labels);
      catalogue.set(`${name}_count`, labels);
    } else {
      catalogue.set(name, labels);
    }
  }
  return catalogue;
}

/** One PromQL expression, where it stands (a panel's title, an alert's name). */
interface Query {
  where: string;
  expr: string;
}

/** Grafana's own variables in a range: a duration to PromQL. */
const grafanaToPromql = (expr: string) =>
  expr.replaceAll(/\$__(rate_interval|interval|range)\b/g, "5m");

function dashboardQueries(dashboard: unknown): Query[] {
  const queries: Query[] = [];
  type Panel = { title?: string; targets?: { expr?: string }[]; panels?: Panel[] };
  const visit = (panels: Panel[] = []) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        if (target.expr) queries.push({ where: `panel "${panel.title}"`, expr: target.expr });
      }
      visit(panel.panels);
    }
  };
  const d = dashboard as {
    panels: Panel[];
    templating?: { list: { name: string; query?: unknown }[] };
  };
  visit(d.panels);
  // A query variable's `label_values(metric, label)` is a selector and a label too.
  for (const variable of d.templating?.list ?? []) {
    const text =
      typeof variable.query === "string"
        ? variable.query
        : ((variable.query as { query?: string } | undefined)?.query ?? "");
    const m = /^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(text.trim());
    if (m) {
      queries.push({ where: `variable $${variable.name}`, expr: `count by (${m[2]}) (${m[1]})` });
    }
  }
  return queries;
}

function ruleQueries(rules: unknown): Query[] {
  const doc = rules as { groups: { rules: { alert?: string; record?: string; expr: string }[] }[] };
  return doc.groups.flatMap((group) =>
    group.rules.map((rule) => ({
      where: `rule ${rule.alert ?? rule.record}`,
      expr: String(rule.expr),
    })),
  );
}

function childrenOf(node: SyntaxNode, name: string): SyntaxNode[] {
  const found: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) if (c.name === name) found.push(c);
  return found;
}

function descendants(node: SyntaxNode, name: string): SyntaxNode[] {
  const found: SyntaxNode[] = [];
  const cursor = node.cursor();
  const end = node.to;
  if (!cursor.firstChild()) return found;
  do {
    if (cursor.from >= end) break;
    if (cursor.name === name) found.push(cursor.node);
  } while (cursor.next() && cursor.from < end);
  return found;
}

/**
 * What one expression asks of the registry, read with the Prometheus project's own PromQL
 * grammar (@prometheus-io/lezer-promql): each selector's metric and the labels it matches on,
 * and each `by`/`on`/`ignoring`/`without` label with the metrics it groups.
 */
function driftOf(query: Query, catalogue: Catalogue): string[] {
  const text = grafanaToPromql(query.expr);
  const tree = parser.parse(text);
  const problems: string[] = [];
  let parseError = false;
  tree.iterate({
    enter: (n) => {
      if (n.type.isError) parseError = true;
    },
  });
  if (parseError) return [`${query.where}: PromQL does not parse: ${query.expr}`];
  const source = (n: SyntaxNode) => text.slice(n.from, n.to);
  const metricOf = (selector: SyntaxNode): string | undefined => {
    const identifier = childrenOf(selector, "Identifier")[0];
    if (identifier) return source(identifier);
    for (const matcher of descendants(selector, "UnquotedLabelMatcher")) {
      const label = childrenOf(matcher, "LabelName")[0];
      const value = childrenOf(matcher, "StringLiteral")[0];
      if (label && value && source(label) === "__name__") return JSON.parse(source(value));
    }
    return undefined;
  };
  for (const selector of descendants(tree.topNode, "VectorSelector")) {
    const metric = metricOf(selector);
    if (!metric) {
      problems.push(`${query.where}: a selector without a metric name: ${source(selector)}`);
      continue;
    }
    const labels = catalogue.get(metric);
    if (!labels) {
      problems.push(`${query.where}: no metric ${metric} in the registry`);
      continue;
    }
    for (const matcher of descendants(selector, "LabelName")) {
      const label = source(matcher);
      if (label !== "__name__" && !labels.has(label)) {
        problems.push(`${query.where}: ${metric} has no label ${label}`);
      }
    }
  }
  // by (…), without (…), on (…), ignoring (…): each label on some metric they group.
  for (const grouping of descendants(tree.topNode, "GroupingLabels")) {
    let scope = grouping.parent;
    while (scope && scope.name !== "AggregateExpr" && scope.name !== "BinaryExpr") {
      scope = scope.parent;
    }
    if (!scope) continue;
    const metrics = descendants(scope, "VectorSelector")
      .map(metricOf)
      .filter((m): m is string => m !== undefined);
    const known = new Set(metrics.flatMap((m) => [...(catalogue.get(m) ?? [])]));
    for (const name of descendants(grouping, "LabelName").map(source)) {
      if (!known.has(name)) {
        problems.push(`${query.where}: no metric of ${metrics.join(", ")} has the label ${name}`);
      }
    }
  }
  return problems;
}

const dashboard = () => JSON.parse(readFileSync(resolve(ROOT, DASHBOARD), "utf8")) as unknown;
const rules = () => parseYaml(readFileSync(resolve(ROOT, RULES), "utf8")) as unknown;

describe("the dashboard and the alert rules against the registry", { timeout: 60_000 }, () => {
  let pipeline: Pipeline;
  let catalogue: Catalogue;
  beforeAll(async () => {
    // A running connector's registry: the web app's scrape-time gauges and the worker's counters.
    pipeline = await startPipeline();
    catalogue = catalogueOf(pipeline.ctx.metrics.registry);
  });
  afterAll(async () => {
    await pipeline?.close();
  });

  it("names only metrics and labels the dashboard's connector exposes", () => {
    const queries = dashboardQueries(dashboard());
    expect(queries.length).toBeGreaterThanOrEqual(15);
    expect(queries.flatMap((q) => driftOf(q, catalogue))).toEqual([]);
  });

  it("names only metrics and labels in the alert rules the connector exposes", () => {
    const queries = ruleQueries(rules());
    expect(queries.map((q) => q.where)).toEqual(
      expect.arrayContaining([
        "rule ConnectorDeadLettersGrowing",
        "rule ConnectorProviderFailing",
        "rule ConnectorSyncLatencyHigh",
        "rule ConnectorStoreRateLimited",
        "rule ConnectorStoreWebhooksSilent",
        "rule ConnectorWebhookSubscriptionsFailing",
        "rule ConnectorShopifyTokenRefreshFailing",
        "rule ConnectorRoleHeartbeatMissing",
      ]),
    );
    expect(queries.flatMap((q) => driftOf(q, catalogue))).toEqual([]);
  });

  it("alerts on a provider outage with a selector that matches what the worker counts in one", async () => {
    const doc = rules() as { groups: { rules: { alert?: string; expr: string }[] }[] };
    const rule = doc.groups
      .flatMap((g) => g.rules)
      .find((r) => r.alert === "ConnectorProviderFailing");
    const failing = /connector_provider_requests_total\{status=~"([^"]+)"\}/.exec(rule?.expr ?? "");
    expect(failing, "ConnectorProviderFailing reads the failed provider requests").not.toBeNull();
    const matches = (status: string) => new RegExp(`^(?:${failing?.[1]})$`).test(status);
    // The provider answering 500 to everything: the statuses the worker counts then.
    pipeline.sandbox.setFaults({ errorRate: 1 });
    await pipeline.send(
      "orders/create",
      orderPayload(shippedOrder(5_593_001, { fulfillments: [] })),
    );
    const counted = async () => {
      const metric = await pipeline.ctx.metrics.registry
        .getSingleMetric("connector_provider_requests_total")
        ?.get();
      return (metric?.values ?? []).map((v) => String(v.labels.status));
    };
    await vi.waitFor(async () => expect(await counted()).toContain("500"), { timeout: 20_000 });
    pipeline.sandbox.setFaults({});
    expect((await counted()).filter((s) => s !== "200" && s !== "201").every(matches)).toBe(true);
    expect(["500", "502", "503", "error"].every(matches)).toBe(true);
    expect(["200", "201", "400", "404", "409", "429"].some(matches)).toBe(false);
  });

  it("gives every alert a summary and a description", () => {
    const doc = rules() as {
      groups: { rules: { alert: string; annotations?: Record<string, string> }[] }[];
    };
    for (const rule of doc.groups.flatMap((g) => g.rules)) {
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description?.length ?? 0, rule.alert).toBeGreaterThan(80);
    }
  });

  it("reports a renamed metric, a renamed label and a grouping by a missing label", () => {
    const renamed = JSON.stringify(dashboard())
      .replace("connector_dead_letters_total", "connector_dead_letter_total")
      .replace(
        "connector_store_budget_used_ratio{store=~",
        "connector_store_budget_used_ratio{shop=~",
      );
    const problems = dashboardQueries(JSON.parse(renamed)).flatMap((q) => driftOf(q, catalogue));
    expect(problems).toEqual(
      expect.arrayContaining([
        'panel "Dead letters by reason": no metric connector_dead_letter_total in the registry',
        'panel "Budget used per store": connector_store_budget_used_ratio has no label shop',
      ]),
    );
    expect(
      driftOf(
        { where: "rule X", expr: "sum by (shop) (rate(connector_sync_jobs_total[5m])) > 0" },
        catalogue,
      ),
    ).toEqual(["rule X: no metric of connector_sync_jobs_total has the label shop"]);
    expect(driftOf({ where: "rule Y", expr: "sum by (" }, catalogue)).toEqual([
      "rule Y: PromQL does not parse: sum by (",
    ]);
  });
});
