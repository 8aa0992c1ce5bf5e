import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { type FailureCause, FailureDigest } from "../../src/lib/failure-digest.ts";
import { createLogger } from "../../src/lib/logger.ts";

const SHOP = "digest-shop.myshopify.com";

/** A provider's cause for one shop, as the sync processor words it. */
const timeouts: FailureCause = {
  shop: SHOP,
  signature: "ProviderConnectionError||timed out after 10000 ms",
  provider: true,
  wording: {
    subject: `sync of ${SHOP}`,
    still: "still failing",
    unit: "attempts failed",
    field: "attemptsFailed",
    level: "warn",
  },
};

/** A digest on a clock the test moves, its lines parsed. */
function digestOnClock() {
  const clock = { now: 1_000_000 };
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const digest = new FailureDigest(createLogger("debug", sink), { now: () => clock.now });
  return { digest, clock, lines };
}

describe("FailureDigest", () => {
  it("keeps one cause open while the requests sent before a recovery still time out after it", () => {
    const { digest, clock, lines } = digestOnClock();
    expect(digest.occurred(timeouts, "POST /orders got no answer")).toBe(true);
    // The provider answers again: a sync goes through, while requests sent before still wait.
    clock.now += 1_000;
    digest.succeeded(SHOP, true);
    clock.now += 1_000;
    expect(digest.occurred(timeouts, "GET /orders got no answer")).toBe(false);
    clock.now += 1_000;
    digest.succeeded(SHOP, true);
    expect(lines).toEqual([]);
    // Once it has stayed away: one line says it ended, with every attempt counted.
    clock.now += 30_000;
    digest.tick();
    expect(lines).toEqual([
      expect.objectContaining({
        level: "info",
        shop: SHOP,
        attemptsFailed: 2,
        msg: expect.stringContaining(
          `sync of ${SHOP} no longer failing (a sync of the shop went through)`,
        ),
      }),
    ]);
    // A new failure after that is a new start.
    expect(digest.occurred(timeouts, "POST /orders got no answer")).toBe(true);
  });

  it("ends a provider's cause at once when the first sync after it comes once it has settled", () => {
    const { digest, clock, lines } = digestOnClock();
    digest.occurred(timeouts, "POST /orders got no answer");
    // A sync that made no provider call says nothing about the provider.
    clock.now += 40_000;
    digest.succeeded(SHOP, false);
    expect(lines).toEqual([]);
    digest.succeeded(SHOP, true);
    expect(lines).toEqual([expect.objectContaining({ level: "info", attemptsFailed: 1 })]);
  });
});
