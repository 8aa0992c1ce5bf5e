import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { collectOutput } from "../helpers/child-output.ts";
import { cliEntry, connectorEntry } from "../helpers/cli.ts";
import { freePortPair } from "../helpers/ports.ts";

/**
 * `npm start` without a provider: its sandbox sends its claims and registrations to the
 * connector, signed with the secret the demo shop's account holds, and `connector claims`
 * shows them. Real processes, as a developer runs them.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) {
    if (child.exitCode !== null) continue;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGINT");
    await exited;
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const execCli = promisify(execFile);
async function cli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await execCli(process.execPath, [...cliEntry(), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("npm start's sandbox and `connector claims`", () => {
  it("delivers signed claim events to the connector, listed by the CLI without their bodies", async () => {
    const dir = mkdtempSync(join(tmpdir(), "claims-dev-"));
    dirs.push(dir);
    const port = await freePortPair();
    const env = {
      PORT: String(port),
      DATABASE_PATH: join(dir, "data", "connector.sqlite"),
      LOG_LEVEL: "info",
    };
    const child = spawn(process.execPath, connectorEntry(), {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    const { out } = collectOutput(child);
    const deadline = Date.now() + 45_000;
    while (!out().includes("connector ready")) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(out());
      await new Promise((r) => setTimeout(r, 100));
    }

    const sandbox = `http://127.0.0.1:${port + 1}/_sandbox`;
    const post = async (path: string, body: unknown) =>
      (
        await fetch(`${sandbox}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        })
      ).json() as Promise<{ delivery: { status: number; answer: string } }>;
    const opened = await post("/claims", {
      sourceOrderId: "5906323456123",
      externalId: "CLM-DEV-1",
    });
    expect(opened.delivery.status).toBe(200);
    const registered = await post("/webhooks/registrations", {
      customerEmail: "dev.person@example.com",
    });
    expect(registered.delivery.status).toBe(200);

    const cliEnv = { ...env, LOG_LEVEL: "silent" };
    let listed = await cli(["claims", "list", "--shop", "demo-shop.myshopify.com"], cliEnv);
    for (let i = 0; i < 50 && !listed.stdout.includes("CLM-DEV-1"); i++) {
      await new Promise((r) => setTimeout(r, 200));
      listed = await cli(["claims", "list", "--shop", "demo-shop.myshopify.com"], cliEnv);
    }
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/claim\s+CLM-DEV-1\s+open\s+not linked/);

    const events = await cli(
      ["claims", "events", "--shop", "demo-shop.myshopify.com", "--json"],
      cliEnv,
    );
    expect(events.code).toBe(0);
    const rows = JSON.parse(events.stdout) as Record<string, unknown>[];
    expect(rows.map((r) => r.topic).sort()).toEqual(["claim/created", "registration/created"]);
    // The bodies carry customer data: the CLI never prints them.
    expect(events.stdout).not.toContain("dev.person@example.com");
    expect(rows.every((r) => !("payload" in r))).toBe(true);
    // Nor does the connector's log.
    expect(out()).not.toContain("dev.person@example.com");

    const unknown = await cli(["claims", "list", "--shop", "nope.myshopify.com"], cliEnv);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe(
      `connector: no shop nope.myshopify.com here: \`connector shops list\` shows the shops; install the app on it, or register it with \`connector shops add --shop nope.myshopify.com …\``,
    );
  }, 90_000);
});
