import { describe, expect, it } from "vitest";

/**
 * `expect.poll` gives up after one second unless told otherwise (Vitest's default), so a test
 * that waits on a page, a worker or a queue failed whenever the machine was busy: a browser test
 * failed so beside other test files on the two-core machine. Both tiers' configs give every poll
 * the patience of a loaded machine; a poll whose condition holds still ends at once.
 */
describe("expect.poll", () => {
  it("waits for a condition a loaded machine takes seconds to reach", async () => {
    const ready = Date.now() + 1_500;
    await expect.poll(() => Date.now() >= ready).toBe(true);
  });
});
