/** The queue's own bound for bench:worker: a BullMQ worker whose processor does nothing. */
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { QUEUE } from "../src/queue/names.ts";

const connection = new Redis(process.argv[2] ?? process.env.REDIS_URL ?? "", {
  maxRetriesPerRequest: null,
});
const worker = new Worker(QUEUE.sync, async () => {}, {
  connection,
  prefix: process.env.PREFIX ?? "bench-bare",
  concurrency: 16,
});
// bench:startup reads the process's CPU at this line.
worker.on("ready", () => console.log("ready"));
