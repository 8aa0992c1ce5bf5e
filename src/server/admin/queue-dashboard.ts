import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { HonoAdapter } from "@bull-board/hono";
import { serveStatic } from "@hono/node-server/serve-static";
import { Queue } from "bullmq";
import { Hono } from "hono";
import { onQueueErrors } from "../../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../../queue/names.ts";
import type { AdminDeps } from "./admin-deps.ts";

export const DASHBOARD_PATH = "/admin/queues";

/**
 * The dead-letter queue is a store of failures, not work waiting for a worker: no worker ever
 * consumes it, and bull-board's "No workers" next to its waiting entries read as a stuck queue.
 * It answers "no notion of workers" (null), so the board shows no worker warning for it.
 */
class DeadLetterAdapter extends BullMQAdapter {
  override async getWorkers(): Promise<null> {
    return null;
  }
}

/**
 * A sync shard: its jobs are removed as they finish (SYNC_JOB_OPTIONS), so the board shows no
 * "completed" tab that would always be empty, and says where synced orders are counted.
 */
class SyncShardAdapter extends BullMQAdapter {
  constructor(queue: Queue) {
    super(queue, {
      description:
        "Jobs are removed as they finish: orders synced per shop are in `connector status`, each order's record in `connector orders show`.",
    });
  }

  override getJobStatuses(): ReturnType<BullMQAdapter["getJobStatuses"]> {
    return super.getJobStatuses().filter((status) => status !== "completed");
  }
}

/**
 * The queue dashboard (bull-board) at /admin/queues, behind the admin guard like the rest of
 * /admin (the browser holds the session cookie, which its API calls carry too). Every queue the
 * connector names is shown, the sync queue as each of its shards (`sync`, or `sync-1of3` …, and
 * those of an older shard count still draining), read again at most every REGISTER_MS when the
 * board is opened. The sync shards show no completed jobs: none are kept. The dead-letter queue
 * is read-only here: its entries are retried through the API or the CLI, which reconcile from
 * the latest state; bull-board's own retry would not apply to jobs that no worker runs.
 */
export function queueDashboard(deps: AdminDeps): Hono {
  const { ctx } = deps;
  const own = new Map<string, Queue>([[QUEUE.deadLetter, ctx.queues.deadLetter]]);
  const others = Object.values(QUEUE)
    .filter((name) => name !== QUEUE.sync)
    .map((name) => {
      let queue = own.get(name);
      if (!queue) {
        queue = new Queue(name, queueOptions(ctx.redis, ctx.prefix));
        onQueueErrors(queue);
        const opened = queue;
        deps.onClose?.(() => opened.close());
      }
      if (name === QUEUE.deadLetter) {
        return new DeadLetterAdapter(queue, {
          readOnlyMode: true,
          description:
            "Failures retrying will not fix. Retry or discard with `connector dlq` or /admin/api/dead-letters.",
          externalJobUrl: (job) => ({
            displayText: "full record (API)",
            href: `/admin/api/dead-letters/${encodeURIComponent(String(job.id))}`,
          }),
        });
      }
      return new BullMQAdapter(queue);
    });
  const serverAdapter = new HonoAdapter(serveStatic);
  serverAdapter.setBasePath(DASHBOARD_PATH);
  const board = createBullBoard({
    queues: [new SyncShardAdapter(ctx.queues.sync), ...others],
    serverAdapter,
    options: { uiConfig: { boardTitle: "Connector queues" } },
  });
  let shown = QUEUE.sync as string;
  // The sync shards first, in layout order, then the other queues.
  const showShards = async () => {
    const shards = await ctx.queues.allSyncQueues();
    const names = shards.map((q) => q.name).join(",");
    if (names === shown) return;
    for (const name of shown.split(",")) board.removeQueue(name);
    for (const queue of others) board.removeQueue(queue.getName());
    board.setQueues([...shards.map((q) => new SyncShardAdapter(q)), ...others]);
    shown = names;
  };
  const dashboard = new Hono();
  dashboard.use("*", async (_c, next) => {
    // A Redis that does not answer leaves the board as it was; its own reads then fail.
    await showShards().catch(() => {});
    await next();
  });
  dashboard.route("/", serverAdapter.registerPlugin());
  return dashboard;
}
