import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { type SandboxHandle, startSandbox } from "@connector/provider-sandbox";
import { bundle, PRODUCT_ENTRIES } from "../../scripts/bundle.ts";
import { freePort } from "../../src/lib/redis-server.ts";
import { bareMachine } from "../helpers/no-toolchain.ts";

/**
 * What the Dockerfile does, without Docker: the tracked files copied to a clean directory, the
 * production bundle built from them, `npm ci --omit=dev` in a runtime directory of its own (no
 * dev dependency, no sources, no stand-in; no compiler on PATH and an empty home, as in the
 * image's base), then the web and worker roles started with
 * NODE_ENV=production as `nobody` on an empty data directory, against a Redis and a provider
 * sandbox started apart.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const NOBODY = { uid: 65534, gid: 65534 };
export const IMAGE_SECRET = "image-test-shopify-secret";
export const IMAGE_SHOP = "image-shop.myshopify.com";
const ENCRYPTION_KEY = Buffer.alloc(32, 77).toString("base64");

export interface ImageRun {
  /** The runtime directory: package.json, the lock, node_modules (production only), dist. */
  app: string;
  data: string;
  sandbox: SandboxHandle;
  webUrl: string;
  env: Record<string, string>;
  /** Runs `node dist/cli.mjs …` as nobody with the image's environment. */
  cli(args: string[]): string;
  /** Registers IMAGE_SHOP against the sandbox's store 1001, as an operator would (the CLI). */
  /** `shops add`, which asks the sandbox (in this process) first: so not a blocking call. */
  registerShop(): Promise<string>;
  start(role: "web" | "worker"): Promise<ChildProcess>;
  close(): Promise<void>;
}

/** Builds the runtime directory once per run: the slow part (npm ci --omit=dev). */
export async function buildImage(): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), "image-"));
  try {
    return await buildImageIn(root);
  } catch (error) {
    // A failed build (the bundle, the install) leaves nothing behind either.
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

async function buildImageIn(root: string): Promise<string> {
  chmodSync(root, 0o755);
  const source = join(root, "source");
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    mkdirSync(dirname(join(source, file)), { recursive: true });
    try {
      copyFileSync(join(ROOT, file), join(source, file));
    } catch {
      // Deleted in the working tree but not yet in the index.
    }
  }
  // The build stage: the bundle from the clean copy, with this checkout's dev dependencies.
  symlinkSync(join(ROOT, "node_modules"), join(source, "node_modules"));
  const app = join(root, "app");
  mkdirSync(app, { mode: 0o755 });
  await bundle(
    Object.fromEntries(
      Object.entries(PRODUCT_ENTRIES).map(([name, entry]) => [name, join(source, entry)]),
    ),
    { outdir: join(app, "dist") },
    { leaveOut: /^@connector\// },
  );
  // The run stage: production dependencies only, in a directory of their own, installed as the
  // Dockerfile does (its .npmrc, its command) on a machine as bare as its base image: no
  // compiler, make or Python, an empty home (no npm cache, no nodedir), nothing from ours.
  for (const file of ["package.json", "package-lock.json", ".npmrc"]) {
    copyFileSync(join(source, file), join(app, file));
  }
  cpSync(join(source, "drizzle"), join(app, "drizzle"), { recursive: true });
  cpSync(join(source, "bin"), join(app, "bin"), { recursive: true });
  const bare = bareMachine(join(root, "machine"));
  try {
    execFileSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund"], {
      cwd: app,
      stdio: "pipe",
      env: { ...bare.env, NODE_ENV: "production" },
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`npm ci --omit=dev failed:\n${stdout ?? ""}${stderr ?? ""}`);
  }
  rmSync(join(root, "machine"), { recursive: true, force: true });
  // The Node binary where nobody can run it (the test's may sit under root's home).
  mkdirSync(join(root, "bin"), { mode: 0o755 });
  copyFileSync(process.execPath, join(root, "bin", "node"));
  chmodSync(join(root, "bin", "node"), 0o755);
  execFileSync("chmod", ["-R", "a+rX", root]);
  return app;
}

export async function startImage(app: string, redisUrl: string): Promise<ImageRun> {
  const node = join(dirname(app), "bin", "node");
  const data = mkdtempSync(join(tmpdir(), "image-data-"));
  chownSync(data, NOBODY.uid, NOBODY.gid);
  chmodSync(data, 0o700);
  const sandbox = await startSandbox({
    stores: [1001],
    clientId: "image-client",
    clientSecret: "image-client-secret",
    rateLimit: 10_000,
  });
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: `${dirname(node)}:/usr/bin:/bin`,
    NODE_ENV: "production",
    PORT: String(port),
    HOST: "127.0.0.1",
    APP_URL: "https://connector.example.com",
    REDIS_URL: redisUrl,
    REDIS_PREFIX: `image-${randomUUID()}`,
    DATABASE_PATH: join(data, "connector.sqlite"),
    SHOPIFY_API_KEY: "image-api-key",
    SHOPIFY_API_SECRET: IMAGE_SECRET,
    ENCRYPTION_KEY,
    ADMIN_TOKEN: "image-admin-token-0123456789",
    METRICS_TOKEN: "image-metrics-token-0123456789",
    PROVIDER_BASE_URL: sandbox.url,
    PROVIDER_AUTH_URL: sandbox.authUrl,
    PROVIDER_AUDIENCE: sandbox.audience,
    LOG_LEVEL: "info",
  };
  const asNobody = ["--reuid=nobody", "--regid=nogroup", "--clear-groups", node];
  const children: ChildProcess[] = [];
  const cli = (args: string[]) =>
    execFileSync("setpriv", [...asNobody, "dist/cli.mjs", ...args], {
      cwd: app,
      env,
      encoding: "utf8",
    });
  return {
    app,
    data,
    sandbox,
    webUrl: `http://127.0.0.1:${port}`,
    env,
    cli,
    async registerShop() {
      const { stdout } = await promisify(execFile)(
        "setpriv",
        [
          ...asNobody,
          "dist/cli.mjs",
          "shops",
          "add",
          "--shop",
          IMAGE_SHOP,
          "--provider-client-id",
          "image-client",
          "--provider-client-secret",
          "image-client-secret",
          "--store-id",
          "1001",
          "--location",
          "48752903=1",
          "--default-location",
          "1",
        ],
        { cwd: app, env, encoding: "utf8" },
      );
      return stdout;
    },
    async start(role) {
      const child = spawn("setpriv", [...asNobody, "dist/main.mjs", "--role", role], {
        cwd: app,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      children.push(child);
      let out = "";
      child.stdout?.on("data", (c: Buffer) => {
        out += c.toString();
      });
      child.stderr?.on("data", (c: Buffer) => {
        out += c.toString();
      });
      const ready = role === "web" ? "web process listening" : "sync worker running";
      const deadline = Date.now() + 30_000;
      while (!out.includes(ready)) {
        if (child.exitCode !== null) throw new Error(`the ${role} role exited: ${out}`);
        if (Date.now() > deadline) throw new Error(`the ${role} role did not start: ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return child;
    },
    async close() {
      for (const child of children) {
        // A child killed by a signal has a signalCode and no exitCode.
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM");
          await new Promise((r) => child.once("exit", r));
        }
      }
      await sandbox.close();
      rmSync(data, { recursive: true, force: true });
    },
  };
}

export function removeImage(app: string): void {
  rmSync(dirname(app), { recursive: true, force: true });
}

/** The example order of the README, as Shopify sends it. */
export function exampleOrder(): string {
  return readFileSync(join(ROOT, "examples", "orders-create.json"), "utf8");
}
