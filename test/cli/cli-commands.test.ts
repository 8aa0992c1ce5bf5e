import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatTable } from "../../src/cli/table.ts";
import { runCli } from "../helpers/cli.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline();
});
afterAll(() => p.close());

describe("connector shops update", () => {
  it("changes one setting at a time and keeps the rest, the secret included", async () => {
    const before = await p.ctx.shops.getShop(TEST_SHOP);
    const added = await runCli(p.ctx, [
      "shops",
      "update",
      "--shop",
      TEST_SHOP,
      "--location",
      "5005=88",
    ]);
    expect(added.stderr).toBe("");
    expect(added.stdout.trim()).toBe(`shop ${TEST_SHOP} updated: locationMap`);
    const after = await p.ctx.shops.getShop(TEST_SHOP);
    expect(after?.locationMap).toEqual({ ...before?.locationMap, "5005": 88 });
    expect(after?.providerClientSecretSealed).toBe(before?.providerClientSecretSealed);
    expect(after?.storeId).toBe(before?.storeId);

    const removed = await runCli(p.ctx, [
      "shops",
      "update",
      "--shop",
      TEST_SHOP,
      "--remove-location",
      "5005",
    ]);
    expect(removed.code).toBe(0);
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.locationMap).toEqual(before?.locationMap);
  });

  it("names what it cannot do: an unknown shop, a location not in the map, nothing to change", async () => {
    const unknown = await runCli(p.ctx, [
      "shops",
      "update",
      "--shop",
      "nope.myshopify.com",
      "--store-id",
      "2",
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe(
      "no shop nope.myshopify.com: register it with `connector shops add`",
    );
    const missing = await runCli(p.ctx, [
      "shops",
      "update",
      "--shop",
      TEST_SHOP,
      "--remove-location",
      "777",
    ]);
    expect(missing.stderr.trim()).toMatch(
      /^--remove-location: 777 is not in the location map \(4001\)$/,
    );
    const nothing = await runCli(p.ctx, ["shops", "update", "--shop", TEST_SHOP]);
    expect(nothing.stderr.trim()).toBe("nothing to change: give at least one option (see --help)");
  });

  it("a new store retires the links into the old one and says so", async () => {
    const model = newModelOrder(77, 77_000);
    await p.send("orders/create", orderPayload(model));
    await p.drain();
    const moved = await runCli(p.ctx, [
      "shops",
      "update",
      "--shop",
      TEST_SHOP,
      "--store-id",
      "1002",
    ]);
    expect(moved.code).toBe(0);
    expect(moved.stdout).toContain(
      "1 orders were linked to store 1001: they will be sent to store 1002 the next time they change",
    );
    expect(await p.ctx.links.loadLinks(TEST_SHOP, String(model.id))).toBeNull();
    await runCli(p.ctx, ["shops", "update", "--shop", TEST_SHOP, "--store-id", "1001"]);
  });
});

describe("tables that fit a terminal", () => {
  it("has a header, no index column, no quotes, and cuts long cells to the width", () => {
    const text = formatTable(
      [
        { id: "a|1", reason: "provider-validation", message: "x".repeat(200) },
        { id: "b|2", reason: "config", message: "short" },
      ],
      60,
    );
    const lines = text.split("\n");
    expect(lines[0]).toMatch(/^\s*id\s+reason\s+message\s*$/);
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
    expect(text).not.toContain("(index)");
    expect(text).not.toContain("'");
    expect(lines[1]).toContain("…");
    expect(lines[2]).toContain("short");
  });

  it("shops list prints such a table", async () => {
    const list = await runCli(p.ctx, ["shops", "list"]);
    expect(list.stdout.split("\n")[0]).toMatch(/^\s*shop\s+status\s+storeId/);
    expect(list.stdout).not.toContain("(index)");
    expect(list.stdout).not.toContain("'");
  });
});
