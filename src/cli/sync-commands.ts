import { type Command, InvalidArgumentError } from "commander";
import { withContext } from "../app/cli.ts";
import {
  BackfillQueue,
  type BackfillRepository,
  progressOf,
  ResyncInputError,
  type ResyncTarget,
  resync,
} from "../backfill/index.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import { INSTANT_FORMS, parseInstantText } from "../lib/instant.ts";
import type { OrderRef } from "../sync/order-ref.ts";
import { orderRef, requireShop, shopDomain } from "./arguments.ts";
import { refuse } from "./errors.ts";
import { progress } from "./progress.ts";
import { printable } from "./table.ts";

const instant = (value: string) => {
  const ms = parseInstantText(value);
  if (ms === null) throw new InvalidArgumentError(`must be ${INSTANT_FORMS}`);
  return new Date(ms).toISOString();
};

/** `--since` after now: no order is updated after it, so nothing would be read. Exit 2. */
function sinceInFuture(since: string, command: string): boolean {
  if (Date.parse(since) <= Date.now()) return false;
  refuse(
    `--since ${since} is in the future: no order has been updated since then; give a past date (see \`connector ${command} --help\`)`,
    2,
  );
  return true;
}

/** `connector resync` and `connector backfill`. */
export function registerSyncCommands(program: Command, config: RuntimeConfig) {
  program
    .command("resync")
    .description(
      "read orders' current state from Shopify's Admin API and reconcile them (bulk priority)",
    )
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .option(
      "--order <id-or-name>",
      "one order, by ID (820982911946154508 or its gid://shopify/Order/… form) or name (#1001)",
      orderRef,
    )
    .option("--since <date>", "orders updated at or after this date", instant)
    .option("--until <date>", "with --since: orders updated before this date", instant)
    .option("--all", "every order Shopify returns (prefer `backfill` for a whole shop)")
    .option("--json", "print the result as JSON")
    .action(
      async (opts: {
        shop: string;
        order?: OrderRef;
        since?: string;
        until?: string;
        all?: boolean;
        json?: boolean;
      }) => {
        const chosen = [opts.order, opts.since, opts.all].filter((v) => v !== undefined);
        if (chosen.length !== 1 || (opts.until && !opts.since)) {
          refuse(
            "give exactly one of --order, --since [--until] or --all; see `connector resync --help`",
            2,
          );
          return;
        }
        if (opts.since && sinceInFuture(opts.since, "resync")) return;
        if (opts.since && opts.until && opts.until <= opts.since) {
          refuse(
            `--until ${opts.until} is not after --since ${opts.since}: no order can be updated in between; swap them`,
            2,
          );
          return;
        }
        const target: ResyncTarget = opts.order
          ? { kind: "order", order: opts.order }
          : opts.since
            ? { kind: "range", since: opts.since, ...(opts.until ? { until: opts.until } : {}) }
            : { kind: "all" };
        const tty = process.stderr.isTTY === true;
        try {
          const result = await withContext(config, async (ctx) =>
            resync(ctx, await requireShop(ctx, opts.shop), target, {
              onPage: (found) => {
                // A terminal gets one line redrawn; a pipe or a log one line per page read.
                if (opts.json) return;
                if (tty) process.stderr.write(`\rread ${found} orders`);
                else process.stderr.write(`read ${found} orders\n`);
              },
            }),
          );
          if (!opts.json && tty && target.kind !== "order") process.stderr.write("\n");
          if (opts.json) console.log(JSON.stringify(result, null, 2));
          else if (result.notFound) {
            refuse(`Shopify has no order ${result.notFound} for ${opts.shop}`, 1);
          } else {
            console.log(
              `${result.found} order(s) read from Shopify, ${result.stored} newer than the stored ` +
                `snapshot, ${result.queued} queued for reconcile at bulk priority`,
            );
          }
        } catch (error) {
          if (!(error instanceof ResyncInputError)) throw error;
          refuse(error.message, 1);
        }
      },
    );

  program
    .command("backfill")
    .description("sync every order of a shop in the background (a job the workers run)")
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .option("--since <date>", "only orders updated at or after this date", instant)
    .option("--detach", "start it and return; do not show progress")
    .option("--json", "print the backfill's progress as JSON and return")
    .action(async (opts: { shop: string; since?: string; detach?: boolean; json?: boolean }) => {
      if (opts.since && sinceInFuture(opts.since, "backfill")) return;
      await withContext(config, async (ctx) => {
        const shop = await requireShop(ctx, opts.shop);
        // A shop without a Shopify token: said now, with how to connect it, rather than a
        // backfill that starts and then fails in the workers.
        ctx.shopifyAdmin.for(shop);
        const repo = ctx.backfills;
        const queue = new BackfillQueue(ctx.redis, ctx.prefix, repo);
        try {
          const { backfill, started } = await queue.start(opts.shop, { since: opts.since ?? null });
          const first = progressOf(backfill, { scopes: shop.scopes });
          if (opts.json) {
            console.log(JSON.stringify({ started, ...first }, null, 2));
            return;
          }
          console.log(
            started
              ? `backfill ${backfill.id} started for ${opts.shop}`
              : `backfill ${backfill.id} for ${opts.shop} is already under way; following it`,
          );
          for (const warning of first.warnings) console.warn(`warning: ${warning}`);
          if (opts.detach) return;
          await follow(repo, backfill.id, shop.scopes);
        } finally {
          await queue.close();
        }
      });
    });
}

/** Shows the backfill's progress until it ends; Ctrl-C stops watching, not the backfill. */
async function follow(repo: BackfillRepository, id: number, scopes: string | null) {
  // A bar in a terminal; a log or CI gets a line each time the count or the status changes.
  const bar = progress<{ status: string }>({
    bar: "{bar} {percentage}% | {value}/{total} orders | ETA {eta_formatted} | {status}",
    line: (done, total, p) => `backfill ${id}: ${done}/${total} orders (${p.status})`,
    etaBuffer: 50,
  });
  let stop = false;
  const onInterrupt = () => {
    stop = true;
  };
  process.once("SIGINT", onInterrupt);
  try {
    for (;;) {
      const record = await repo.get(id);
      if (!record) return;
      const now = progressOf(record, { scopes });
      if (now.total !== null) bar.update(now.done, now.total, { status: now.status });
      if (record.status === "completed" || record.status === "failed" || stop) {
        bar.stop();
        if (record.status === "failed") {
          refuse(`backfill ${id} failed: ${printable(record.error ?? "unknown error")}`, 1);
        } else if (stop) {
          console.log(`stopped watching; backfill ${id} goes on in the workers`);
        } else console.log(`backfill ${id} completed: ${record.done} orders fed to the sync queue`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    process.off("SIGINT", onInterrupt);
  }
}
