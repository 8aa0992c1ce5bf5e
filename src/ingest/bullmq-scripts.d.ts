/**
 * BullMQ's own Lua scripts, as its package builds them (includes expanded). The package ships
 * no types for this file; test/ingest/receive-order.test.ts pins the addPrioritizedJob that
 * lua/add-live-job.lua follows.
 */
declare module "bullmq/dist/cjs/scripts/addPrioritizedJob-9.js" {
  export const addPrioritizedJob: { name: string; content: string; keys: number };
}
