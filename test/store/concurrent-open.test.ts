import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase } from "../../src/store/index.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const OPENER = join(ROOT, "test/fixtures/open-store.ts");

/** A process that opens the store as a role does, each time it is sent a path. */
class Opener {
  readonly child: ChildProcess;
  readonly #lines: Interface;
  readonly #waiting: ((line: string) => void)[] = [];
  readonly #received: string[] = [];
  #exited = false;

  constructor() {
    this.child = spawn(process.execPath, ["--import", "tsx", OPENER], {
      cwd: ROOT,
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.child.once("exit", () => {
      this.#exited = true;
      for (const waiter of this.#waiting.splice(0)) waiter("exited");
    });
    this.#lines = createInterface({ input: this.child.stdout as NodeJS.ReadableStream });
    this.#lines.on("line", (line) => {
      const waiter = this.#waiting.shift();
      if (waiter) waiter(line);
      else this.#received.push(line);
    });
  }

  next(): Promise<string> {
    const line = this.#received.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.#exited) return Promise.resolve("exited");
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  open(path: string): Promise<string> {
    this.child.stdin?.write(`${path}\n`);
    return this.next();
  }

  stop(): Promise<void> {
    if (this.#exited) return Promise.resolve();
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.stdin?.end();
    this.child.kill();
    return exited;
  }
}

let dir: string;
let openers: Opener[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "connector-concurrent-open-"));
});
afterAll(async () => {
  await Promise.all(openers.map((opener) => opener.stop()));
  rmSync(dir, { recursive: true, force: true });
});

/** The tables a store gets from the committed migrations, seen in a file opened alone. */
async function expectedTables(): Promise<string[]> {
  const db = openDatabase(join(dir, "reference.sqlite"));
  if (db.dialect !== "sqlite") throw new Error("a SQLite path was expected");
  const tables = db.sqlite.$client
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .all() as { name: string }[];
  await db.close();
  return tables.map((table) => table.name);
}

it("lets processes that open one fresh SQLite file at the same moment all start, ten times over", async () => {
  const tables = await expectedTables();
  expect(tables).toContain("backfills");
  const journal = JSON.parse(readFileSync(join(ROOT, "drizzle/meta/_journal.json"), "utf8")) as {
    entries: unknown[];
  };
  // Two processes, as web and worker sharing a volume; each loads once, then opens a new file
  // at the same moment as the other, round after round.
  openers = [new Opener(), new Opener()];
  expect(await Promise.all(openers.map((opener) => opener.next()))).toEqual(["ready", "ready"]);
  for (let round = 0; round < 10; round++) {
    const file = join(dir, `round-${round}.sqlite`);
    const answers = await Promise.all(openers.map((opener) => opener.open(file)));
    for (const answer of answers) expect(answer, `round ${round}`).toBe(JSON.stringify(tables));
    const db = openDatabase(file);
    if (db.dialect !== "sqlite") throw new Error("a SQLite path was expected");
    // Every migration recorded exactly once, whichever process applied it.
    expect(
      db.sqlite.$client.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get(),
    ).toEqual({ n: journal.entries.length });
    await db.close();
  }
}, 60_000);
