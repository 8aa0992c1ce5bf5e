/**
 * `npm run test:security`: sends the five attacks of issue 31 at a running connector and prints
 * each answer and the connector's RSS before and after. Exits 1 if any attack worked, 2 if the
 * probe itself could not run.
 *
 * Without --url it starts its own: the stand-in Shopify (in this process) and `npm start`'s
 * process (`tsx src/main.ts`, development mode, its own Redis and provider sandbox) on a free
 * port with a temporary data directory, and stops both (and everything they started) at the end.
 *
 *   npm run test:security [-- --big-mb 300]
 *   npm run test:security -- --url http://127.0.0.1:3000 --pid 1234 \
 *     --shopify http://127.0.0.1:4000 --sandbox http://127.0.0.1:3001 --admin-token …
 *
 * With --url the connector must run with SHOPIFY_ADMIN_URL pointing at that stand-in, and the
 * development secrets unless SHOPIFY_API_SECRET / PROVIDER_WEBHOOK_SECRET are set for the probe.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startShopifyStandIn } from "@connector/shopify-standin";
import { freePortPair } from "../test/helpers/ports.ts";
import {
  type AttackResult,
  adminCookieAfterLogout,
  bigUnauthenticatedBody,
  csvInjection,
  installShop,
  providerReplay,
  rssMb,
  shopUpdateAsUninstall,
  type Target,
} from "./security-probe/attacks.ts";

/** The development defaults `npm start` runs with (src/config/runtime-config.ts, development.ts). */
const DEV_SHOPIFY_KEY = "dev-shopify-api-key";
const DEV_SHOPIFY_SECRET = "dev-shopify-api-secret";
const DEV_PROVIDER_WEBHOOK_SECRET = "sandbox-webhook-secret-for-development";

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    pid: { type: "string" },
    shopify: { type: "string" },
    sandbox: { type: "string" },
    "admin-token": { type: "string" },
    "big-mb": { type: "string", default: "300" },
  },
});

/** Waits until the connector answers /healthz (or any answer from its port). */
async function waitUp(url: string, child: ChildProcess, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the connector exited (${child.exitCode})`);
    try {
      const res = await fetch(new URL("/healthz", url));
      await res.arrayBuffer();
      if (res.status < 500) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error("the connector did not start within 2 minutes");
}

/** Stops the process group (the connector and its redis-server), SIGKILL after 15 s. */
async function stopGroup(child: ChildProcess) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), s);
    } catch {
      // Already gone.
    }
  };
  signal("SIGTERM");
  const timer = setTimeout(() => signal("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
  // Whatever the connector started in its group and left behind.
  signal("SIGKILL");
}

async function main(): Promise<number> {
  const cleanups: (() => Promise<void> | void)[] = [];
  let target: Target;
  try {
    if (opts.url) {
      target = {
        appUrl: opts.url,
        shopifyUrl: opts.shopify ?? "http://127.0.0.1:4000",
        sandboxUrl: opts.sandbox ?? `http://127.0.0.1:${Number(new URL(opts.url).port) + 1}`,
        shopifySecret: process.env.SHOPIFY_API_SECRET ?? DEV_SHOPIFY_SECRET,
        providerWebhookSecret: process.env.PROVIDER_WEBHOOK_SECRET ?? DEV_PROVIDER_WEBHOOK_SECRET,
        adminToken: opts["admin-token"] ?? process.env.ADMIN_TOKEN ?? "",
        ...(opts.pid ? { pid: Number(opts.pid) } : {}),
      };
    } else {
      // PORT and PORT + 1 (the built-in sandbox's), both free and outside the ports the kernel
      // hands to outgoing connections.
      const port = await freePortPair();
      const appUrl = `http://127.0.0.1:${port}`;
      const shopify = await startShopifyStandIn({
        apiKey: DEV_SHOPIFY_KEY,
        apiSecret: DEV_SHOPIFY_SECRET,
        appUrl,
      });
      cleanups.push(() => shopify.close());
      const dir = mkdtempSync(join(tmpdir(), "security-probe-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const adminToken = randomBytes(24).toString("base64url");
      // `npm start`'s process (scripts/with-node.mjs already chose this Node): its own group,
      // so its redis-server is stopped with it.
      const child = spawn(
        process.execPath,
        ["--import", "tsx", resolve(import.meta.dirname, "../src/main.ts")],
        {
          cwd: resolve(import.meta.dirname, ".."),
          detached: true,
          stdio: ["ignore", "ignore", "inherit"],
          env: {
            ...process.env,
            NODE_ENV: "development",
            PORT: String(port),
            APP_URL: appUrl,
            DATABASE_PATH: join(dir, "connector.sqlite"),
            SHOPIFY_ADMIN_URL: shopify.url,
            ADMIN_TOKEN: adminToken,
            LOG_LEVEL: "error",
          },
        },
      );
      cleanups.push(() => stopGroup(child));
      process.once("SIGINT", () => void stopGroup(child).then(() => process.exit(130)));
      await waitUp(appUrl, child);
      target = {
        appUrl,
        shopifyUrl: shopify.url,
        sandboxUrl: `http://127.0.0.1:${port + 1}`,
        shopifySecret: DEV_SHOPIFY_SECRET,
        providerWebhookSecret: DEV_PROVIDER_WEBHOOK_SECRET,
        adminToken,
        ...(child.pid ? { pid: child.pid } : {}),
      };
    }

    const first = "probe-one.myshopify.com";
    const second = "probe-two.myshopify.com";
    const jarOne = await installShop(target, first);
    const jarTwo = await installShop(target, second);
    const rssBefore = rssMb(target.pid);
    console.log(`connector ${target.appUrl}${target.pid ? ` (pid ${target.pid})` : ""}`);
    console.log(`RSS before: ${rssBefore ?? "n/a"} MB\n`);

    const results: AttackResult[] = [];
    const run = async (attack: () => Promise<AttackResult>) => {
      let result: AttackResult;
      try {
        result = await attack();
      } catch (error) {
        result = {
          name: "(attack failed to run)",
          answer: (error as Error).message,
          succeeded: true,
        };
      }
      results.push(result);
      console.log(`${result.succeeded ? "VULNERABLE" : "held      "}  ${result.name}`);
      console.log(`            answer: ${result.answer}`);
      if (result.detail) console.log(`            ${result.detail}`);
    };
    await run(() => bigUnauthenticatedBody(target, Number(opts["big-mb"])));
    await run(() => shopUpdateAsUninstall(target, second, jarTwo));
    await run(() => providerReplay(target));
    await run(() => csvInjection(target, jarOne));
    await run(() => adminCookieAfterLogout(target));

    const rssAfter = rssMb(target.pid);
    console.log(`\nRSS after: ${rssAfter ?? "n/a"} MB`);
    const worked = results.filter((r) => r.succeeded).length;
    console.log(`${worked} of ${results.length} attacks worked`);
    return worked > 0 ? 1 : 0;
  } catch (error) {
    console.error(`security probe could not run: ${(error as Error).message}`);
    return 2;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

process.exitCode = await main();
