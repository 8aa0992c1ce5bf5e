import type { BackfillRecord } from "./backfill-repository.ts";

export interface BackfillProgress {
  id: number;
  shop: string;
  status: BackfillRecord["status"];
  since: string | null;
  until: string | null;
  done: number;
  total: number | null;
  percent: number | null;
  /** Seconds left at the pace so far; null until there is a pace to measure. */
  etaSeconds: number | null;
  startedAt: string;
  completedAt: string | null;
  error: string | null;
  warnings: string[];
}

/** Without read_all_orders, Shopify's Admin API returns only the last 60 days of orders. */
export const RECENT_ORDERS_DAYS = 60;

export function sixtyDayWarning(scopes: string | null, since: string | null): string | null {
  if (scopes === null) return null;
  const granted = scopes.split(/[\s,]+/);
  if (granted.includes("read_all_orders")) return null;
  const limit = new Date(Date.now() - RECENT_ORDERS_DAYS * 86_400_000).toISOString().slice(0, 10);
  if (since && Date.parse(since) >= Date.parse(limit)) return null;
  return (
    `the app lacks read_all_orders: Shopify returns only orders from the last ${RECENT_ORDERS_DAYS} days, ` +
    `so orders created before ${limit} are not backfilled (they are not synced, nothing fails); ` +
    "grant read_all_orders and run the backfill again to include them"
  );
}

export function progressOf(
  record: BackfillRecord,
  options: { scopes?: string | null; now?: number } = {},
): BackfillProgress {
  const now = options.now ?? Date.now();
  const elapsed = (now - Date.parse(record.startedAt)) / 1000;
  const remaining = record.total === null ? null : Math.max(0, record.total - record.done);
  const etaSeconds =
    record.status === "completed"
      ? 0
      : remaining !== null && record.done > 0 && elapsed > 0
        ? Math.round(remaining / (record.done / elapsed))
        : null;
  const warning = sixtyDayWarning(options.scopes ?? null, record.since);
  return {
    id: record.id,
    shop: record.shop,
    status: record.status,
    since: record.since,
    until: record.until,
    done: record.done,
    total: record.total,
    percent:
      record.total === null
        ? null
        : record.total === 0
          ? 100
          : Math.min(100, Math.round((record.done / record.total) * 1000) / 10),
    etaSeconds,
    startedAt: record.startedAt,
    completedAt: record.completedAt,
    error: record.error,
    warnings: warning ? [warning] : [],
  };
}
