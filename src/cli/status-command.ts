import type { Command } from "commander";
import { withContext } from "../app/cli.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import { type ConnectorStatus, collectStatus } from "../ops/index.ts";
import { shopDomain, UnknownShopError } from "./arguments.ts";
import { printable } from "./table.ts";

export function formatDuration(ms: number | null): string {
  if (ms === null) return "-";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

const at = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());

/** The status as text: one section per concern, tables where rows repeat. */
export function formatStatus(status: ConnectorStatus): string {
  const out: string[] = [`status at ${status.generatedAt}`, "", "queues:"];
  const nameWidth = Math.max(0, ...status.queues.map((q) => q.name.length));
  for (const q of status.queues) {
    const c = q.counts;
    out.push(
      `  ${q.name.padEnd(nameWidth)} waiting ${(c.waiting ?? 0) + (c.prioritized ?? 0)}, active ${c.active ?? 0}, delayed ${c.delayed ?? 0}, failed ${c.failed ?? 0}; oldest pending ${q.oldestIsApproximate ? "≥ " : ""}${formatDuration(q.oldestPendingAgeMs)}`,
    );
  }
  out.push("", "shops:");
  if (status.shops.length === 0) out.push("  none registered");
  for (const s of status.shops) {
    const l = s.limiter;
    out.push(
      `  ${s.shop} (${s.status}${s.pausedReason ? `: ${s.pausedReason}` : ""}), provider store ${s.storeId ?? "-"}`,
      `    orders synced ${s.orders.synced}, failed ${s.orders.failed}, dead-lettered ${s.orders.deadLettered}; last sync ${s.lastSyncedAt ?? "never"}`,
      l
        ? `    budget: ${l.used}/${l.limit} used in the last ${l.windowMs / 1000}s, ${l.remaining} left${l.blockedUntil ? `, blocked until ${at(l.blockedUntil)} (429)` : ""}${l.waiting.live + l.waiting.bulk > 0 ? `; waiting for a slot: ${l.waiting.live} live, ${l.waiting.bulk} bulk` : ""}`
        : "    budget: no provider store configured",
      ...(s.subscriptionsError
        ? [
            `    webhook subscriptions failing: ${s.subscriptionsError} (retried at start-up and by the sweep)`,
          ]
        : []),
    );
  }
  out.push("", `dead letters: ${status.deadLetters.total}`);
  for (const [reason, n] of Object.entries(status.deadLetters.byReason)) {
    out.push(`  ${reason.padEnd(22)} ${n}`);
  }
  out.push("", "backfills:");
  if (status.backfills.length === 0) out.push("  none");
  for (const b of status.backfills) {
    out.push(
      `  #${b.id} ${b.shop} ${b.status}: ${b.done}${b.total !== null ? `/${b.total} (${b.percent}%)` : ""}${b.etaSeconds !== null ? `, about ${formatDuration(b.etaSeconds * 1000)} left` : ""}${b.error ? `; ${printable(b.error)}` : ""}`,
    );
  }
  return out.join("\n");
}

/** `connector status [--shop X] [--json]`. */
export function registerStatusCommand(program: Command, config: RuntimeConfig) {
  program
    .command("status")
    .description(
      "queues, provider budget per store, dead letters by reason, backfills, last successful sync",
    )
    .option("--shop <domain>", "only this shop", shopDomain)
    .option("--json", "print JSON")
    .action(async (opts: { shop?: string; json?: boolean }) => {
      const status = await withContext(config, async (ctx) => {
        // A filter on a shop the connector does not know would show "none registered".
        if (opts.shop && !(await ctx.shops.getShop(opts.shop))) {
          throw new UnknownShopError(opts.shop);
        }
        return collectStatus(ctx, { shop: opts.shop });
      });
      console.log(opts.json ? JSON.stringify(status, null, 2) : formatStatus(status));
    });
}
