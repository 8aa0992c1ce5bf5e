import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { startSandbox } from "@connector/provider-sandbox";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { cliEntry } from "../../helpers/cli.ts";
import { clientFor, orderBody } from "../../helpers/provider-fixtures.ts";

/**
 * The built-in sandbox keeps its state in a SQLite file of its own: a restarted `npm start`
 * continues with the same orders and never hands out an order ID again (which made kept links
 * point at other orders). `connector sandbox --reset` empties it.
 */
const ROOT = resolve(import.meta.dirname, "../../..");
const dir = mkdtempSync(join(tmpdir(), "sandbox-state-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const statePath = join(dir, "data", "sandbox.sqlite");

describe("sandbox state across restarts", () => {
  it("keeps orders and continues the IDs after a restart; --reset empties the file", async () => {
    const first = await startSandbox({ stores: [1001], statePath });
    const one = clientFor(first);
    const before = await one.client.createOrder(orderBody({ sourceOrderId: "A-1" }));
    one.redis.disconnect();
    await first.close();

    const second = await startSandbox({ stores: [1001], statePath });
    const two = clientFor(second);
    expect((await two.client.getOrder(1001, before.orderId)).sourceOrderId).toBe("A-1");
    const after = await two.client.createOrder(orderBody({ sourceOrderId: "B-1" }));
    expect(after.orderId).toBeGreaterThan(before.orderId);
    two.redis.disconnect();
    await second.close();

    const reset = await promisify(execFile)(
      process.execPath,
      [...cliEntry(), "sandbox", "--reset", "--state", statePath],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "silent" } },
    );
    expect(reset.stdout.trim()).toBe(`emptied ${statePath}: 2 orders removed, IDs start again`);
    const third = await startSandbox({ stores: [1001], statePath });
    onTestFinished(() => third.close());
    expect(third.state.orders.size).toBe(0);
  });
});
