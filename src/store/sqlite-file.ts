import { closeSync, fchmodSync, fstatSync, openSync, readSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { ConfigError } from "../config/env.ts";
import { ensurePrivateDir } from "../lib/private-files.ts";

/** The first 16 bytes of every SQLite database file. */
const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");

const FIX = "set DATABASE_PATH to a file in a directory this user may write";

/**
 * Why a file-system or SQLite error code stops the connector from using its database file, and
 * the fix, or undefined for an error that is not about the file (it is rethrown as it is).
 */
const WHY: Record<string, [why: string, fix: string]> = {
  EEXIST: ["a part of its directory is a file", FIX],
  ENOTDIR: ["a part of its directory is a file", FIX],
  EISDIR: ["it is a directory", FIX],
  EACCES: ["this user may not create or write it", FIX],
  EPERM: ["this user may not create or write it", FIX],
  EROFS: ["it is on a read-only file system", FIX],
  ENAMETOOLONG: ["the path is too long", FIX],
  ENOSPC: ["its disk is full", "free space on that disk"],
  SQLITE_FULL: ["its disk is full", "free space on that disk"],
  SQLITE_CANTOPEN: [
    "SQLite cannot open it, or create its -wal and -shm files beside it",
    "let this user write the file's directory",
  ],
  SQLITE_READONLY: [
    "SQLite may only read it, or its -wal and -shm files beside it",
    "let this user write the file and its directory",
  ],
  SQLITE_NOTADB: [
    "it is not a SQLite database",
    "set DATABASE_PATH to the connector's database or to a new file",
  ],
  SQLITE_CORRUPT: [
    "the database file is damaged",
    "restore it from a backup, or move it aside to start a new one",
  ],
};

/**
 * Opens the connector's SQLite file, readable by its user only (links and sealed secrets; SQLite
 * gives its -wal and -shm files the database file's mode), creating it and its directory when
 * missing. A file that exists and is not a SQLite database is left exactly as it is: neither
 * opened by SQLite nor given a new mode. A path the connector cannot use is a ConfigError that
 * names DATABASE_PATH, why, and the fix; `prepare` (the pragmas and migrations) runs on the
 * opened database and its failures about the file are explained the same way.
 */
export function openSqliteFile(
  path: string,
  prepare: (sqlite: BetterSqlite3.Database) => void,
): BetterSqlite3.Database {
  try {
    if (path !== ":memory:") claimPrivateFile(path);
    const sqlite = new BetterSqlite3(path);
    try {
      prepare(sqlite);
    } catch (error) {
      sqlite.close();
      throw error;
    }
    return sqlite;
  } catch (error) {
    throw explained(path, error);
  }
}

function claimPrivateFile(path: string): void {
  ensurePrivateDir(dirname(path));
  const fd = openSync(path, "a+", 0o600);
  try {
    const { size } = fstatSync(fd);
    if (size > 0) {
      const header = Buffer.alloc(SQLITE_HEADER.length);
      readSync(fd, header, 0, header.length, 0);
      if (!header.equals(SQLITE_HEADER)) {
        throw Object.assign(new Error("not a SQLite database"), { code: "SQLITE_NOTADB" });
      }
    }
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

function explained(path: string, error: unknown): unknown {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== "string") return error;
  // SQLite's extended codes (SQLITE_READONLY_DIRECTORY, SQLITE_IOERR_…) share the base's fix.
  const entry = WHY[code] ?? WHY[code.replace(/^(SQLITE_[A-Z]+)_.*$/, "$1")];
  if (!entry) return error;
  const [why, fix] = entry;
  return new ConfigError(`DATABASE_PATH ${path}: ${why} (${code}); ${fix}`);
}
