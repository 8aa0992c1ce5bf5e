import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { cliEntry } from "../helpers/cli.ts";
import { type InstallHarness, startInstallHarness } from "../helpers/install-harness.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { service } from "../helpers/services.ts";

/**
 * CLI failures as an operator meets them: one line with the cause and the fix, never a stack
 * (unless LOG_LEVEL=debug). And the install link opened by a bot: a page that says why, and a log
 * line.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const NO_TOKEN_SHOP = "no-token.myshopify.com";
const FILE = "examples/orders-create.json";
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline();
  await p.ctx.shops.upsertShop(NO_TOKEN_SHOP, { storeId: 1001 });
});
afterAll(() => p.close());

async function cli(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [...cliEntry(), ...args],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "",
          REDIS_URL: service("redisUrl"),
          REDIS_PREFIX: p.ctx.prefix,
          DATABASE_PATH: p.ctx.config.env.DATABASE_PATH,
          LOG_LEVEL: "warn",
          ...env,
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** `webhook send` of an order webhook for the test shop. */
const sendWebhook = (file: string, more: string[] = []) =>
  cli([
    "webhook",
    "send",
    "--topic",
    "orders/create",
    "--shop",
    TEST_SHOP,
    "--file",
    file,
    ...more,
  ]);

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at |\.ts:\d+:\d+/);

describe("CLI errors an operator can act on", () => {
  it("resync of a shop without a Shopify token says to install the app", async () => {
    const run = await cli(["resync", "--shop", NO_TOKEN_SHOP, "--order", "#1001"]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      `connector: shop ${NO_TOKEN_SHOP} has no Shopify access token; install the app on it first; locally, run the stand-in Shopify (npx connector shopify-standin), set SHOPIFY_ADMIN_URL to it for the connector and this command, and open http://localhost:3000/shopify/install?shop=${NO_TOKEN_SHOP} (docs/products-csv.md, "Trying it on the demo shop")`,
    );
    // In production there is no stand-in to point at.
    const production = await cli(["resync", "--shop", NO_TOKEN_SHOP, "--order", "#1001"], {
      NODE_ENV: "production",
    });
    expect(production.stderr).not.toContain("stand-in");
  });

  it("names a misspelt setting and the one meant, and runs the command", async () => {
    const run = await cli(["shops", "list", "--json"], { WORKER_CONCURENCY: "64" });
    expect(run.code).toBe(0);
    expect(run.stderr.trim()).toBe(
      "connector: WORKER_CONCURENCY is not a setting, so nothing reads it: did you mean WORKER_CONCURRENCY? (docs/configuration.md lists them)",
    );
    expect(JSON.parse(run.stdout)).toEqual(expect.any(Array));
  });

  it("backfill of a shop without a Shopify token says so at once and starts nothing", async () => {
    // Before: "backfill 1 started", exit 0, and the backfill failed in the workers.
    const run = await cli(["backfill", "--shop", NO_TOKEN_SHOP, "--detach"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.trim()).toMatch(
      new RegExp(
        `^connector: shop ${NO_TOKEN_SHOP} has no Shopify access token; install the app on it first; locally, run the stand-in Shopify`,
      ),
    );
    expect(await p.ctx.backfills.latest(NO_TOKEN_SHOP)).toBeNull();
  });

  it("resync without SHOPIFY_ADMIN_URL in local development says to point it at the stand-in", async () => {
    // The pipeline's shop has a token; with no stand-in configured the CLI calls shop.myshopify.com.
    const run = await cli(["resync", "--shop", TEST_SHOP, "--order", "#1001"], {
      SHOPIFY_ADMIN_URL: "",
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(
      /^connector: Shopify could not be reached \(.+\); in local development set SHOPIFY_ADMIN_URL to the stand-in Shopify \(npx connector shopify-standin\), in production check the network$/,
    );
    noStack(run.stderr);
  });

  it("webhook send with a missing file names the file", async () => {
    const run = await sendWebhook("missing.json");
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe("connector: no such file: missing.json");
  });

  it("webhook send to a receiver that is not running names the address, not `fetch failed`", async () => {
    const port = await freePort();
    const send = (url: string) => sendWebhook(FILE, ["--url", url]);
    const refused = await send(`http://127.0.0.1:${port}/webhooks/shopify`);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      `connector: nothing answers at 127.0.0.1:${port} (is the connector running? check REDIS_URL and APP_URL, or the command's --url)`,
    );
    const unknown = await send("http://no-such-host.invalid/webhooks/shopify");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe(
      "connector: the host no-such-host.invalid could not be resolved (check the URL, and this machine's DNS)",
    );
  });

  it("webhook send to a receiver that accepts the connection and never answers ends in one line", async () => {
    // A stopped connector (SIGSTOP, a frozen VM): the kernel accepts, nothing answers. Before,
    // the command waited 5 minutes (undici's own limit) and printed `Headers Timeout Error`.
    const held: Socket[] = [];
    const silent = createServer((socket) => held.push(socket));
    await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done));
    const { port } = silent.address() as AddressInfo;
    try {
      const url = `http://127.0.0.1:${port}/webhooks/shopify`;
      const started = Date.now();
      const run = await sendWebhook(FILE, ["--url", url]);
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(run.code).toBe(1);
      expect(run.stderr.trim()).toBe(
        `connector: the receiver at ${url} did not answer within 10 s (it answers in 2 s, Shopify waits 5): check that the connector there is running and reachable (its /healthz), or the command's --url`,
      );
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise<void>((done) => silent.close(() => done()));
    }
  }, 90_000);

  it("a bad environment names the variable, exit 2, and LOG_LEVEL=debug adds the stack", async () => {
    const run = await cli(["status"], { PORT: "eighty" });
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toMatch(/^connector: invalid environment:\n {2}PORT: /);
    noStack(run.stderr);
    const debug = await cli(["status"], { PORT: "eighty", LOG_LEVEL: "debug" });
    expect(debug.stderr).toMatch(/\n\s+at /);
  });

  it("a local server's --port that is taken is one line naming the port, exit 2", async () => {
    // Before: `connector: listen EADDRINUSE: address already in use 127.0.0.1:P (…stack)`.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      for (const command of ["sandbox", "shopify-standin"]) {
        const run = await cli([command, "--port", String(port)]);
        expect(run.code, command).toBe(2);
        expect(run.stderr.trim(), command).toBe(
          `connector: port ${port} on 127.0.0.1 is in use by another program: stop that program or choose another --port (0 picks a free one)`,
        );
      }
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("after `npm start` was killed, says no connector answers, not that REDIS_URL is wrong", async () => {
    // A start killed with -9 leaves redis.url behind, and its private Redis died with it.
    const dir = mkdtempSync(join(tmpdir(), "cli-killed-start-"));
    try {
      const closed = await freePort();
      mkdirSync(join(dir, "redis"));
      writeFileSync(join(dir, "redis", "redis.url"), `redis://127.0.0.1:${closed}`);
      const run = await cli(["status"], {
        REDIS_URL: "",
        DATABASE_PATH: join(dir, "connector.sqlite"),
      });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(
        `connector: no connector answers on ${dir}: the private Redis its \`npm start\` recorded (redis://127.0.0.1:${closed}) is unreachable (ECONNREFUSED); start it with \`npm start\`, or set REDIS_URL to the connector's Redis`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("with the connector not started, says to start it with `npm start`", async () => {
    // Before: "REDIS_URL is not set and no running `npm start` was found (…); set REDIS_URL to
    // the connector's Redis", which sent a newcomer who had not started it yet after REDIS_URL.
    const dir = mkdtempSync(join(tmpdir(), "cli-not-started-"));
    try {
      const run = await cli(["status"], {
        REDIS_URL: "",
        DATABASE_PATH: join(dir, "connector.sqlite"),
      });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(
        `connector: no connector is running on ${dir} (no ${join(dir, "redis", "redis.url")}, which \`npm start\` writes) and REDIS_URL is not set: start it with \`npm start\`, or set REDIS_URL to the connector's Redis`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a DATABASE_PATH that is not a database is one line, exit 2, and the file is untouched", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cli-not-a-db-"));
    try {
      const notes = join(dir, "notes.txt");
      writeFileSync(notes, "not a database\n", { mode: 0o644 });
      const run = await cli(["status"], { DATABASE_PATH: notes });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(
        `connector: DATABASE_PATH ${notes}: it is not a SQLite database (SQLITE_NOTADB); set DATABASE_PATH to the connector's database or to a new file`,
      );
      expect(statSync(notes).mode & 0o777).toBe(0o644);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the install link opened by a bot", () => {
  const logs = captureLogs("bot-install");
  let h: InstallHarness;
  beforeAll(async () => {
    h = await startInstallHarness({ env: { LOG_LEVEL: "info" }, logDestination: logs.destination });
  });
  afterAll(async () => {
    await h.close();
    logs.remove();
  });

  it("answers a short page that says why, and logs it", async () => {
    const res = await h.get("/shopify/install?shop=bot-shop.myshopify.com", undefined, {
      "user-agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    });
    expect(res.status).toBe(410);
    const page = await res.text();
    expect(page).toContain("Install from a browser");
    expect(page).toContain("looks like a bot");
    const line = logs
      .read()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => String(l.msg).startsWith("install refused: the client looks like a bot"));
    expect(line).toMatchObject({ level: "warn", shop: "bot-shop.myshopify.com", status: 410 });
  });
});
