import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { EnvSchema } from "../../src/config/env.ts";

/**
 * The docs name files of the repository (`src/…`, `test/…`, `docs/…`, …) and link to each
 * other. A file renamed or moved leaves such a name behind, and the reader who follows it finds
 * nothing: every repository path written in backticks, and every relative link, must exist.
 */
const ROOT = resolve(import.meta.dirname, "../..");

/** Top-level folders of the repository: a backticked word starting with one is a path. */
const TOP = [
  "src",
  "test",
  "docs",
  "scripts",
  "bench",
  "packages",
  "examples",
  "drizzle",
  "bin",
  "workers",
  "monitoring",
  ".ci",
];

/**
 * Paths a doc names on purpose although they are gone: an ADR's context says where things
 * were before its decision.
 */
const HISTORICAL: Record<string, string[]> = {
  "docs/adr/0006-stand-ins-as-packages-and-import-rules.md": ["src/sandbox/"],
};

function markdownFiles(): string[] {
  const top = readdirSync(ROOT).filter((name) => name.endsWith(".md"));
  const docs = readdirSync(join(ROOT, "docs"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md"))
    .map((name) => join("docs", name));
  return [...top, ...docs].sort();
}

/** The repository paths in a doc's backticked spans (globs and placeholders left out). */
function backtickedPaths(text: string): string[] {
  const found = new Set<string>();
  const start = new RegExp(`^(?:${TOP.map((t) => t.replace(".", "\\.")).join("|")})/`);
  for (const [, span] of text.matchAll(/`([^`\n]+)`/g)) {
    for (const word of (span as string).split(/[\s,()|=]+/)) {
      if (!start.test(word) || /[*{}<>…]/.test(word)) continue;
      found.add(word.replace(/[.:;]+$/, ""));
    }
  }
  return [...found];
}

/** GitHub's anchor of a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

function anchors(text: string): Set<string> {
  return new Set(
    [...text.matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => slug(heading as string)),
  );
}

/** Relative links `[text](target)` of a doc, without web and mail links. */
function links(text: string): string[] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map(([, target]) => target as string)
    .filter((target) => !/^[a-z]+:/.test(target));
}

describe("paths and links in the docs", () => {
  const files = markdownFiles();

  it("reads the docs at the root and under docs/", () => {
    expect(files).toContain("README.md");
    expect(files).toContain("ARCHITECTURE.md");
    expect(files).toContain("docs/operations.md");
  });

  it("every repository path in backticks exists", () => {
    const missing: string[] = [];
    for (const file of files) {
      const allowed = HISTORICAL[file] ?? [];
      for (const path of backtickedPaths(readFileSync(join(ROOT, file), "utf8"))) {
        if (allowed.includes(path)) continue;
        if (!existsSync(join(ROOT, path))) missing.push(`${file}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("the historical paths are really gone (else the exception is stale)", () => {
    for (const [file, paths] of Object.entries(HISTORICAL)) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const path of paths) {
        expect(text, file).toContain(`\`${path}\``);
        expect(existsSync(join(ROOT, path)), path).toBe(false);
      }
    }
  });

  it("every relative link points at a file that exists, and at a heading it has", () => {
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const link of links(text)) {
        const [path, anchor] = link.split("#") as [string, string | undefined];
        const target = path === "" ? join(ROOT, file) : resolve(ROOT, dirname(file), path);
        if (!existsSync(target)) {
          broken.push(`${file}: ${link} (no ${relative(ROOT, target)})`);
          continue;
        }
        if (anchor && target.endsWith(".md")) {
          if (!anchors(readFileSync(target, "utf8")).has(anchor)) {
            broken.push(`${file}: ${link} (no heading #${anchor})`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("finds paths in backticks, and leaves globs, placeholders and other words alone", () => {
    expect(
      backtickedPaths(
        "see `src/ingest/webhook-ingest.ts`, `npm test -- test/x.test.ts`, `schema/*.ts`, `src/{a,b}.ts`, `src/server/`. and `APP_URL/shopify/callback`",
      ).sort(),
    ).toEqual(["src/ingest/webhook-ingest.ts", "src/server/", "test/x.test.ts"]);
  });
});

describe("docs/configuration.md", () => {
  it("has a row for every variable the environment schema reads", () => {
    const text = readFileSync(join(ROOT, "docs/configuration.md"), "utf8");
    const rows = text.split("\n").filter((line) => line.startsWith("| `"));
    const documented = new Set(
      rows.flatMap((row) => [...(row.split(" | ")[0] as string).matchAll(/`([A-Z0-9_]+)`/g)]),
    );
    const names = new Set([...documented].map(([, name]) => name));
    const missing = Object.keys(EnvSchema.shape).filter((name) => !names.has(name));
    expect(missing).toEqual([]);
  });
});
