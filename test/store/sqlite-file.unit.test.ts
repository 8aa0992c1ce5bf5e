import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/env.ts";
import { openDatabase } from "../../src/store/database.ts";

/**
 * DATABASE_PATH as an operator mistypes it: a path the connector cannot use stops it with one
 * line that names the variable, why and the fix, and a file that is not a SQLite database is
 * left exactly as it was (before, its mode was set to 0600 before SQLite found out).
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sqlite-file-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const failure = (path: string): ConfigError => {
  try {
    openDatabase(path);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`opening ${path} did not fail`);
};

describe("the connector's SQLite file", () => {
  it("leaves a file that is not a database untouched, and says so", () => {
    const notes = join(dir, "notes.txt");
    writeFileSync(notes, "remember the milk\n", { mode: 0o644 });
    expect(failure(notes).message).toBe(
      `DATABASE_PATH ${notes}: it is not a SQLite database (SQLITE_NOTADB); set DATABASE_PATH to the connector's database or to a new file`,
    );
    expect(statSync(notes).mode & 0o777).toBe(0o644);
    expect(readFileSync(notes, "utf8")).toBe("remember the milk\n");
  });

  it("names a directory part that is a file, and a path that is a directory", () => {
    const file = join(dir, "file");
    writeFileSync(file, "");
    const under = join(file, "connector.sqlite");
    expect(failure(under).message).toBe(
      `DATABASE_PATH ${under}: a part of its directory is a file (EEXIST); set DATABASE_PATH to a file in a directory this user may write`,
    );
    const folder = join(dir, "folder");
    mkdirSync(folder);
    expect(failure(folder).message).toBe(
      `DATABASE_PATH ${folder}: it is a directory (EISDIR); set DATABASE_PATH to a file in a directory this user may write`,
    );
  });

  it("creates a new file and its directory private, and makes an existing database private", async () => {
    const path = join(dir, "data", "connector.sqlite");
    const db = openDatabase(path);
    await db.close();
    expect(statSync(join(dir, "data")).mode & 0o777).toBe(0o700);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path).subarray(0, 16).toString("latin1")).toBe("SQLite format 3\0");

    const shared = join(dir, "shared.sqlite");
    await openDatabase(shared).close();
    chmodSync(shared, 0o644);
    await openDatabase(shared).close();
    expect(statSync(shared).mode & 0o777).toBe(0o600);
  });

  it("opens an empty file as a new database", async () => {
    const empty = join(dir, "empty.sqlite");
    writeFileSync(empty, "");
    const db = openDatabase(empty);
    await db.close();
    expect(readFileSync(empty).subarray(0, 16).toString("latin1")).toBe("SQLite format 3\0");
  });
});
