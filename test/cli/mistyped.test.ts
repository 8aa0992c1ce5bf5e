import { spawn } from "node:child_process";
import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_INPUT_FILE_BYTES } from "../../src/cli/input-file.ts";
import { cliEntry, runCli } from "../helpers/cli.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { service } from "../helpers/services.ts";
import { standInOrder } from "../helpers/standin-orders.ts";

/**
 * The command line as operators mistype it, run through the real CLI against a real Redis and
 * SQLite file: each mistake is one line on stderr that names it and what to do, with nothing on
 * stdout, no stack, and an exit code a script can tell from a failure of the work (2).
 */
const UNKNOWN = "never-installed.myshopify.com";
let p: Pipeline;
let dir = "";
let provider: Record<string, string> = {};
beforeAll(async () => {
  p = await startPipeline({ sandbox: { seedRegistrations: 30 } });
  dir = dirname(p.ctx.config.env.DATABASE_PATH);
  provider = {
    PROVIDER_BASE_URL: p.sandbox.url,
    PROVIDER_AUTH_URL: p.sandbox.authUrl,
    PROVIDER_AUDIENCE: p.sandbox.audience,
  };
});
afterAll(() => p.close());

const cli = (...args: string[]) => runCli(p.ctx, args);

/** One line on stderr, nothing on stdout, no stack, exit 2. */
function refused(run: { code: number; stdout: string; stderr: string }, line: string) {
  expect(run.stdout).toBe("");
  expect(run.stderr.trim()).toBe(line);
  expect(run.code).toBe(2);
}

describe("a command line the CLI cannot run as typed", () => {
  it("is one line naming the mistake and the command's --help, exit 2", async () => {
    // Before: `error: unknown option '--bogus'`, exit 1, the same as a command that failed.
    refused(
      await cli("status", "--bogus"),
      "connector: unknown option '--bogus'; see `connector status --help`",
    );
    refused(
      await cli("shop", "list"),
      "connector: unknown command 'shop' (Did you mean shops?); see `connector --help`",
    );
    refused(
      await cli("orders", "show", "--shop", TEST_SHOP),
      "connector: required option '--order <id-or-name>' not specified; see `connector orders show --help`",
    );
    refused(
      await cli("status", "--shop"),
      "connector: option '--shop <domain>' argument missing; see `connector status --help`",
    );
    refused(
      await cli("claims", "list", "--shop", TEST_SHOP, "--limit", "-1"),
      "connector: option '--limit <n>' argument '-1' is invalid: must be a whole number from 1 to 500; see `connector claims list --help`",
    );
    refused(
      await cli("status", "extra"),
      "connector: too many arguments for 'status'. Expected 0 arguments but got 1: extra; see `connector status --help`",
    );
    // A group without its subcommand: its help, on stderr.
    const group = await cli("dlq");
    expect(group.code).toBe(2);
    expect(group.stderr).toContain("Usage: connector dlq [options] [command]");
  });

  it("names the *.myshopify.com domain meant by a shop's handle or URL", async () => {
    // Before: "must be a *.myshopify.com domain", which left the operator to guess the form.
    refused(
      await cli("status", "--shop", "demo-shop"),
      "connector: option '--shop <domain>' argument 'demo-shop' is invalid: must be a *.myshopify.com domain (did you mean demo-shop.myshopify.com?); see `connector status --help`",
    );
    // webhook send took any --shop, and the receiver dropped the webhook as an unknown shop.
    refused(
      await cli("webhook", "send", "--topic", "orders/create", "--file", "x.json", "--shop", "X"),
      "connector: option '--shop <domain>' argument 'X' is invalid: must be a *.myshopify.com domain (did you mean x.myshopify.com?); see `connector webhook send --help`",
    );
  });

  it("refuses an option given twice with two values rather than keeping the last", async () => {
    // Before: the resync ran on the second shop, silently.
    refused(
      await cli("resync", "--shop", UNKNOWN, "--shop", TEST_SHOP, "--all"),
      `connector: option '--shop <domain>' was given twice (${UNKNOWN}, then ${TEST_SHOP}): give it once; see \`connector resync --help\``,
    );
    // A secret given twice is not printed: a terminal's scrollback and CI logs keep stderr.
    refused(
      await cli(
        "shops",
        "add",
        "--shop",
        UNKNOWN,
        "--provider-client-id",
        "id",
        "--provider-client-secret",
        "first-secret-value",
        "--provider-client-secret",
        "second-secret-value",
        "--store-id",
        "1001",
      ),
      "connector: option '--provider-client-secret <secret>' was given twice: give it once; see `connector shops add --help`",
    );
    // The same value twice, and a flag twice, are what was meant.
    const same = await cli("shops", "list", "--json", "--json");
    expect(same.code).toBe(0);
    const twice = await cli("status", "--shop", TEST_SHOP, "--shop", TEST_SHOP, "--json");
    expect(twice.code).toBe(0);
  });

  it("refuses an empty value rather than reading it as the option left out", async () => {
    const shop = await p.ctx.shops.getShop(TEST_SHOP);
    // Before: `--order ""` resynced every order of the shop, `--email ""` listed every
    // customer's registrations, `--currency ""` was dropped while --default-location was saved.
    refused(
      await cli("resync", "--shop", TEST_SHOP, "--order", ""),
      "connector: option '--order <id-or-name>' argument '' is invalid: must not be empty; see `connector resync --help`",
    );
    refused(
      await runCli(p.ctx, ["registrations", "list", "--shop", TEST_SHOP, "--email", " "], provider),
      "connector: option '--email <address>' argument ' ' is invalid: must not be empty; see `connector registrations list --help`",
    );
    refused(
      await cli(
        "shops",
        "update",
        "--shop",
        TEST_SHOP,
        "--currency",
        "",
        "--default-location",
        "9",
      ),
      "connector: option '--currency <code>' argument '' is invalid: must not be empty; see `connector shops update --help`",
    );
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.defaultLocationId).toBe(shop?.defaultLocationId);
    // An argument too: before, "no dead-letter entry  (see `connector dlq list`)", exit 1.
    refused(
      await cli("dlq", "show", ""),
      "connector: command-argument value '' is invalid for argument 'id': must not be empty; see `connector dlq show --help`",
    );
    // A secret's option is named, and nothing of the value is printed but that it was empty.
    refused(
      await cli(
        ...["shops", "add", "--shop", UNKNOWN, "--provider-client-id", "id"],
        ...["--provider-client-secret", "", "--store-id", "1001", "--no-verify"],
      ),
      "connector: option '--provider-client-secret <secret>' argument '' is invalid: must not be empty; see `connector shops add --help`",
    );
    expect(await p.ctx.shops.getShop(UNKNOWN)).toBeNull();
  });

  it("refuses a URL that is not http(s), naming the option, before anything starts", async () => {
    const file = join(dir, "order.json");
    writeFileSync(file, "{}");
    const send = ["webhook", "send", "--topic", "orders/create", "--shop", TEST_SHOP, "--file"];
    // Before: "connector: Failed to parse URL from notaurl (LOG_LEVEL=debug shows the stack)"
    // and "unknown scheme", exit 1, naming no option.
    for (const url of ["notaurl", "ftp://localhost/webhooks", "localhost:3000/webhooks/shopify"]) {
      refused(
        await cli(...send, file, "--url", url),
        `connector: option '--url <url>' argument '${url}' is invalid: must be an http:// or https:// URL, such as http://localhost:3000/webhooks/shopify; see \`connector webhook send --help\``,
      );
    }
    // Before: "connector: Invalid URL (LOG_LEVEL=debug shows the stack)", exit 1.
    refused(
      await cli("shopify-standin", "--port", "0", "--app-url", "not a url"),
      "connector: option '--app-url <url>' argument 'not a url' is invalid: must be an http:// or https:// URL, such as http://localhost:3000; see `connector shopify-standin --help`",
    );
    // Before: a sandbox started, its events bound for "notaurl", and ran until stopped.
    refused(
      await cli("sandbox", "--webhook-url", "notaurl", "--webhook-secret", "s"),
      "connector: option '--webhook-url <url>' argument 'notaurl' is invalid: must be an http:// or https:// URL, such as http://localhost:3000/webhooks/provider; see `connector sandbox --help`",
    );
  });

  it("refuses webhook send --times that is not a count, instead of sending nothing with exit 0", async () => {
    const file = join(dir, "order.json");
    writeFileSync(file, "{}");
    const args = ["webhook", "send", "--topic", "orders/create", "--shop", TEST_SHOP];
    refused(
      await cli(...args, "--file", file, "--times", "abc"),
      "connector: option '--times <n>' argument 'abc' is invalid: must be a whole number from 1 to 1000; see `connector webhook send --help`",
    );
  });
});

describe("dates", () => {
  it("takes a date or a date-time with an offset, and nothing Date.parse would guess at", async () => {
    // Before: "1" was 2001-01-01, "2026-02-30" March 2nd; both read Shopify from then.
    for (const since of ["1", "2026-02-30", "Oct 1", "2026-10-01T12:00"]) {
      refused(
        await cli("resync", "--shop", TEST_SHOP, "--since", since),
        `connector: option '--since <date>' argument '${since}' is invalid: must be a date such as 2026-01-31 (from midnight UTC) or a date-time with an offset such as 2026-01-31T09:00:00Z; see \`connector resync --help\``,
      );
    }
  });

  it("refuses --until before --since and a --since in the future, before reading Shopify", async () => {
    // Before: both read Shopify and found nothing, exit 0.
    refused(
      await cli("resync", "--shop", TEST_SHOP, "--since", "2026-10-02", "--until", "2026-10-01"),
      "connector: --until 2026-10-01T00:00:00.000Z is not after --since 2026-10-02T00:00:00.000Z: no order can be updated in between; swap them",
    );
    refused(
      await cli("backfill", "--shop", TEST_SHOP, "--since", "2999-01-01", "--detach"),
      "connector: --since 2999-01-01T00:00:00.000Z is in the future: no order has been updated since then; give a past date (see `connector backfill --help`)",
    );
    expect(await p.ctx.backfills.latest(TEST_SHOP)).toBeNull();
  });
});

describe("a shop the connector does not know", () => {
  it("is named the same way by every command, exit 2", async () => {
    const line = `connector: no shop ${UNKNOWN} here: \`connector shops list\` shows the shops; install the app on it, or register it with \`connector shops add --shop ${UNKNOWN} …\``;
    // Before: status printed "shops: none registered" and exited 0; resync and backfill said
    // "shop: … is not registered" with exit 1 and no way to add it.
    for (const args of [
      ["status", "--shop", UNKNOWN],
      ["resync", "--shop", UNKNOWN, "--all"],
      ["backfill", "--shop", UNKNOWN, "--detach"],
      ["orders", "show", "--shop", UNKNOWN, "--order", "#1001"],
      ["claims", "list", "--shop", UNKNOWN],
      ["shops", "update", "--shop", UNKNOWN, "--currency", "EUR"],
      // Before: "the dead-letter queue is empty for this filter" and "matched 0", exit 0.
      ["dlq", "list", "--shop", UNKNOWN],
      ["dlq", "retry", "--all", "--shop", UNKNOWN],
    ]) {
      refused(await cli(...args), line);
    }
  });
});

describe("orders show --order", () => {
  it("finds an order by its name with or without # (six digits too), its ID and its gid", async () => {
    await p.shopify.upsertOrder(TEST_SHOP, standInOrder(424242, "2026-10-01T12:00:00Z").payload);
    await p.drain();
    // Before: the gid, as the Admin GraphQL API and resync write it, was "not linked", and so
    // was a name of six digits or more without its # (taken for an ID only).
    for (const order of ["#425242", "425242", "424242", "gid://shopify/Order/424242"]) {
      const run = await cli("orders", "show", "--shop", TEST_SHOP, "--order", order);
      expect(run.stderr, order).toBe("");
      expect(run.stdout, order).toMatch(
        /^#425242 \(Shopify 424242\) → provider order \d+ in store 1001\n/,
      );
    }
  });

  it("refuses text that can be no order's, in orders show and resync alike", async () => {
    // Before: looked for, and answered "not synced yet" (orders show, exit 1) or "Shopify has
    // no order" (resync, exit 1), as if such an order could exist.
    const forms =
      "give an order's Shopify ID (820982911946154508 or gid://shopify/Order/820982911946154508) or its name (#1001)";
    const notAnId = "is not an order's ID (a whole number from 1 to 18446744073709551615)";
    for (const [order, why] of [
      ["gid://shopify/Product/5", "is the ID of a Product, not an order"],
      ["gid://shopify/Order/abc", "is not an order's ID (gid://shopify/Order/ and its digits)"],
      ["-5", notAnId],
      ["0", notAnId],
    ] as const) {
      for (const command of [
        ["orders", "show"],
        ["resync", "--json"],
      ]) {
        refused(
          await cli(...command, "--shop", TEST_SHOP, "--order", order),
          `connector: option '--order <id-or-name>' argument '${order}' is invalid: ${why}: ${forms}; see \`connector ${command[0] === "orders" ? "orders show" : "resync"} --help\``,
        );
      }
    }
    // Any other text is a name: looked for, and not found.
    const name = await cli("orders", "show", "--shop", TEST_SHOP, "--order", "EU-5");
    expect(name.code).toBe(1);
    expect(name.stderr.trim()).toBe(
      `connector: no provider order is linked to EU-5 in ${TEST_SHOP}: not synced yet`,
    );
  });
});

describe("--file", () => {
  const importFile = (file: string) =>
    runCli(
      p.ctx,
      ["products", "import", "--shop", TEST_SHOP, "--file", file, "--dry-run"],
      provider,
    );
  const sendFile = (file: string) =>
    cli("webhook", "send", "--topic", "orders/create", "--shop", TEST_SHOP, "--file", file);

  it("names a directory, a file that is not UTF-8 and one too large, and sends nothing", async () => {
    const folder = join(dir, "rows.csv");
    mkdirSync(folder, { recursive: true });
    const latin = join(dir, "latin.csv");
    writeFileSync(latin, Buffer.from("handle,title\ncaf\xe9,Caf\xe9\n", "latin1"));
    const huge = join(dir, "huge.json");
    writeFileSync(huge, "");
    truncateSync(huge, MAX_INPUT_FILE_BYTES + 1); // sparse: no disk used
    const arrivals = p.sandbox.state.arrivals.length;
    for (const send of [importFile, sendFile]) {
      // Before: "connector: EISDIR: illegal operation on a directory, read (LOG_LEVEL=debug…)".
      const directory = await send(folder);
      expect(directory.stderr.trim()).toBe(
        `connector: --file ${folder} is a directory: give a file`,
      );
      expect(directory.code).toBe(1);
      // Before: read with U+FFFD in place of é, and imported or signed and sent so.
      const notUtf8 = await send(latin);
      expect(notUtf8.stderr.trim()).toBe(
        `connector: --file ${latin} is not UTF-8 text (line 2): save it as UTF-8 (in a spreadsheet, "CSV UTF-8")`,
      );
      expect(notUtf8.code).toBe(1);
      const tooLarge = await send(huge);
      expect(tooLarge.stderr.trim()).toBe(
        `connector: --file ${huge} is 101 MB, more than the 100 MB a command reads: split it into smaller files`,
      );
      expect(tooLarge.code).toBe(1);
    }
    expect(p.sandbox.state.arrivals.length).toBe(arrivals);
  });

  it("says an empty product file holds no products, not that 0 of 0 are ready", async () => {
    const empty = join(dir, "empty.csv");
    writeFileSync(empty, "");
    const run = await importFile(empty);
    expect(run.code).toBe(1);
    expect(run.stdout.trim()).toBe(
      "nothing checked: the file cannot be read as products (see above)",
    );
  });
});

describe("output piped to a reader that stops early (| head)", () => {
  it("stops quietly, with no `Unhandled 'error' event` and no stack", async () => {
    const child = spawn(
      process.execPath,
      [...cliEntry(), "registrations", "list", "--shop", TEST_SHOP, "--json"],
      {
        cwd: resolve(import.meta.dirname, "../.."),
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          REDIS_URL: service("redisUrl"),
          REDIS_PREFIX: p.ctx.prefix,
          DATABASE_PATH: p.ctx.config.env.DATABASE_PATH,
          LOG_LEVEL: "silent",
          ...provider,
        },
      },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((done) => child.once("exit", done));
    // As `head -1` does: read the first line, then close the pipe.
    await new Promise<void>((done) => child.stdout.once("data", () => done()));
    child.stdout.destroy();
    const code = await exited;
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });
});
