import { type LogLeak, scanLogs } from "../../helpers/log-scan.ts";
import { compareProjections, type ProjectionReport } from "../../helpers/order-projection.ts";
import {
  CHAOS_PROVIDER_SECRET,
  CHAOS_SHOPIFY_SECRET,
  Cluster,
  type ClusterOptions,
} from "./cluster.ts";
import { type DeliveryRecord, type DriveOptions, deliver } from "./driver.ts";
import { figures, publish, type ScenarioFigures } from "./figures.ts";
import type { Workload } from "./workload.ts";

export interface FaultContext {
  cluster: Cluster;
  /** Share of the events whose delivery has started, 0..1. */
  progress(): number;
  /** True once every event has been answered 200 (or given up). */
  done(): boolean;
  note(text: string): void;
  /** Records when something was done (a kill, a restart), for the failure report. */
  mark(text: string): void;
}

export interface ScenarioOptions {
  name: string;
  cluster: ClusterOptions;
  workload(shops: string[]): Workload;
  drive: Omit<DriveOptions, "beforeEach">;
  /** Runs alongside the load: kills, pauses, fault settings. */
  fault?(ctx: FaultContext): Promise<void>;
  /** Runs after the fault and before the cluster closes, for scenario-specific checks. */
  inspect?(cluster: Cluster, records: DeliveryRecord[]): Promise<void> | void;
  quiesceTimeoutMs?: number;
}

export interface ScenarioResult {
  figures: ScenarioFigures;
  report: ProjectionReport;
  records: DeliveryRecord[];
  leaks: LogLeak[];
  deadLetters: { orderId: string | null; reason: string; category: string }[];
  logs: { name: string; text: string }[];
  /** What the fault did and when (epoch ms), as the scenario marked it. */
  faultLog: { at: number; text: string }[];
}

/**
 * One chaos scenario end to end: start the processes, drive the webhooks while the fault runs,
 * wait until the sync queue is quiet, then compare the sandbox's orders with the expected
 * projection of every order and scan every process's log for customer data and secrets.
 */
export async function runScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const cluster = await Cluster.start(options.cluster);
  try {
    const workload = options.workload(cluster.shops.map((s) => s.shop));
    let started = 0;
    let finished = false;
    const notes: string[] = [];
    const faultLog: { at: number; text: string }[] = [];
    const faultDone = options.fault?.({
      cluster,
      progress: () => started / workload.events.length,
      done: () => finished,
      note: (text) => notes.push(text),
      mark: (text) => faultLog.push({ at: Date.now(), text }),
    });
    let records: DeliveryRecord[];
    try {
      records = await deliver(() => cluster.webUrl, CHAOS_SHOPIFY_SECRET, workload.events, {
        ...options.drive,
        beforeEach: () => {
          started++;
        },
      });
    } finally {
      finished = true;
    }
    await faultDone;
    await cluster.quiesce(options.quiesceTimeoutMs ?? 180_000);
    await options.inspect?.(cluster, records);
    const state = await cluster.sandboxState();
    const report = compareProjections(workload.models, state.orders);
    const counts = await cluster.jobCounts();
    const result = figures({
      scenario: options.name,
      records,
      report,
      state,
      minimumCalls: workload.minimumCalls,
      deadLettered: counts.deadLetters.length,
      startedAt,
      notes,
    });
    publish(result);
    explainFailures(report, records, faultLog, startedAt);
    const logs = cluster.connectorLogs();
    const leaks = scanLogs(
      logs.map((l) => ({ source: l.name, text: l.text })),
      [
        { kind: "shopify secret", value: CHAOS_SHOPIFY_SECRET },
        { kind: "provider secret", value: CHAOS_PROVIDER_SECRET },
        ...workload.models.flatMap((m) => (m.email ? [{ kind: "email", value: m.email }] : [])),
        { kind: "phone", value: "555-0100" },
      ],
    );
    return {
      figures: result,
      report,
      records,
      leaks,
      deadLetters: counts.deadLetters,
      logs,
      faultLog,
    };
  } finally {
    await cluster.close();
  }
}

/** For each order that came out wrong or lost: its deliveries and the faults, on one timeline. */
function explainFailures(
  report: ProjectionReport,
  records: DeliveryRecord[],
  faultLog: { at: number; text: string }[],
  startedAt: number,
) {
  const bad = new Set([...report.lost, ...report.wrong.map((w) => w.sourceOrderId)]);
  if (bad.size === 0) return;
  const t = (ms: number) => `+${((ms - startedAt) / 1000).toFixed(3)}s`;
  const lines = faultLog.map((f) => `  ${t(f.at)} fault: ${f.text}`);
  for (const r of records) {
    if (!bad.has(r.event.sourceOrderId)) continue;
    for (const a of r.timeline) {
      lines.push(
        `  ${t(a.sentAt)}→${t(a.at)} ${r.event.sourceOrderId} ${r.event.topic} ${r.event.webhookId}: ${a.code}`,
      );
    }
  }
  console.log(["why orders came out wrong or lost:", ...lines.sort()].join("\n"));
}

/**
 * The orders lost or left stale, except those explained by a Redis kill's replication window:
 * an order with an event answered 200 less than `windowMs` before the fault marked `fault`
 * (a write the killed master acknowledged and had not passed to its replica yet).
 */
export function damagedOutsideWindow(
  result: ScenarioResult,
  fault: (text: string) => boolean,
  windowMs: number,
): { damaged: string[]; unexplained: string[] } {
  const kill = result.faultLog.find((f) => fault(f.text))?.at ?? 0;
  const inWindow = (id: string) =>
    result.records.some(
      (r) =>
        r.event.sourceOrderId === id &&
        r.ackedAt !== null &&
        kill - r.ackedAt >= 0 &&
        kill - r.ackedAt < windowMs,
    );
  const damaged = [...result.report.lost, ...result.report.wrong.map((w) => w.sourceOrderId)];
  return { damaged, unexplained: damaged.filter((id) => !inWindow(id)) };
}
