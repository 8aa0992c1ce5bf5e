import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import type { Registration } from "../../../src/provider/index.ts";
import { collectOutput } from "../../helpers/child-output.ts";
import { cliEntry, connectorEntry, runCli } from "../../helpers/cli.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../../helpers/pipeline.ts";
import { freePortPair } from "../../helpers/ports.ts";

const SEEDED = 30;
const QUOTED = {
  externalId: "REG-QUOTE",
  customerName: 'Ann "Nan" O\'Neil, Jr.',
  customerEmail: "ann@example.com",
  channelName: "web",
  lineItems: [{ sku: "S,1", name: "Shoe\nleft", quantity: 2 }],
  createdOn: "2026-03-01T10:00:00Z",
};
const FORMULA = {
  externalId: '=HYPERLINK("https://evil.example")',
  customerName: "@Bob",
  customerEmail: "bob@example.com",
  channelName: "retail",
  createdOn: "2026-03-01T11:00:00Z",
};

let p: Pipeline;
let provider: Record<string, string>;
beforeAll(async () => {
  p = await startPipeline({ sandbox: { seedRegistrations: SEEDED } });
  p.sandbox.addRegistrations(1001, [QUOTED, FORMULA]);
  provider = {
    PROVIDER_BASE_URL: p.sandbox.url,
    PROVIDER_AUTH_URL: p.sandbox.authUrl,
    PROVIDER_AUDIENCE: p.sandbox.audience,
  };
});
afterAll(() => p.close());

const list = (args: string[], env: Record<string, string> = provider) =>
  runCli(p.ctx, ["registrations", "list", "--shop", TEST_SHOP, ...args], env);

/** Seeded registration i of store 1001 (1…30) was created at 2026-01-01T00:00Z + i hours. */
const seededId = (i: number) => 1001 * 100_000 + i;
const ALL = [
  seededId(32),
  seededId(31),
  ...Array.from({ length: SEEDED }, (_, k) => seededId(SEEDED - k)),
];

describe("connector registrations list", () => {
  it("prints a table of every page, newest first, and how many", async () => {
    const res = await list([], { ...provider, COLUMNS: "120" });
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ external ID\s+customer\s+email\s+channel\s+items\s+created$/);
    // Cells are cut to fit the terminal (COLUMNS here), never the ID: --json has them whole.
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(120);
    expect(lines[1]).toMatch(
      /^ =HYPERLINK\("https:\/\/evil\.example"\)\s+@Bob\s+bob@example\.com\s+retail\s+1 × Product 0/,
    );
    // A customer's line break stays inside its cell: one registration, one line.
    expect(lines[2]).toMatch(
      /^ REG-QUOTE\s+Ann "Nan" O'Ne…\s+ann@example\.com\s+web\s+2 × Shoe left/,
    );
    expect(lines.at(-2)).toMatch(
      /^ REG-1001-1\s+Customer 1\s+customer1@exam\S*\s+web\s+1 × Product 1/,
    );
    expect(lines.at(-2)).toMatch(/2026-01-01 01:/);
    expect(lines.at(-1)).toBe("32 registrations, newest first");
    expect(lines).toHaveLength(1 + 32 + 1);

    // Piped, with no COLUMNS, nothing is cut.
    const piped = (await list([])).stdout.trimEnd().split("\n");
    expect(piped.join("\n")).not.toContain("…");
    expect(piped.at(-2)).toMatch(
      /^ REG-1001-1\s+Customer 1\s+customer1@example\.com\s+web\s+1 × Product 1 \(SKU-1\)\s+2026-01-01 01:00 UTC$/,
    );
  });

  it("--json prints one JSON array of the provider's registrations, whole", {
    timeout: 60_000,
  }, async () => {
    const res = await list(["--json"]);
    expect(res.code).toBe(0);
    const rows = JSON.parse(res.stdout) as Registration[];
    expect(rows.map((r) => r.registrationId)).toEqual(ALL);
    expect(rows[1]).toMatchObject({
      ...QUOTED,
      createdOn: "2026-03-01T10:00:00.000Z",
      lineItems: [{ sku: "S,1", name: "Shoe\nleft", quantity: 2 }],
    });
    // One registration a line, so it can be read with line tools too.
    expect(res.stdout.split("\n")).toHaveLength(32 + 3);
    const none = await list(["--json", "--email", "nobody@example.com"]);
    expect(JSON.parse(none.stdout)).toEqual([]);
  });

  it("--csv prints RFC 4180 CSV a spreadsheet reads back cell for cell, formulas defused", async () => {
    const res = await list(["--csv"]);
    expect(res.code).toBe(0);
    expect(res.stdout.startsWith("Registration ID,External ID,Created,Customer name,Email,")).toBe(
      true,
    );
    const rows = parse(res.stdout, { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => Number(r["Registration ID"]))).toEqual(ALL);
    const quoted = rows.find((r) => r.Email === "ann@example.com");
    expect(quoted).toMatchObject({
      "External ID": "REG-QUOTE",
      "Customer name": 'Ann "Nan" O\'Neil, Jr.',
      Items: "2 × Shoe\nleft (S,1)",
      Created: "2026-03-01T10:00:00.000Z",
      "Email marketing consent": "no",
    });
    const formula = rows.find((r) => r.Email === "bob@example.com");
    expect(formula?.["External ID"]).toBe('\'=HYPERLINK("https://evil.example")');
    expect(formula?.["Customer name"]).toBe("'@Bob");
    // The quoting itself: a field with a quote, a comma or a line break is quoted, quotes doubled.
    expect(res.stdout).toContain('"Ann ""Nan"" O\'Neil, Jr."');
    expect(res.stdout).toContain('"2 × Shoe\nleft (S,1)"');
    expect(res.stdout).toContain("\r\n");
  });

  it("--since and --limit: the newest since a date, at most N", { timeout: 60_000 }, async () => {
    const since = await list(["--since", "2026-01-01T20:00:00Z", "--json"]);
    expect((JSON.parse(since.stdout) as Registration[]).map((r) => r.registrationId)).toEqual(
      ALL.slice(0, 2 + 11),
    );
    const limited = await list(["--since", "2026-01-01", "--limit", "3"]);
    const lines = limited.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(1 + 3 + 1);
    expect(lines.at(-1)).toBe(
      "3 registrations since 2026-01-01T00:00:00.000Z, newest first (the first 3: --limit)",
    );
    const none = await list(["--since", "2026-03-02"]);
    expect(none.stdout.trim()).toBe(
      `no registrations for ${TEST_SHOP} since 2026-03-02T00:00:00.000Z`,
    );
  });

  it("--email, --channel and --external-id narrow the list", { timeout: 60_000 }, async () => {
    const byEmail = await list([
      "--email",
      "customer3@example.com",
      "--channel",
      "retail",
      "--json",
    ]);
    expect((JSON.parse(byEmail.stdout) as Registration[]).map((r) => r.registrationId)).toEqual([
      seededId(24),
      seededId(3),
    ]);
    const byId = await list(["--external-id", "REG-1001-7", "--json"]);
    expect((JSON.parse(byId.stdout) as Registration[]).map((r) => r.externalId)).toEqual([
      "REG-1001-7",
    ]);
  });

  it("bad --since or --limit: one line naming the option, nothing asked of the provider", {
    timeout: 60_000,
  }, async () => {
    const before = p.sandbox.state.arrivals.length;
    const since = await list(["--since", "last week"]);
    expect(since.code).toBe(2);
    expect(since.stdout).toBe("");
    expect(since.stderr.trim().split("\n")).toEqual([
      "connector: option '--since <date>' argument 'last week' is invalid: must be a date such as 2026-01-31 (from midnight UTC) or a date-time with an offset such as 2026-01-31T09:00:00Z; see `connector registrations list --help`",
    ]);
    // Before: "no registrations for … since 2999-01-01…", exit 0, as if there were none.
    const future = await list(["--since", "2999-01-01"]);
    expect(future.code).toBe(2);
    expect(future.stdout).toBe("");
    expect(future.stderr.trim().split("\n")).toEqual([
      "connector: option '--since <date>' argument '2999-01-01' is invalid: must not be in the future: no registration has been made since then; give a past date; see `connector registrations list --help`",
    ]);
    const limit = await list(["--limit", "ten"]);
    expect(limit.code).toBe(2);
    expect(limit.stderr.trim().split("\n")).toHaveLength(1);
    expect(limit.stderr).toContain("option '--limit <n>' argument 'ten' is invalid");
    const both = await list(["--json", "--csv"]);
    expect(both.code).toBe(2);
    expect(both.stderr.trim()).toBe(
      "connector: option '--json' cannot be used with option '--csv'; see `connector registrations list --help`",
    );
    expect(p.sandbox.state.arrivals.length).toBe(before);
  });

  it("names an unknown shop, a shop without provider settings, and a provider that does not answer", {
    timeout: 90_000,
  }, async () => {
    const unknown = await runCli(
      p.ctx,
      ["registrations", "list", "--shop", "nope.myshopify.com"],
      provider,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe(
      `connector: no shop nope.myshopify.com here: \`connector shops list\` shows the shops; install the app on it, or register it with \`connector shops add --shop nope.myshopify.com …\``,
    );

    await p.ctx.shops.upsertShop("bare-shop.myshopify.com", { status: "paused" });
    const bare = await runCli(
      p.ctx,
      ["registrations", "list", "--shop", "bare-shop.myshopify.com"],
      provider,
    );
    expect(bare.code).toBe(2);
    expect(bare.stderr.trim().split("\n")).toEqual([
      "connector: shop bare-shop.myshopify.com has no provider connection yet: set it on the settings page (Provider connection), or with `connector shops add --shop bare-shop.myshopify.com --provider-client-id … --provider-client-secret … --store-id …`",
    ]);

    const down = await list(["--email", "customer3@example.com"], {
      ...provider,
      PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
      LOG_LEVEL: "info",
    });
    expect(down.code).toBe(1);
    expect(down.stdout).toBe("");
    const lines = down.stderr.trim().split("\n");
    expect(lines.at(-1)).toBe(
      "connector: The provider could not be reached: try again in a few minutes.",
    );
    // The warning logged says what failed, never whose registrations were asked for.
    expect(down.stderr).not.toContain("customer3@example.com");
    expect(down.stderr).not.toMatch(/\n\s+at /);
  });

  it("wrong stored credentials: one line pointing at the settings", async () => {
    // A client of its own: a token cached for another shop's right secret vouches for nothing.
    p.sandbox.addClient("other-client", "the-right-secret", [1001]);
    await p.ctx.shops.upsertShop("wrong-secret.myshopify.com", {
      storeId: 1001,
      providerClientId: "other-client",
      providerClientSecretSealed: p.ctx.secrets.seal(
        "not-the-secret",
        sealedFor.providerClientSecret("wrong-secret.myshopify.com"),
      ),
    });
    const res = await runCli(
      p.ctx,
      ["registrations", "list", "--shop", "wrong-secret.myshopify.com"],
      provider,
    );
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe(
      "connector: The provider did not accept this shop's client ID and secret: verify them again under Settings → Provider connection.",
    );
  });

  it("without PROVIDER_BASE_URL and no running npm start: says which variables to set", async () => {
    const res = await list([], {});
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toMatch(
      /^connector: PROVIDER_BASE_URL is not set and no running `npm start` sandbox was found \(no .*provider-sandbox\.json\): start the connector with `npm start` \(it runs the built-in sandbox\), or set PROVIDER_BASE_URL, PROVIDER_AUTH_URL and PROVIDER_AUDIENCE$/,
    );
  });
});

describe("against a running npm start (the built-in sandbox, the demo shop)", () => {
  const ROOT = resolve(import.meta.dirname, "../../..");
  const run = promisify(execFile);
  let dir: string;
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child?.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("finds the sandbox npm start wrote beside the database, and lists the demo shop's registrations", async () => {
    dir = mkdtempSync(join(tmpdir(), "registrations-start-"));
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PORT: String(await freePortPair()),
      DATABASE_PATH: join(dir, "data", "connector.sqlite"),
      LOG_LEVEL: "warn",
    };
    child = spawn(process.execPath, connectorEntry(), {
      cwd: ROOT,
      env: { ...env, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const { out } = collectOutput(child);
    const deadline = Date.now() + 40_000;
    while (!out().includes("connector ready")) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(out());
      await new Promise((r) => setTimeout(r, 100));
    }
    const file = join(dir, "data", "provider-sandbox.json");
    expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({
      baseUrl: `http://127.0.0.1:${Number(env.PORT) + 1}/v1`,
    });
    const { stdout } = await run(
      process.execPath,
      [...cliEntry(), "registrations", "list", "--shop", "demo-shop.myshopify.com", "--limit", "3"],
      { cwd: ROOT, env },
    );
    const lines = stdout.trimEnd().split("\n");
    expect(lines[1]).toMatch(/^ REG-1001-25\s+Customer 4\s+customer4@example\.com\s+web/);
    expect(lines.at(-1)).toBe("3 registrations, newest first (the first 3: --limit)");

    // Stopping npm start removes the file: the CLI no longer finds a sandbox there.
    const exited = new Promise((r) => child?.once("exit", r));
    child.kill("SIGTERM");
    await exited;
    expect(existsSync(file)).toBe(false);
  }, 90_000);
});
