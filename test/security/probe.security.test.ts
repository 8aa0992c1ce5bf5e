import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { collectOutput } from "../helpers/child-output.ts";

/**
 * `npm run test:security` sends the five attacks of the second security round at a connector it
 * starts as `npm start` does (its own Redis, sandbox and stand-in Shopify) and exits 1 when one
 * of them works. Run here at a small body size, so the probe itself cannot rot and a defence that
 * regresses fails the suite from the outside, as an attacker would see it.
 */
describe("the security probe", () => {
  it("finds every one of the five attacks held, and stops what it started", async () => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "scripts/security-probe.ts", "--big-mb", "40"],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LOG_LEVEL: "warn" } },
    );
    const { out, exited } = collectOutput(child);
    const code = await exited;
    const text = out();
    expect(text, text).toMatch(/^0 of 5 attacks worked$/m);
    expect(text.match(/^held {8}\d\. /gm)).toHaveLength(5);
    expect(code, text).toBe(0);
  }, 120_000);
});
