import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import {
  allCommands,
  buildProgram,
  CommanderError,
  commandPath,
  exitCodeOf,
} from "../../src/cli/program.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";

/**
 * docs/commands.md and the CLI's own help say the same: every command the CLI runs has a row,
 * every option it takes is named in that row, and every command and option a row names exists.
 */
const DOC = readFileSync(resolve(import.meta.dirname, "../../docs/commands.md"), "utf8");
const config = resolveRuntimeConfig(parseEnv({ NODE_ENV: "development" }));
const program = buildProgram(config);

/** The commands that do something (not `shops`, which only groups `shops add` and the rest). */
const runnable = allCommands(program).filter(
  (c) => (c as unknown as { _actionHandler: unknown })._actionHandler,
);
/** "dlq list" for `connector dlq list`. */
const words = (c: Command) => commandPath(c).split(" ").slice(1).join(" ");

/** The table rows whose first cell runs `npx connector …`, each with the commands it names. */
const rows = DOC.split("\n")
  .filter((line) => line.startsWith("| `npx connector "))
  .map((line) => {
    const first = line.split(" | ")[0] ?? "";
    const named = [...first.matchAll(/`(?:npx connector )?([a-z-]+(?: [a-z-]+)?)/g)].map(
      (m) => m[1] ?? "",
    );
    return { line, first, named };
  });

/** The rows that document a command: the first cell names it (`npx connector dlq retry ID`). */
function rowsOf(command: Command): string[] {
  const name = words(command);
  return rows
    .filter((r) =>
      [...r.first.matchAll(/`(?:npx connector )?([^`]*)`/g)].some((m) => {
        const text = m[1] ?? "";
        return text === name || text.startsWith(`${name} `);
      }),
    )
    .map((r) => r.line);
}

describe("docs/commands.md and the CLI's help", () => {
  it("has a row for every command the CLI runs", () => {
    expect(runnable.length).toBeGreaterThan(20);
    expect(rows.length).toBeGreaterThan(15);
    const missing = runnable.filter((c) => rowsOf(c).length === 0).map(words);
    expect(missing).toEqual([]);
  });

  it("names every option of a command in its row", () => {
    const missing = runnable.flatMap((c) => {
      const text = rowsOf(c).join("\n");
      return c.options
        .filter((o) => o.long && !new RegExp(`${o.long}(?![a-z-])`).test(text))
        .map((o) => `${words(c)} ${o.long}`);
    });
    expect(missing).toEqual([]);
  });

  it("names only commands and options that exist", () => {
    const known = new Map(runnable.map((c) => [words(c), c]));
    const problems: string[] = [];
    for (const row of rows) {
      const commands = [...row.first.matchAll(/`(?:npx connector )?([^`]*)`/g)]
        .map((m) => m[1] ?? "")
        .map((text) => {
          const parts = text.split(" ");
          const two = parts.slice(0, 2).join(" ");
          return known.get(two) ?? known.get(parts[0] ?? "");
        });
      if (commands.some((c) => c === undefined)) problems.push(`unknown command in ${row.first}`);
      const flags = new Set(
        commands.flatMap((c) => (c ? c.options.map((o) => o.long).filter(Boolean) : [])),
      );
      for (const [flag] of row.first.matchAll(/--[a-z][a-z-]*/g)) {
        if (!flags.has(flag)) problems.push(`${flag} in ${row.first}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe("the CLI's help", () => {
  /** What `connector …args` prints and its exit code, parsed in this process. */
  async function parse(args: string[]) {
    const fresh = buildProgram(config);
    let out = "";
    let err = "";
    for (const c of allCommands(fresh)) {
      c.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (err += s) });
    }
    try {
      await fresh.parseAsync(["node", "connector", ...args]);
      return { code: 0, out, err };
    } catch (error) {
      if (!(error instanceof CommanderError)) throw error;
      return { code: exitCodeOf(error), out, err };
    }
  }

  it("answers --help and `help` for every command on stdout, exit 0", async () => {
    for (const command of allCommands(program)) {
      const path = words(command).split(" ").filter(Boolean);
      const usage = `Usage: ${commandPath(command)} [options]`;
      const asked = await parse([...path, "--help"]);
      expect(asked.out.startsWith(usage), path.join(" ")).toBe(true);
      expect([asked.code, asked.err]).toEqual([0, ""]);
      // `connector help status`, `connector dlq help list`: the same page. (Before, the help
      // command's own exit went through the usage-error path: exit 2.)
      const parent = path.slice(0, -1);
      const name = path.at(-1);
      if (name === undefined) continue;
      const viaHelp = await parse([...parent, "help", name]);
      expect(viaHelp.out.startsWith(usage), `help ${path.join(" ")}`).toBe(true);
      expect(viaHelp.code, `help ${path.join(" ")}`).toBe(0);
    }
  });
});
