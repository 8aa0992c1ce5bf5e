import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { HonoAdapter } from "@bull-board/hono";
import { serveStatic } from "@hono/node-server/serve-static";
import { Queue } from "bullmq";
import type { Hono } from "hono";
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
 * The queue dashboard (bull-board) at /admin/queues, behind the admin guard like the rest of
 * /admin (the browser holds the session cookie, which its API calls carry too). Every queue the
 * connector names is shown. The dead-letter queue is read-only here: its entries are retried
 * through the API or the CLI, which reconcile from the latest state; bull-board's own retry
 * would not apply to jobs that no worker runs.
 */
export function queueDashboard(deps: AdminDeps): Hono {
  const { ctx } = deps;
  const own = new Map<string, Queue>([
    [QUEUE.sync, ctx.queues.sync],
    [QUEUE.deadLetter, ctx.queues.deadLetter],
  ]);
  const adapters = Object.values(QUEUE).map((name) => {
    let queue = own.get(name);
    if (!queue) {
      queue = new Queue(name, queueOptions(ctx.redis, ctx.prefix));
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
  createBullBoard({
    queues: adapters,
    serverAdapter,
    options: { uiConfig: { boardTitle: "Connector queues" } },
  });
  return serverAdapter.registerPlugin();
}
