import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const TEST = resolve(import.meta.dirname, "..");
const THIS_FILE = "build/shared-redis.unit.test.ts";

/** Each test file's calls that empty a whole Redis (FLUSHALL, FLUSHDB). */
function flushes(): { file: string; call: string }[] {
  const found: { file: string; call: string }[] = [];
  for (const path of readdirSync(TEST, { recursive: true, encoding: "utf8" })) {
    if (!path.endsWith(".ts") || path === THIS_FILE) continue;
    const text = readFileSync(join(TEST, path), "utf8");
    for (const match of text.matchAll(/\.flush(?:all|db)\s*\(|["'`]flush(?:all|db)["'`]/gi)) {
      found.push({ file: path, call: match[0] });
    }
  }
  return found;
}

/**
 * The run's Redis (and its Redis Cluster) are shared by the test files running at once, each on
 * its own key prefix: one that empties the whole Redis loses the others' jobs, and they fail at
 * random. A test of Redis losing its data deletes its own prefix (test/helpers/redis-loss.ts).
 */
describe("the run's shared Redis", () => {
  it("is never emptied whole by a test", () => {
    expect(flushes()).toEqual([]);
  });
});
