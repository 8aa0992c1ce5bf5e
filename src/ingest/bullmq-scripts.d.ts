/**
 * BullMQ's own Lua scripts, as its package builds them (includes expanded). The package ships
 * no types for this file; the receiver runs addPrioritizedJob inside its one-call script
 * (receive-order.ts).
 */
declare module "bullmq/dist/cjs/scripts/addPrioritizedJob-9.js" {
  export const addPrioritizedJob: { name: string; content: string; keys: number };
}
