import { afterEach, describe, expect, it } from "vitest";
import type { ConnectorStatus } from "../../src/ops/index.ts";
import { shardOf, syncShardName, syncShardNames } from "../../src/queue/sync-shards.ts";
import { readSyncStatus } from "../../src/settings/sync-status.ts";
import { shippedOrder } from "../helpers/orders.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * With SYNC_QUEUE_SHARDS=3 every view of the sync queue sees each shard: `connector status` (and
 * /admin/api/status), the bull-board dashboard's queue list, the /metrics depth gauge, the
 * settings page's pending count, and an uninstall's drop of the shop's queued jobs.
 */

const TOKEN = "shards-token-0123456789abcdef";
const auth = { authorization: `Bearer ${TOKEN}` };
const SHARD = syncShardName(3, shardOf(TEST_SHOP, 3));

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.close();
  pipeline = undefined;
});

/** A pipeline with three shards, no worker, and one order queued in the test shop's shard. */
async function oneQueued() {
  const p = await startPipeline({
    workers: 0,
    env: { ADMIN_TOKEN: TOKEN, SYNC_QUEUE_SHARDS: "3" },
  });
  expect((await p.send("orders/create", orderPayload(shippedOrder(5_570_001)))).status).toBe(200);
  return p;
}

describe("the sync shards in status, dashboard and metrics", { timeout: 60_000 }, () => {
  it("lists each shard in the status report, with the shop's job in its shard", async () => {
    pipeline = await oneQueued();
    const response = await pipeline.web.app.request("/admin/api/status", { headers: auth });
    const status = (await response.json()) as ConnectorStatus;
    const names = status.queues.map((q) => q.name);
    for (const name of syncShardNames(3)) expect(names).toContain(name);
    const pending = (name: string) => {
      const counts = status.queues.find((q) => q.name === name)?.counts ?? {};
      return (counts.waiting ?? 0) + (counts.prioritized ?? 0);
    };
    expect(syncShardNames(3).map(pending)).toEqual(
      syncShardNames(3).map((name) => (name === SHARD ? 1 : 0)),
    );
  });

  it("lists each shard on the dashboard and in the queue depth gauge", async () => {
    pipeline = await oneQueued();
    const board = await pipeline.web.app.request("/admin/queues/api/queues", { headers: auth });
    expect(board.status).toBe(200);
    const listed = ((await board.json()) as { queues: { name: string }[] }).queues.map(
      (q) => q.name,
    );
    for (const name of syncShardNames(3)) expect(listed).toContain(name);

    const metrics = await (await pipeline.web.app.request("/metrics")).text();
    expect(metrics).toContain(`connector_queue_jobs{queue="${SHARD}",state="prioritized"} 1`);
  });

  it("counts the shop's pending order on the settings page and drops it on uninstall", async () => {
    pipeline = await oneQueued();
    const shop = await pipeline.ctx.shops.getShop(TEST_SHOP);
    if (!shop) throw new Error("the test shop is not installed");
    expect((await readSyncStatus(pipeline.ctx, shop)).pending).toBe(1);
    await pipeline.shopify.uninstallShop(TEST_SHOP, { deliver: false });
    const response = await pipeline.send("app/uninstalled", { id: 1, domain: TEST_SHOP });
    expect(await response.json()).toMatchObject({ outcome: "uninstalled" });
    expect(await pipeline.pendingSyncJobs()).toBe(0);
  });
});
