import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConnector } from "../../src/app/connector.ts";
import { composeWebApp } from "../../src/app/web.ts";
import { formatTable, printable } from "../../src/cli/table.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { startRedisServer } from "../../src/lib/redis-server.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import { createDeadLetters } from "../../src/ops/index.ts";
import { deadLetterId } from "../../src/queue/order-queues.ts";
import { runCli } from "../helpers/cli.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";
import { AMPLE_BUDGET, standInOrder } from "../helpers/standin-orders.ts";

/**
 * What a new user met on first contact with the CLI, run as they run it: the real CLI in a child
 * process whose stdout and stderr are pipes (not a terminal), against a receiver on real HTTP.
 */
const UNKNOWN_SHOP = "never-installed.myshopify.com";
let p: Pipeline;
let server: ServerType | undefined;
let receiver = "";
/** The requests the receiver has been sent. */
let received = 0;
beforeAll(async () => {
  p = await startPipeline({ ...AMPLE_BUDGET });
  receiver = await new Promise<string>((resolve) => {
    const fetch = (request: Request) => {
      received++;
      return p.web.app.fetch(request);
    };
    server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve(`http://127.0.0.1:${info.port}/webhooks/shopify`),
    );
  });
});
afterAll(async () => {
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  await p.close();
});

describe("webhook send to a shop that is not installed", () => {
  it("says the shop is not installed, how to install it, and exits non-zero", async () => {
    const file = join(p.ctx.config.env.DATABASE_PATH, "..", "order.json");
    writeFileSync(file, JSON.stringify(standInOrder(1, "2026-10-01T12:00:00Z").payload));
    const args = ["webhook", "send", "--topic", "orders/create", "--file", file];
    const sent = await runCli(p.ctx, [...args, "--shop", UNKNOWN_SHOP, "--url", receiver]);
    expect(sent.stdout.trim()).toBe('200 {"ok":true,"outcome":"unknown-shop"}');
    expect(sent.code).toBe(1);
    expect(sent.stderr.trim()).toBe(
      `connector: shop ${UNKNOWN_SHOP} is not installed (or is paused or uninstalled), so the receiver dropped the webhook: install the app on it (open ${new URL(receiver).origin}/shopify/install?shop=${UNKNOWN_SHOP}) or register it with \`npx connector shops add --shop ${UNKNOWN_SHOP} …\`; \`npx connector shops list\` shows the shops and their status`,
    );
    // An installed shop: queued, exit 0, nothing on stderr.
    const ok = await runCli(p.ctx, [...args, "--shop", TEST_SHOP, "--url", receiver]);
    expect(ok.stdout.trim()).toBe('200 {"ok":true,"outcome":"queued"}');
    expect(ok.code).toBe(0);
    expect(ok.stderr).toBe("");
  });
});

describe("webhook send of a webhook the receiver refuses", () => {
  it("names the cause and the fix: a signature of another secret (401), a receiver that cannot store it (503)", async () => {
    const file = join(p.ctx.config.env.DATABASE_PATH, "..", "refused-order.json");
    writeFileSync(file, JSON.stringify(standInOrder(2, "2026-10-01T12:00:00Z").payload));
    const args = ["webhook", "send", "--topic", "orders/create", "--file", file];
    args.push("--shop", TEST_SHOP);
    // Before, each printed the receiver's answer and nothing else: `401 {"error":…}`, exit 1.
    const signed = await runCli(p.ctx, [...args, "--url", receiver], {
      SHOPIFY_API_SECRET: "another-app-secret",
    });
    expect(signed.stdout.trim()).toMatch(/^401 \{"error":\{"code":"invalid_hmac"/);
    expect(signed.code).toBe(1);
    expect(signed.stderr.trim()).toBe(
      `connector: the receiver at ${receiver} refused the webhook's signature (401 invalid_hmac): this command signs with SHOPIFY_API_SECRET; set it to the app secret the receiver uses`,
    );

    // A receiver of its own, whose Redis stops.
    const redis = await startRedisServer();
    const dir = mkdtempSync(join(tmpdir(), "first-contact-503-"));
    const ctx = createConnector({
      config: resolveRuntimeConfig(
        parseEnv({
          DATABASE_PATH: join(dir, "c.sqlite"),
          SHOPIFY_API_SECRET: p.ctx.config.shopifyApiSecret,
          LOG_LEVEL: "silent",
        }),
      ),
      logger: createLogger("silent"),
      redis: redis.url,
      prefix: `t-${randomUUID()}`,
      providerDefaults: {
        baseUrl: "http://127.0.0.1:9/v1",
        authUrl: "http://127.0.0.1:9",
        audience: "a",
      },
    });
    const web = composeWebApp(ctx);
    let own: ServerType | undefined;
    try {
      await ctx.ready();
      await ctx.shops.upsertShop(TEST_SHOP, { storeId: 1001, providerClientId: "c" });
      const url = await new Promise<string>((resolve) => {
        own = serve({ fetch: web.app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
          resolve(`http://127.0.0.1:${info.port}/webhooks/shopify`),
        );
      });
      await redis.stop("SIGKILL");
      const stored = await runCli(p.ctx, [...args, "--url", url]);
      expect(stored.stdout.trim()).toMatch(/^503 \{"error":\{"code":"unavailable"/);
      expect(stored.code).toBe(1);
      expect(stored.stderr.trim()).toBe(
        `connector: the receiver at ${url} could not store the webhook (503 unavailable): its Redis or database is away (its /readyz and \`npx connector status\` say which); Shopify sends a webhook answered 503 again, so send it again once it is back`,
      );
    } finally {
      await new Promise<void>((done) => (own ? own.close(() => done()) : done()));
      await web.close().catch(() => {});
      await ctx.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("webhook send of a webhook the receiver answers 200 but queues nothing", () => {
  it("says why and exits non-zero for a body it could not use", async () => {
    const notJson = join(p.ctx.config.env.DATABASE_PATH, "..", "notes.md");
    // With an escape sequence that would clear the operator's screen, were it printed as it is.
    writeFileSync(notJson, "# not an order\n\u001b[2J\n");
    const send = (topic: string, file: string) =>
      runCli(p.ctx, [
        "webhook",
        "send",
        "--topic",
        topic,
        "--file",
        file,
        "--shop",
        TEST_SHOP,
        "--url",
        receiver,
      ]);
    const unusable = await send("orders/create", notJson);
    expect(unusable.stdout.trim()).toBe('200 {"ok":true,"outcome":"dead-lettered"}');
    expect(unusable.code).toBe(1);
    expect(unusable.stderr.trim()).toBe(
      `connector: the receiver dead-lettered the webhook, as its body could not be used: \`npx connector dlq list --shop ${TEST_SHOP}\` says why`,
    );
    const listed = await runCli(p.ctx, ["dlq", "list", "--json", "--shop", TEST_SHOP]);
    const { entries } = JSON.parse(listed.stdout) as { entries: { id: string; reason: string }[] };
    const entry = entries.find((e) => e.reason.includes("# not an order"));
    const shown = await runCli(p.ctx, ["dlq", "show", entry?.id ?? "none"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toContain("\u001b");
    expect(shown.stdout).toContain('"# not an order\\n\\u001b[2J\\n" is not valid JSON');
    // The body as received: its line breaks kept, the escape shown.
    expect(shown.stdout).toContain("  webhook body:\n    # not an order\n    \\u001b[2J\n");
    const order = join(p.ctx.config.env.DATABASE_PATH, "..", "order.json");
    writeFileSync(order, JSON.stringify(standInOrder(2, "2026-10-01T12:00:00Z").payload));
    // The enum form Shopify's library hands back is one the receiver handles.
    const enumForm = await send("ORDERS_CREATE", order);
    expect(enumForm.stdout.trim()).toBe('200 {"ok":true,"outcome":"queued"}');
    expect(enumForm.code).toBe(0);
  });
});

describe("webhook send of a topic the connector does not handle", () => {
  it("is refused before anything is sent, naming the topics it handles", async () => {
    // Before: signed and sent, answered 200 `ignored`, and only then said to be ignored (exit 1).
    const order = join(p.ctx.config.env.DATABASE_PATH, "..", "order.json");
    writeFileSync(order, JSON.stringify(standInOrder(3, "2026-10-01T12:00:00Z").payload));
    const before = received;
    for (const topic of ["orders/bogus", "products/update", "orders"]) {
      const refused = await runCli(p.ctx, [
        ...["webhook", "send", "--topic", topic, "--file", order],
        ...["--shop", TEST_SHOP, "--url", receiver],
      ]);
      expect(refused.code, topic).toBe(2);
      expect(refused.stdout, topic).toBe("");
      expect(refused.stderr.trim(), topic).toBe(
        `connector: option '--topic <topic>' argument '${topic}' is invalid: must be a topic the connector handles: orders/create, orders/updated, orders/cancelled, orders/fulfilled, orders/partially_fulfilled, orders/paid, orders/edited, refunds/create, fulfillments/create, fulfillments/update, app/uninstalled, shop/update, customers/data_request, customers/redact, shop/redact; see \`connector webhook send --help\``,
      );
    }
    expect(received).toBe(before);
  });
});

describe("orders show for a shop that is not installed", () => {
  it("says the shop is unknown, not that the order is not linked", async () => {
    const run = await runCli(p.ctx, ["orders", "show", "--shop", UNKNOWN_SHOP, "--order", "#1001"]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      `connector: no shop ${UNKNOWN_SHOP} here: \`connector shops list\` shows the shops; install the app on it, or register it with \`connector shops add --shop ${UNKNOWN_SHOP} …\``,
    );
    // A known shop's unknown order still says what it said.
    const known = await runCli(p.ctx, ["orders", "show", "--shop", TEST_SHOP, "--order", "#9999"]);
    expect(known.code).toBe(1);
    expect(known.stderr).toContain(`no provider order is linked to #9999 in ${TEST_SHOP}`);
  });
});

describe("orders show for an order the provider does not have", () => {
  it("says why: the dead letter's reason, or a test order the shop's setting kept out", async () => {
    const model = newModelOrder(95, 95_000);
    const noAddress = { ...orderPayload(model), billing_address: null, shipping_address: null };
    await p.send("orders/create", noAddress);
    const test = newModelOrder(96, 96_000);
    await p.send("orders/create", { ...orderPayload(test), test: true });
    await p.drain();

    const failed = await runCli(p.ctx, [
      "orders",
      "show",
      "--shop",
      TEST_SHOP,
      "--order",
      `#${model.number}`,
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stderr.trim()).toMatch(
      new RegExp(
        `^connector: #${model.number} \\(Shopify ${model.id}\\) is not at the provider: dead-lettered \\(mapping\\) at \\S+: the order cannot be sent as it is: shippingAddress: `,
      ),
    );
    // Its dead letter discarded, the order is still not at the provider, and a resync is what
    // tries it again (before: "failed at …, being retried", which nothing was).
    const id = deadLetterId(TEST_SHOP, String(model.id));
    expect(await createDeadLetters(p.ctx).discard(id)).toBe("discarded");
    const discarded = await runCli(p.ctx, [
      "orders",
      "show",
      "--shop",
      TEST_SHOP,
      "--order",
      String(model.id),
    ]);
    expect(discarded.code).toBe(1);
    expect(discarded.stderr.trim()).toMatch(
      new RegExp(
        `is not at the provider: dead-lettered \\(mapping\\) at \\S+: .*\\(its dead letter was discarded; \`connector resync --shop ${TEST_SHOP} --order ${model.id}\` tries it again\\)$`,
      ),
    );
    // A test order kept out, by its ID and by its name (before: "no provider order is linked
    // to #2096 …: not synced yet, or a test order … give its Shopify ID to tell").
    for (const order of [`#${test.number}`, String(test.number), String(test.id)]) {
      const skipped = await runCli(p.ctx, [
        "orders",
        "show",
        "--shop",
        TEST_SHOP,
        "--order",
        order,
      ]);
      expect(skipped.code, order).toBe(1);
      expect(skipped.stderr.trim(), order).toMatch(
        new RegExp(
          `^connector: #${test.number} \\(Shopify ${test.id}\\) is a test order, not sent to the provider \\(\\S+\\): the shop's test-order setting is off`,
        ),
      );
    }
  });

  it("says a point-of-sale sale without an address was kept out, found by its name", async () => {
    const sale = newModelOrder(97, 97_000);
    const walkIn: Record<string, unknown> = {
      ...orderPayload({ ...sale, email: null }),
      source_name: "pos",
      customer: null,
      shipping_lines: [],
    };
    delete walkIn.shipping_address;
    delete walkIn.billing_address;
    await p.send("orders/create", walkIn);
    await p.drain();
    const run = await runCli(p.ctx, [
      "orders",
      "show",
      "--shop",
      TEST_SHOP,
      "--order",
      `#${sale.number}`,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(
      new RegExp(
        `^connector: #${sale.number} \\(Shopify ${sale.id}\\) is not sent to the provider \\(\\S+\\): it was sold without an address to ship to and nothing ships, e.g. a point-of-sale sale; nothing to do, or add the customer's address to the order in Shopify and its next change sends it$`,
      ),
    );
  });

  it("finds a test order an older connector kept out without its name by its ID, and says such rows exist", async () => {
    await p.ctx.db.orm
      .insert(p.ctx.db.t.skippedTestOrders)
      .values({ shop: TEST_SHOP, sourceOrderId: "9000000198", skippedAt: "2026-11-01T00:00:00Z" });
    const old = await runCli(p.ctx, [
      "orders",
      "show",
      "--shop",
      TEST_SHOP,
      "--order",
      "9000000198",
    ]);
    expect(old.stderr.trim()).toBe(
      "connector: Shopify order 9000000198 is a test order, not sent to the provider (2026-11-01T00:00:00Z): the shop's test-order setting is off; turn it on in the settings page and the order's next change sends it",
    );
    const unknown = await runCli(p.ctx, [
      "orders",
      "show",
      "--shop",
      TEST_SHOP,
      "--order",
      "#2198",
    ]);
    expect(unknown.stderr.trim()).toBe(
      `connector: no provider order is linked to #2198 in ${TEST_SHOP}: not synced yet, or an order kept out before the connector recorded names (1 such; give its Shopify ID to tell)`,
    );
  });
});

describe("products import on a shop without a Shopify token (the README's demo shop)", () => {
  it("says how to give it one locally: the stand-in, SHOPIFY_ADMIN_URL and the install link", async () => {
    const shop = "demo-like.myshopify.com";
    await p.ctx.shops.upsertShop(shop, {
      storeId: 1001,
      providerClientId: p.sandbox.clientId,
      providerClientSecretSealed: p.ctx.secrets.seal(
        p.sandbox.clientSecret,
        sealedFor.providerClientSecret(shop),
      ),
    });
    const run = await runCli(
      p.ctx,
      ["products", "import", "--shop", shop, "--file", "examples/products.csv", "--dry-run"],
      {
        PROVIDER_BASE_URL: p.sandbox.url,
        PROVIDER_AUTH_URL: p.sandbox.authUrl,
        PROVIDER_AUDIENCE: p.sandbox.audience,
        APP_URL: "http://localhost:3700",
      },
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      `connector: shop ${shop} has no Shopify access token; install the app on it first; locally, run the stand-in Shopify (npx connector shopify-standin), set SHOPIFY_ADMIN_URL to it for the connector and this command, and open http://localhost:3700/shopify/install?shop=${shop} (docs/products-csv.md, "Trying it on the demo shop")`,
    );
  });
});

describe("tables piped or narrowed", () => {
  it("dlq list piped prints whole rows; within COLUMNS it cuts other cells, never the ID", async () => {
    const note = "a note long enough to need cutting ".repeat(6);
    const bad = await p.send("orders/create", { id: 4242, note, line_items: "not a list" });
    expect(((await bad.json()) as { outcome: string }).outcome).toBe("dead-lettered");
    const json = await runCli(p.ctx, ["dlq", "list", "--json"]);
    const entries = (JSON.parse(json.stdout) as { entries: { id: string; reason: string }[] })
      .entries;
    expect(entries.length).toBeGreaterThan(0);
    const piped = await runCli(p.ctx, ["dlq", "list"]);
    expect(piped.code).toBe(0);
    expect(piped.stdout).not.toContain("…");
    // One line an entry, control characters in a message shown escaped (an earlier test
    // dead-letters a body that is not JSON, whose message quotes it).
    expect(piped.stdout.trim().split("\n")).toHaveLength(entries.length + 2);
    for (const entry of entries) {
      expect(piped.stdout).toContain(entry.id);
      expect(piped.stdout).toContain(printable(entry.reason));
    }
    const narrow = await runCli(p.ctx, ["dlq", "list"], { COLUMNS: "100" });
    const rows = narrow.stdout.split("\n").slice(1, 1 + entries.length);
    expect(narrow.stdout).toContain("…");
    for (const [i, entry] of entries.entries()) expect(rows[i]).toContain(entry.id);
  });

  it("every table keeps its identifiers whole and shows a column only later rows have", () => {
    const id = "lifecycle-shop.myshopify.com|820982911946154508|orders/create";
    const text = formatTable(
      [
        { id, shop: TEST_SHOP, "external ID": "REG-1001-25", message: "x".repeat(200) },
        { id: `${id}-2`, shop: TEST_SHOP, "external ID": "REG-1", pausedReason: "reinstall" },
      ],
      { width: 60 },
    );
    const [head, first, second] = text.split("\n");
    expect(head).toMatch(/^\s*id\s+shop\s+external ID\s+mes+a?…\s+pau\w*…$/);
    expect(first).toContain(id);
    expect(first).toContain(TEST_SHOP);
    expect(first).toContain("REG-1001-25");
    expect(first).toContain("…");
    expect(second).toContain(`${id}-2`);
    // Piped (no terminal, no COLUMNS) nothing is cut.
    expect(formatTable([{ message: "y".repeat(300) }], { width: undefined })).toContain(
      "y".repeat(300),
    );
  });
});

describe("resync --all piped", () => {
  it("prints one line per page read, not a carriage-return line run together", async () => {
    for (let day = 1; day <= 10; day++) {
      const { payload } = standInOrder(
        100 + day,
        `2026-10-${String(day).padStart(2, "0")}T12:00:00Z`,
      );
      await p.shopify.upsertOrder(TEST_SHOP, payload, { deliver: false });
    }
    const run = await runCli(p.ctx, ["resync", "--shop", TEST_SHOP, "--all"], {
      SHOPIFY_ADMIN_URL: p.shopify.url,
    });
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain("\r");
    const lines = run.stderr.split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line).toMatch(/^read \d+ orders$/);
    expect(lines.at(-1)).toMatch(/^read 1\d orders$/);
    expect(run.stdout).toContain("order(s) read from Shopify");
  });
});
