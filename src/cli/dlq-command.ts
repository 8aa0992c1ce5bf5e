import type { Command } from "commander";
import { withContext } from "../app/cli.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import type {
  BulkRetryProgress,
  BulkRetryReport,
  DeadLetterEntry,
  DeadLetterSummary,
} from "../engine/dead-letters.ts";
import { createDeadLetters } from "../ops/index.ts";
import { failureCategory, reasonText, requireShop, shopDomain, wholeNumber } from "./arguments.ts";
import { refuse } from "./errors.ts";
import { progress } from "./progress.ts";
import { formatTable, printable } from "./table.ts";

const clip = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max - 1)}…` : text;

function row(e: DeadLetterSummary) {
  return {
    id: e.id,
    shop: e.shop,
    order: e.orderId ?? "(payload)",
    topic: e.topic ?? "",
    reason: e.category,
    status: e.status ?? "",
    attempts: e.attempts,
    lastFailedAt: e.lastFailedAt,
    message: e.reason,
  };
}

function describeEntry(e: DeadLetterEntry): string {
  const lines = [
    `${e.id}`,
    `  shop ${e.shop}, ${e.orderId ? `order ${e.orderId}` : "webhook payload (no order)"}, topic ${e.topic ?? "-"}`,
    `  reason: ${e.category}: ${printable(e.reason)}`,
    `  error class: ${e.errorClass}`,
    `  attempts ${e.attempts}, retried by an operator ${e.retries ?? 0} time(s)`,
    `  first failed ${e.firstFailedAt}, last failed ${e.lastFailedAt}`,
    ...(e.fields?.length
      ? [
          "  fields:",
          ...e.fields.map(
            (f) => `    ${printable(f.path)}${f.message ? `: ${printable(f.message)}` : ""}`,
          ),
        ]
      : []),
    ...(e.restoredAt
      ? [
          `  restored ${e.restoredAt} from the database's record of the failure, after Redis lost the entry: its request, response and earlier failures were kept in Redis only`,
        ]
      : []),
    ...(e.lastRetry ? [`  last retry ${e.lastRetry.at}: ${e.lastRetry.result}`] : []),
    ...(e.request
      ? [
          `  request: ${e.request.method} ${e.request.path}`,
          indent(JSON.stringify(e.request.body ?? null, null, 2)),
        ]
      : []),
    ...(e.response
      ? [
          `  response: ${e.response.status ?? "no status"}${e.response.requestId ? ` (request id ${e.response.requestId})` : ""}`,
          indent(JSON.stringify(e.response.body ?? null, null, 2)),
        ]
      : []),
    // The body as received, its own line breaks kept; any other control character escaped.
    ...(e.rawPayload
      ? ["  webhook body:", indent(clip(e.rawPayload, 2_000).split("\n").map(printable).join("\n"))]
      : []),
    ...(e.history?.length
      ? [
          "  earlier failures:",
          ...e.history.map(
            (h) =>
              `    ${h.at} ${h.category} (${h.errorClass}${h.status ? `, ${h.status}` : ""}): ${printable(clip(h.reason, 100))}`,
          ),
        ]
      : []),
  ];
  return lines.join("\n");
}

const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n");

/** How often a bulk retry says how far it is when stderr is not a terminal (a log, CI). */
/**
 * A bulk retry's progress on stderr: a bar in a terminal; elsewhere one line every 1,000
 * entries and one at the end. A retry of 10,000 entries takes half a minute or more, and its
 * report comes only at the end.
 */
const bulkProgress = () =>
  progress<{ counts: string }>({
    bar: "{bar} {value}/{total} entries | {counts}",
    line: (done, total, p) => `dlq retry: ${done} of ${total} entries (${p.counts})`,
    every: 1_000,
  });
const countsOf = (p: BulkRetryProgress) =>
  `${p.retried} queued, ${p.skipped} skipped, ${p.failed} failed`;

function printBulk(report: BulkRetryReport) {
  console.log(
    `matched ${report.matched}: retried ${report.retried}, skipped ${report.skipped}, failed ${report.failed}`,
  );
  // Every entry by name: what was retried as much as what was not.
  for (const o of report.outcomes) console.log(`  ${o.result} ${o.id}: ${printable(o.message)}`);
}

/**
 * `connector dlq …`: the dead-letter queue from a terminal, straight against the connector's
 * Redis and SQLite (no web process needed). Exit code 1 when an entry is not found or a retry
 * did not re-queue it.
 */
export function registerDlqCommand(program: Command, config: RuntimeConfig) {
  const dlq = program
    .command("dlq")
    .description("the dead-letter queue: failures that retrying will not fix");

  dlq
    .command("list")
    .description("list entries, newest first")
    .option("--shop <domain>", "only this shop", shopDomain)
    .option(
      "--reason <category>",
      "only this category (provider-validation, config, …)",
      failureCategory,
    )
    .option(
      "--reason-includes <text>",
      "only entries whose reason contains this text (case-sensitive)",
      reasonText,
    )
    .option("--limit <n>", "at most this many", wholeNumber({ min: 1, max: 500 }), 50)
    .option("--offset <n>", "skip this many", wholeNumber({ min: 0 }), 0)
    .option("--json", "print JSON")
    .action(
      async (opts: {
        shop?: string;
        reason?: string;
        reasonIncludes?: string;
        limit: number;
        offset: number;
        json?: boolean;
      }) => {
        const page = await withContext(config, async (ctx) => {
          // A filter on a mistyped shop is named, not answered "the queue is empty for this filter".
          if (opts.shop !== undefined) await requireShop(ctx, opts.shop);
          return createDeadLetters(ctx).list(
            { shop: opts.shop, reason: opts.reason, reasonIncludes: opts.reasonIncludes },
            { limit: opts.limit, offset: opts.offset },
          );
        });
        if (opts.json) {
          console.log(JSON.stringify(page, null, 2));
          return;
        }
        if (page.total === 0) {
          console.log("the dead-letter queue is empty for this filter");
          return;
        }
        console.log(formatTable(page.entries.map(row)));
        console.log(
          `${page.entries.length} of ${page.total} shown (offset ${page.offset}); \`connector dlq show ID\` for the request and response`,
        );
      },
    );

  dlq
    .command("show <id>")
    .description("one entry in full: reason, request sent, response received, history")
    .option("--json", "print JSON")
    .action(async (id: string, opts: { json?: boolean }) => {
      const entry = await withContext(config, (ctx) => createDeadLetters(ctx).get(id));
      if (!entry) {
        refuse(`no dead-letter entry ${id} (see \`connector dlq list\`)`, 1);
        return;
      }
      console.log(opts.json ? JSON.stringify(entry, null, 2) : describeEntry(entry));
    });

  dlq
    .command("retry [id]")
    .description(
      "re-queue one entry, or every match with --all; the order is synced from its latest state",
    )
    .option(
      "--all",
      "every entry matching --shop / --reason / --reason-includes (all entries when none is given)",
    )
    .option("--shop <domain>", "with --all: only this shop", shopDomain)
    .option("--reason <category>", "with --all: only this category", failureCategory)
    .option(
      "--reason-includes <text>",
      "with --all: only entries whose reason contains this text (case-sensitive)",
      reasonText,
    )
    .option("--json", "print JSON")
    .action(
      async (
        id: string | undefined,
        opts: {
          all?: boolean;
          shop?: string;
          reason?: string;
          reasonIncludes?: string;
          json?: boolean;
        },
      ) => {
        if (id && opts.all) {
          refuse("give an entry ID or --all, not both", 2);
          return;
        }
        if (!id && !opts.all) {
          refuse("give an entry ID, or --all [--shop X] [--reason R] [--reason-includes T]", 2);
          return;
        }
        if (!opts.all && (opts.shop || opts.reason || opts.reasonIncludes)) {
          refuse("--shop, --reason and --reason-includes filter a bulk retry: add --all", 2);
          return;
        }
        if (id) {
          const outcome = await withContext(config, (ctx) => createDeadLetters(ctx).retry(id));
          if (opts.json) console.log(JSON.stringify(outcome, null, 2));
          else console.log(`${outcome.result} ${outcome.id}: ${printable(outcome.message)}`);
          if (outcome.result === "skipped" || outcome.result === "failed") process.exitCode = 1;
          return;
        }
        const progress = bulkProgress();
        const report = await withContext(config, async (ctx) => {
          if (opts.shop !== undefined) await requireShop(ctx, opts.shop);
          return createDeadLetters(ctx).retryMatching(
            { shop: opts.shop, reason: opts.reason, reasonIncludes: opts.reasonIncludes },
            { onProgress: (p) => progress.update(p.done, p.matched, { counts: countsOf(p) }) },
          );
        }).finally(() => progress.stop());
        if (opts.json) console.log(JSON.stringify(report, null, 2));
        else printBulk(report);
        if (report.failed > 0) process.exitCode = 1;
      },
    );

  dlq
    .command("discard <id>")
    .description("remove an entry for good")
    .action(async (id: string) => {
      const result = await withContext(config, (ctx) => createDeadLetters(ctx).discard(id));
      if (result === "discarded") {
        console.log(`discarded ${id}`);
        return;
      }
      refuse(
        result === "busy"
          ? `a retry of ${id} is in progress; try again`
          : `no dead-letter entry ${id}`,
        1,
      );
    });
}
