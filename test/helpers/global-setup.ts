import type { TestProject } from "vitest/node";
import { startRedisServer } from "../../src/lib/redis-server.ts";

/** One private redis-server for the whole run; each test isolates itself with its own prefix. */
export default async function setup(project: TestProject) {
  const redis = await startRedisServer();
  project.provide("redisUrl", redis.url);
  return async () => {
    await redis.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
  }
}
