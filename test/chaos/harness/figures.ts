import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ProjectionReport } from "../../helpers/order-projection.ts";
import type { SandboxSnapshot } from "./cluster.ts";
import { type DeliveryRecord, statusCounts } from "./driver.ts";
import { REPO_ROOT } from "./processes.ts";

export interface ScenarioFigures {
  scenario: string;
  orders: number;
  /** Distinct webhooks (copies of one delivery count once). */
  events: number;
  /** HTTP attempts, retries and copies included. */
  attempts: number;
  /** Distinct webhooks answered 200 at least once. */
  answered200: number;
  statuses: Record<string, number>;
  lost: number;
  duplicated: number;
  wrong: number;
  deadLettered: number;
  /** Provider requests that were answered (any status but 429), token requests excluded. */
  providerCalls: number;
  providerMinimum: number;
  provider429: number;
  /** Provider requests by method, route and status, e.g. "POST /orders/:id/fulfillments 500". */
  providerCallsByKind: Record<string, number>;
  faultsInjected: number;
  /**
   * Provider calls that were themselves a fault the sandbox injected (500s, timeouts, answers
   * dropped after the commit): each is a call by definition, whatever the client does.
   */
  faultedCalls: number;
  durationMs: number;
  notes: string[];
}

export function figures(input: {
  scenario: string;
  records: DeliveryRecord[];
  report: ProjectionReport;
  state: SandboxSnapshot;
  minimumCalls: number;
  deadLettered: number;
  startedAt: number;
  notes?: string[];
}): ScenarioFigures {
  const distinct = new Map<string, boolean>();
  for (const r of input.records) {
    const acked = r.statuses.includes(200);
    distinct.set(r.event.webhookId, (distinct.get(r.event.webhookId) ?? false) || acked);
  }
  const calls = input.state.arrivals.filter((a) => a.status !== 429).length;
  return {
    scenario: input.scenario,
    orders: input.report.orders,
    events: distinct.size,
    attempts: input.records.reduce((sum, r) => sum + r.attempts, 0),
    answered200: [...distinct.values()].filter(Boolean).length,
    statuses: statusCounts(input.records),
    lost: input.report.lost.length,
    duplicated: input.report.duplicated.length + input.report.unexpected.length,
    wrong: input.report.wrong.length,
    deadLettered: input.deadLettered,
    providerCalls: calls,
    providerMinimum: input.minimumCalls,
    provider429: input.state.arrivals.length - calls,
    providerCallsByKind: byKind(input.state.arrivals),
    faultsInjected: input.state.counters.faults,
    faultedCalls:
      input.state.counters.faultsByKind.error +
      input.state.counters.faultsByKind.slow +
      input.state.counters.faultsByKind.drop,
    durationMs: Date.now() - input.startedAt,
    notes: input.notes ?? [],
  };
}

/** Prints the scenario's figures and keeps them in `.chaos-results/` for RELIABILITY.md. */
export function publish(f: ScenarioFigures): void {
  const rows: [string, string][] = [
    ["orders", String(f.orders)],
    ["events sent (distinct webhooks)", String(f.events)],
    ["HTTP attempts (retries, copies)", String(f.attempts)],
    [
      "statuses",
      Object.entries(f.statuses)
        .map(([k, v]) => `${k === "0" ? "no answer" : k}: ${v}`)
        .join(", "),
    ],
    ["events answered 200", String(f.answered200)],
    ["orders lost", String(f.lost)],
    ["orders duplicated", String(f.duplicated)],
    ["orders wrong", String(f.wrong)],
    ["dead-lettered", String(f.deadLettered)],
    [
      "provider calls / minimum",
      `${f.providerCalls} / ${f.providerMinimum} (${(f.providerCalls / Math.max(1, f.providerMinimum)).toFixed(3)}×)`,
    ],
    ["provider 429s", String(f.provider429)],
    [
      "provider calls by kind",
      Object.entries(f.providerCallsByKind)
        .map(([k, v]) => `${k}: ${v}`)
        .join("; "),
    ],
    ["faults injected by the sandbox", String(f.faultsInjected)],
    [
      "calls beyond the faulted ones / minimum",
      `${f.providerCalls - f.faultedCalls} / ${f.providerMinimum} (${((f.providerCalls - f.faultedCalls) / Math.max(1, f.providerMinimum)).toFixed(3)}×)`,
    ],
    ["duration", `${(f.durationMs / 1000).toFixed(1)} s`],
    ...f.notes.map((n): [string, string] => ["note", n]),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(
    [`\n== chaos: ${f.scenario}`, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join("\n"),
  );
  const dir = process.env.CHAOS_RESULTS_DIR ?? join(REPO_ROOT, ".chaos-results");
  mkdirSync(dir, { recursive: true });
  const file = f.scenario.replace(/[^\w]+/g, "-").toLowerCase();
  writeFileSync(join(dir, `${file}.json`), `${JSON.stringify(f, null, 2)}\n`);
}

function byKind(arrivals: SandboxSnapshot["arrivals"]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of arrivals) {
    const route = a.path.replace(/^\/v1/, "").replace(/\/\d+/g, "/:id");
    const key = `${a.method} ${route} ${a.status}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}
