import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatTable } from "../../src/cli/table.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import { runCli } from "../helpers/cli.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

let p: Pipeline;
beforeAll(async () => {
  // A second store, in euros: the test shop's credentials cover both.
  p = await startPipeline({ sandbox: { stores: [1001, 1002], storeCurrency: { 1002: "EUR" } } });
});
afterAll(() => p.close());

/** The test's provider sandbox, as an operator's PROVIDER_BASE_URL, token URL and audience. */
function providerEnv(): Record<string, string> {
  const { baseUrl, authUrl, audience } = p.ctx.providers.endpoints("production");
  return { PROVIDER_BASE_URL: baseUrl, PROVIDER_AUTH_URL: authUrl, PROVIDER_AUDIENCE: audience };
}

/** `run(...args)` refused as a mistake: exit 2, nothing on stdout, `line` on stderr. */
async function expectRefused(
  run: (...args: string[]) => Promise<{ code: number | null; stdout: string; stderr: string }>,
  args: readonly string[],
  line: string,
) {
  const refused = await run(...args);
  expect(refused.code, args.join(" ")).toBe(2);
  expect(refused.stdout, args.join(" ")).toBe("");
  expect(refused.stderr.trim(), args.join(" ")).toBe(line);
}

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
      `connector: no shop nope.myshopify.com here: \`connector shops list\` shows the shops; install the app on it, or register it with \`connector shops add --shop nope.myshopify.com …\``,
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
      /^connector: --remove-location: 777 is not in the location map \(4001\)$/,
    );
    const nothing = await runCli(p.ctx, ["shops", "update", "--shop", TEST_SHOP]);
    expect(nothing.stderr.trim()).toBe(
      "connector: nothing to change: give at least one option (see --help)",
    );
  });

  it("refuses a currency or an ID that could never match an order, saving nothing", async () => {
    const before = await p.ctx.shops.getShop(TEST_SHOP);
    const update = (...args: string[]) =>
      runCli(p.ctx, ["shops", "update", "--shop", TEST_SHOP, ...args]);
    // Before: saved as given ("DOLLARS", a variant's title, a product's gid), and every order
    // then dead-lettered as a shop selling in another currency, or never marked protected.
    for (const [args, line] of [
      [
        ["--currency", "dollars", "--default-location", "9"],
        "connector: option '--currency <code>' argument 'dollars' is invalid: must be a three-letter currency code, such as USD or EUR; see `connector shops update --help`",
      ],
      [
        ["--protection-variant-id", "Shipping protection"],
        "connector: option '--protection-variant-id <id>' argument 'Shipping protection' is invalid: must be a Shopify variant ID, such as 40123456789 or gid://shopify/ProductVariant/40123456789; see `connector shops update --help`",
      ],
      [
        ["--protection-variant-id", "501", "--protection-variant-id", "gid://shopify/Product/5"],
        "connector: option '--protection-variant-id <id>' argument 'gid://shopify/Product/5' is invalid: must be a Shopify variant ID, such as 40123456789 or gid://shopify/ProductVariant/40123456789; see `connector shops update --help`",
      ],
      [
        ["--remove-location", "Main warehouse"],
        "connector: option '--remove-location <id>' argument 'Main warehouse' is invalid: must be a Shopify location ID, such as 40123456789 or gid://shopify/Location/40123456789; see `connector shops update --help`",
      ],
    ] as const) {
      await expectRefused(update, args, line);
    }
    expect(await p.ctx.shops.getShop(TEST_SHOP)).toEqual(before);

    // The Admin API's gid is its digits, as the orders' IDs are compared; a code in any case
    // (checked against store 1001's, USD).
    const taken = await runCli(
      p.ctx,
      [
        ...["shops", "update", "--shop", TEST_SHOP],
        ...["--protection-variant-id", "gid://shopify/ProductVariant/501"],
        ...["--protection-variant-id", "502", "--currency", " usd "],
      ],
      providerEnv(),
    );
    expect(taken.stderr).toBe("");
    expect(taken.code).toBe(0);
    const after = await p.ctx.shops.getShop(TEST_SHOP);
    expect(after?.protectionVariantIds).toEqual(["501", "502"]);
    expect(after?.storeCurrency).toBe("USD");
    await p.ctx.shops.updateSettings(TEST_SHOP, {
      protectionVariantIds: before?.protectionVariantIds ?? [],
      storeCurrency: before?.storeCurrency ?? null,
    });
  });

  it("a new store retires the links into the old one and says so", async () => {
    const model = newModelOrder(77, 77_000);
    await p.send("orders/create", orderPayload(model));
    await p.drain();
    const moved = await runCli(
      p.ctx,
      ["shops", "update", "--shop", TEST_SHOP, "--store-id", "1002"],
      providerEnv(),
    );
    expect(moved.stderr).toBe("");
    expect(moved.code).toBe(0);
    expect(moved.stdout).toContain(
      "1 orders were linked to store 1001: they will be sent to store 1002 the next time they change",
    );
    expect(await p.ctx.links.loadLinks(TEST_SHOP, String(model.id))).toBeNull();
    // The new store's currency comes with it, as choosing the store on the settings page does.
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.storeCurrency).toBe("EUR");
    const back = await runCli(
      p.ctx,
      ["shops", "update", "--shop", TEST_SHOP, "--store-id", "1001"],
      providerEnv(),
    );
    expect(back.code).toBe(0);
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.storeCurrency).toBe("USD");
  });

  it("refuses a currency the store does not keep, saving nothing", async () => {
    // Before: saved, and the worker then sent amounts in USD to a store keeping EUR.
    const before = await p.ctx.shops.getShop(TEST_SHOP);
    const update = (...args: string[]) =>
      runCli(p.ctx, ["shops", "update", "--shop", TEST_SHOP, ...args], providerEnv());
    for (const [args, line] of [
      [
        ["--currency", "EUR"],
        "connector: nothing saved: provider store 1001 keeps USD, not EUR (--currency): amounts in EUR would be sent to a USD store; leave --currency out to take the store's, or give --currency USD",
      ],
      [
        ["--store-id", "1002", "--currency", "usd"],
        "connector: nothing saved: provider store 1002 keeps EUR, not USD (--currency): amounts in USD would be sent to a EUR store; leave --currency out to take the store's, or give --currency EUR",
      ],
    ] as const) {
      await expectRefused(update, args, line);
    }
    expect(await p.ctx.shops.getShop(TEST_SHOP)).toEqual(before);
    // Offline, on purpose: nothing can be checked, and it is saved as given.
    const unverified = await update("--currency", "EUR", "--no-verify");
    expect(unverified.code).toBe(0);
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.storeCurrency).toBe("EUR");
    const fixed = await update("--currency", "USD");
    expect(fixed.code).toBe(0);
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.storeCurrency).toBe("USD");
  });

  it("asks the provider first: a store the credentials do not cover is refused, nothing saved", async () => {
    // Before, any store ID was saved, and every order then went to the dead-letter queue.
    const refused = await runCli(
      p.ctx,
      ["shops", "update", "--shop", TEST_SHOP, "--store-id", "4242"],
      providerEnv(),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toBe(
      "connector: nothing saved: these credentials do not give access to provider store 4242 (they cover 1001, 1002); check --store-id (--no-verify saves without asking)",
    );
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.storeId).toBe(1001);
    // Offline, on purpose: saved as given.
    const unverified = await runCli(p.ctx, [
      "shops",
      "update",
      "--shop",
      TEST_SHOP,
      "--store-id",
      "4242",
      "--no-verify",
    ]);
    expect(unverified.code).toBe(0);
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.storeId).toBe(4242);
    await runCli(
      p.ctx,
      ["shops", "update", "--shop", TEST_SHOP, "--store-id", "1001"],
      providerEnv(),
    );
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.storeId).toBe(1001);
  });
});

describe("connector shops add", () => {
  const NEW_SHOP = "cli-added.myshopify.com";
  /** The test shop's provider credentials, which the sandbox takes. */
  const credentials = async () => {
    const shop = await p.ctx.shops.getShop(TEST_SHOP);
    if (!shop?.providerClientId || !shop.providerClientSecretSealed) {
      throw new Error("the test shop has no provider credentials");
    }
    return {
      id: shop.providerClientId,
      secret: p.ctx.secrets.open(
        shop.providerClientSecretSealed,
        sealedFor.providerClientSecret(TEST_SHOP),
      ),
    };
  };
  const add = async (secret: string, ...more: string[]) =>
    runCli(
      p.ctx,
      [
        "shops",
        "add",
        "--shop",
        NEW_SHOP,
        "--provider-client-id",
        (await credentials()).id,
        "--provider-client-secret",
        secret,
        "--store-id",
        "1002",
        ...more,
      ],
      providerEnv(),
    );

  it("saves nothing when the provider refuses the credentials, and says so", async () => {
    const refused = await add("not-the-secret");
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toBe(
      "connector: nothing saved: the provider did not accept this client ID and secret for the production environment. Check both values (and the environment) in your provider account, then try again. (--no-verify saves without asking)",
    );
    expect(await p.ctx.shops.getShop(NEW_SHOP)).toBeNull();
  });

  it("refuses a currency the store does not keep, saving nothing", async () => {
    // Before: saved, and the worker then sent amounts in USD to store 1002, which keeps EUR.
    const refused = await add((await credentials()).secret, "--currency", "USD");
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe("");
    expect(refused.stderr.trim()).toBe(
      "connector: nothing saved: provider store 1002 keeps EUR, not USD (--currency): amounts in USD would be sent to a EUR store; leave --currency out to take the store's, or give --currency EUR",
    );
    expect(await p.ctx.shops.getShop(NEW_SHOP)).toBeNull();
  });

  it("registers a shop whose credentials cover the store, in the store's own currency", async () => {
    // Before, the currency was USD unless --currency said otherwise, whatever the store's.
    const added = await add((await credentials()).secret);
    expect(added.stderr).toBe("");
    expect(added.stdout.trim()).toBe(
      `shop ${NEW_SHOP} registered: provider store 1002, status active`,
    );
    expect((await p.ctx.shops.getShop(NEW_SHOP))?.storeCurrency).toBe("EUR");
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
